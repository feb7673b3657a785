"""Rules of the reconcile pass that a mutation audit found unpinned (billing, budget periods and
quiet_until: test_billing_quiet_edges.py).

- the pass: quiet_until is withheld from a pass that settled or called off a checkpoint and from a
  plan with actions or refusals, whatever the policy says; an offering's block ends at its instant;
  a checkpoint is drained at its deadline, and one done on a node left to its cloud is not polled
  again; a second Checkpoint of a node in flight keeps the first deadline; a Drain action marks its
  node draining; terminating a failed node is a no-op; an offering list that changes is seen;
  providers are read in name order; a signal source that fails is skipped;
- interruption notices: a node's first notice alone blocks its offering (none for an ended node);
  per node the notice ending first stands; a node's notice goes with it; sorted by end, then node;
- launches: only set labels are sent, an exclusive job's node is tagged so; a partial launch or a
  replay with ended nodes keeps the live nodes of a non-gang launch;
- an unreadable pool still reports observe's errors and notes; notes and errors reach on_event;
- and a bug it found: a checkpoint asked just as its job left (the pool's ticket names no job) was
  carried out on the job the pool started there next; it is now called off.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timedelta

import pytest

from burster.errors import CapacityError, ProviderError, TransientError
from burster.lifecycle import NodeState
from burster.model import Demand, Node, Offering, Signal, Snapshot
from burster.plan import Checkpoint, Drain, Launch, Plan, Terminate
from burster.reconciler import PassReport, Reconciler
from burster.state import NodeRecord
from providers.fake import FakeCloudProvider
from tests.test_reconcile_checkpoints import _checkpointing_b
from tests.test_reconcile_take_back import Cloud
from tests.test_reconciler import CHEAP, DEAR, T0, World, join_and_start


class Scripted:
    """A policy that answers every snapshot with ``plan`` (a custom policy, as the Policy protocol allows)."""

    name = "scripted"

    def __init__(self, plan: Plan) -> None:
        self.plan = plan

    def decide(self, snapshot: Snapshot) -> Plan:
        return self.plan

    def budget_stop(self, snapshot: Snapshot) -> Plan:
        return Plan()


def scripted(w: World, plan: Plan, **kwargs: object) -> Reconciler:
    w.rec = Reconciler(providers={"fake": w.cloud}, pool=w.pool, policy=Scripted(plan), clock=w.clock,
                       state=w.rec.state, **kwargs)  # type: ignore[arg-type]
    return w.rec


def adopted(w: World, offering: Offering = CHEAP) -> str:
    """A node launched outside this pass (a lost store) that the next observe adopts; its id."""
    (node,) = w.cloud.launch(offering, 1, request_id=f"earlier-{offering.key}")
    w.rec.observe()
    return node.node_id


# --- the pass ------------------------------------------------------------------------------------
def test_a_pass_that_settles_a_checkpoint_reports_no_quiet_until() -> None:
    """The finished checkpoint requeued its job, which the pool may start by the next tick."""
    w, _, node_id = _checkpointing_b()
    w.clock.advance(40)  # b ends: its checkpoint is done
    w.pool.events.run_until(w.clock.now())
    report = w.rec.run_once()
    assert w.rec.state.nodes[node_id].state is NodeState.TERMINATED
    assert report.plan.actions == () and report.plan.quiet_until is not None and report.quiet_until is None


def test_a_pass_that_calls_off_a_checkpoint_reports_no_quiet_until() -> None:
    w, _, node_id = _checkpointing_b()
    w.clock.advance(40)
    w.pool.events.run_until(w.clock.now())
    w.pool.submit(Demand("c", 8, w.clock.now(), 3600, nodes=1, gpu_model="V100"), w.clock.now())
    w.pool.schedule(w.clock.now())  # c starts where b was checkpointing
    report = w.rec.run_once()
    assert w.rec.state.nodes[node_id].state is NodeState.READY
    assert report.plan.actions == () and report.plan.quiet_until is not None and report.quiet_until is None


@pytest.mark.parametrize("busy", ["actions", "refused"])
def test_quiet_until_is_taken_only_from_an_empty_plan(busy: str) -> None:
    drain = Drain("nowhere", "a custom policy's drain")
    wake = T0 + timedelta(hours=1)
    plan = Plan(actions=(drain,), quiet_until=wake) if busy == "actions" else \
        Plan(refused=((drain, "no"),), quiet_until=wake)
    w = World()
    assert scripted(w, plan).run_once().quiet_until is None
    assert scripted(w, Plan(quiet_until=wake)).run_once().quiet_until == wake


def test_an_offering_is_free_again_at_the_instant_its_block_ends() -> None:
    w = World([CHEAP])
    w.job("a")
    w.job("b")
    w.cloud.fail_next_launch(CapacityError("fake: no capacity"))
    assert w.rec.run_once().errors
    w.clock.set(w.rec.state.blocked[CHEAP.key])
    assert w.rec.observe().blocked_offerings == frozenset()
    (launch,) = w.rec.run_once().plan.launches
    assert launch.job_id == "b" and len(w.cloud.list_nodes()) == 1


def test_a_checkpoint_is_drained_at_its_deadline_exactly() -> None:
    w, _, node_id = _checkpointing_b()
    w.clock.advance(60)  # the deadline; the pool's checkpoint never finishes
    report = w.rec.run_once()
    assert w.rec.state.nodes[node_id].state is NodeState.TERMINATED
    assert [n for n in report.notes if "timed out" in n]


def test_a_checkpoint_done_on_a_node_left_to_its_cloud_is_not_polled_again() -> None:
    c = Cloud("aws")
    (node,) = c.cloud.list_nodes()
    join_and_start(c.pool, node, "b", c.clock.now())
    c.clock.advance(600)
    c.cloud.interrupt(c.node_id, notice_s=120)
    c.rec.run_once()
    c.clock.advance(90)
    c.pool.events.run_until(c.clock.now())
    assert len(c.rec.run_once().notes) == 1  # drained, left to EC2
    assert c.node_id not in c.rec.state.tickets
    c.clock.advance(10)
    assert c.rec.run_once().notes == [] and c.rec.state.nodes[c.node_id].state is NodeState.DRAINING


def test_a_second_checkpoint_of_a_node_in_flight_keeps_the_first_deadline() -> None:
    w, policy, node_id = _checkpointing_b()
    first = w.rec.state.tickets[node_id].deadline
    w.clock.advance(10)
    policy.ask = (node_id, "b")  # type: ignore[assignment]  # asked again, for a deadline 10 s later
    w.rec.run_once()
    assert w.rec.state.tickets[node_id].deadline == first


def test_a_drain_action_marks_its_node_draining() -> None:
    w = World()
    node_id = adopted(w)
    scripted(w, Plan(actions=(Drain(node_id, "a custom policy's drain"),))).run_once()
    assert w.rec.state.nodes[node_id].state is NodeState.DRAINING


def test_terminating_a_failed_node_calls_no_cloud() -> None:
    w = World()
    w.rec.state.add_node(NodeRecord("fake-failed", "fake", CHEAP, "rq", T0, NodeState.FAILED, ended_at=T0))
    calls = w.cloud.api_calls
    report = scripted(w, Plan(actions=(Terminate(("fake-failed",), "again", "term-failed"),))).run_once()
    assert not report.errors and w.cloud.api_calls == calls
    assert w.rec.state.nodes["fake-failed"].state is NodeState.FAILED


class Listing(FakeCloudProvider):
    """A fake cloud whose offerings are whatever ``listed`` holds (spot capacity comes and goes)."""

    def __init__(self, name: str, listed: Sequence[Offering], **kwargs: object) -> None:
        super().__init__(name, listed, **kwargs)  # type: ignore[arg-type]
        self.listed = list(listed)

    def offerings(self) -> Sequence[Offering]:
        return self.listed


def test_a_changed_offering_list_is_seen_and_an_unchanged_one_reused() -> None:
    w = World()
    w.cloud = Listing("fake", [CHEAP], now=w.clock.now)
    scripted(w, Plan())
    first = w.rec.observe().offerings
    assert first == (CHEAP,) and w.rec.observe().offerings is first
    w.cloud.listed = [DEAR]  # as many offerings as before, other ones
    assert w.rec.observe().offerings == (DEAR,)


def test_providers_are_read_in_name_order() -> None:
    w = World()
    alpha, zeta = replace(CHEAP, provider="alpha"), replace(CHEAP, provider="zeta")
    clouds = {"zeta": FakeCloudProvider("zeta", [zeta]), "alpha": FakeCloudProvider("alpha", [alpha])}
    rec = Reconciler(providers=clouds, pool=w.pool, policy=Scripted(Plan()), clock=w.clock)
    assert rec.observe().offerings == (alpha, zeta)


class Signals:
    def __init__(self, out: Sequence[Signal] | ProviderError) -> None:
        self.out = out

    def signals(self, now: datetime) -> Sequence[Signal]:
        if isinstance(self.out, ProviderError):
            raise self.out
        return self.out


def test_a_signal_source_that_fails_is_skipped() -> None:
    w = World()
    sprint = Signal("SPRINT-7", 16.0, T0 + timedelta(hours=4), T0 + timedelta(hours=6), gpu_model="V100")
    rec = scripted(w, Plan(), signals=[Signals(TransientError("jira: 503")), Signals([sprint])])
    assert rec.observe().signals == (sprint,)
    assert not rec.run_once().errors


# --- interruption notices ------------------------------------------------------------------------
def test_a_nodes_notices_block_its_offering_once_and_the_one_ending_first_stands() -> None:
    w = World()
    node_id = adopted(w)
    w.cloud.interrupt(node_id, kind="rebalance", notice_s=600)
    w.cloud.interrupt(node_id, kind="spot-interruption", notice_s=120)
    (notice,) = w.rec.observe().interruptions
    assert notice.kind == "spot-interruption" and notice.terminate_at == T0 + timedelta(seconds=120)
    assert w.rec.state.block_strikes[CHEAP.key] == 1
    assert w.rec.state.blocked[CHEAP.key] == T0 + timedelta(seconds=600)
    w.clock.advance(10)
    w.cloud.interrupt(node_id, kind="rebalance", notice_s=900)  # a later one ending later: the first stands
    (notice,) = w.rec.observe().interruptions
    assert notice.kind == "spot-interruption" and w.rec.state.block_strikes[CHEAP.key] == 1


def test_a_nodes_notice_goes_when_the_node_ends() -> None:
    w = World()
    node_id = adopted(w)
    w.cloud.interrupt(node_id, notice_s=120)
    assert len(w.rec.observe().interruptions) == 1
    w.cloud.list_ended(True)
    w.cloud.end(node_id)
    w.clock.advance(10)
    assert w.rec.observe().interruptions == () and node_id not in w.rec.state.notices


def test_a_notice_for_a_node_already_ended_blocks_nothing() -> None:
    w = World()
    node_id = adopted(w)
    w.cloud.list_ended(True)
    w.cloud.end(node_id)
    w.clock.advance(10)
    w.rec.observe()
    assert not w.rec.state.is_live(node_id)
    w.cloud.interrupt(node_id, notice_s=120)
    w.rec.observe()
    assert CHEAP.key not in w.rec.state.blocked


def test_standing_notices_are_sorted_by_end_then_node() -> None:
    w = World()
    first, second, third = adopted(w, CHEAP), adopted(w, DEAR), adopted(w, replace(CHEAP, zone="r1c"))
    w.cloud.interrupt(first, notice_s=300)
    w.cloud.interrupt(third, notice_s=120)
    w.cloud.interrupt(second, notice_s=120)
    assert [n.node_id for n in w.rec.observe().interruptions] == [second, third, first]


# --- launches ------------------------------------------------------------------------------------
def test_a_launch_sends_only_the_labels_it_sets_and_tags_an_exclusive_job() -> None:
    w = World()
    launch = Launch(CHEAP, 1, "burst x", "rq-x", job_id="x", team="vision", exclusive=True)
    scripted(w, Plan(actions=(launch,))).run_once()
    (node,) = w.cloud.list_nodes()
    assert w.cloud.labels_of(node.node_id) == {"managed-by": "burster", "request-id": "rq-x", "team": "vision",
                                               "job": "x", "exclusive": "true"}
    assert w.rec.state.nodes[node.node_id].exclusive


def test_a_partial_launch_for_no_job_keeps_the_nodes_it_got() -> None:
    w = World()
    w.cloud.partial_next(1)
    report = scripted(w, Plan(actions=(Launch(CHEAP, 2, "stock", "rq-stock"),))).run_once()
    assert "launched 1 of 2" in report.errors[0]
    (node,) = w.cloud.list_nodes()
    assert w.rec.state.is_live(node.node_id)


def replay_with_one_ended(w: World) -> tuple[Reconciler, PassReport, Node]:
    """A 2-node launch for no job whose replies are lost: one node ends, the other is listed late; the
    pass that replays it. The reconciler, that pass's report and the node kept."""
    rec = scripted(w, Plan(actions=(Launch(CHEAP, 2, "stock", "rq-stock"),)))
    w.cloud.lose_next_replies(5)
    rec.run_once()
    gone, kept = w.cloud.list_nodes()
    w.clock.advance(20)
    w.cloud.end(gone.node_id)
    w.cloud.list_late([kept.node_id])
    w.clock.advance(10)
    report = rec.run_once()
    w.cloud.list_again()
    return rec, report, kept


def test_a_replay_for_no_job_keeps_its_live_node_when_the_other_ended() -> None:
    w = World()
    _, report, kept = replay_with_one_ended(w)
    assert any("ended before this controller heard of them" in e for e in report.errors)
    assert w.rec.state.is_live(kept.node_id) and [n.node_id for n in w.cloud.list_nodes()] == [kept.node_id]


# --- an unreadable pool, decision events ---------------------------------------------------------
def test_an_unreadable_pool_still_reports_a_failed_checkpoint_poll() -> None:
    w = World()
    w.job("a")
    w.job("b")
    w.rec.run_once()
    (node,) = w.cloud.list_nodes()
    join_and_start(w.pool, node, "b", w.clock.now())
    w.cloud.interrupt(node.node_id, notice_s=120)
    w.clock.advance(10)
    w.rec.run_once()  # asks for the checkpoint
    w.pool.fail_checkpoint = TransientError("pool: slurmctld not responding")
    w.pool.fail_pending = TransientError("pool: squeue timed out")
    w.clock.advance(10)
    assert w.rec.run_once().errors == [f"checkpoint of {node.node_id} failed: pool: slurmctld not responding",
                                       "pool unreadable, only the hard budgets decided: pool: squeue timed out"]


def test_an_unreadable_pool_still_reports_a_timed_out_checkpoint_and_both_reach_the_events() -> None:
    w, _, node_id = _checkpointing_b()
    events: list[str] = []
    w.rec.on_event = events.append
    w.clock.advance(61)
    w.pool.fail_pending = TransientError("pool: squeue timed out")
    report = w.rec.run_once()
    (note,) = report.notes
    assert note.startswith(f"checkpoint of job b on {node_id} timed out")
    stamp = f"{w.clock.now():%Y-%m-%d %H:%M:%S}"
    unread = "pool unreadable, only the hard budgets decided: pool: squeue timed out"
    assert events == [f"{stamp} note: {note}", f"{stamp} error: {unread}"]


# --- billing -------------------------------------------------------------------------------------
def test_a_checkpoint_asked_as_its_job_left_is_called_off_when_another_starts_there() -> None:
    """The job left between decide and the checkpoint call (a real pool races the pass): the pool's
    ticket names no job. The handshake was for the job that left, so a job started there next is
    let be (architecture.md: called off when the job it was for leaves and another starts)."""
    w = World()
    w.job("a", hours=5)
    w.job("b", hours=0.05)
    w.rec.run_once()
    (node,) = w.cloud.list_nodes()
    join_and_start(w.pool, node, "b", w.clock.now())
    w.clock.advance(200)
    w.pool.events.run_until(w.clock.now())  # b ends
    ask = Checkpoint(node.node_id, "b", w.clock.now() + timedelta(seconds=60), "move b back")
    scripted(w, Plan(actions=(ask,))).run_once()
    assert w.rec.state.nodes[node.node_id].state is NodeState.CHECKPOINTING
    w.pool.submit(Demand("c", 8, w.clock.now(), 3600, gpu_model="V100"), w.clock.now())
    w.pool.schedule(w.clock.now())
    assert [p.job.job_id for p in w.pool.running() if node.node_id in p.node_ids] == ["c"]
    w.clock.advance(10)
    w.rec.policy = Scripted(Plan())  # asked once
    w.rec.run_once()
    assert w.rec.state.nodes[node.node_id].state is NodeState.READY and node.node_id not in w.rec.state.tickets

