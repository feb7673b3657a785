"""An offline evaluation instance: a trace's jobs, the reserved pool, the cloud catalog and spot availability.

Everything is known in advance (clairvoyant): arrivals, runtimes and when each spot offering is up.
Times are seconds from the simulation start (the same instant ``burster.app.build_simulation`` starts
its clock at), so spot availability maps exactly as in the simulator (``series_for``, offset from start).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from burster.errors import InputError
from burster.model import Demand, JobClass, Market, Offering
from providers.sim.cloud import NOTICE_S
from providers.sim.spot import SpotSeries, series_for


def default_wait_budget_s(job: Demand) -> float:
    """The issue's p95 wait target for one job: max(600 s, a quarter of its runtime)."""
    return max(600.0, 0.25 * job.est_runtime_s)


def bracket_wait_budget_s(job: Demand) -> float:
    """The wait budget the bracket holds a job to: the p95 target's, and for a strict-deadline job no
    more than its deadline slack (deadline - submission - runtime, at least 0), since the policies are
    held to zero hard misses: a schedule that starts a strict job later misses its deadline."""
    budget = default_wait_budget_s(job)
    if job.job_class is JobClass.STRICT and job.deadline is not None:
        slack = (job.deadline - job.submitted_at).total_seconds() - job.remaining_s
        budget = min(budget, max(0.0, slack))
    return budget


@dataclass(frozen=True)
class EvalJob:
    """One job as the bound sees it; ``nodes`` > 1 is a gang of ``gpus / nodes`` GPUs per node."""

    job_id: str
    arrival_s: float
    gpus: int
    runtime_s: float
    gpu_model: str
    wait_budget_s: float
    nodes: int = 1

    def __post_init__(self) -> None:
        if not (self.runtime_s > 0 and self.gpus > 0):
            raise InputError(f"job {self.job_id}: an evaluation job needs runtime_s > 0 and gpus > 0 "
                             f"(got {self.runtime_s} s, {self.gpus} GPUs); leave out jobs with no work")

    @property
    def due_s(self) -> float:
        """Latest feasible finish: started at the end of its wait budget, then run to completion."""
        return self.arrival_s + self.wait_budget_s + self.runtime_s

    @property
    def work_gpu_s(self) -> float:
        return self.gpus * self.runtime_s

    @property
    def gpus_per_node(self) -> int:
        return -(-self.gpus // self.nodes)


@dataclass(frozen=True)
class Instance:
    """Jobs, reserved pool and cloud offerings; ``spot_series`` maps a spot offering key to its series.

    A spot offering with no series (or an on-demand one) is always available, as in the simulator.
    """

    jobs: tuple[EvalJob, ...]
    reserved_gpus: int
    reserved_model: str
    offerings: tuple[Offering, ...]
    spot_series: Mapping[str, SpotSeries] = field(compare=False)
    horizon_s: float
    slot_s: float
    # How long a spot node keeps running after its series drops (the interruption notice).
    notice_s: float = max(NOTICE_S.values())
    # GPUs per reserved node: the clairvoyant schedule places a gang member's GPUs on one node, as the
    # simulated pool does (0: the pool is one count of GPUs; the lower bound never looks at nodes)
    node_gpus: int = 0

    @property
    def slots(self) -> int:
        return max(1, math.ceil(self.horizon_s / self.slot_s - 1e-9))

    def spot_up(self, offering: Offering, offset_s: float) -> bool:
        """Whether ``offering`` can be launched at ``offset_s`` (on-demand: always)."""
        s = self.spot_series.get(offering.key) if offering.market is Market.SPOT else None
        return s is None or s.available(offset_s)

    def up_throughout(self, offering: Offering, start_s: float, end_s: float) -> bool:
        """Whether ``offering`` is up for the whole of [start_s, end_s) (a spot run there is never preempted)."""
        s = self.spot_series.get(offering.key) if offering.market is Market.SPOT else None
        if s is None:
            return True
        return s.available(start_s) and s.next_drop(start_s) >= end_s

    def up_anytime(self, offering: Offering, start_s: float, end_s: float) -> bool:
        """Whether ``offering`` is up at some instant of [start_s, end_s)."""
        s = self.spot_series.get(offering.key) if offering.market is Market.SPOT else None
        if s is None:
            return True
        first = math.floor(start_s / s.gap_s)
        last = math.ceil(end_s / s.gap_s)
        n = len(s.data)
        return any(s.data[k % n] > 0 for k in range(first, max(last, first + 1)))


def build_instance(jobs: Sequence[Demand], *, start: datetime, pool_gpus: int, pool_model: str,
                   offerings: Sequence[Offering], series: Sequence[SpotSeries], slot_s: float = 300.0,
                   wait_budget: Callable[[Demand], float] = bracket_wait_budget_s,
                   pool_node_gpus: int = 0) -> Instance:
    """The evaluation instance of ``jobs`` replayed from ``start`` (jobs with no GPU model get ``pool_model``;
    ``pool_node_gpus``: GPUs per reserved node, 0 to treat the pool as one count of GPUs)."""
    if slot_s <= 0:
        raise InputError(f"slot_s must be > 0 seconds, got {slot_s}")
    if pool_gpus < 0:
        raise InputError(f"pool_gpus must be >= 0, got {pool_gpus}")
    if pool_node_gpus < 0 or (pool_node_gpus and pool_gpus % pool_node_gpus):
        raise InputError(f"pool_gpus ({pool_gpus}) must be whole nodes of pool_node_gpus ({pool_node_gpus}) GPUs")
    out = []
    for d in jobs:
        if d.remaining_s <= 0 or d.gpus <= 0:
            continue  # no work left (a requeued job that had finished its estimate): costs nothing anywhere
        arrival = (d.submitted_at - start).total_seconds()
        if arrival < 0:
            raise InputError(f"job {d.job_id}: submitted at {d.submitted_at.isoformat()}, "
                             f"before the evaluation start {start.isoformat()}")
        budget = float(wait_budget(d))
        if budget < 0 or budget != budget:
            raise InputError(f"job {d.job_id}: wait budget must be >= 0 seconds, got {budget}")
        out.append(EvalJob(d.job_id, arrival, d.gpus, d.remaining_s, d.gpu_model or pool_model, budget,
                           max(1, d.nodes)))
    offers = tuple(o for o in offerings if o.available and o.market is not Market.RESERVED)
    spot: dict[str, SpotSeries] = {}
    for o in offers:
        if o.market is Market.SPOT and (s := series_for(o, series)) is not None:
            spot[o.key] = s
    horizon = max((j.due_s for j in out), default=slot_s)
    return Instance(tuple(out), pool_gpus, pool_model, offers, spot, horizon, slot_s, node_gpus=pool_node_gpus)


def with_budgets(instance: Instance, budgets: Mapping[str, float]) -> Instance:
    """The same instance with the wait budgets of the jobs named in ``budgets`` replaced."""
    jobs = tuple(EvalJob(j.job_id, j.arrival_s, j.gpus, j.runtime_s, j.gpu_model,
                         budgets.get(j.job_id, j.wait_budget_s), j.nodes) for j in instance.jobs)
    horizon = max((j.due_s for j in jobs), default=instance.slot_s)
    return Instance(jobs, instance.reserved_gpus, instance.reserved_model, instance.offerings,
                    instance.spot_series, horizon, instance.slot_s, instance.notice_s, instance.node_gpus)
