"""The optimum bracketed: an LP lower bound (fluid relaxation, HiGHS) and a clairvoyant feasible schedule.

Groups of jobs that cannot use the reserved pool are priced in closed form; the others share it in an
LP (``lp.py``) whose size ``groups.plan_lp`` keeps under control. The bound reported is the Lagrangian
value at the LP's capacity duals (``dual.py``): a lower bound by weak duality whatever the solver's
accuracy, equal to the LP optimum when the duals are optimal. See docs/evaluation.md.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace

import numpy as np

from burster.eval.clairvoyant import cloud_gpu_hours, schedule
from burster.eval.dual import lagrangian_usd
from burster.eval.fluid import Fluid, build_fluid
from burster.eval.groups import cloud_only_usd, group_jobs, plan_lp
from burster.eval.instance import Instance
from burster.eval.lp import solve_reserved_lp
from burster.eval.pairs import make_pairs
from burster.eval.runs import run_bound


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
    upper_cloud_gpu_h: float = 0.0  # GPU-hours the clairvoyant schedule runs on the cloud
    # [p]: the lower bound for a schedule that preempted p on-prem jobs (``LowerBound.with_preemptions``)
    lower_by_preemptions: tuple[float, ...] = ()

    @property
    def width(self) -> float:
        """(upper - lower) / upper: how far from optimal a policy at the upper bound can be; 0 when both are 0."""
        if self.upper_usd <= 0:
            return 0.0
        if not math.isfinite(self.upper_usd):
            return 1.0  # some job fits nowhere: no finite upper bound
        return (self.upper_usd - self.lower_usd) / self.upper_usd


@dataclass(frozen=True)
class LowerBound:
    usd: float  # certified: L(lam) at the LP's duals (weak duality), whatever the solver did
    status: str  # "optimal", or why the LP's prices may not be optimal
    block_slots: int  # slots per reserved-capacity row of the LP (1: the exact per-slot model)
    lp_usd: float | None  # the fluid LP's own optimum when it was built on the exact groups, else None
    fluid_usd: float = 0.0  # the fluid model's certified bound
    runs_usd: float | None = None  # the reserved-run bound (``runs.py``), None when not computed
    split_gain_usd: tuple[float, ...] = (0.0,)  # [p]: what the run bound loses when p jobs may split

    def with_preemptions(self) -> tuple[float, ...]:
        """[p]: a lower bound on schedules that preempt at most p on-prem jobs (the reserved-run bound
        assumes none; ``splits.py``); the last entry holds for any more."""
        if self.runs_usd is None:  # the fluid bound alone: valid for every p
            return (self.usd,)
        return tuple(max(self.fluid_usd, self.runs_usd - gain) for gain in self.split_gain_usd)


def lower_bound_usd(instance: Instance, *, block_slots: int | None = None) -> tuple[float, str]:
    """The fluid model's lower bound (USD) and its status ("optimal" when the LP solved to optimality)."""
    b = lower_bound(instance, block_slots=block_slots)
    return b.usd, b.status


def lower_bound(instance: Instance, *, block_slots: int | None = None, reserved_runs: bool = True) -> LowerBound:
    """The better of the fluid bound and the reserved-run bound (``runs.py``), with how it was obtained
    (``block_slots``: force the fluid LP's block size; ``reserved_runs=False``: the fluid bound only)."""
    fl, f, shared, base = _fluid_bound(instance, block_slots)
    if not reserved_runs or not shared.any() or fl.status.startswith("infeasible"):
        return fl
    rb = run_bound(instance, f, shared)
    if not np.isfinite(rb.usd) or base + rb.usd <= fl.usd:
        return replace(fl, runs_usd=None if not np.isfinite(rb.usd) else base + rb.usd)
    return replace(fl, usd=base + rb.usd, status=f"{rb.status} (reserved-run bound, blocks of {rb.block_slots})",
                   runs_usd=base + rb.usd, split_gain_usd=rb.split_gain_usd)


def _fluid_bound(instance: Instance, block_slots: int | None) -> tuple[LowerBound, Fluid, np.ndarray, float]:
    f = build_fluid(instance)
    g = group_jobs(f)
    shared = g.eligible & (f.reserved_gpu_h > 0)
    base, ok = cloud_only_usd(f, g, ~shared)
    job_shared = f.eligible & (f.reserved_gpu_h > 0)
    if not ok:
        return LowerBound(0.0, "infeasible: a job whose GPU model has no cloud offering cannot use the "
                               "reserved pool", 1, None), f, job_shared, base
    if not shared.any():
        return LowerBound(base, "optimal", 1, base, base), f, job_shared, base
    exact = g.subset(shared)
    k, lp_groups = plan_lp(exact, f.slots) if block_slots is None else (block_slots, exact)
    lp_pairs = make_pairs(lp_groups.first, lp_groups.last, lp_groups.shape, f.price, k)
    lp = solve_reserved_lp(lp_pairs, lp_groups.work_gpu_h, lp_groups.cap_gpu_h, f.reserved_gpu_h, f.slots)
    pairs = lp_pairs if lp_groups is exact else make_pairs(exact.first, exact.last, exact.shape, f.price, k)
    value = lagrangian_usd(pairs, exact.work_gpu_h, exact.cap_gpu_h, lp.reserved_price, f.reserved_gpu_h, f.slots)
    if not np.isfinite(value):
        return LowerBound(0.0, "infeasible: some job cannot finish within its window", k, None), f, job_shared, base
    status = lp.status if lp_groups is exact else f"{lp.status} (prices from a coarser LP)"
    lp_usd = base + lp.value if lp_groups is exact and lp.status == "optimal" else None
    usd = max(base + value, 0.0)
    return LowerBound(usd, status, k, lp_usd, usd), f, job_shared, base


def bracket(instance: Instance, *, block_slots: int | None = None) -> Bracket:
    """Lower bound by the LP, upper bound by the clairvoyant schedule."""
    t0 = time.perf_counter()
    low = lower_bound(instance, block_slots=block_slots)
    t1 = time.perf_counter()
    plan = schedule(instance)
    t2 = time.perf_counter()
    return Bracket(low.usd, sum(a.usd for a in plan), t1 - t0, instance.slots, low.status, low.block_slots,
                   t2 - t1, cloud_gpu_hours(instance, plan), low.with_preemptions())
