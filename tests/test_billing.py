"""What a node's run is billed, by the cloud's rule and how it ended (burster/billing.py, NodeBook.ended)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from burster.billing import billing_rule, interrupted_spot_billed_s
from burster.lifecycle import NodeState
from burster.model import Interruption, Market, Offering
from burster.reconcile_nodes import NodeBook
from burster.state import LedgerEntry, MemoryState, NodeRecord

T0 = datetime(2026, 3, 2, 9, tzinfo=UTC)


def test_the_clouds_rules() -> None:
    assert billing_rule("aws").billed_s(30) == 60 and billing_rule("aws").billed_s(61.5) == 62
    assert billing_rule("azure").billed_s(6 * 60 + 45) == 6 * 60  # each full minute, extra seconds free
    assert interrupted_spot_billed_s("aws", 3599) == 0.0 and interrupted_spot_billed_s("aws", 3600) == 3600
    assert interrupted_spot_billed_s("gcp", 1800) == 1800  # GCP bills a preempted VM as it ran


def _ended(provider: str, run_s: float, *, notice: bool, ours: bool, market: Market = Market.SPOT) -> LedgerEntry:
    """One node's ledger entry: ``notice`` a standing interruption notice; ``ours`` ended by this
    controller's terminate (its record was terminating), else by its cloud."""
    state = MemoryState()
    offering = Offering(provider, "r1", "r1a", "gpu.1x", "V100", 1, market, 3.6)
    state.add_node(NodeRecord("n1", provider, offering, "rq", T0, NodeState.REQUESTED, reason="burst b"))
    book = NodeBook(state)
    book.follow("n1", NodeState.READY)
    if ours:
        book.mark("n1", NodeState.TERMINATING)
    if notice:
        state.notices["n1"] = Interruption("n1", provider, "spot-interruption", T0, T0 + timedelta(seconds=120))
    entries: list[LedgerEntry] = []
    book.ended("n1", T0 + timedelta(seconds=run_s), lambda i, end: entries.extend(book.ledger_entries(i, end)))
    (entry,) = entries
    return entry


@pytest.mark.parametrize(("provider", "run_s", "notice", "ours", "market", "billed"), [
    ("aws", 1800, True, False, Market.SPOT, 0.0),  # taken back by EC2 in its first hour: free
    ("aws", 1800, True, True, Market.SPOT, 1800.0),  # we terminated it after the notice: billed
    ("aws", 1800, False, False, Market.SPOT, 1800.0),  # gone with no notice (removed outside us)
    ("aws", 5400, True, False, Market.SPOT, 5400.0),  # past the first hour: all of it
    ("aws", 1800, True, False, Market.ON_DEMAND, 1800.0),
    ("gcp", 1800, True, False, Market.SPOT, 1800.0),
])
def test_a_spot_node_ec2_takes_back_in_its_first_hour_is_not_billed(provider: str, run_s: float, notice: bool,
                                                                      ours: bool, market: Market,
                                                                      billed: float) -> None:
    entry = _ended(provider, run_s, notice=notice, ours=ours, market=market)
    assert entry.billed_s == billed and float(entry.usd) == pytest.approx(3.6 * billed / 3600)
    assert ("in its first hour: not billed" in entry.reason) == (billed == 0.0)
