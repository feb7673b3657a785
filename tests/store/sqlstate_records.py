"""The start time, offerings, node records, ledger entries and ended nodes that the SQL state
store's tests (test_sqlstate_*.py) write."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from burster.lifecycle import NodeState
from burster.model import Market, Offering
from burster.sqlstate import SqlState
from burster.state import LedgerEntry, NodeRecord

T0 = datetime(2026, 3, 2, 9, 0, 0, 123456, tzinfo=UTC)
SPOT = Offering("aws", "us-east-1", "us-east-1a", "p4d.24xlarge", "A100", 8, Market.SPOT, 9.8312)
ON_DEMAND = Offering("gcp", "us-central1", "us-central1-a", "a2-highgpu-1g", "A100", 1, Market.ON_DEMAND, 3.6734)


class Wall:
    """A wall clock the test moves (to the microsecond), from ``start``."""

    def __init__(self, start: datetime = T0) -> None:
        self.t = start

    def __call__(self) -> datetime:
        return self.t

    def advance(self, s: float) -> None:
        self.t += timedelta(seconds=s)


def _record(node_id: str, offering: Offering, **kw: object) -> NodeRecord:
    base: dict[str, object] = {"node_id": node_id, "provider": offering.provider, "offering": offering,
                               "request_id": f"req-{node_id}", "launched_at": T0, "state": NodeState.REQUESTED,
                               "for_job": "job-1", "team": "vision", "project": "p", "sprint": "S-1",
                               "reason": "burst: waited past its budget"}
    return NodeRecord(**{**base, **kw})  # type: ignore[arg-type]


def _entry(node_id: str, team: str, usd: str) -> LedgerEntry:
    return LedgerEntry(node_id, "aws", "spot", "p4d.24xlarge", "us-east-1", team, "p", "S-1", "burst",
                       T0, T0 + timedelta(hours=1), 3600.0, Decimal(usd))


def _ended(state: SqlState, node_id: str, at: datetime, team: str, usd: str, *, live: bool = False) -> None:
    state.add_node(_record(node_id, SPOT, launched_at=at, team=team))
    if not live:
        for step in (NodeState.LAUNCHING, NodeState.JOINING, NodeState.READY, NodeState.TERMINATING):
            state.move(node_id, step)
        state.move(node_id, NodeState.TERMINATED, ended_at=at + timedelta(hours=1))
        state.charge(replace(_entry(node_id, team, usd), start=at, end=at + timedelta(hours=1)))
