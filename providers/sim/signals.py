"""A simulated signal source: announced demand signals (Jira sprints) replayed on the fake clock."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from burster.model import Signal
from burster.signalfile import AnnouncedSignal


class SimSignals:
    """A ``SignalSource``: each signal is seen from its announcement (or the start) until its
    window ends, as a Jira sprint is from its planning until it closes."""

    def __init__(self, announced: Sequence[AnnouncedSignal]) -> None:
        self._all = tuple(announced)

    def signals(self, now: datetime) -> tuple[Signal, ...]:
        return tuple(a.signal for a in self._all if _seen(a, now))

    def seen(self, now: datetime) -> bool:
        """Whether any signal is seen at ``now``."""
        return any(_seen(a, now) for a in self._all)

    def next_announcement(self, now: datetime) -> datetime | None:
        """The next instant a signal is first seen, after ``now``."""
        return min((a.announced_at for a in self._all if a.announced_at is not None and a.announced_at > now),
                   default=None)


def _seen(a: AnnouncedSignal, now: datetime) -> bool:
    return (a.announced_at is None or a.announced_at <= now) and now < a.signal.window_end
