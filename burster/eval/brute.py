"""Exact optimum of the per-slot fluid model on tiny instances, by exhaustive search (no LP solver).

The fluid model is a min-cost flow, so with integral data (every job's work, rate cap and the reserved
capacity per slot whole multiples of ``unit`` GPU-hours) it has an integral optimum. This search
enumerates every integral schedule slot by slot: in each slot each job does some units of work, some
of them on reserved GPUs (total within the pool), the rest on the cloud at that slot's price; a job
must finish by the end of its window. Schedules reaching the same remaining work share their cheapest
prefix (dynamic programming over the remaining-work vector), otherwise nothing is pruned.
"""

from __future__ import annotations

import itertools
import math

from burster.eval.fluid import Fluid, build_fluid
from burster.eval.instance import Instance

MAX_JOBS = 4
MAX_SLOTS = 6


def _units(value: float, unit: float, what: str) -> int:
    n = round(value / unit)
    if abs(n * unit - value) > 1e-9 * max(1.0, abs(value)):
        raise ValueError(f"{what} = {value} GPU-hours is not a whole number of {unit}-GPU-hour units")
    return n


def brute_force_usd(instance: Instance, unit_gpu_h: float) -> float:
    """The fluid model's optimum (USD; inf if infeasible) for at most 4 jobs and 6 slots."""
    f = build_fluid(instance)
    if len(f.first) > MAX_JOBS or f.slots > MAX_SLOTS:
        raise ValueError(f"brute force takes at most {MAX_JOBS} jobs and {MAX_SLOTS} slots, "
                         f"got {len(f.first)} jobs and {f.slots} slots")
    return _search(f, unit_gpu_h)


def _search(f: Fluid, unit: float) -> float:
    n = len(f.first)
    work = [_units(float(w), unit, "work") for w in f.work_gpu_h]
    cap = [_units(float(c), unit, "rate cap") for c in f.cap_gpu_h]
    pool = _units(f.reserved_gpu_h, unit, "reserved capacity")
    best: dict[tuple[int, ...], float] = {tuple(work): 0.0}
    for t in range(f.slots):
        nxt: dict[tuple[int, ...], float] = {}
        for left, usd in best.items():
            for moves in itertools.product(*(_options(f, j, t, left[j], cap[j]) for j in range(n))):
                if sum(r for _, r in moves) > pool:
                    continue
                cost = usd
                for j, (done, res) in enumerate(moves):
                    if done > res:
                        price = float(f.price[f.shape[j], t])
                        cost = math.inf if not math.isfinite(price) else cost + price * (done - res) * unit
                after = tuple(left[j] - moves[j][0] for j in range(n))
                if any(after[j] > 0 and t >= f.last[j] for j in range(n)) or not math.isfinite(cost):
                    continue
                if cost < nxt.get(after, math.inf):
                    nxt[after] = cost
        best = nxt
    return best.get(tuple(0 for _ in range(n)), math.inf)


def _options(f: Fluid, j: int, t: int, left: int, cap: int) -> list[tuple[int, int]]:
    """(units done, of which on reserved GPUs) job j may do in slot t."""
    if not f.first[j] <= t <= f.last[j]:
        return [(0, 0)]
    top = min(cap, left)
    return [(d, r) for d in range(top + 1) for r in range(d + 1 if f.eligible[j] else 1)]
