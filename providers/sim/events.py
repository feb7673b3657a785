"""A time-ordered event queue shared by the simulated pool and clouds."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from datetime import datetime

Handler = Callable[[datetime], None]


class EventQueue:
    """Callbacks at instants; ties run in the order they were scheduled (deterministic)."""

    def __init__(self, before: Handler | None = None) -> None:
        self._heap: list[tuple[datetime, int, Handler]] = []
        self._seq = itertools.count()
        self.before = before  # called with each event's time before its handler

    def at(self, when: datetime, handler: Handler) -> None:
        heapq.heappush(self._heap, (when, next(self._seq), handler))

    def next_time(self) -> datetime | None:
        return self._heap[0][0] if self._heap else None

    def run_until(self, until: datetime) -> int:
        """Run every event due at or before ``until``; returns how many ran."""
        ran = 0
        heap = self._heap
        while heap and heap[0][0] <= until:
            when, _, handler = heapq.heappop(heap)
            if self.before is not None:
                self.before(when)
            handler(when)
            ran += 1
        return ran

    def __len__(self) -> int:
        return len(self._heap)
