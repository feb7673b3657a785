"""Reserved on-prem nodes with best-fit placement, bucketed by free GPUs for O(GPUs) lookups.

A node may be held for one or more jobs, each from an instant on (``hold``, like a Slurm reservation
with a start time that those jobs may run in): before the earliest, other jobs may use the node only
if they end by then."""

from __future__ import annotations

import math
from collections.abc import Container
from dataclasses import replace

from burster.model import Demand, PoolNode


class OnPremNodes:
    def __init__(self, nodes: int, gpus_per_node: int, gpu_model: str, *, restart_s: float = 0.0) -> None:
        """``restart_s``: how long a job restarted from a checkpoint reloads it before it works again."""
        self.size = gpus_per_node
        self.restart_s = restart_s
        self.model = gpu_model
        self.capacity = nodes * gpus_per_node
        self.free = [gpus_per_node] * nodes
        self.free_total = self.capacity
        # buckets[f] = indices of nodes with exactly f free GPUs
        self.buckets: list[set[int]] = [set() for _ in range(gpus_per_node + 1)]
        self.buckets[gpus_per_node] = set(range(nodes))
        self._views = [PoolNode(self.node_id(i), gpu_model, gpus_per_node, gpus_per_node) for i in range(nodes)]
        self.index = {v.node_id: i for i, v in enumerate(self._views)}
        self.held: dict[int, dict[str, float]] = {}  # node index -> {a job it is held for: from when}

    def node_id(self, index: int) -> str:
        return f"onprem-{index:04d}"

    def can_ever_fit(self, job: Demand) -> bool:
        return (not job.gpu_model or job.gpu_model == self.model) and job.gpus_per_node <= self.size \
            and job.nodes <= len(self.free)

    def fit(self, job: Demand, now_ts: float = math.inf,
            avoid: Container[int] = ()) -> tuple[tuple[int, int], ...] | None:
        """Slots (node index, GPUs) for the whole gang now (``now_ts``), or None. Best fit, lowest
        index first; a held node only for its jobs, or for one that ends before the first hold starts;
        none of the nodes in ``avoid``."""
        if job.gpus > self.free_total or not self.can_ever_fit(job):
            return None
        need, per = job.nodes, job.gpus_per_node
        chosen: list[int] = []
        for f in range(per, self.size + 1):
            bucket = self.buckets[f]
            if bucket and self.held:
                bucket = {i for i in bucket if self._may_use(i, job, now_ts)}
            if bucket and avoid:
                bucket = {i for i in bucket if i not in avoid}
            if bucket:
                chosen += sorted(bucket)[: need - len(chosen)] if need > 1 else [min(bucket)]
                if len(chosen) >= need:
                    break
        if len(chosen) < need:
            return None
        return self._slots(job, chosen)

    def fit_held(self, job: Demand) -> tuple[tuple[int, int], ...] | None:
        """Slots for the whole gang on nodes held for ``job`` only (best fit), or None."""
        mine = sorted((self.free[i], i) for i, jobs in self.held.items()
                      if job.job_id in jobs and self.free[i] >= job.gpus_per_node)
        if len(mine) < job.nodes:
            return None
        return self._slots(job, [i for _, i in mine[:job.nodes]])

    def _slots(self, job: Demand, chosen: list[int]) -> tuple[tuple[int, int], ...]:
        left, slots = job.gpus, []
        for i in chosen:
            g = min(job.gpus_per_node, left)
            slots.append((i, g))
            left -= g
        return tuple(slots)

    def take(self, slots: tuple[tuple[int, int], ...]) -> None:
        for i, g in slots:
            self._set(i, self.free[i] - g)

    def give(self, slots: tuple[tuple[int, int], ...]) -> None:
        for i, g in slots:
            self._set(i, self.free[i] + g)

    def _set(self, i: int, value: int) -> None:
        if not 0 <= value <= self.size:
            raise ValueError(f"node {i} would have {value} free GPUs")
        self.buckets[self.free[i]].discard(i)
        self.free_total += value - self.free[i]
        self.free[i] = value
        self.buckets[value].add(i)
        self._views[i] = PoolNode(self._views[i].node_id, self.model, self.size, value, self.holders(i))

    def _may_use(self, i: int, job: Demand, now_ts: float) -> bool:
        hold = self.held.get(i)
        return hold is None or job.job_id in hold or now_ts + self.run_s(job) <= min(hold.values())

    def run_s(self, job: Demand) -> float:
        """How long a run of ``job`` started now is expected to hold its GPUs (by its estimate): the
        reload of a restart with work saved and some left, then its work left."""
        return job.remaining_s + (self.restart_s if job.resumes else 0.0)

    def hold(self, i: int, job_id: str, start_ts: float) -> None:
        """Hold node ``i`` for ``job_id`` from ``start_ts`` too (beside the jobs it is held for already)."""
        self.held.setdefault(i, {})[job_id] = start_ts
        self._views[i] = replace(self._views[i], held_for=self.holders(i))

    def holders(self, i: int) -> tuple[str, ...]:
        """The jobs node ``i`` is held for, in the order they were held."""
        return tuple(self.held.get(i, ()))

    def release(self, job_id: str, i: int | None = None) -> int:
        """Release ``job_id``'s holds (only node ``i``'s when given); how many were released."""
        mine = [k for k, jobs in self.held.items() if job_id in jobs and (i is None or k == i)]
        for k in mine:
            del self.held[k][job_id]
            if not self.held[k]:
                del self.held[k]
            self._views[k] = replace(self._views[k], held_for=self.holders(k))
        return len(mine)

    def pool_nodes(self) -> tuple[PoolNode, ...]:
        return tuple(self._views)
