"""Capacity vs demand over simulated time, sampled for reports."""

from __future__ import annotations

from datetime import datetime
from typing import Any


class Timeline:
    """Samples GPUs demanded (queued + running), reserved GPUs used and cloud GPUs every ``step_s``
    (a multiple of the tick). ``observe`` is called at each tick the loop visits; a boundary it
    jumped past gets the levels seen at the tick before it, which held until this one (the loop
    wakes at the first tick at or after any change), as ticking through would have sampled them."""

    def __init__(self, world: Any, start: datetime, *, step_s: int = 3600, reserved_gpus: int = 0) -> None:
        self.world, self.start, self.step_s = world, start, step_s
        self.reserved_gpus = reserved_gpus
        self.t_h: list[float] = []
        self.demand: list[int] = []
        self.reserved_used: list[int] = []
        self.cloud: list[int] = []
        self._last: tuple[int, int, int] | None = None  # the levels at the last tick observed

    def observe(self, now: datetime) -> None:
        pool = self.world.pool
        elapsed = (now - self.start).total_seconds()
        queued = sum(j.gpus for j in pool.queue.values())
        cloud = sum(r.job.gpus for r in pool.runs.values() if r.on_cloud)
        used = pool.onprem.capacity - pool.onprem.free_total
        now_levels = (queued + used + cloud, used, cloud)
        while (len(self.t_h)) * self.step_s <= elapsed:
            at = len(self.t_h) * self.step_s
            demand, used, cloud = now_levels if at >= elapsed or self._last is None else self._last
            self.t_h.append(at / 3600.0)
            self.demand.append(demand)
            self.reserved_used.append(used)
            self.cloud.append(cloud)
        self._last = now_levels

    def as_dict(self) -> dict[str, Any]:
        return {"step_s": self.step_s, "t_h": self.t_h, "demand_gpus": self.demand,
                "reserved_used_gpus": self.reserved_used, "cloud_gpus": self.cloud,
                "reserved_gpus": self.reserved_gpus}
