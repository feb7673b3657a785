"""The optimum bracketed: an LP lower bound (fluid relaxation, HiGHS) and a clairvoyant feasible schedule.

Jobs with the same slot window, node shape and reserved eligibility share LP variables. Past
``MAX_PAIRS`` (group, slot) pairs the reserved capacity is enforced per block of consecutive slots
instead of per slot, which is a further relaxation (still a valid lower bound; see
docs/evaluation.md). Groups that cannot use the reserved pool are priced in closed form.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from burster.eval.clairvoyant import clairvoyant_usd
from burster.eval.dual import lagrangian_usd
from burster.eval.fluid import FloatArray, Fluid, IntArray, build_fluid
from burster.eval.instance import Instance
from burster.eval.lp import solve_reserved_lp
from burster.eval.pairs import make_pairs

MAX_PAIRS = 20_000  # (group, block) pairs in the LP: about 2-3 s of HiGHS on this 2-core machine
BLOCK_CHOICES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 36, 48, 72, 96, 144, 288)


@dataclass(frozen=True)
class Bracket:
    """Lower and upper bounds on the optimal cloud cost of one instance, in USD."""

    lower_usd: float
    upper_usd: float
    solve_s: float  # wall seconds of the lower bound (model build + LP)
    slots: int
    status: str  # "optimal", or why the lower bound is not
    block_slots: int = 1  # slots per reserved-capacity block of the LP (1: exact per-slot model)
    upper_s: float = 0.0  # wall seconds of the clairvoyant schedule

    @property
    def width(self) -> float:
        """(upper - lower) / upper: how far from optimal a policy at the upper bound can be; 0 when both are 0."""
        if self.upper_usd <= 0:
            return 0.0
        return (self.upper_usd - self.lower_usd) / self.upper_usd


@dataclass(frozen=True)
class Groups:
    """Jobs merged by (first slot, last slot, price shape, eligibility): sums of work and rate caps."""

    first: IntArray
    last: IntArray
    shape: IntArray
    eligible: np.ndarray
    work_gpu_h: FloatArray
    cap_gpu_h: FloatArray


def group_jobs(f: Fluid) -> Groups:
    if len(f.first) == 0:
        empty = np.zeros(0, dtype=np.int64)
        return Groups(empty, empty, empty, np.zeros(0, dtype=np.bool_), np.zeros(0), np.zeros(0))
    keys = np.stack([f.first, f.last, f.shape, f.eligible.astype(np.int64)], axis=1)
    uniq, inverse = np.unique(keys, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    n = len(uniq)
    return Groups(uniq[:, 0], uniq[:, 1], uniq[:, 2], uniq[:, 3].astype(np.bool_),
                  np.bincount(inverse, weights=f.work_gpu_h, minlength=n).astype(np.float64),
                  np.bincount(inverse, weights=f.cap_gpu_h, minlength=n).astype(np.float64))


def cloud_only_usd(f: Fluid, g: Groups, which: np.ndarray) -> tuple[float, bool]:
    """Cheapest cloud cost of the selected groups, each filling its cheapest slots (no reserved GPUs)."""
    total, feasible = 0.0, True
    for i in np.flatnonzero(which):
        prices = np.sort(f.price[g.shape[i], g.first[i]:g.last[i] + 1])
        cap, work = g.cap_gpu_h[i], g.work_gpu_h[i]
        full = int(work // cap) if cap > 0 else 0
        full = min(full, len(prices))
        rest = work - full * cap
        usd = cap * float(prices[:full].sum())
        if rest > 1e-12 * max(work, 1.0):
            if full >= len(prices) or not np.isfinite(prices[full]):
                feasible = False
                continue
            usd += rest * float(prices[full])
        if not np.isfinite(usd):
            feasible = False
            continue
        total += usd
    return total, feasible


def widened(g: Groups, k: int, slots: int) -> Groups:
    """Groups merged by (first block, last block, shape), windows widened to whole blocks (for prices only)."""
    first = (g.first // k) * k
    last = np.minimum((g.last // k) * k + k - 1, slots - 1)
    keys = np.stack([first, last, g.shape], axis=1)
    uniq, inverse = np.unique(keys, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    n = len(uniq)
    return Groups(uniq[:, 0], uniq[:, 1], uniq[:, 2], np.ones(n, dtype=np.bool_),
                  np.bincount(inverse, weights=g.work_gpu_h, minlength=n).astype(np.float64),
                  np.bincount(inverse, weights=g.cap_gpu_h, minlength=n).astype(np.float64))


def n_pairs(g: Groups, k: int) -> int:
    return int((g.last // k - g.first // k + 1).sum())


def plan_lp(g: Groups, slots: int, max_pairs: int | None = None) -> tuple[int, Groups]:
    """The finest block size whose LP stays under ``max_pairs`` pairs, with exact groups if they fit."""
    max_pairs = MAX_PAIRS if max_pairs is None else max_pairs
    for k in BLOCK_CHOICES:
        if n_pairs(g, k) <= max_pairs:
            return k, g
        coarse = widened(g, k, slots)
        if n_pairs(coarse, k) <= max_pairs:
            return k, coarse
    k = BLOCK_CHOICES[-1]
    return k, widened(g, k, slots)


def lower_bound_usd(instance: Instance, *, block_slots: int | None = None) -> tuple[float, str]:
    """The fluid model's lower bound (USD) and its status ("optimal" when the LP solved to optimality)."""
    value, status, _ = lower_bound_detail(instance, block_slots=block_slots)
    return value, status


def lower_bound_detail(instance: Instance, *, block_slots: int | None = None) -> tuple[float, str, int]:
    """(value, status, block slots used); the value is L(lam) of the LP's duals, valid whatever the solver did."""
    f = build_fluid(instance)
    g = group_jobs(f)
    shared = g.eligible & (f.reserved_gpu_h > 0)
    base, ok = cloud_only_usd(f, g, ~shared)
    if not ok:
        return 0.0, "infeasible: a job of a GPU model with no cloud offering cannot use the reserved pool", 1
    if not shared.any():
        return base, "optimal", 1
    exact = Groups(g.first[shared], g.last[shared], g.shape[shared], g.eligible[shared], g.work_gpu_h[shared],
                   g.cap_gpu_h[shared])
    if block_slots is None:
        k, lp_groups = plan_lp(exact, f.slots)
    else:
        k, lp_groups = block_slots, exact
    lp_pairs = make_pairs(lp_groups.first, lp_groups.last, lp_groups.shape, f.price, k)
    lp = solve_reserved_lp(lp_pairs, lp_groups.work_gpu_h, lp_groups.cap_gpu_h, f.reserved_gpu_h, f.slots)
    pairs = lp_pairs if lp_groups is exact else make_pairs(exact.first, exact.last, exact.shape, f.price, k)
    value = lagrangian_usd(pairs, exact.work_gpu_h, exact.cap_gpu_h, lp.reserved_price, f.reserved_gpu_h, f.slots)
    if not np.isfinite(value):
        return 0.0, "infeasible: some job cannot finish within its window", k
    status = lp.status if lp_groups is exact else f"{lp.status} (prices from a coarser LP)"
    return max(base + value, 0.0), status, k


def bracket(instance: Instance, *, block_slots: int | None = None) -> Bracket:
    """Lower bound by the LP, upper bound by the clairvoyant schedule."""
    t0 = time.perf_counter()
    lower, status, k = lower_bound_detail(instance, block_slots=block_slots)
    t1 = time.perf_counter()
    upper = clairvoyant_usd(instance)
    t2 = time.perf_counter()
    return Bracket(lower, upper, t1 - t0, instance.slots, status, k, t2 - t1)
