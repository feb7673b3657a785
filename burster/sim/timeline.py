"""Capacity vs demand over simulated time, sampled for reports."""

from __future__ import annotations

from datetime import datetime
from typing import Any


class Timeline:
    """Samples GPUs demanded (queued + running), reserved GPUs used and cloud GPUs every ``step_s``."""

    def __init__(self, world: Any, start: datetime, *, step_s: int = 3600, reserved_gpus: int = 0) -> None:
        self.world, self.start, self.step_s = world, start, step_s
        self.reserved_gpus = reserved_gpus
        self.t_h: list[float] = []
        self.demand: list[int] = []
        self.reserved_used: list[int] = []
        self.cloud: list[int] = []

    def observe(self, now: datetime) -> None:
        pool = self.world.pool
        elapsed = (now - self.start).total_seconds()
        while (len(self.t_h)) * self.step_s <= elapsed:
            queued = sum(j.gpus for j in pool.queue.values())
            cloud = sum(r.job.gpus for r in pool.runs.values() if r.on_cloud)
            used = pool.onprem.capacity - pool.onprem.free_total
            self.t_h.append(len(self.t_h) * self.step_s / 3600.0)
            self.demand.append(queued + used + cloud)
            self.reserved_used.append(used)
            self.cloud.append(cloud)

    def as_dict(self) -> dict[str, Any]:
        return {"step_s": self.step_s, "t_h": self.t_h, "demand_gpus": self.demand,
                "reserved_used_gpus": self.reserved_used, "cloud_gpus": self.cloud,
                "reserved_gpus": self.reserved_gpus}
