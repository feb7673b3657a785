"""Trace.window: the replay window a simulation and the evaluation's bounds both read."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from burster.model import Demand
from burster.traces.base import Trace

MIDNIGHT = datetime(2026, 1, 5, tzinfo=UTC)
TRACE = Trace("two", "test", tuple(Demand(f"j{i}", 1, MIDNIGHT + timedelta(hours=h), 60.0)
                                   for i, h in enumerate((6, 60))))  # days 0 and 2


def day(n: float) -> datetime:
    return MIDNIGHT + timedelta(days=n)


def test_a_window_inside_the_trace_is_as_asked() -> None:
    assert TRACE.last_day == 2
    assert TRACE.window(0.5, 1.0) == (day(0.5), day(1.5))
    assert TRACE.window(2.0, 1.0) == (day(2), day(3))  # to the end of the last day, exactly


def test_a_window_past_the_last_day_ends_with_it() -> None:
    assert TRACE.window(0, 30) == (day(0), day(3))
    assert TRACE.window(2.5, 7) == (day(2.5), day(3))
    assert TRACE.window(4, 1) == (day(4), day(4))  # nothing left: empty, no jobs in it


def test_the_whole_trace_includes_its_last_arrival() -> None:
    start, end = TRACE.window(1, None)
    assert start == day(1) and TRACE.jobs[-1].submitted_at < end <= TRACE.jobs[-1].submitted_at + timedelta(seconds=1)
