"""A clairvoyant feasible schedule: the upper bound of the bracket.

Every job gets a cloud plan first: the start within its wait budget (17 evenly spaced candidates)
that minimises its cost along its shape's timeline (``timeline.py``: whole nodes, spot while up and
moving off before each drop, billed per segment with boot). Then jobs are considered in one order
(arrival, or most cloud USD per GPU-hour first) and each runs on reserved GPUs when they are free for
its whole runtime from some start within its wait budget (earliest such start, on a ``grid_s`` capacity
profile where a run occupies every cell it touches), else by its cloud plan. The cheaper of the two
orders wins. Every job starts within its wait budget and the reserved pool is never over-committed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from burster.eval.instance import EvalJob, Instance
from burster.eval.timeline import Timeline, build_timeline

RESERVED = "reserved"
CANDIDATES = 17
ORDERS = ("arrival", "value", "cost")


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


@dataclass(frozen=True)
class CloudPlan:
    start_s: float
    usd: float


def cloud_plans(instance: Instance, boot_s: float) -> tuple[list[CloudPlan], dict[tuple[str, int, int], Timeline]]:
    """Each job's cheapest cloud plan (inf USD where its GPU model has no offering), and the timelines."""
    by_shape: dict[tuple[str, int, int], list[int]] = {}
    for i, j in enumerate(instance.jobs):
        by_shape.setdefault((j.gpu_model, j.gpus, j.nodes), []).append(i)
    plans = [CloudPlan(j.arrival_s, math.inf) for j in instance.jobs]
    timelines: dict[tuple[str, int, int], Timeline] = {}
    for key, idx in by_shape.items():
        tl = build_timeline(instance, instance.jobs[idx[0]], instance.horizon_s, boot_s)
        if tl is None:
            continue
        timelines[key] = tl
        jobs = [instance.jobs[i] for i in idx]
        a = np.array([j.arrival_s for j in jobs])
        b = np.array([j.wait_budget_s for j in jobs])
        r = np.array([j.runtime_s for j in jobs])
        starts = a[:, None] + b[:, None] * np.linspace(0.0, 1.0, CANDIDATES)[None, :]
        costs = tl.cost(starts.reshape(-1), (starts + r[:, None]).reshape(-1)).reshape(starts.shape)
        best = np.argmin(costs, axis=1)
        for n, i in enumerate(idx):
            plans[i] = CloudPlan(float(starts[n, best[n]]), float(costs[n, best[n]]))
    return plans, timelines


def schedule(instance: Instance, *, grid_s: float = 60.0, boot_s: float = 180.0,
             orders: Sequence[str] = ORDERS) -> list[Assignment]:
    """The cheapest of the clairvoyant schedules built in each of ``orders``."""
    plans, timelines = cloud_plans(instance, boot_s)
    best: list[Assignment] = []
    best_usd = math.inf
    for order in orders:
        out = _place(instance, plans, timelines, order, grid_s)
        usd = sum(a.usd for a in out)
        if not best or usd < best_usd:
            best, best_usd = out, usd
    return best


def _place(instance: Instance, plans: list[CloudPlan], timelines: dict[tuple[str, int, int], Timeline],
           order: str, grid_s: float) -> list[Assignment]:
    if order not in ORDERS:
        raise ValueError(f"unknown order {order!r}; valid: {', '.join(ORDERS)}")
    jobs = instance.jobs
    if order == "arrival":
        idx = sorted(range(len(jobs)), key=lambda i: (jobs[i].arrival_s, jobs[i].job_id))
    elif order == "value":
        idx = sorted(range(len(jobs)), key=lambda i: (-plans[i].usd / max(jobs[i].work_gpu_s, 1e-9), jobs[i].job_id))
    else:
        idx = sorted(range(len(jobs)), key=lambda i: (-plans[i].usd, jobs[i].job_id))
    profile = _Profile(instance.reserved_gpus, instance.horizon_s, grid_s)
    out: dict[int, Assignment] = {}
    for i in idx:
        job = jobs[i]
        start = profile.earliest(job) if job.gpu_model == instance.reserved_model else None
        if start is not None:
            profile.take(start, start + job.runtime_s, job.gpus)
            out[i] = Assignment(job.job_id, start, start + job.runtime_s, job.gpus, RESERVED)
            continue
        plan = plans[i]
        end = plan.start_s + job.runtime_s
        tl = timelines.get((job.gpu_model, job.gpus, job.nodes))
        if tl is None or not math.isfinite(plan.usd):
            out[i] = Assignment(job.job_id, job.arrival_s, job.arrival_s + job.runtime_s, job.gpus, "", (), math.inf)
            continue
        segs = tuple((s, e, o.key) for s, e, o in tl.segments(plan.start_s, end))
        out[i] = Assignment(job.job_id, plan.start_s, end, job.gpus, "cloud", segs, plan.usd)
    return [out[i] for i in range(len(jobs))]


def clairvoyant_usd(instance: Instance, *, grid_s: float = 60.0, boot_s: float = 180.0) -> float:
    """Total cloud USD of the clairvoyant schedule (inf when some job fits nowhere)."""
    return sum(a.usd for a in schedule(instance, grid_s=grid_s, boot_s=boot_s))
