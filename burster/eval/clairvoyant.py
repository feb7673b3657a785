"""A clairvoyant feasible schedule: the upper bound of the bracket.

Jobs are taken in arrival order. A job runs on reserved GPUs when they are free for its whole
runtime starting somewhere within its wait budget (earliest such start; the capacity profile is
kept on a ``grid_s`` grid, a run occupying every cell it touches); otherwise on the cloud offering of
its GPU model with the lowest cost for the whole run (whole nodes, billed by the cloud's rule), spot
only when that offering's series stays up for the whole run (earliest such start within the budget).
Every job starts within its wait budget and never preempts; the cost is the sum of cloud charges.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from burster.billing import billing_rule
from burster.eval.fluid import nodes_for
from burster.eval.instance import EvalJob, Instance
from burster.model import Market, Offering

RESERVED = "reserved"


@dataclass(frozen=True)
class Assignment:
    """Where and when one job runs: ``where`` is "reserved" or an offering key."""

    job_id: str
    start_s: float
    end_s: float
    gpus: int
    where: str
    nodes: int = 0
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
        cs = np.concatenate(([0], np.cumsum(blocked)))
        free = np.flatnonzero(cs[width:width + steps + 1] - cs[:steps + 1] == 0)
        if len(free) == 0:
            return None
        return job.arrival_s + int(free[0]) * g

    def take(self, job: EvalJob, start_s: float) -> None:
        c0 = int(start_s // self.grid_s)
        c1 = max(c0 + 1, math.ceil((start_s + job.runtime_s) / self.grid_s - 1e-9))
        self._grow(c1)
        self.used[c0:c1] += job.gpus

    def _grow(self, cells: int) -> None:
        if cells > len(self.used):
            self.used = np.concatenate([self.used, np.zeros(cells - len(self.used), dtype=np.int64)])


def run_cost_usd(job: EvalJob, offering: Offering) -> float:
    """USD of one uninterrupted run of the job on whole nodes of ``offering``, billed by its cloud's rule."""
    billed = billing_rule(offering.provider).billed_s(job.runtime_s)
    return nodes_for(job, offering) * offering.price_per_hour_usd * billed / 3600.0


def spot_start(instance: Instance, offering: Offering, job: EvalJob) -> float | None:
    """Earliest start within the budget at which ``offering`` stays up for the whole run (None: none)."""
    s = instance.spot_series.get(offering.key) if offering.market is Market.SPOT else None
    if s is None:
        return job.arrival_s
    t, latest = job.arrival_s, job.arrival_s + job.wait_budget_s
    while t <= latest:
        if s.available(t):
            drop = s.next_drop(t)
            if drop >= t + job.runtime_s:
                return t
            t = drop
        nxt = s.next_flip(t)
        if nxt == math.inf:
            return None
        t = nxt
    return None


def schedule(instance: Instance, grid_s: float = 60.0) -> list[Assignment]:
    """The clairvoyant schedule; a job that can run nowhere gets ``where=""`` and infinite cost."""
    profile = _Profile(instance.reserved_gpus, instance.horizon_s, grid_s)
    by_model: dict[str, list[Offering]] = {}
    for o in instance.offerings:
        by_model.setdefault(o.gpu_model, []).append(o)
    ranked: dict[tuple[str, int, int, float], list[tuple[float, Offering]]] = {}
    out = []
    for job in sorted(instance.jobs, key=lambda j: (j.arrival_s, j.job_id)):
        start = profile.earliest(job) if job.gpu_model == instance.reserved_model else None
        if start is not None:
            profile.take(job, start)
            out.append(Assignment(job.job_id, start, start + job.runtime_s, job.gpus, RESERVED))
            continue
        key = (job.gpu_model, job.gpus, job.nodes, job.runtime_s)
        if key not in ranked:
            ranked[key] = sorted(((run_cost_usd(job, o), o) for o in by_model.get(job.gpu_model, [])),
                                 key=lambda p: (p[0], p[1].key))
        out.append(_on_cloud(instance, job, ranked[key]))
    return out


def _on_cloud(instance: Instance, job: EvalJob, ranked: list[tuple[float, Offering]]) -> Assignment:
    """The cheapest whole run on the cloud (``ranked``: offerings by run cost) that is never preempted."""
    for cost, o in ranked:
        start = spot_start(instance, o, job)
        if start is not None:
            return Assignment(job.job_id, start, start + job.runtime_s, job.gpus, o.key, nodes_for(job, o), cost)
    return Assignment(job.job_id, job.arrival_s, job.arrival_s + job.runtime_s, job.gpus, "", 0, math.inf)


def clairvoyant_usd(instance: Instance, grid_s: float = 60.0) -> float:
    """Total cloud USD of the clairvoyant schedule (inf when some job fits nowhere)."""
    return sum(a.usd for a in schedule(instance, grid_s))
