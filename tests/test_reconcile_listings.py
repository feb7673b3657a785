"""The reconcile pass when cloud listings lag: a new node listed late, a node listed running after it
was taken for gone or terminated, strays whose terminate fails or that are listed as ended."""

from __future__ import annotations

import pytest

from burster.errors import TransientError
from burster.lifecycle import NodeState
from burster.model import Node
from burster.reconcile_nodes import LISTING_GRACE_S
from burster.reconciler import PassReport
from tests.test_reconciler import CHEAP, World


def test_a_new_node_a_listing_leaves_out_is_kept_not_orphaned() -> None:
    """EC2 may list a new instance late: the pass after the launch must not take it for gone (that
    charged a few seconds and left the instance running, out of every later pass)."""
    w = World()
    w.job("a")
    w.job("b")
    w.rec.run_once()
    (node,) = w.cloud.list_nodes()
    w.cloud.list_late([node.node_id])
    w.clock.advance(10)
    report = w.rec.run_once()
    assert report.plan.launches == () and report.plan.terminates == ()  # no second node for b
    assert w.rec.state.is_live(node.node_id) and w.rec.state.ledger == []
    w.cloud.list_again()
    w.clock.advance(10)
    report = w.rec.run_once()
    assert w.rec.state.nodes[node.node_id].state is NodeState.READY
    assert report.plan.launches == () and w.cloud.list_nodes() == [node]


def test_a_node_listed_again_after_it_was_taken_for_gone_is_terminated_and_charged(
        caplog: pytest.LogCaptureFixture) -> None:
    w = World()
    w.job("a")
    w.job("b")  # the node's job, so it is not reclaimed as idle meanwhile
    w.rec.run_once()
    (node,) = w.cloud.list_nodes()
    w.cloud.list_late([node.node_id])
    w.clock.advance(LISTING_GRACE_S - 10)
    w.rec.run_once()
    assert w.rec.state.is_live(node.node_id)  # still within the grace
    w.clock.advance(10)
    w.rec.run_once()  # missing past the grace: ended and billed
    assert w.rec.state.nodes[node.node_id].state is NodeState.TERMINATED
    (entry,) = w.rec.state.ledger
    assert entry.billed_s == LISTING_GRACE_S
    w.cloud.list_again()
    w.clock.advance(10)
    with caplog.at_level("WARNING", logger="burster.reconcile"):
        report = w.rec.run_once()  # listed running after it was taken for gone: it goes at once
    assert node.node_id not in {n.node_id for n in w.cloud.list_nodes()} and not report.errors
    assert f"node {node.node_id} is recorded as ended but fake lists it running" in caplog.text
    assert not w.rec.state.is_live(node.node_id)
    first, overrun = w.rec.state.ledger  # it ran on past its recorded end: that time is charged too
    assert (overrun.start, overrun.end) == (first.end, w.clock.now())
    assert overrun.billed_s == (w.clock.now() - first.end).total_seconds() == 10
    assert float(overrun.usd) == pytest.approx(float(first.usd) * 10 / LISTING_GRACE_S, abs=1e-5)
    assert "ran on after it was recorded as ended" in overrun.reason


def _terminated_but_listed_running(w: World) -> Node:
    """An idle node terminated at its TTL, which the cloud's listings show running on."""
    w.cloud.launch(CHEAP, 1, request_id="prewarm-1")
    w.rec.run_once()  # adopts the idle node
    w.clock.advance(3600)
    w.cloud.ignore_next_terminate()
    w.rec.run_once()  # idle past its TTL: terminated
    (node,) = w.cloud.list_nodes()
    return node


def test_a_node_listed_running_after_its_terminate_is_let_be_for_a_grace_then_terminated_again(
        caplog: pytest.LogCaptureFixture) -> None:
    """A listing soon after a terminate may lag it; one a grace later that still shows the node
    running does not: the node goes again. Its time since the first terminate is charged as listings
    show it running (a lagging listing errs on the dear side), each second once."""
    w = World()
    node = _terminated_but_listed_running(w)
    (first,) = w.rec.state.ledger
    with caplog.at_level("WARNING", logger="burster.reconcile"):
        w.clock.advance(LISTING_GRACE_S - 10)
        w.rec.run_once()
        assert w.cloud.list_nodes() == [node] and not caplog.text
        w.clock.advance(10)
        w.rec.run_once()
    assert w.cloud.list_nodes() == [] and "is recorded as ended but fake lists it running" in caplog.text
    _, lagging, stray = w.rec.state.ledger
    assert [(e.start, e.billed_s) for e in (lagging, stray)] == [(first.end, LISTING_GRACE_S - 10), (lagging.end, 10)]
    assert stray.end == w.clock.now()


def _stray_whose_terminate_fails(w: World) -> tuple[Node, PassReport]:
    """b's node is taken for gone (listed late past the grace), then listed running again: the
    pass finds it a stray, charges it up to now, and its terminate fails."""
    w.job("a")
    w.job("b")
    w.rec.run_once()
    (node,) = w.cloud.list_nodes()
    w.cloud.list_late([node.node_id])
    w.clock.advance(LISTING_GRACE_S)
    w.rec.run_once()  # taken for gone
    w.cloud.list_again()
    w.clock.advance(10)
    w.cloud.fail_next_terminate(TransientError("fake: 503 on terminate"))
    return node, w.rec.run_once()


def test_a_stray_whose_terminate_fails_is_terminated_next_pass_and_charged_once() -> None:
    w = World()
    node, report = _stray_whose_terminate_fails(w)
    assert any("503 on terminate" in e for e in report.errors)
    assert node.node_id in {n.node_id for n in w.cloud.list_nodes()}
    assert [e.end for e in w.rec.state.ledger][1:] == [w.clock.now()]
    w.clock.advance(10)
    report = w.rec.run_once()  # the next pass finds it again at once
    assert not report.errors and node.node_id not in {n.node_id for n in w.cloud.list_nodes()}
    ended = w.clock.now()
    w.clock.advance(10)
    w.rec.run_once()
    assert [e.node_id for e in w.rec.state.ledger] == [node.node_id] * 3  # no piece charged twice
    assert sum(e.billed_s for e in w.rec.state.ledger) == (ended - node.launched_at).total_seconds()


def test_a_stray_that_goes_before_it_is_terminated_is_charged_to_the_listing_without_it() -> None:
    """As a live node that vanishes is: what ran between the listings is not known, so the later one counts."""
    w = World()
    node, _ = _stray_whose_terminate_fails(w)
    w.cloud.terminate([node.node_id], request_id="outside")  # and someone else removes it
    w.clock.advance(30)
    w.rec.run_once()
    assert sum(e.billed_s for e in w.rec.state.ledger) == (w.clock.now() - node.launched_at).total_seconds()
    w.clock.advance(10)
    w.rec.run_once()
    assert len(w.rec.state.ledger) == 3 and not w.rec.state.watched


def test_a_stray_listed_as_ended_is_charged_to_its_end_not_while_the_cloud_lists_it_dead() -> None:
    """EC2 lists terminated instances for about an hour: a node that ran on after its terminate
    (a lagging listing) and is then listed TERMINATED is charged up to its end, once, not up to
    the listing that finally forgets it."""
    w = World()
    w.cloud.list_ended()
    node = _terminated_but_listed_running(w)
    w.clock.advance(30)
    w.rec.run_once()  # charged up to this listing
    w.clock.advance(10)
    w.cloud.end(node.node_id)  # the terminate takes effect
    ended = w.clock.now()
    for _ in range(60):
        w.clock.advance(60)
        w.rec.run_once()  # listed TERMINATED all along
    w.cloud.list_ended(False)
    w.clock.advance(60)
    w.rec.run_once()
    assert not w.rec.state.watched
    assert sum(e.billed_s for e in w.rec.state.ledger) == (ended - node.launched_at).total_seconds()
