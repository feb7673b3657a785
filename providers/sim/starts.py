"""Which queued jobs the simulated pool starts, and where: a job's own burst nodes once all have
joined, reserved nodes in queue order with EASY backfill (held nodes first for the jobs they are
held for), then idle shared burst nodes, cheapest first. ``start`` does the starting; these only
choose (each start changes what the next one sees)."""

from __future__ import annotations

import math
from collections.abc import Callable, Container, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from burster.model import Demand, Offering
from providers.sim.onprem import OnPremNodes
from providers.sim.queue import PoolQueue

Start = Callable[[Demand, datetime, tuple[str, ...], tuple[tuple[int, int], ...]], None]


@dataclass
class BurstNode:
    """A cloud node launched into the pool: booting until it joins, then running one job or idle."""

    node_id: str
    offering: Offering
    for_job: str | None
    exclusive: bool = False  # takes only its own job or one the controller holds it for
    joined: bool = False
    draining: bool = False
    job_id: str | None = None


def start_on_own_nodes(queue: PoolQueue, burst: Mapping[str, BurstNode], booting: set[str | None],
                       now: datetime, start: Start) -> None:
    """Each job whose launched nodes have all joined (and are idle) starts on them."""
    nodes_for: dict[str | None, list[BurstNode]] = {}
    for b in burst.values():
        if not b.draining:
            nodes_for.setdefault(b.for_job, []).append(b)
    for job_id in [j for j in queue if j in booting]:
        job = queue[job_id]
        mine = nodes_for.get(job_id, [])
        if mine and all(b.joined and b.job_id is None for b in mine):
            start(job, now, tuple(sorted(b.node_id for b in mine)), ())


def start_on_reserved(pending: Callable[[], Sequence[Demand]], onprem: OnPremNodes, ends: Sequence[tuple[float, int]],
                      depth: int, booting: set[str | None], now: datetime, start: Start) -> None:
    """Jobs with reserved nodes held for them first, then the queue in order with EASY backfill
    (``depth`` jobs past a blocked head at most; ``ends``: (end, GPUs) of on-prem runs, sorted).
    ``pending`` is called once per phase: the queue as served after the held jobs started."""
    if onprem.held:  # a job with nodes held for it starts there first, wherever it is queued
        holders = {j for j, _ in onprem.held.values()}
        for job in [j for j in pending() if j.job_id in holders and j.job_id not in booting]:
            slots = onprem.fit_held(job)
            if slots is not None:
                start(job, now, (), slots)
    head_blocked: Demand | None = None
    shadow = extra = 0.0
    scanned = 0
    for job in pending():
        if job.job_id in booting:
            continue
        if head_blocked is not None:
            scanned += 1
            if scanned > depth or onprem.free_total == 0:
                break
        slots = onprem.fit(job, now.timestamp())
        if slots is None:
            if head_blocked is None and onprem.can_ever_fit(job):  # (one that never can reserves nothing)
                head_blocked = job
                shadow, extra = _shadow(job, onprem, ends)
            continue
        if head_blocked is not None:
            job_ends = now + timedelta(seconds=job.remaining_s)
            if job_ends.timestamp() > shadow and job.gpus > extra:
                continue
            if job_ends.timestamp() > shadow:
                extra -= job.gpus
        start(job, now, (), slots)


def _shadow(head: Demand, onprem: OnPremNodes, ends: Sequence[tuple[float, int]]) -> tuple[float, float]:
    """EASY backfill: when the head job can start, and GPUs spare at that time."""
    free = onprem.free_total - onprem.held_free(head.job_id)
    for t, g in ends:
        free += g
        if free >= head.gpus:
            return t, float(free - head.gpus)
    return math.inf, float(free)


def start_on_idle_burst(pending: Sequence[Demand], burst: Mapping[str, BurstNode], queue: Container[str],
                        runs: Container[str], booting: set[str | None], now: datetime, start: Start) -> None:
    """Idle joined burst nodes take queued single-node jobs that fit, except a job whose own nodes
    are booting: it is allocated to them (as Slurm allocates a job to cloud nodes it powers up).
    A node launched for a job that runs elsewhere (a move to cheaper capacity) waits for it."""
    idle = [b for b in burst.values() if b.joined and not b.draining and b.job_id is None and not b.exclusive
            and (b.for_job is None or (b.for_job not in queue and b.for_job not in runs))]
    if not idle:
        return
    # queue order; each job gets the cheapest idle node that fits (Slurm: node Weight = price)
    idle.sort(key=lambda b: (b.offering.price_per_hour_usd, b.node_id))
    for job in pending:
        if job.job_id in booting or job.nodes != 1:
            continue
        for i, b in enumerate(idle):
            o = b.offering
            if job.gpus <= o.gpus_per_node and (not job.gpu_model or job.gpu_model == o.gpu_model):
                b.for_job = None
                start(job, now, (b.node_id,), ())
                del idle[i]
                break
        if not idle:
            return
