"""The reserved-run bound: once a job starts on reserved GPUs it runs there, unpaused, to completion.

The simulated pool never stops a job on reserved nodes (only burst nodes are drained, checkpointed or
preempted), so in every schedule the harness can produce a job is, in order: waiting or running on
the cloud (any number of segments, pauses, lost work), then possibly one uninterrupted run on
reserved GPUs that ends the job. The fluid model (``fluid.py``) lets a long job pause on the pool
during a peak and resume later; here it cannot.

For job j (arrival a, wait budget b, runtime r, GPUs g, due D = a + b + r) whose reserved run starts
at s, finishing by D needs at least s - a - b seconds of cloud work before s, and the run occupies g
GPUs over [s, min(s + r, D)). Price a reserved GPU-second in slot t at lam_t >= 0 and drop the pool
rows; each job then picks its cheapest s (s = D: all cloud):

    f_j(s) = g p_j max(0, s - a - b) + g * integral of lam' over [s, min(s + r, D))

with p_j the cheapest cloud price per GPU-second of its shape over its window's slots and
lam' = min(lam, p_j) (a job can always swap a reserved second for a cloud second at p_j, so its real
cost is never below f_j at its own s, see docs/evaluation.md). For every lam >= 0,

    L(lam) = sum over jobs of min over s of f_j(s)  -  sum over slots of lam_t x reserved GPUs x slot_s

is below the cloud $ of every such schedule (weak duality). f_j is piecewise linear in s with breaks
where s or the run's end crosses a slot boundary, and at s = a + b, so its minimum over [a, D] is at
one of those points: the minimum is exact, not sampled.

The prices lam come from a time-indexed LP (``solve_prices``): the same model with starts at block
boundaries and the pool rows per block of k slots, solved by HiGHS; any lam gives a valid bound.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import highspy
import numpy as np

from burster.eval.fluid import FloatArray, Fluid, IntArray
from burster.eval.instance import Instance
from burster.eval.lp import quiet_highs
from burster.eval.splits import split_gains

MAX_CANDIDATES = 2_000_000  # start candidates of L(lam) (about 0.3 s each): beyond, the bound is skipped
MAX_NONZEROS = 400_000  # coverage entries of the price LP (about 2-4 s of HiGHS on the 2-core machine)
BLOCK_CHOICES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 36, 48, 72, 96, 144, 288)


@dataclass(frozen=True)
class RunJobs:
    """Jobs that may use the pool, identical ones merged (``count``); times in seconds, prices per GPU-second."""

    arrival: FloatArray
    budget: FloatArray
    runtime: FloatArray
    gpus: FloatArray
    price: FloatArray  # cheapest cloud USD per GPU-second of work over the window's slots (inf: none)
    count: FloatArray

    @property
    def due(self) -> FloatArray:
        return np.asarray(self.arrival + self.budget + self.runtime)


@dataclass(frozen=True)
class RunBound:
    usd: float  # L(lam) of the jobs given, without the jobs that cannot use the pool
    status: str
    block_slots: int
    # split_gain_usd[p]: what L(lam) falls by when p jobs may split their reserved run (``splits.py``)
    split_gain_usd: tuple[float, ...] = (0.0,)


def run_jobs(instance: Instance, f: Fluid, which: np.ndarray) -> RunJobs:
    """The jobs selected by ``which`` (indices into ``instance.jobs``), merged when identical."""
    idx = np.flatnonzero(which)
    jobs = instance.jobs
    arrival = np.array([jobs[i].arrival_s for i in idx], dtype=np.float64)
    budget = np.array([jobs[i].wait_budget_s for i in idx], dtype=np.float64)
    runtime = np.array([jobs[i].runtime_s for i in idx], dtype=np.float64)
    gpus = np.array([jobs[i].gpus for i in idx], dtype=np.float64)
    price = window_min_price(f, idx) / 3600.0
    keys = np.stack([arrival, budget, runtime, gpus, price], axis=1)
    if len(keys) == 0:
        z = np.zeros(0)
        return RunJobs(z, z, z, z, z, z)
    uniq, inverse = np.unique(keys, axis=0, return_inverse=True)
    count = np.bincount(inverse.reshape(-1), minlength=len(uniq)).astype(np.float64)
    return RunJobs(uniq[:, 0], uniq[:, 1], uniq[:, 2], uniq[:, 3], uniq[:, 4], count)


def window_min_price(f: Fluid, idx: IntArray) -> FloatArray:
    """Per job (indices into the fluid model): the cheapest cloud price of its shape over its slots."""
    out = np.full(len(idx), np.inf)
    for s in np.unique(f.shape[idx]):
        mine = np.flatnonzero(f.shape[idx] == s)
        row = np.append(f.price[s], np.inf)
        j = idx[mine]
        out[mine] = _range_min(row, f.first[j], f.last[j])
    return out


def _range_min(row: FloatArray, lo: IntArray, hi: IntArray) -> FloatArray:
    """min(row[lo:hi + 1]) for each pair, by a sparse table (O(n log n) build, O(1) per query)."""
    table = [row]
    span = 1
    while 2 * span <= len(row):
        prev = table[-1]
        table.append(np.minimum(prev[:-span], prev[span:]))
        span *= 2
    length = hi - lo + 1
    level = np.floor(np.log2(np.maximum(length, 1))).astype(np.int64)
    out = np.empty(len(lo))
    for k in np.unique(level):
        sel = level == k
        t = table[k]
        out[sel] = np.minimum(t[lo[sel]], t[hi[sel] - (1 << k) + 1])
    return out


def _candidates(j: RunJobs, step: float) -> tuple[IntArray, FloatArray]:
    """Per job: start times where its f_j may turn (a, a + b, D, multiples of ``step`` in (a, D), and
    multiples of ``step`` minus r in (a, a + b)). Returns (job of each candidate, start)."""
    a, b, r, d = j.arrival, j.budget, j.runtime, j.due
    k0 = np.floor(a / step).astype(np.int64) + 1
    n1 = np.maximum(np.ceil(d / step - 1e-9).astype(np.int64) - k0, 0)
    k1 = np.floor((a + r) / step).astype(np.int64) + 1
    n2 = np.maximum(np.ceil(d / step - 1e-9).astype(np.int64) - k1, 0)
    n = len(a)
    owner = [np.arange(n), np.arange(n), np.arange(n)]
    start = [a, a + b, d]
    for k, cnt, shift in ((k0, n1, np.zeros(n)), (k1, n2, r)):
        o = np.repeat(np.arange(n), cnt)
        offs = np.arange(len(o)) - np.repeat(np.cumsum(cnt) - cnt, cnt)
        owner.append(o)
        start.append((k[o] + offs) * step - shift[o])
    own = np.concatenate(owner)
    st = np.clip(np.concatenate(start), a[own], d[own])
    return own, st


def lagrangian_usd(j: RunJobs, lam: FloatArray, slot_s: float, reserved_gpus: int) -> float:
    """L(lam) for per-slot reserved prices ``lam`` (USD per GPU-second): a valid bound for any lam >= 0."""
    return _lagrangian(j, lam, slot_s, reserved_gpus)[0]


def job_minima(j: RunJobs, lam: FloatArray, slot_s: float) -> FloatArray:
    """Per (merged) job: min over s of f_j(s) at prices ``lam`` (one job of its ``count``)."""
    return _lagrangian(j, lam, slot_s, 0)[1]


def _lagrangian(j: RunJobs, lam: FloatArray, slot_s: float, reserved_gpus: int) -> tuple[float, FloatArray]:
    """L(lam) and each job's min f_j."""
    if len(j.arrival) == 0:
        return 0.0, np.zeros(0)
    slots = len(lam)
    finite = j.price[np.isfinite(j.price)]
    top = float(finite.max()) if len(finite) else 0.0
    lam = np.clip(lam, 0.0, top)  # above every p_j a price changes no job's choice, only the penalty
    classes, cls = np.unique(np.minimum(j.price, top), return_inverse=True)
    clipped = np.minimum(lam[None, :], classes[:, None])  # (classes, slots)
    prefix = np.concatenate([np.zeros((len(classes), 1)), np.cumsum(clipped * slot_s, axis=1)], axis=1)
    own, s = _candidates(j, slot_s)
    a, b, r, d = j.arrival[own], j.budget[own], j.runtime[own], j.due[own]
    e = np.where(s <= a + b, np.minimum(s + r, d), d)
    c = cls.reshape(-1)[own]

    def integral(x: FloatArray) -> FloatArray:
        k = np.minimum(np.floor(x / slot_s).astype(np.int64), slots - 1)
        return np.asarray(prefix[c, k] + clipped[c, k] * (x - k * slot_s))

    cloud_s = np.maximum(s - a - b, 0.0)
    p = j.price[own]
    cloud = np.where(cloud_s > 0, p * np.where(np.isfinite(p), cloud_s, 1.0), 0.0)
    cost = j.gpus[own] * (cloud + integral(e) - integral(s))
    order = np.argsort(own, kind="stable")
    own_sorted = own[order]
    first = np.flatnonzero(np.concatenate(([True], own_sorted[1:] != own_sorted[:-1])))
    best = np.minimum.reduceat(cost[order], first)
    if not np.all(np.isfinite(best)):
        return float("-inf"), best
    return float((j.count * best).sum() - reserved_gpus * slot_s * lam.sum()), best


def _lp_columns(j: RunJobs, block_s: float) -> tuple[IntArray, FloatArray]:
    """Start candidates of the price LP: the arrival and every block boundary in (a, D), plus s = D."""
    a, d = j.arrival, j.due
    k0 = np.floor(a / block_s).astype(np.int64) + 1
    cnt = np.maximum(np.ceil(d / block_s - 1e-9).astype(np.int64) - k0, 0)
    n = len(a)
    o = np.repeat(np.arange(n), cnt)
    offs = np.arange(len(o)) - np.repeat(np.cumsum(cnt) - cnt, cnt)
    own = np.concatenate([np.arange(n), o, np.arange(n)])
    start = np.concatenate([a, (k0[o] + offs) * block_s, d])
    return own, start


def lp_nonzeros(j: RunJobs, k: int, slot_s: float) -> int:
    """Coverage entries of the price LP with blocks of ``k`` slots."""
    block_s = k * slot_s
    own, s = _lp_columns(j, block_s)
    e = np.where(s <= j.arrival[own] + j.budget[own], s + j.runtime[own], j.due[own])
    blocks = np.where(e > s, np.ceil(e / block_s - 1e-9) - np.floor(s / block_s), 0)
    return int((blocks * 1).sum())


def solve_prices(j: RunJobs, slots: int, slot_s: float, reserved_gpus: int, *, k: int | None = None,
                 max_nonzeros: int = MAX_NONZEROS) -> tuple[FloatArray, str, int, float]:
    """Per-slot reserved prices (USD per GPU-second) from the time-indexed LP on blocks of ``k`` slots
    (default: the finest with at most ``max_nonzeros`` coverage entries), its status, k and the LP's value."""
    if k is None:
        k = next((k for k in BLOCK_CHOICES if lp_nonzeros(j, k, slot_s) <= max_nonzeros), BLOCK_CHOICES[-1])
    block_s = k * slot_s
    blocks = -(-slots // k)
    own, s = _lp_columns(j, block_s)
    a, b, r, d = j.arrival[own], j.budget[own], j.runtime[own], j.due[own]
    e = np.where(s <= a + b, s + r, d)
    p = j.price[own]
    cloud_s = np.maximum(s - a - b, 0.0)
    keep = (cloud_s == 0) | np.isfinite(p)
    own, s, e, cloud_s, p = own[keep], s[keep], e[keep], cloud_s[keep], p[keep]
    cost = j.gpus[own] * np.multiply(p, cloud_s, out=np.zeros_like(cloud_s), where=cloud_s > 0)  # (p may be inf at 0 s)
    n_cols = len(own)
    b0 = np.floor(s / block_s).astype(np.int64)
    nb = np.where(e > s, np.ceil(e / block_s - 1e-9).astype(np.int64) - b0, 0)
    col = np.repeat(np.arange(n_cols), nb)
    offs = np.arange(len(col)) - np.repeat(np.cumsum(nb) - nb, nb)
    blk = b0[col] + offs
    overlap = np.minimum(e[col], (blk + 1) * block_s) - np.maximum(s[col], blk * block_s)
    n_jobs = len(j.arrival)
    # column-wise: row own (job), then its blocks (rows n_jobs + block)
    per_col = 1 + nb
    start = np.concatenate(([0], np.cumsum(per_col)))
    index = np.empty(int(start[-1]), dtype=np.int64)
    value = np.empty(int(start[-1]))
    head = start[:-1]
    index[head] = own
    value[head] = 1.0
    pos = np.repeat(head + 1, nb) + offs
    index[pos] = n_jobs + np.minimum(blk, blocks - 1)
    value[pos] = j.gpus[own[col]] * overlap / 3600.0  # GPU-hours, for better scaling
    block_len = np.minimum((np.arange(blocks) + 1) * block_s, slots * slot_s) - np.arange(blocks) * block_s
    # a job can always swap a reserved GPU-second for a cloud one at its p_j: the LP may buy pool capacity
    # at the cheapest p_j (keeps its duals <= every p_j, where L(lam) does not clip them)
    finite = j.price[np.isfinite(j.price)]
    buy = float(finite.min()) * 3600.0 if len(finite) else np.inf
    n_buy = blocks if np.isfinite(buy) else 0
    cost = np.concatenate([cost, np.full(n_buy, buy)])
    start = np.concatenate([start, start[-1] + np.arange(1, n_buy + 1)])
    index = np.concatenate([index, n_jobs + np.arange(n_buy)])
    value = np.concatenate([value, np.full(n_buy, -1.0)])
    n_cols += n_buy
    lp = highspy.HighsLp()
    lp.num_col_ = n_cols
    lp.num_row_ = n_jobs + blocks
    lp.col_cost_ = cost
    lp.col_lower_ = np.zeros(n_cols)
    lp.col_upper_ = np.full(n_cols, np.inf)
    lp.row_lower_ = np.concatenate([j.count, np.full(blocks, -np.inf)])
    lp.row_upper_ = np.concatenate([j.count, reserved_gpus * block_len / 3600.0])
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = start.astype(np.int32)
    lp.a_matrix_.index_ = index.astype(np.int32)
    lp.a_matrix_.value_ = value
    h = quiet_highs()
    h.passModel(lp)
    h.run()
    status = h.getModelStatus()
    if status != highspy.HighsModelStatus.kOptimal:
        return np.zeros(slots), h.modelStatusToString(status).lower(), k, 0.0
    duals = np.asarray(h.getSolution().row_dual, dtype=np.float64)[n_jobs:]
    per_gpu_s = np.maximum(-duals, 0.0) / 3600.0
    return np.repeat(per_gpu_s, k)[:slots], "optimal", k, float(h.getInfo().objective_function_value)


def run_bound(instance: Instance, f: Fluid, which: np.ndarray, *, block_slots: int | None = None) -> RunBound:
    """L(lam) of the selected jobs at the price LP's duals: with blocks of ``block_slots`` slots, or the
    better of the finest block size within ``MAX_NONZEROS`` and the next coarser one."""
    j = run_jobs(instance, f, which)
    if len(j.arrival) == 0:
        return RunBound(0.0, "optimal", 1)
    if len(_candidates(j, f.slot_s)[0]) > MAX_CANDIDATES:
        return RunBound(float("-inf"), f"skipped: over {MAX_CANDIDATES:,} start candidates", 0)
    if block_slots is None:
        k = next((k for k in BLOCK_CHOICES if lp_nonzeros(j, k, f.slot_s) <= MAX_NONZEROS), BLOCK_CHOICES[-1])
        tries = [k, *[c for c in BLOCK_CHOICES if c > k][:1]]
    else:
        tries = [block_slots]
    best, best_lam = RunBound(float("-inf"), "not solved", tries[0]), np.zeros(f.slots)
    for k in tries:
        lam, status, _, _ = solve_prices(j, f.slots, f.slot_s, instance.reserved_gpus, k=k)
        value = lagrangian_usd(j, lam, f.slot_s, instance.reserved_gpus)
        if value > best.usd:
            best, best_lam = RunBound(value, status, k), lam
    if not np.isfinite(best.usd):
        return best
    return replace(best, split_gain_usd=split_gains(j, best_lam, f.slot_s, job_minima(j, best_lam, f.slot_s)))
