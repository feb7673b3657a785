"""Which queued jobs the simulated pool starts, and where: a job's own burst nodes once all have
joined (if enough for it), reserved nodes in queue order with EASY backfill (held nodes first for
the jobs they are held for), then idle shared burst nodes, cheapest first. ``start`` does the
starting; these only choose (each start changes what the next one sees)."""

from __future__ import annotations

import math
from collections.abc import Callable, Container, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

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
    draining: bool = False  # takes no new job: drained, or cordoned by a checkpoint
    job_id: str | None = None


def start_on_own_nodes(queue: PoolQueue, burst: Mapping[str, BurstNode], booting: set[str | None],
                       now: datetime, start: Start) -> None:
    """Each job whose launched nodes have all joined (and are idle) starts on them, if they are
    enough for it (``Demand.held_by``), on as many as its gang needs (``_gang_of``: more were launched
    or handed for it, the rest stay idle); one left short (a node of its launch ended while booting)
    waits for the controller to give the rest back."""
    nodes_for: dict[str | None, list[BurstNode]] = {}
    for b in burst.values():
        if not b.draining:
            nodes_for.setdefault(b.for_job, []).append(b)
    for job_id in [j for j in queue if j in booting]:
        job = queue[job_id]
        mine = nodes_for.get(job_id, [])
        if mine and all(b.joined and b.job_id is None for b in mine) and job.held_by(b.offering for b in mine):
            start(job, now, _gang_of(job, mine), ())


def _gang_of(job: Demand, nodes: Sequence[BurstNode]) -> tuple[str, ...]:
    """The fewest of ``nodes`` (which hold ``job``) that hold its gang: whole members of one offering
    each, offering by offering in key order, nodes by id."""
    by_key: dict[str, list[BurstNode]] = {}
    for b in sorted(nodes, key=lambda b: b.node_id):
        by_key.setdefault(b.offering.key, []).append(b)
    out: list[str] = []
    members = 0
    for key in sorted(by_key):
        left = by_key[key]
        per = -(-job.gpus_per_node // left[0].offering.gpus_per_node)
        while members < job.nodes and len(left) >= per:
            out += [b.node_id for b in left[:per]]
            left, members = left[per:], members + 1
    return tuple(sorted(out))


def start_on_reserved(pending: Callable[[], Sequence[Demand]], onprem: OnPremNodes, ends: Sequence[Ends],
                      depth: int, booting: set[str | None], now: datetime, start: Start) -> None:
    """Jobs with reserved nodes held for them first, then the queue in order with EASY backfill
    (``depth`` jobs past a blocked head at most; ``ends``: when and where on-prem runs free GPUs,
    sorted). ``pending`` is called once per phase: the queue as served after the held jobs started."""
    if onprem.held:  # a job with nodes held for it starts there first, wherever it is queued
        holders = {j for jobs in onprem.held.values() for j in jobs}
        for job in [j for j in pending() if j.job_id in holders and j.job_id not in booting]:
            slots = onprem.fit_held(job)
            if slots is not None:
                start(job, now, (), slots)
    head: _Reservation | None = None
    scanned = 0
    now_ts = now.timestamp()
    for job in pending():
        if job.job_id in booting:
            continue
        if head is not None:
            scanned += 1
            if scanned > depth or onprem.free_total == 0:
                break
        slots = onprem.fit(job, now_ts)
        if slots is None:
            if head is None and onprem.can_ever_fit(job):  # (one that never can reserves nothing)
                head = _reserve(job, onprem, ends)
            continue
        if head is not None and now_ts + onprem.run_s(job) > head.at:  # would still run when the head starts:
            slots = onprem.fit(job, now_ts, avoid=head.avoid(job))  # only where it leaves the head room
            if slots is None:
                continue
            head.take(slots)
        start(job, now, (), slots)


Ends = tuple[float, int, tuple[tuple[int, int], ...]]  # (end, GPUs, (node index, GPUs) slots) of a run


@dataclass
class _Reservation:
    """EASY backfill's reservation for the blocked head: when it can start, and on which reserved
    nodes how many GPUs are spare beyond its own then (a job running past ``at`` may use only those)."""

    at: float
    spare: dict[int, int]

    def avoid(self, job: Demand) -> set[int]:
        return {i for i, g in self.spare.items() if g < job.gpus_per_node}

    def take(self, slots: tuple[tuple[int, int], ...]) -> None:
        for i, g in slots:
            if i in self.spare:
                self.spare[i] -= g


def _reserve(head: Demand, onprem: OnPremNodes, ends: Sequence[Ends]) -> _Reservation:
    """When the head fits, node by node as the runs end (best fit, as it will be placed), and the
    nodes it will take. Nodes held for other jobs only are not counted (never: ``at`` is inf)."""
    per, need = head.gpus_per_node, head.nodes
    usable = [i not in onprem.held or head.job_id in onprem.held[i] for i in range(len(onprem.free))]
    free = [f if ok else 0 for f, ok in zip(onprem.free, usable, strict=True)]
    for t, _, slots in ends:
        for i, g in slots:
            if usable[i]:
                free[i] += g
        chosen = sorted((f, i) for i, f in enumerate(free) if f >= per)[:need]
        if len(chosen) == need:
            return _Reservation(t, {i: f - per for f, i in chosen})
    return _Reservation(math.inf, {})


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
