"""The reconcile pass when launches go wrong: throttled or unanswered launches that may or may not
have happened, a replayed request whose nodes already ended, a partial gang, a launch refused for good."""

from __future__ import annotations

from typing import Any

import pytest

from burster.errors import AuthError, ConfigError, InvalidRequestError, NotFoundError, TransientError
from burster.model import Node
from burster.reconcile_nodes import LISTING_GRACE_S
from burster.reconciler import PassReport
from tests.test_reconciler import CHEAP, DEAR, World


def test_an_intent_whose_launch_failed_and_was_not_made_again_is_forgotten_a_grace_later() -> None:
    """Throttled to the end of its retries, the launch may or may not have happened, so its intent
    stays for a node to answer it; once the job no longer needs the launch, it went on for good: a
    grace after it was sent, not after the first pass that found it."""
    w = World()
    w.job("a", hours=0.05)  # the reserved node frees in 3 minutes
    w.job("b")
    w.cloud.throttle_next(5)
    report = w.rec.run_once()
    assert report.errors and "rate exceeded" in report.errors[0]
    (rid,) = w.rec.state.intents
    w.clock.advance(200)
    w.pool.events.run_until(w.clock.now())  # a finishes ...
    w.pool.schedule(w.clock.now())  # ... and b starts on the reserved node
    assert w.rec.run_once().plan.launches == () and rid in w.rec.state.intents
    w.clock.advance(LISTING_GRACE_S - 210)
    w.rec.run_once()
    assert rid in w.rec.state.intents
    w.clock.advance(10)
    w.rec.run_once()
    assert w.rec.state.intents == {} and w.cloud.list_nodes() == []


def test_a_launch_whose_replies_are_all_lost_is_adopted_by_the_next_pass_not_made_twice() -> None:
    """The cloud made the node but every retry timed out reading the reply: the intent stands, so
    the next pass adopts the node for its job instead of paying for a second one."""
    w = World()
    w.job("a")
    w.job("b")
    w.cloud.lose_next_replies(5)
    report = w.rec.run_once()
    assert any("timed out waiting for the reply" in e for e in report.errors)
    (node,) = w.cloud.list_nodes()
    assert not w.rec.state.is_live(node.node_id) and len(w.rec.state.intents) == 1
    w.clock.advance(10)
    report = w.rec.run_once()
    assert report.plan.launches == () and w.cloud.list_nodes() == [node]
    assert w.rec.state.nodes[node.node_id].for_job == "b"
    assert w.rec.state.intents == {}  # answered in full: it said "no node answered it" a grace later


def lost_gang_listed_in_part(w: World | None = None, replies_lost: int = 5,
                             job: str = "b") -> tuple[World, list[Node], PassReport]:
    """A 2-node gang launched for ``job`` (a reserved node busy with job a) whose replies are all lost
    (``replies_lost`` of them), its second node then left out of listings; the world, the gang and
    the pass that launched it."""
    w = w or World()
    w.job("a")
    w.job(job, gpus=16, nodes=2)
    w.cloud.lose_next_replies(replies_lost)
    report = w.rec.run_once()
    gang = list(w.cloud.list_nodes())
    w.cloud.list_late([gang[1].node_id])
    return w, gang, report


def test_a_lost_gang_launch_listed_in_part_is_made_again_and_adopted_whole(caplog: pytest.LogCaptureFixture) -> None:
    """Its reply lost, a gang's first node listed and the other late: the job's one node looked like a gang
    that lost a node, and was given back (billed, then launched again twice over). The pass now makes the
    launch again under its request id, which the cloud answers with both nodes: no new node, none given back."""
    w, gang, _ = lost_gang_listed_in_part()
    w.clock.advance(10)
    report = w.rec.run_once()
    assert report.plan.actions == () and report.errors == []
    assert [w.rec.state.nodes[n.node_id].for_job for n in gang] == ["b", "b"]
    assert all(w.rec.state.is_live(n.node_id) for n in gang) and w.rec.state.intents == {}
    w.cloud.list_again()
    assert w.cloud.list_nodes() == gang
    assert not [r for r in caplog.records if "forgetting its intent" in r.getMessage()]


def test_a_launch_made_again_whose_reply_is_lost_again_is_reported_and_its_gang_kept_until_listed() -> None:
    """Its intent stands, and the gang's listed node is kept: the other, in flight, completes the set.
    It was given back as a short gang (the other, once listed, likewise) and the job launched anew."""
    w, gang, _ = lost_gang_listed_in_part(replies_lost=10)
    w.clock.advance(10)
    report = w.rec.run_once()
    (rid,) = w.rec.state.intents
    assert report.errors[0] == f"launch {rid} made again failed: fake: timed out waiting for the reply"
    assert report.plan.actions == ()
    w.cloud.list_again()
    w.clock.advance(10)
    assert w.rec.run_once().plan.actions == ()
    assert [w.rec.state.nodes[n.node_id].for_job for n in gang] == ["b", "b"] and w.rec.state.intents == {}
    assert all(w.rec.state.is_live(n.node_id) for n in gang)


@pytest.mark.parametrize("gang", [False, True])
def test_a_launch_replayed_after_its_nodes_ended_is_made_again_under_a_new_id(gang: bool) -> None:
    """Every reply of a launch was lost, and a node it made was preempted before the next pass: the
    replayed request id (EC2 ClientToken) answers with that ended node. It is recorded as ended and
    billed (not taken for a live launch the job waits on), a gang's live nodes (one a listing had
    not shown yet) are given back, and the job is launched again at once under a new request id."""
    w = World()
    w.job("a")
    w.job("b", gpus=16, nodes=2) if gang else w.job("b")
    w.cloud.lose_next_replies(5)
    w.rec.run_once()
    first = w.cloud.list_nodes()
    assert len(first) == (2 if gang else 1)
    w.clock.advance(20)
    w.cloud.end(first[0].node_id)  # preempted 20 s after launch
    w.cloud.list_late([n.node_id for n in first[1:]])  # the gang's other node: listed late
    w.clock.advance(10)
    report = w.rec.run_once()
    w.cloud.list_again()
    assert any("ended before this controller heard of them; launching again under a new request id" in e
               for e in report.errors)
    assert report.launched_nodes == 0 and not w.rec.state.intents
    assert not any(w.rec.state.is_live(n.node_id) for n in first)  # the gang's other node: given back
    assert w.cloud.list_nodes() == []
    (dead,) = [e for e in w.rec.state.ledger if e.node_id == first[0].node_id]
    assert dead.billed_s == 60.0  # ran 20 s: the minimum
    w.clock.advance(10)
    report = w.rec.run_once()
    (again,) = report.plan.launches
    assert again.job_id == "b" and report.launched_nodes == again.count and not report.errors
    assert {n.request_id for n in w.cloud.list_nodes()} == {again.request_id + "-r1"}


def test_a_partial_gang_is_given_back_whole_when_one_give_back_fails() -> None:
    """Two of a three-node gang came up and the first give-back's terminate fails: the other is still
    given back, the pass reports both failures, the gang is launched again next pass, and the node
    whose terminate failed is terminated then."""
    w = World()
    w.job("a")
    w.job("gang", gpus=24, nodes=3)
    w.cloud.partial_next(2)
    w.cloud.fail_next_terminate(TransientError("fake: 503 on terminate"))
    report = w.rec.run_once()
    (error,) = report.errors
    assert "launched 2 of 3 nodes" in error and "giving back fake-000001 failed" in error and "503" in error
    assert [n.node_id for n in w.cloud.list_nodes()] == ["fake-000001"] and not w.rec.state.intents
    w.clock.advance(30)
    report = w.rec.run_once()
    (again,) = report.plan.launches
    assert again.job_id == "gang" and again.count == 3 and not report.errors
    assert "fake-000001" not in {n.node_id for n in w.cloud.list_nodes()}
    assert not w.rec.state.is_live("fake-000001") and not w.rec.state.is_live("fake-000002")


@pytest.mark.parametrize("error", [
    InvalidRequestError("fake: Invalid value for field 'resource.machineType'"),
    NotFoundError("fake: Unsupported: the instance type is not supported in this zone"),
    AuthError("fake: not authorized to launch this type"),
    ConfigError("fake: cannot launch fake/r1a/gpu.8x/on_demand: its zone is not in clouds.fake.zones"),
])
def test_a_launch_the_cloud_refuses_for_good_blocks_its_offering_and_the_pass_goes_on(error: Exception) -> None:
    """A refusal that sent again unchanged would fail again (an invalid or unsupported request, a
    permission, an adapter's setting) is reported, blocks the offering as a capacity error does,
    leaves no intent, and does not stop the pass: the next pass bursts elsewhere. A GCE 400 used to
    be a ConfigError that escaped the pass and came back every pass."""
    w = World()
    w.job("a")
    w.job("b")
    real_launch = w.cloud.launch

    def refuse_once(*args: Any, **kwargs: Any) -> Any:
        w.cloud.launch = real_launch  # type: ignore[method-assign]
        raise error
    w.cloud.launch = refuse_once  # type: ignore[method-assign]
    report = w.rec.run_once()
    assert report.errors == [f"launch failed: {error}"]
    assert CHEAP.key in w.rec.state.blocked and not w.rec.state.intents
    w.clock.advance(10)
    (launch,) = w.rec.run_once().plan.launches
    assert launch.offering == DEAR and [n.offering for n in w.cloud.list_nodes()] == [DEAR]
