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


def brute_force_runs_usd(instance: Instance, grid_s: float) -> float:
    """The reserved-run model's optimum (``runs.py``) over reserved starts on a grid, for at most 4 jobs.

    A job that cannot use the pool is priced as in the fluid model (the bound adds that part as is).

    Each job runs entirely on the cloud, or starts its one uninterrupted reserved run at a multiple of
    ``grid_s`` in [arrival, due) after max(0, start - arrival - budget) seconds of cloud work at the
    cheapest price of its window (the model's pricing), the run lasting until min(start + runtime, due);
    reserved GPUs in use never exceed the pool at any instant. Every combination is tried. Restricted to
    the grid this is at least the model's optimum over all starts, so the Lagrangian bound must not
    exceed it; the hypothesis tests use data on the grid.
    """
    from burster.eval.runs import window_min_price

    f = build_fluid(instance)
    jobs = instance.jobs
    if len(jobs) > MAX_JOBS:
        raise ValueError(f"brute force takes at most {MAX_JOBS} jobs, got {len(jobs)}")
    import numpy as np

    price = window_min_price(f, np.arange(len(jobs))) / 3600.0
    options: list[list[tuple[float, float, float]]] = []  # (usd, reserved start, reserved end)
    for i, j in enumerate(jobs):
        shared = bool(f.eligible[i]) and instance.reserved_gpus > 0
        # all on the cloud: at p_j if it could use the pool (the model's s = due), else the fluid's price
        # of its cheapest slots (as the bound prices jobs that cannot use the pool)
        mine = [(j.gpus * j.runtime_s * float(price[i]) if shared else _cloud_only(f, i), 0.0, 0.0)]
        if shared:
            k = math.ceil(j.arrival_s / grid_s - 1e-9)
            while k * grid_s < j.due_s - 1e-9:
                s = k * grid_s
                cloud_s = max(0.0, s - j.arrival_s - j.wait_budget_s)
                usd = j.gpus * cloud_s * float(price[i]) if cloud_s > 0 else 0.0
                mine.append((usd, s, min(s + j.runtime_s, j.due_s)))
                k += 1
        options.append([o for o in mine if math.isfinite(o[0])])
    best = math.inf
    for combo in itertools.product(*options):
        usd = sum(o[0] for o in combo)
        if usd >= best:
            continue
        events = sorted((t, d) for n, o in enumerate(combo) if o[2] > o[1]
                        for t, d in ((o[1], jobs[n].gpus), (o[2], -jobs[n].gpus)))
        used, ok = 0, True
        for _, d in sorted(events, key=lambda e: (e[0], e[1])):
            used += d
            if used > instance.reserved_gpus:
                ok = False
                break
        if ok:
            best = usd
    return best


def _cloud_only(f: Fluid, i: int) -> float:
    """Job i on the cloud alone in the fluid model: its cheapest slots first, at most its cap per slot."""
    prices = sorted(float(p) for p in f.price[f.shape[i], f.first[i]:f.last[i] + 1])
    left, usd = float(f.work_gpu_h[i]), 0.0
    for p in prices:
        take = min(left, float(f.cap_gpu_h[i]))
        if take <= 0:
            break
        usd += take * p
        left -= take
    return usd if left <= 1e-12 else math.inf
