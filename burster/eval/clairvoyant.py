"""A clairvoyant feasible schedule: the upper bound of the bracket.

Every job gets a cloud plan first (``cloudplan.py``: moving between offerings before spot drops, or
one unbroken run). Then jobs are considered in one order (arrival; most cloud USD first; most cloud
USD per GPU-hour first; or, guided by an LP of this model (``lpguide.py``), most LP reserved share x
cloud USD first) and each runs on reserved GPUs when they are free for its whole runtime from some
start within its wait budget (the LP's start when the LP guides and the pool is free there, else the
earliest such start, on a ``grid_s`` capacity profile where a run occupies every cell it touches),
else by its cloud plan. The cheapest order wins. Every job starts
within its wait budget, runs without a pause and never over-commits the reserved pool
(``verify.py`` checks all of it).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from burster.eval.cloudplan import CloudPlan, Shape, hopping_plans, shape_of, single_run_plans
from burster.eval.instance import EvalJob, Instance
from burster.eval.lpguide import Guide, lp_guide
from burster.eval.timeline import Timeline

RESERVED = "reserved"
ORDERS = ("arrival", "cost", "lp")  # also "value": most cloud USD per GPU-hour first


@dataclass(frozen=True)
class Assignment:
    """Where and when one job runs: on reserved GPUs, or on cloud ``segments`` (start, end, offering key)."""

    job_id: str
    start_s: float
    end_s: float
    gpus: int
    where: str  # "reserved", "cloud", or "" when it fits nowhere (infinite cost)
    segments: tuple[tuple[float, float, str], ...] = ()
    usd: float = 0.0


class _Profile:
    """Reserved GPUs in use per grid cell."""

    def __init__(self, capacity: int, horizon_s: float, grid_s: float) -> None:
        self.capacity, self.grid_s = capacity, grid_s
        self.used = np.zeros(math.ceil(horizon_s / grid_s) + 2, dtype=np.int64)

    def free(self, job: EvalJob, start_s: float) -> bool:
        """Whether the job's GPUs are free in every cell its run from ``start_s`` touches."""
        c0 = int(start_s // self.grid_s)
        c1 = max(c0 + 1, math.ceil((start_s + job.runtime_s) / self.grid_s - 1e-9))
        self._grow(c1)
        return bool(job.gpus <= self.capacity and not (self.used[c0:c1] > self.capacity - job.gpus).any())

    def earliest(self, job: EvalJob) -> float | None:
        """Earliest start in [arrival, arrival + budget] (arrival + whole grid steps) with GPUs free throughout."""
        if job.gpus > self.capacity:
            return None
        g = self.grid_s
        c0 = int(job.arrival_s // g)
        steps = int(job.wait_budget_s // g)
        width = math.ceil((job.arrival_s - c0 * g + job.runtime_s) / g - 1e-9) or 1
        self._grow(c0 + steps + width)
        blocked = self.used[c0:c0 + steps + width] > self.capacity - job.gpus
        if not blocked.any():
            return job.arrival_s
        cs = np.concatenate(([0], np.cumsum(blocked)))
        free = np.flatnonzero(cs[width:width + steps + 1] - cs[:steps + 1] == 0)
        return None if len(free) == 0 else job.arrival_s + int(free[0]) * g

    def take(self, start_s: float, end_s: float, gpus: int) -> None:
        c0 = int(start_s // self.grid_s)
        c1 = max(c0 + 1, math.ceil(end_s / self.grid_s - 1e-9))
        self._grow(c1)
        self.used[c0:c1] += gpus

    def _grow(self, cells: int) -> None:
        if cells > len(self.used):
            self.used = np.concatenate([self.used, np.zeros(cells - len(self.used), dtype=np.int64)])


def schedule(instance: Instance, *, grid_s: float = 60.0, boot_s: float = 0.0, migrate: bool = True,
             orders: Sequence[str] = ORDERS) -> list[Assignment]:
    """The cheapest of the clairvoyant schedules built in each of ``orders``.

    ``migrate``: cloud jobs may move between offerings before spot drops (else one unbroken run each);
    ``boot_s``: seconds every cloud segment is billed beyond its run (0: the model's billing only).
    """
    timelines: dict[Shape, Timeline] = {}
    if migrate:
        plans, timelines = hopping_plans(instance, boot_s)
    else:
        plans = single_run_plans(instance, boot_s)
    guide = lp_guide(instance, [p.usd for p in plans]) if "lp" in orders else None
    best: list[Assignment] = []
    best_usd = math.inf
    for order in orders:
        if order == "lp" and guide is None:
            continue  # the LP is over its size cap (or failed): the other orders only
        out = _place(instance, plans, timelines, order, grid_s, guide)
        usd = sum(a.usd for a in out)
        if not best or usd < best_usd:
            best, best_usd = out, usd
    return best


def _order(instance: Instance, plans: list[CloudPlan], order: str, guide: Guide | None) -> list[int]:
    jobs = instance.jobs
    if order == "lp" and guide is not None:
        return sorted(range(len(jobs)), key=lambda i: (-guide.share[i] * plans[i].usd, -plans[i].usd, jobs[i].job_id))
    if order == "arrival":
        return sorted(range(len(jobs)), key=lambda i: (jobs[i].arrival_s, jobs[i].job_id))
    if order == "value":
        return sorted(range(len(jobs)), key=lambda i: (-plans[i].usd / max(jobs[i].work_gpu_s, 1e-9), jobs[i].job_id))
    if order == "cost":
        return sorted(range(len(jobs)), key=lambda i: (-plans[i].usd, jobs[i].job_id))
    raise ValueError(f"unknown order {order!r}; valid: arrival, value, cost, lp")


def _place(instance: Instance, plans: list[CloudPlan], timelines: dict[Shape, Timeline],
           order: str, grid_s: float, guide: Guide | None = None) -> list[Assignment]:
    jobs = instance.jobs
    profile = _Profile(instance.reserved_gpus, instance.horizon_s, grid_s)
    out: dict[int, Assignment] = {}
    for i in _order(instance, plans, order, guide):
        job = jobs[i]
        start = None
        if job.gpu_model == instance.reserved_model:
            hint = guide.start_s[i] if guide is not None and order == "lp" else math.nan
            start = hint if not math.isnan(hint) and profile.free(job, hint) else profile.earliest(job)
        if start is not None:
            profile.take(start, start + job.runtime_s, job.gpus)
            out[i] = Assignment(job.job_id, start, start + job.runtime_s, job.gpus, RESERVED)
        else:
            out[i] = _cloud(job, plans[i], timelines)
    return [out[i] for i in range(len(jobs))]


def _cloud(job: EvalJob, plan: CloudPlan, timelines: dict[Shape, Timeline]) -> Assignment:
    end = plan.start_s + job.runtime_s
    if not math.isfinite(plan.usd):
        return Assignment(job.job_id, plan.start_s, end, job.gpus, "", (), math.inf)
    if plan.offering:
        segs: tuple[tuple[float, float, str], ...] = ((plan.start_s, end, plan.offering),)
    else:
        segs = tuple((s, e, o.key) for s, e, o in timelines[shape_of(job)].segments(plan.start_s, end))
    return Assignment(job.job_id, plan.start_s, end, job.gpus, "cloud", segs, plan.usd)


def clairvoyant_usd(instance: Instance, *, grid_s: float = 60.0, boot_s: float = 0.0, migrate: bool = True) -> float:
    """Total cloud USD of the clairvoyant schedule (inf when some job fits nowhere)."""
    return sum(a.usd for a in schedule(instance, grid_s=grid_s, boot_s=boot_s, migrate=migrate))
