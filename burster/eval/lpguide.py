"""LP guidance for the clairvoyant schedule: which jobs a good schedule keeps on the reserved pool, and when.

The time-indexed LP of the clairvoyant's own model (a job runs unbroken either on reserved GPUs from a
start within its wait budget, or on the cloud by its plan; it never moves between them): per pool job,
a column "on the cloud" costing its plan's USD and a column per start a + q x grid_s (q = 0, 1, ...
within the budget) costing 0; rows: each job's columns sum to 1, and in every grid cell the reserved
GPUs of the starts covering it (weighted by overlap) stay within the pool. HiGHS solves it; the
solution is fractional, and ``clairvoyant.py`` rounds it by placing jobs in descending order of
reserved share x cloud USD, each at its LP start when the pool is free there. The LP only guides: the
schedule it leads to is checked like every other (``verify.py``), and its value bounds nothing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import highspy
import numpy as np

from burster.eval.fluid import FloatArray
from burster.eval.instance import Instance
from burster.eval.lp import quiet_highs

GRIDS_S = (600.0, 900.0, 1800.0, 3600.0)  # the finest whose LP stays within MAX_NONZEROS is used
MAX_NONZEROS = 1_000_000  # about 1 s of HiGHS on the 2-core machine; beyond, no guide (greedy orders only)


@dataclass(frozen=True)
class Guide:
    """Per job of the instance: its LP share on reserved GPUs (0 outside the LP) and its heaviest LP start."""

    share: FloatArray
    start_s: FloatArray  # nan where the LP gives the job no reserved start
    grid_s: float


def lp_guide(instance: Instance, cloud_usd: Sequence[float], *, max_nonzeros: int | None = None) -> Guide | None:
    """The guide from the LP on the finest grid within ``max_nonzeros`` (default ``MAX_NONZEROS``); None
    when none fits or HiGHS fails."""
    cap = MAX_NONZEROS if max_nonzeros is None else max_nonzeros
    jobs = instance.jobs
    usd = np.asarray(cloud_usd, dtype=np.float64)
    pool = np.array([j.gpu_model == instance.reserved_model and j.gpus <= instance.reserved_gpus
                     for j in jobs], dtype=np.bool_) & np.isfinite(usd)
    idx = np.flatnonzero(pool)
    if len(idx) == 0:
        return None
    a = np.array([jobs[i].arrival_s for i in idx])
    b = np.array([jobs[i].wait_budget_s for i in idx])
    r = np.array([jobs[i].runtime_s for i in idx])
    g = np.array([jobs[i].gpus for i in idx], dtype=np.float64)
    for grid in GRIDS_S:
        own, s, cells = _starts(a, b, r, grid)
        if len(own) + len(idx) + int(cells.sum()) <= cap:
            break
    else:
        return None
    x = _solve(own, s, cells, r, g, usd[idx], grid, instance.reserved_gpus)
    if x is None:
        return None
    share = np.zeros(len(jobs))
    np.add.at(share, idx[own], x)
    start = np.full(len(jobs), np.nan)
    order = np.argsort(x, kind="stable")  # later writes win: each job keeps its heaviest start
    heavy = order[x[order] > 1e-9]
    start[idx[own[heavy]]] = s[heavy]
    return Guide(np.clip(share, 0.0, 1.0), start, grid)


def _starts(a: FloatArray, b: FloatArray, r: FloatArray, grid: float) -> tuple[np.ndarray, FloatArray, np.ndarray]:
    """Reserved start columns: (job of each, start, grid cells its run touches)."""
    n = np.floor(b / grid).astype(np.int64) + 1
    own = np.repeat(np.arange(len(a)), n)
    q = np.arange(len(own)) - np.repeat(np.cumsum(n) - n, n)
    s = a[own] + q * grid
    cells = np.ceil((s + r[own]) / grid - 1e-9).astype(np.int64) - np.floor(s / grid).astype(np.int64)
    return own, s, np.maximum(cells, 1)


def _solve(own: np.ndarray, s: FloatArray, cells: np.ndarray, r: FloatArray, g: FloatArray,
           usd: FloatArray, grid: float, pool_gpus: int) -> FloatArray | None:
    """The LP's reserved start columns' values, or None when HiGHS does not reach optimality."""
    n_jobs, n_starts = len(usd), len(own)
    e = s + r[own]
    k0 = np.floor(s / grid).astype(np.int64)
    n_cells = int((k0 + cells).max()) + 1
    col = np.repeat(np.arange(n_starts), cells)
    offs = np.arange(len(col)) - np.repeat(np.cumsum(cells) - cells, cells)
    k = k0[col] + offs
    overlap = np.minimum(e[col], (k + 1) * grid) - np.maximum(s[col], k * grid)
    # columns: the cloud one of each job, then the starts (job row first, then its cells)
    per_col = np.concatenate([np.ones(n_jobs, dtype=np.int64), 1 + cells])
    start = np.concatenate(([0], np.cumsum(per_col)))
    index = np.empty(int(start[-1]), dtype=np.int64)
    value = np.empty(int(start[-1]))
    index[:n_jobs] = np.arange(n_jobs)
    value[:n_jobs] = 1.0
    head = start[n_jobs:-1]
    index[head] = own
    value[head] = 1.0
    pos = np.repeat(head + 1, cells) + offs
    index[pos] = n_jobs + k
    value[pos] = g[own[col]] * np.clip(overlap, 0.0, None) / grid
    lp = highspy.HighsLp()
    lp.num_col_ = n_jobs + n_starts
    lp.num_row_ = n_jobs + n_cells
    lp.col_cost_ = np.concatenate([usd, np.zeros(n_starts)])
    lp.col_lower_ = np.zeros(lp.num_col_)
    lp.col_upper_ = np.ones(lp.num_col_)
    lp.row_lower_ = np.concatenate([np.ones(n_jobs), np.full(n_cells, -math.inf)])
    lp.row_upper_ = np.concatenate([np.ones(n_jobs), np.full(n_cells, float(pool_gpus))])
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = start.astype(np.int32)
    lp.a_matrix_.index_ = index.astype(np.int32)
    lp.a_matrix_.value_ = value
    h = quiet_highs()
    h.passModel(lp)
    h.run()
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None
    return np.asarray(h.getSolution().col_value, dtype=np.float64)[n_jobs:]
