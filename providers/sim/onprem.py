"""Reserved on-prem nodes with best-fit placement, bucketed by free GPUs for O(GPUs) lookups."""

from __future__ import annotations

from burster.model import Demand, PoolNode


class OnPremNodes:
    def __init__(self, nodes: int, gpus_per_node: int, gpu_model: str) -> None:
        self.size = gpus_per_node
        self.model = gpu_model
        self.capacity = nodes * gpus_per_node
        self.free = [gpus_per_node] * nodes
        self.free_total = self.capacity
        # buckets[f] = indices of nodes with exactly f free GPUs
        self.buckets: list[set[int]] = [set() for _ in range(gpus_per_node + 1)]
        self.buckets[gpus_per_node] = set(range(nodes))
        self._views = [PoolNode(self.node_id(i), gpu_model, gpus_per_node, gpus_per_node) for i in range(nodes)]

    def node_id(self, index: int) -> str:
        return f"onprem-{index:04d}"

    def can_ever_fit(self, job: Demand) -> bool:
        return (not job.gpu_model or job.gpu_model == self.model) and job.gpus_per_node <= self.size \
            and job.nodes <= len(self.free)

    def fit(self, job: Demand) -> tuple[tuple[int, int], ...] | None:
        """Slots (node index, GPUs) for the whole gang now, or None. Best fit, lowest index first."""
        if job.gpus > self.free_total or not self.can_ever_fit(job):
            return None
        need, per = job.nodes, job.gpus_per_node
        chosen: list[int] = []
        for f in range(per, self.size + 1):
            bucket = self.buckets[f]
            if bucket:
                chosen += sorted(bucket)[: need - len(chosen)] if need > 1 else [min(bucket)]
                if len(chosen) >= need:
                    break
        if len(chosen) < need:
            return None
        left, slots = job.gpus, []
        for i in chosen:
            g = min(per, left)
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
        self._views[i] = PoolNode(self._views[i].node_id, self.model, self.size, value)

    def pool_nodes(self) -> tuple[PoolNode, ...]:
        return tuple(self._views)
