"""Clocks. The only module that reads the system clock."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    """Source of 'now' (timezone-aware UTC) and of waiting."""

    def now(self) -> datetime: ...

    def sleep(self, seconds: float) -> None: ...


def utc_now() -> datetime:
    """The system clock's time, timezone-aware UTC (a default for the ``now`` callables of adapters)."""
    return datetime.now(UTC)


class SystemClock:
    """Wall-clock time, for the live controller."""

    def now(self) -> datetime:
        return utc_now()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)

    def monotonic(self) -> float:
        return time.monotonic()


class FakeClock:
    """A clock that moves only when told to; ``sleep`` advances it instantly."""

    def __init__(self, start: datetime | None = None) -> None:
        start = start or datetime(2026, 1, 1, tzinfo=UTC)
        if start.tzinfo is None:
            raise ValueError("FakeClock needs a timezone-aware start time")
        self._now = start

    def now(self) -> datetime:
        return self._now

    def sleep(self, seconds: float) -> None:
        self.advance(seconds)

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("a clock cannot go backwards")
        self._now += timedelta(seconds=seconds)

    def set(self, when: datetime) -> None:
        if when < self._now:
            raise ValueError("a clock cannot go backwards")
        self._now = when
