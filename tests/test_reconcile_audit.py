"""Second-round audit of the reconcile pass: rules a mutation audit found unpinned, and two bugs.

- bug: a notice read in the pass that also lists its node's end (the provider was degraded, or the
  controller down, through the notice's time: AWS keeps notices in its queue) was dropped before it
  counted: the node was billed as if this controller had ended it (AWS bills none of a spot node it
  interrupts in its first hour) and its offering was not blocked, so the job it stopped could burst
  straight back onto the pool being taken back;
- bug: the nodes a partial launch made did not count towards the launch rate limit;
- a replay of a launch for no job that answers with an ended node is made next under a new id (the
  same id would answer the same, every pass); a node's state moves only through the lifecycle table;
  backoff: a Retry-After of exactly ``MAX_RETRY_AFTER_S`` is waited out, the jitter stays under ``cap_s``.
"""

from __future__ import annotations

import random
from datetime import timedelta

import pytest

from burster.errors import IllegalTransitionError, ThrottledError, TransientError
from burster.lifecycle import NodeState
from burster.plan import Launch, Plan, Terminate
from burster.reconciler import Reconciler
from burster.retry import MAX_RETRY_AFTER_S, call_with_backoff
from providers.fake import FakeCloudProvider
from tests.test_reconcile_take_back import Cloud
from tests.test_reconciler import CHEAP, DEAR, World
from tests.test_reconciler_edges import Scripted, adopted, replay_with_one_ended, scripted


# --- notices read late ---------------------------------------------------------------------------
def _taken_back_while_unread(c: Cloud) -> None:
    """The node gets a 120 s notice while its provider's listing fails (the notice stays queued),
    and its cloud takes it back at the notice's time, before the next pass reads either."""
    c.clock.advance(600)
    c.cloud.interrupt(c.node_id, notice_s=120)
    c.cloud.fail_next_list(TransientError("fake: 503 on DescribeInstances"))
    assert c.rec.run_once().plan.actions == ()  # degraded: neither its notice nor anything else read
    c.clock.advance(120)
    c.cloud.end(c.node_id)
    c.clock.advance(10)
    c.rec.run_once()  # lists its end and reads its notice at once


def test_a_spot_node_taken_back_before_its_notice_was_read_is_billed_as_taken_back() -> None:
    c = Cloud("aws")
    _taken_back_while_unread(c)
    assert c.rec.state.nodes[c.node_id].state is NodeState.TERMINATED and c.terminates == 0
    billed_s, reason = c.entry()
    assert billed_s == 0.0 and reason.endswith("taken back by its cloud in its first hour: not billed")
    assert c.node_id not in c.rec.state.notices


def test_a_notice_read_in_the_pass_its_node_is_listed_gone_blocks_its_offering() -> None:
    c = Cloud("gcp")
    _taken_back_while_unread(c)
    (key,) = {o.key for o in c.cloud.offerings()}
    assert c.rec.state.blocked[key] == c.clock.now() - timedelta(seconds=130) + timedelta(seconds=600)
    assert c.rec.state.block_strikes[key] == 1


def test_a_notice_issued_as_its_node_ended_still_blocks_and_one_issued_after_does_not() -> None:
    w = World()
    w.cloud.list_ended(True)
    (on_time,) = w.cloud.launch(CHEAP, 1, request_id="earlier-cheap")
    (late,) = w.cloud.launch(DEAR, 1, request_id="earlier-dear")
    w.rec.observe()
    w.clock.advance(60)
    w.cloud.interrupt(on_time.node_id, notice_s=0)  # issued at the instant the node went
    w.cloud.end(on_time.node_id)
    w.cloud.end(late.node_id)
    w.clock.advance(1)
    w.cloud.interrupt(late.node_id, notice_s=0)  # issued after the node went: about another pool's node
    w.rec.observe()
    assert CHEAP.key in w.rec.state.blocked and DEAR.key not in w.rec.state.blocked


# --- launches ------------------------------------------------------------------------------------
def test_the_nodes_a_partial_launch_made_count_towards_the_launch_rate() -> None:
    w = World()
    w.cloud.partial_next(3)
    scripted(w, Plan(actions=(Launch(CHEAP, 4, "stock", "rq-stock"),))).run_once()
    assert len(w.cloud.list_nodes()) == 3
    w.clock.advance(10)
    assert w.rec.observe().spend.launches_last_minute == 3


def test_a_partial_gangs_nodes_count_towards_the_launch_rate_though_given_back() -> None:
    w = World()
    w.cloud.partial_next(1)
    scripted(w, Plan(actions=(Launch(CHEAP, 2, "gang", "rq-gang", job_id="g"),))).run_once()
    assert w.cloud.list_nodes() == []
    w.clock.advance(10)
    assert w.rec.observe().spend.launches_last_minute == 1


def test_a_replay_for_no_job_with_an_ended_node_is_launched_next_under_a_new_id() -> None:
    """Under the same id the cloud would answer with the same ended node at every pass."""
    w = World()
    rec, _, _ = replay_with_one_ended(w)
    w.clock.advance(10)
    report = rec.run_once()
    assert not report.errors and report.launched_nodes == 2
    assert sorted(n.request_id for n in w.cloud.list_nodes()) == ["rq-stock", "rq-stock-r1", "rq-stock-r1"]


# --- state, backoff ------------------------------------------------------------------------------
def test_a_records_state_moves_only_through_the_lifecycle_table() -> None:
    w = World()
    (node,) = w.cloud.launch(CHEAP, 1, request_id="earlier")
    w.rec.observe()
    w.rec.state.move(node.node_id, NodeState.TERMINATING)
    with pytest.raises(IllegalTransitionError, match="cannot go from terminating to ready"):
        w.rec.state.move(node.node_id, NodeState.READY)
    assert w.rec.state.nodes[node.node_id].state is NodeState.TERMINATING and w.rec.state.is_live(node.node_id)


def test_a_retry_after_of_exactly_the_most_waited_out_is_waited_out() -> None:
    calls: list[int] = []
    slept: list[float] = []

    def throttled_once() -> str:
        calls.append(1)
        if len(calls) == 1:
            err = ThrottledError("slow down")
            err.retry_after_s = MAX_RETRY_AFTER_S
            raise err
        return "ok"

    assert call_with_backoff(throttled_once, sleep=slept.append) == "ok" and slept == [MAX_RETRY_AFTER_S]


def test_the_backoff_jitter_never_passes_its_cap() -> None:
    slept: list[float] = []

    def always() -> None:
        raise TransientError("timeout")

    with pytest.raises(TransientError):
        call_with_backoff(always, attempts=6, base_s=100.0, cap_s=2.0, sleep=slept.append, rng=random.Random(1))
    assert len(slept) == 5 and all(0.0 <= s <= 2.0 for s in slept)


# --- a cloud since disabled ----------------------------------------------------------------------
def test_nodes_of_a_provider_no_longer_configured_are_kept_billed_and_a_terminate_is_reported() -> None:
    """A kept store's live node on a cloud the config no longer has: the pass raised KeyError when the
    policy ended it. Now that provider is degraded every pass (nothing there reclaimed, its nodes billed)
    and a terminate of one is a failure the pass reports, naming the fix."""
    w = World()
    node_id = adopted(w)
    other = FakeCloudProvider("other", [], now=w.clock.now)
    end_it = Scripted(Plan((Terminate((node_id,), "idle", f"term-{node_id}"),)))
    w.rec = Reconciler(providers={"other": other}, pool=w.pool, policy=end_it, clock=w.clock, state=w.rec.state)
    w.clock.advance(3600)
    snapshot = w.rec.observe()
    assert snapshot.degraded_providers == frozenset({"fake"})
    assert [n.node_id for n in snapshot.cloud_nodes] == [node_id] and snapshot.spend.total_usd > 0
    report = w.rec.run_once()
    assert report.errors == ["terminate failed: provider 'fake' is not configured, but this controller's records "
                             "hold live nodes there: enable clouds.fake again so it can end them"]
    assert w.rec.state.is_live(node_id) and [n.node_id for n in w.cloud.list_nodes()] == [node_id]



def test_an_unconfigured_provider_is_warned_of_once_and_again_when_its_node_count_changes(
        caplog: pytest.LogCaptureFixture) -> None:
    """A controller passes every few seconds: the warning came every pass, burying every other log line."""
    w = World()
    first, _ = adopted(w, CHEAP), adopted(w, DEAR)
    other = FakeCloudProvider("other", [], now=w.clock.now)
    w.rec = Reconciler(providers={"other": other}, pool=w.pool, policy=Scripted(Plan(())), clock=w.clock,
                       state=w.rec.state)

    def warned() -> list[int]:
        return [int(r.getMessage().split(" but ")[1].split()[0]) for r in caplog.records
                if r.getMessage().startswith("provider fake is not configured")]

    with caplog.at_level("WARNING", logger="burster.reconcile"):
        for _ in range(3):
            w.clock.advance(60)
            w.rec.run_once()
        assert warned() == [2]
        w.rec.state.move(first, NodeState.TERMINATING)
        w.rec.state.move(first, NodeState.TERMINATED, ended_at=w.clock.now())
        for _ in range(2):
            w.clock.advance(60)
            w.rec.run_once()
    assert warned() == [2, 1]
