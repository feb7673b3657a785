"""Budget periods: the UTC calendar window a hard budget counts spend over.

``month`` (the default), ``week`` (Monday 00:00 UTC on) and ``day`` start afresh at each UTC
boundary; ``all`` counts everything the ledger holds (a simulated run's whole window; a persistent
store's every entry since it began). A node that ran across a boundary counts in each period for
the share of its billed dollars that fell in it, pro rata by time.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

PERIODS = ("month", "week", "day", "all")


def period_start(period: str, now: datetime) -> datetime | None:
    """When the budget period holding ``now`` began (UTC); None for ``all``."""
    if period == "all":
        return None
    day = now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    if period == "day":
        return day
    if period == "week":
        return day - timedelta(days=day.weekday())
    if period == "month":
        return day.replace(day=1)
    raise ValueError(f"unknown budget period {period!r}: use one of {', '.join(PERIODS)}")


def share_since(usd: float, start: datetime, end: datetime, since: datetime | None) -> float:
    """The part of ``usd``, spent evenly from ``start`` to ``end``, that falls at or after ``since``."""
    if since is None or start >= since:
        return usd
    if end <= since:
        return 0.0
    return usd * (end - since).total_seconds() / (end - start).total_seconds()
