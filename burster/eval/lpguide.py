"""LP guidance for the clairvoyant schedule: which jobs a good schedule keeps on the reserved pool, and when.

The time-indexed LP of the clairvoyant's own model: per pool job, a column "on the cloud" costing its
plan's USD, a column per reserved start a + q x grid_s within the wait budget costing 0, and (with
``move_back``) a column per "tail": on the cloud from the budget's end, back on reserved GPUs from a
grid boundary to the job's due time, costing the cloud part. Rows: each job's columns sum to 1, and the
reserved GPUs of every grid cell stay within the pool. HiGHS's interior-point method solves it (no
crossover: an interior solution guides as well and is several times faster on these LPs); the solution
is fractional, and ``clairvoyant.py`` rounds it by placing jobs in descending order of reserved share x
cloud USD, each at its heaviest LP interval when the pool is free there. The LP only guides: the
schedule it leads to is checked like every other (``verify.py``), and its value bounds nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import highspy
import numpy as np

from burster.eval.fluid import FloatArray
from burster.eval.instance import Instance
from burster.eval.lp import quiet_highs

GRIDS_S = (300.0, 600.0, 900.0, 1800.0, 3600.0)  # the finest whose LP stays within MAX_NONZEROS is used
MAX_NONZEROS = 300_000  # about 3 s of interior point on the 2-core machine
MAX_JOBS = 4_000  # pool jobs; the interior point's time grows faster with them than with the entries


@dataclass(frozen=True)
class Guide:
    """Per job of the instance: the share of its cloud cost the LP saves on reserved GPUs (0 outside the
    LP) and its heaviest reserved interval [start_s, end_s) (nan: none; shorter than the runtime: a tail
    run after moving back from the cloud)."""

    share: FloatArray
    start_s: FloatArray
    end_s: FloatArray
    grid_s: float


def lp_guide(instance: Instance, cloud_usd: Sequence[float], *, move_back: bool = False,
             max_nonzeros: int | None = None) -> Guide | None:
    """The guide from the LP on the finest grid within ``max_nonzeros`` (default ``MAX_NONZEROS``); None
    when none fits, there are more than ``MAX_JOBS`` pool jobs, or HiGHS does not reach optimality.
    With ``move_back`` the LP may also move a job back: on the cloud from
    the end of its wait budget c = a + b, on reserved GPUs from a grid boundary s to its due time
    c + runtime, for its cloud USD x (s - c) / runtime (the latest cloud start leaves the tail the most
    room, as in the reserved-run bound)."""
    cap = MAX_NONZEROS if max_nonzeros is None else max_nonzeros
    jobs = instance.jobs
    usd = np.asarray(cloud_usd, dtype=np.float64)
    pool = np.array([j.gpu_model == instance.reserved_model and j.gpus <= instance.reserved_gpus
                     for j in jobs], dtype=np.bool_) & np.isfinite(usd)
    idx = np.flatnonzero(pool)
    if len(idx) == 0 or len(idx) > MAX_JOBS:
        return None
    a = np.array([jobs[i].arrival_s for i in idx])
    b = np.array([jobs[i].wait_budget_s for i in idx])
    r = np.array([jobs[i].runtime_s for i in idx])
    g = np.array([jobs[i].gpus for i in idx], dtype=np.float64)
    c = a + b if move_back else None
    for grid in GRIDS_S:
        own, s, e = _columns(a, b, r, c, grid)
        if len(idx) + 5 * len(own) <= cap:  # entries of the LP's columns (see ``_solve``)
            break
    else:
        return None
    u = usd[idx]
    x = _solve(own, s, e, u[own] * (1.0 - (e - s) / r[own]), g, u, grid, instance.reserved_gpus)
    if x is None:
        return None
    share = np.zeros(len(jobs))
    np.add.at(share, idx[own], x * (e - s) / r[own])
    start, end = np.full(len(jobs), np.nan), np.full(len(jobs), np.nan)
    order = np.argsort(x, kind="stable")  # later writes win: each job keeps its heaviest interval
    heavy = order[x[order] > 1e-9]
    start[idx[own[heavy]]] = s[heavy]
    end[idx[own[heavy]]] = e[heavy]
    return Guide(np.clip(share, 0.0, 1.0), start, end, grid)


def _columns(a: FloatArray, b: FloatArray, r: FloatArray, c: FloatArray | None,
             grid: float) -> tuple[np.ndarray, FloatArray, FloatArray]:
    """Reserved intervals (job of each, start, end): whole runs from a + q x grid within the budget, then
    (with cloud starts ``c``) tails from each grid boundary in (c, c + r) to c + r."""
    n = np.floor(b / grid).astype(np.int64) + 1
    own = np.repeat(np.arange(len(a)), n)
    s = a[own] + (np.arange(len(own)) - np.repeat(np.cumsum(n) - n, n)) * grid
    if c is None:
        return own, s, s + r[own]
    k0 = np.floor(c / grid).astype(np.int64) + 1
    m = np.maximum(np.ceil((c + r) / grid - 1e-9).astype(np.int64) - k0, 0)
    tail_own = np.repeat(np.arange(len(a)), m)
    tail_s = (np.repeat(k0, m) + np.arange(len(tail_own)) - np.repeat(np.cumsum(m) - m, m)) * grid
    return (np.concatenate([own, tail_own]), np.concatenate([s, tail_s]),
            np.concatenate([s + r[own], (c + r)[tail_own]]))


def _cells(s: FloatArray, e: FloatArray, grid: float) -> np.ndarray:
    """Grid cells each interval [s, e) touches (at least one)."""
    return np.maximum(np.ceil(e / grid - 1e-9).astype(np.int64) - np.floor(s / grid).astype(np.int64), 1)


def _solve(own: np.ndarray, s: FloatArray, e: FloatArray, col_usd: FloatArray, g: FloatArray,
           usd: FloatArray, grid: float, pool_gpus: int) -> FloatArray | None:
    """The LP's reserved interval columns' values, or None when HiGHS does not reach optimality.

    The pool rows are written as differences so that a column has at most 5 entries however long its
    run: a variable u_k in [0, pool GPUs] per cell carries the cell's reserved load, and row k says
    u_k - u_(k-1) = the load that starts minus the load that ends at cell k (partial cells weighted by
    overlap). The LP is the same as one row per cell summing every run over it.
    """
    n_jobs, n_cols = len(usd), len(own)
    k0 = np.floor(s / grid).astype(np.int64)
    k1 = k0 + _cells(s, e, grid)  # one past the last cell touched
    f0 = (np.minimum(e, (k0 + 1) * grid) - s) / grid  # share of the first cell covered
    f1 = (e - np.maximum(s, (k1 - 1) * grid)) / grid  # share of the last cell covered
    one = k1 - k0 == 1
    gc = g[own]
    # load differences: +f0 at k0, +(1 - f0) at k0 + 1, -(1 - f1) at k1 - 1, -f1 at k1 (one cell: +f0, -f0)
    rows = np.concatenate([k0, k0 + 1, k1 - 1, k1])
    vals = np.concatenate([f0, np.where(one, -f0, 1.0 - f0), np.where(one, 0.0, -(1.0 - f1)),
                           np.where(one, 0.0, -f1)]) * np.tile(gc, 4)
    cols = np.tile(np.arange(n_cols), 4)
    n_cells = int(k1.max()) + 1
    # merge entries that fall on the same (column, cell), drop zeros; the row sign is -load change
    key = cols * (n_cells + 1) + rows
    uniq, inv = np.unique(key, return_inverse=True)
    summed = np.bincount(inv.reshape(-1), weights=vals, minlength=len(uniq))
    keep = np.abs(summed) > 1e-12
    x_col, x_row, x_val = uniq[keep] // (n_cells + 1), uniq[keep] % (n_cells + 1), -summed[keep]
    # column-wise: the cloud column of each job, the interval columns (job row + cell rows), then u_k
    per_interval = 1 + np.bincount(x_col, minlength=n_cols)
    per_col = np.concatenate([np.ones(n_jobs, dtype=np.int64), per_interval, np.full(n_cells, 2, dtype=np.int64)])
    start = np.concatenate(([0], np.cumsum(per_col)))
    index = np.empty(int(start[-1]), dtype=np.int64)
    value = np.empty(int(start[-1]))
    index[:n_jobs], value[:n_jobs] = np.arange(n_jobs), 1.0
    head = start[n_jobs:n_jobs + n_cols]
    index[head], value[head] = own, 1.0
    pos = np.repeat(head + 1, per_interval - 1) + (np.arange(len(x_col)) - np.repeat(
        np.cumsum(per_interval - 1) - (per_interval - 1), per_interval - 1))
    index[pos], value[pos] = n_jobs + x_row, x_val  # x_col is sorted, so entries follow their columns
    u_head = start[n_jobs + n_cols:-1]
    index[u_head], value[u_head] = n_jobs + np.arange(n_cells), 1.0
    index[u_head + 1], value[u_head + 1] = n_jobs + np.arange(n_cells) + 1, -1.0
    lp = highspy.HighsLp()
    lp.num_col_ = n_jobs + n_cols + n_cells
    lp.num_row_ = n_jobs + n_cells + 1
    lp.col_cost_ = np.concatenate([usd, col_usd, np.zeros(n_cells)])
    lp.col_lower_ = np.zeros(lp.num_col_)
    lp.col_upper_ = np.concatenate([np.ones(n_jobs + n_cols), np.full(n_cells, float(pool_gpus))])
    lp.row_lower_ = np.concatenate([np.ones(n_jobs), np.zeros(n_cells + 1)])
    lp.row_upper_ = lp.row_lower_.copy()
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = start.astype(np.int32)
    lp.a_matrix_.index_ = index.astype(np.int32)
    lp.a_matrix_.value_ = value
    h = quiet_highs()
    h.setOptionValue("solver", "ipm")
    h.setOptionValue("run_crossover", "off")
    h.passModel(lp)
    h.run()
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None
    return np.asarray(h.getSolution().col_value, dtype=np.float64)[n_jobs:n_jobs + n_cols]
