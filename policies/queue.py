"""Projection of when pending jobs would start on reserved (on-prem) capacity.

The pool serves its queue in submission order (FIFO), or, ranked (``pool.order = "start_by"``), by
priority then start-by (``policies.rank``), with backfill (``burster.model.queue_key``). We project with
aggregate GPU counts per GPU model: a job starts once the GPUs freed by running jobs (ordered by
expected end) plus the free GPUs cover the demand queued ahead of it plus its own. This ignores
fragmentation (optimistic) and backfill (pessimistic for small jobs); it is a forecast for the burst
decision, not a schedule.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime

from burster.model import Demand, Placement, PoolNode

INF = math.inf


class ReservedQueue:
    """Expected on-prem start delays, one GPU-model class at a time, in queue order."""

    def __init__(self, now: datetime, pool_nodes: tuple[PoolNode, ...],
                 running: tuple[Placement, ...]) -> None:
        self.now = now
        self.total: dict[str, int] = defaultdict(int)
        self.node_size: dict[str, int] = defaultdict(int)
        free: dict[str, int] = defaultdict(int)
        for n in pool_nodes:
            model = n.gpu_model
            self.total[model] += n.gpus
            if not n.held_for:  # a held node's free GPUs wait for the jobs it is held for
                free[model] += n.free_gpus
            if n.gpus > self.node_size[model]:
                self.node_size[model] = n.gpus
        ends: dict[str, list[tuple[float, int]]] = defaultdict(list)
        now_ts = now.timestamp()
        # the model a job of any model is projected onto: the pool's largest, a tie to the first by
        # name (not the first listed: a pool's listing order must not change the plan)
        any_model = self.any_model = max(sorted(self.total), key=lambda m: self.total[m]) if self.total else ""
        node_model: dict[str, str] | None = None  # built for the first running job of any model
        for p in running:
            if not p.on_cloud:
                left = p.ends_at_ts - now_ts
                model = p.job.gpu_model
                if not model:  # a job of any model frees GPUs of the model it runs on
                    node_model = node_model or {n.node_id: n.gpu_model for n in pool_nodes}
                    model = node_model.get(p.node_ids[0], any_model) if p.node_ids else any_model
                ends[model].append((left if left > 0.0 else 0.0, p.job.gpus))
        self._times: dict[str, list[float]] = {}
        self._cum: dict[str, list[int]] = {}
        for model in self.total:
            evs = sorted(ends.get(model, []))
            self._times[model] = [0.0, *(t for t, _ in evs)]
            self._cum[model] = list(itertools.accumulate((g for _, g in evs), initial=free[model]))
        self._queued: dict[str, int] = defaultdict(int)
        self._any_model_for: dict[tuple[int, int], str | None] = {}  # a job of any model's, by its shape
        self._holders = {j for n in pool_nodes for j in n.held_for}
        self._held: dict[str, _HeldNodes] | None = None  # built when a holder is first asked about
        self._pool_nodes, self._running, self._now_ts = pool_nodes, running, now_ts

    def model_for(self, job: Demand) -> str | None:
        """The on-prem GPU model that can run ``job``, or None if none can: its own, or for a job of any
        model the one whose GPUs the pool alone frees for it soonest (ties: the pool's larger, then by
        name), the same all pass long whatever is queued (the queue's own projection spreads such jobs
        as models fill, ``_queue_model``). It was always the pool's largest model: a job of any model
        was taken to wait for it while another model had room, or never to start where the largest
        model's nodes are too small for it."""
        if job.gpu_model:
            return job.gpu_model if self._fits(job.gpu_model, job) else None
        shape = (job.gpus, job.gpus_per_node)
        if shape not in self._any_model_for:
            fits = [m for m in sorted(self.total) if self._fits(m, job)]
            self._any_model_for[shape] = min(fits, key=lambda m: (self.shadow(m, job.gpus)[0], -self.total[m])) \
                if fits else None
        return self._any_model_for[shape]

    def _fits(self, model: str, job: Demand) -> bool:
        return self.total.get(model, 0) >= job.gpus and self.node_size.get(model, 0) >= job.gpus_per_node

    def _queue_model(self, job: Demand) -> str | None:
        """The model ``job`` queues for in the projection: its own, or for a job of any model the one
        where it would start soonest behind what is queued so far (ties: the pool's larger, then by
        name), so jobs of any model spread over the models as they fill."""
        if job.gpu_model or len(self.total) < 2:
            return self.model_for(job)
        fits = [m for m in sorted(self.total) if self._fits(m, job)]
        return min(fits, key=lambda m: (self._projected_s(job, m), -self.total[m])) if fits else None

    def expected_wait_s(self, job: Demand) -> float:
        """Seconds until ``job`` would start on-prem if it queued behind what is queued so far (or
        on nodes held for it, once they have room)."""
        model = self._queue_model(job)
        if model is None:
            return INF
        if job.job_id in self._holders:
            return min(self.held_room_s(job), self._projected_s(job, model))
        return self._projected_s(job, model)

    def held_room_s(self, job: Demand) -> float:
        """Seconds until the nodes held for ``job`` have room for it (inf: none held, or never)."""
        if job.job_id not in self._holders:
            return INF
        if self._held is None:
            self._held = _held_room_s(self._pool_nodes, self._running, self._now_ts)
        return self._held[job.job_id].room_s(job)

    def _projected_s(self, job: Demand, model: str) -> float:
        need = self._queued[model] + job.gpus
        cum = self._cum[model]
        if need > cum[-1]:
            return INF  # more queued than all of the pool frees up: beyond the horizon
        idx = bisect.bisect_left(cum, need)
        return self._times[model][idx]

    def shadow(self, model: str, gpus: int) -> tuple[float, int]:
        """EASY backfill's view of a blocked queue head needing ``gpus`` of ``model``: seconds until
        the pool alone frees enough for it, and the GPUs spare at that time (nothing else queued)."""
        cum = self._cum.get(model)
        if not cum or gpus > cum[-1]:
            return INF, cum[-1] if cum else 0
        idx = bisect.bisect_left(cum, gpus)
        return self._times[model][idx], cum[idx] - gpus

    def reset(self) -> None:
        """Forget what was enqueued: back to the projection of the pool alone."""
        self._queued.clear()

    def enqueue(self, job: Demand) -> None:
        """Count ``job`` as waiting for on-prem capacity (it stays in the queue), where the projection
        starts it soonest (``expected_wait_s``)."""
        model = self._queue_model(job)
        if model is not None:
            self._queued[model] += job.gpus

    def free_gpus(self, model: str) -> int:
        """GPUs of ``model`` free right now."""
        cum = self._cum.get(model)
        return cum[0] if cum else 0

    def spare_gpus(self, model: str) -> int:
        """GPUs free right now beyond what the queue is waiting for."""
        cum = self._cum.get(model)
        return max(cum[0] - self._queued[model], 0) if cum else 0


class _HeldNodes:
    """Nodes held for one job: free GPUs now and, per node, when running work ends."""

    def __init__(self) -> None:
        self.nodes: dict[str, tuple[int, list[tuple[float, int]]]] = {}

    def room_s(self, job: Demand) -> float:
        """Seconds until ``job.nodes`` of these nodes have ``job.gpus_per_node`` free each."""
        times = sorted(room_at_s(free, ends, job.gpus_per_node) for free, ends in self.nodes.values())
        return times[job.nodes - 1] if len(times) >= job.nodes else INF


def held_by_job(pool_nodes: Sequence[PoolNode]) -> dict[str, list[PoolNode]]:
    """The reserved nodes held for each job (``PoolNode.held_for``)."""
    out: dict[str, list[PoolNode]] = {}
    for n in pool_nodes:
        for job_id in n.held_for:
            out.setdefault(job_id, []).append(n)
    return out


def _held_room_s(pool_nodes: tuple[PoolNode, ...], running: tuple[Placement, ...],
                 now_ts: float) -> dict[str, _HeldNodes]:
    held: dict[str, _HeldNodes] = {}
    for job_id, nodes in held_by_job(pool_nodes).items():
        held[job_id] = _HeldNodes()
        held[job_id].nodes = {n.node_id: (n.free_gpus, []) for n in nodes}
    if held:
        ends = running_ends_by_node(running, now_ts, {node for h in held.values() for node in h.nodes})
        for h in held.values():
            h.nodes = {node: (free, ends.get(node, [])) for node, (free, _) in h.nodes.items()}
    return held


def running_ends_by_node(running: Sequence[Placement], now_ts: float,
                         only: set[str] | None = None) -> dict[str, list[tuple[float, int]]]:
    """Seconds from now until each on-prem job ends, with the GPUs it frees, per node (all, or
    those in ``only``), soonest first."""
    out: dict[str, list[tuple[float, int]]] = {}
    for p in running:
        if not p.on_cloud:
            for node in p.node_ids:
                if only is None or node in only:
                    out.setdefault(node, []).append((max(p.ends_at_ts - now_ts, 0.0), p.job.gpus_per_node))
    for evs in out.values():
        evs.sort()
    return out


def room_at_s(free: int, ends: Sequence[tuple[float, int]], need: int) -> float:
    """Seconds until a node with ``free`` GPUs and these job ends has ``need`` free (inf: never)."""
    if free >= need:
        return 0.0
    for t, gpus in ends:
        free += gpus
        if free >= need:
            return t
    return INF
