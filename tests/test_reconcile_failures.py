"""The reconcile pass when clouds and the pool misbehave: late listings, refused calls, nodes that
never join, launches that may or may not have happened, a pool that cannot be read."""

from __future__ import annotations

from typing import Any

import pytest

from burster.errors import AuthError, ConfigError, InvalidRequestError, NotFoundError, TransientError
from burster.lifecycle import NodeState
from burster.model import Node
from burster.reconcile_nodes import LISTING_GRACE_S
from burster.reconciler import PassReport
from tests.test_reconciler import CHEAP, DEAR, World


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


def test_a_node_that_never_joins_the_pool_goes_at_the_join_timeout_and_its_job_bursts_again() -> None:
    """The fake cloud's nodes come up but never join the simulated pool, like a node whose
    bootstrap failed: before the timeout it bills on and b waits for it, forever."""
    w = World()
    w.job("a")
    w.job("b")
    (first,) = w.rec.run_once().plan.launches
    assert first.offering == CHEAP
    (node,) = w.cloud.list_nodes()
    w.clock.advance(600)
    assert w.rec.run_once().plan.actions == ()  # still waiting for it to join
    w.clock.advance(600)
    report = w.rec.run_once()
    (stop,) = report.plan.terminates
    assert stop.node_ids == (node.node_id,) and "which has not started on it (join timeout 1200s)" in stop.reason
    assert w.rec.state.nodes[node.node_id].state is NodeState.TERMINATED and len(w.rec.state.ledger) == 1
    w.clock.advance(10)
    (again,) = w.rec.run_once().plan.launches  # b is no longer served by it: a new node, elsewhere
    (new,) = w.cloud.list_nodes()
    assert again.job_id == "b" and new.node_id != node.node_id and again.offering == DEAR
    assert CHEAP.key in w.rec.state.blocked  # its bootstrap may be what is broken


def test_an_offering_whose_nodes_keep_missing_the_join_timeout_is_blocked_longer_each_time() -> None:
    """A broken image would otherwise cost a node every join timeout, for ever: its launches go
    through, so the strikes are not reset by them, only by a node of it that runs a job."""
    w = World()
    w.job("a")
    w.job("b")
    blocks = []
    for _ in range(3):  # CHEAP, DEAR, then CHEAP again once its block runs out: none ever joins
        w.rec.run_once()
        w.clock.advance(1200)
        w.rec.run_once()
        blocks.append({k: (until - w.clock.now()).total_seconds() for k, until in w.rec.state.blocked.items()
                       if until > w.clock.now()})
        w.clock.advance(10)
    assert blocks[0] == {CHEAP.key: 600} and blocks[1] == {DEAR.key: 600} and blocks[2] == {CHEAP.key: 1200}
    (launch,) = w.rec.run_once().plan.launches  # DEAR's block is over: b tries it again
    (node,) = w.cloud.list_nodes()
    assert launch.offering == DEAR == node.offering
    w.pool.expect(node.node_id, node.offering, "b")
    w.pool.join(node.node_id)
    w.pool.schedule(w.clock.now())
    w.clock.advance(10)
    w.rec.run_once()  # it joined and runs b: DEAR's count starts again
    assert f"join-timeout:{DEAR.key}" not in w.rec.state.block_strikes
    assert w.rec.state.block_strikes[f"join-timeout:{CHEAP.key}"] == 2


def test_a_terminate_the_cloud_refused_is_made_again_next_pass() -> None:
    """The node was marked terminating before the call; the cloud kept it running. Nothing else
    would ever stop it: the idle TTL looks at ready nodes only."""
    w = World()
    w.cloud.launch(CHEAP, 1, request_id="prewarm-1")
    w.rec.run_once()  # adopts the idle node
    w.clock.advance(3600)
    w.cloud.fail_next_terminate(TransientError("fake: 503 on terminate"))
    report = w.rec.run_once()
    assert report.errors and "503 on terminate" in report.errors[0] and len(w.cloud.list_nodes()) == 1
    (node,) = w.cloud.list_nodes()
    assert w.rec.state.nodes[node.node_id].state is NodeState.TERMINATING and w.rec.state.ledger == []
    w.clock.advance(10)
    report = w.rec.run_once()
    assert not report.errors and w.cloud.list_nodes() == []
    assert w.rec.state.nodes[node.node_id].state is NodeState.TERMINATED
    (entry,) = w.rec.state.ledger
    assert entry.end == w.clock.now()  # billed until the terminate that took


def _running_on_a_burst_node(w: World) -> str:
    """b bursts, and its node comes up and joins the pool, which starts b there."""
    w.job("a")
    w.job("b")
    w.rec.run_once()
    (node,) = w.cloud.list_nodes()
    w.pool.expect(node.node_id, node.offering, "b")
    w.pool.join(node.node_id)
    w.pool.schedule(w.clock.now())
    assert [p.job.job_id for p in w.pool.running() if p.on_cloud] == ["b"]
    return node.node_id


def test_a_checkpoint_the_pool_refused_is_asked_again_next_pass() -> None:
    """The node was marked checkpointing before the call, with no ticket to poll: nothing would
    ever ask again, and the node, no longer ready, escaped the idle TTL for good."""
    w = World()
    node_id = _running_on_a_burst_node(w)
    w.cloud.interrupt(node_id, notice_s=120)
    w.pool.fail_checkpoint = TransientError("pool: slurmctld not responding")
    w.clock.advance(10)
    report = w.rec.run_once()
    assert report.errors and "slurmctld not responding" in report.errors[0]
    assert w.rec.state.nodes[node_id].state is NodeState.READY and node_id not in w.rec.state.tickets
    w.clock.advance(10)
    report = w.rec.run_once()
    assert [a.node_id for a in report.plan.checkpoints] == [node_id] and not report.errors
    assert w.rec.state.nodes[node_id].state is NodeState.CHECKPOINTING and node_id in w.rec.state.tickets


def test_a_drain_that_fails_after_a_checkpoint_is_reported_and_tried_again_next_pass() -> None:
    w = World()
    node_id = _running_on_a_burst_node(w)
    w.cloud.interrupt(node_id, notice_s=120)
    w.clock.advance(10)
    w.rec.run_once()  # asks for the checkpoint
    w.clock.advance(w.pool.checkpoint_s)
    w.pool.events.run_until(w.clock.now())  # it is written
    w.pool.fail_drain = TransientError("pool: scontrol update failed")
    report = w.rec.run_once()  # observe finds the checkpoint done; the drain fails
    assert report.errors and "scontrol update failed" in report.errors[0]
    assert node_id in w.rec.state.tickets and w.rec.state.is_live(node_id)
    w.clock.advance(10)
    report = w.rec.run_once()
    assert not report.errors and node_id not in w.rec.state.tickets
    assert w.rec.state.nodes[node_id].state is NodeState.TERMINATED
    assert node_id not in {n.node_id for n in w.cloud.list_nodes()}  # (b, requeued, bursts again)


def test_an_intent_whose_launch_failed_and_was_not_made_again_is_forgotten_a_grace_later() -> None:
    """Throttled to the end of its retries, the launch may or may not have happened, so its intent
    stays for a node to answer it; once the job no longer needs the launch, it went on for good."""
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
    w.clock.advance(LISTING_GRACE_S - 10)
    w.rec.run_once()
    assert rid in w.rec.state.intents
    w.clock.advance(10)
    w.rec.run_once()
    assert w.rec.state.intents == {} and w.cloud.list_nodes() == []


def test_a_pool_that_cannot_be_read_makes_a_pass_that_decides_nothing_and_says_why() -> None:
    w = World()
    w.job("a")
    w.job("b")
    w.pool.fail_pending = TransientError("pool: squeue timed out")
    report = w.rec.run_once()  # does not raise
    assert report.plan.actions == () and report.errors == ["pool unreadable, nothing decided: pool: squeue timed out"]
    assert report.quiet_until is None and w.cloud.list_nodes() == []
    w.clock.advance(10)
    (launch,) = w.rec.run_once().plan.launches  # readable again: b bursts
    assert launch.job_id == "b"


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
    w.clock.advance(LISTING_GRACE_S)  # the intent stays a grace (a gang's other nodes may be listed late)
    w.rec.run_once()
    assert w.rec.state.intents == {} and w.rec.state.is_live(node.node_id)


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


def test_an_interrupted_nodes_job_is_relaunched_on_another_pool() -> None:
    """A notice blocks the node's offering as a capacity error does: once the job checkpointed and
    its node went, it bursts again on another offering, not on the pool taking nodes back."""
    w = World()
    node_id = _running_on_a_burst_node(w)
    w.cloud.interrupt(node_id, notice_s=120)
    w.clock.advance(10)
    w.rec.run_once()  # asks for the checkpoint
    assert CHEAP.key in w.rec.state.blocked
    w.clock.advance(w.pool.checkpoint_s)
    w.pool.events.run_until(w.clock.now())
    report = w.rec.run_once()  # the checkpoint is done: drained, terminated, the job requeued and relaunched
    (again,) = report.plan.launches
    assert again.job_id == "b" and again.offering == DEAR and not w.rec.state.is_live(node_id)
