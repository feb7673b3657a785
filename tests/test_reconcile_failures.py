"""The reconcile pass when nodes and the pool misbehave: nodes that never join, terminates the cloud
refuses, checkpoints and drains the pool refuses, a pool that cannot be read, an interrupted node.
(Lagging listings: test_reconcile_listings.py; failed launches: test_reconcile_launch_failures.py.)"""

from __future__ import annotations

from datetime import timedelta

from burster.errors import TransientError
from burster.lifecycle import NodeState
from tests.test_reconciler import CHEAP, DEAR, World


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


def test_a_young_node_whose_terminate_reply_was_lost_is_charged_to_the_pass_that_finds_it_gone() -> None:
    """The terminate went through; the controller saw a timeout, so the node stays terminating. A
    cloud that lists no deleted VM (GCP, Azure; the fake by default) then leaves it out: it is gone
    now, not a listing grace after its launch (a listing that lags a launch is no reason to wait
    for a node we asked to end), and the terminate is not sent again."""
    w = World()
    w.cloud.launch(CHEAP, 1, request_id="prewarm-1")
    w.rec.run_once()  # adopts the idle node
    (node_id,) = w.rec.state.nodes
    w.clock.advance(120)
    w.cloud.lose_next_terminate_reply()
    (ttl,) = w.rec.run_once().plan.terminates  # its idle TTL, two minutes after its launch
    assert ttl.node_ids == (node_id,) and w.cloud.list_nodes() == []
    assert w.rec.state.nodes[node_id].state is NodeState.TERMINATING
    w.clock.advance(10)
    report = w.rec.run_once()
    assert not report.errors and not report.plan.terminates
    rec = w.rec.state.nodes[node_id]
    (entry,) = w.rec.state.ledger
    assert rec.state is NodeState.TERMINATED and rec.ended_at == entry.end == w.clock.now()
    assert w.cloud.api_calls == 2  # one launch, one terminate


def test_a_node_gone_after_its_terminate_was_refused_is_charged_to_the_pass_that_finds_it_gone() -> None:
    """Refused, the terminate did nothing; the node then went (taken back, removed outside us)
    before the pass that would terminate it again. No listing says when: it is charged to the
    pass that finds it gone, never to the refused call (that would charge less than it ran)."""
    w = World()
    w.cloud.launch(CHEAP, 1, request_id="prewarm-1")
    w.rec.run_once()
    (node_id,) = w.rec.state.nodes
    w.clock.advance(120)
    w.cloud.fail_next_terminate(TransientError("fake: 503 on terminate"))
    refused = w.clock.now()
    assert w.rec.run_once().plan.terminates and w.rec.state.nodes[node_id].state is NodeState.TERMINATING
    w.clock.advance(4)
    w.cloud.end(node_id)
    w.clock.advance(6)
    w.rec.run_once()
    (entry,) = w.rec.state.ledger
    assert entry.end == w.clock.now() != refused


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


def test_a_pool_that_cannot_be_read_makes_a_pass_that_decides_nothing_under_no_budget_and_says_why() -> None:
    w = World()
    w.job("a")
    w.job("b")
    w.pool.fail_pending = TransientError("pool: squeue timed out")
    report = w.rec.run_once()  # does not raise
    assert report.plan.actions == ()
    assert report.errors == ["pool unreadable, only the hard budgets decided: pool: squeue timed out"]
    assert report.quiet_until is None and w.cloud.list_nodes() == []
    w.clock.advance(10)
    (launch,) = w.rec.run_once().plan.launches  # readable again: b bursts
    assert launch.job_id == "b"


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


def test_a_booting_node_whose_terminate_was_refused_joins_drained_and_runs_nothing() -> None:
    """Fuzz seed 1300: a node past its join timeout was terminated, the call refused; it came up,
    joined and its job started there, to be killed by the terminate made again the next pass. The
    pool is told to drain a booting node before it is terminated, so it takes no job if it joins."""
    w = World()
    w.cloud.boot_slowly()
    w.job("a")
    w.job("b")
    w.rec.run_once()
    (node,) = w.cloud.list_nodes()
    w.pool.expect(node.node_id, node.offering, "b")  # launched into the pool for b, booting
    w.clock.advance(1200)
    w.cloud.fail_next_terminate(TransientError("fake: 503 on terminate"))
    report = w.rec.run_once()
    assert report.errors and w.rec.state.nodes[node.node_id].state is NodeState.TERMINATING
    w.cloud.up(node.node_id)
    w.pool.join(node.node_id)  # its boot was only slow
    w.pool.schedule(w.clock.now())
    assert not any(node.node_id in p.node_ids for p in w.pool.running())
    w.clock.advance(10)
    w.rec.run_once()  # the terminate made again kills nothing
    assert node.node_id not in {n.node_id for n in w.cloud.list_nodes()}
    assert w.rec.state.nodes[node.node_id].state is NodeState.TERMINATED


def test_a_refused_terminate_is_made_again_next_pass_though_that_listing_fails() -> None:
    """Fuzz seed 1463: a node whose terminate was refused was tried again only once a listing showed
    it still up, so a listing that failed in between let it bill another tick (past a team's budget).
    A terminate is idempotent: one that failed is made again at the next pass, listed or not."""
    w = World()
    w.cloud.launch(CHEAP, 1, request_id="prewarm-1")
    w.rec.run_once()  # adopts the idle node
    (node,) = w.cloud.list_nodes()
    w.clock.advance(3600)
    w.cloud.fail_next_terminate(TransientError("fake: 503 on terminate"))
    w.rec.run_once()
    assert w.rec.state.nodes[node.node_id].state is NodeState.TERMINATING
    w.clock.advance(10)
    w.cloud.fail_next_list(TransientError("fake: listing timed out"))
    report = w.rec.run_once()
    assert "fake: listing timed out" not in " ".join(report.errors)  # a degraded provider is a warning
    assert w.cloud.list_nodes() == []  # made again without a listing to show it up
    w.clock.advance(10)
    w.rec.run_once()
    assert w.rec.state.nodes[node.node_id].state is NodeState.TERMINATED
    (entry,) = w.rec.state.ledger
    assert entry.end == w.clock.now() - timedelta(seconds=10)  # billed until the terminate that took
