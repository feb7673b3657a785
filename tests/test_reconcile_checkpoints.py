"""The checkpoint handshake when the job it was for leaves the node first: the pool may start
another job there, which the handshake must not drain and terminate under it, unless the
checkpoint cordoned the node (``Checkpoint.cordon``: a spot notice, a budget stop)."""

from __future__ import annotations

from datetime import timedelta

from burster.errors import TransientError
from burster.lifecycle import NodeState
from burster.model import Demand, Snapshot
from burster.plan import Checkpoint, Plan
from tests.test_reconciler import World, join_and_start


class CheckpointOnce:
    """A policy: the World's, plus one Checkpoint of (node, job) when told (as move-back makes)."""

    def __init__(self, inner: object, cordon: bool = False) -> None:
        self.inner, self.ask, self.cordon = inner, None, cordon
        self.name = "checkpoint-once"

    def decide(self, snapshot: Snapshot) -> Plan:
        plan = self.inner.decide(snapshot)  # type: ignore[attr-defined]
        if self.ask is None:
            return plan
        node_id, job_id = self.ask
        self.ask = None
        move = Checkpoint(node_id, job_id, snapshot.now + timedelta(seconds=60), reason=f"move {job_id} back",
                          cordon=self.cordon)
        return Plan(actions=(*plan.actions, move))

    def budget_stop(self, snapshot: Snapshot) -> Plan:
        return self.inner.budget_stop(snapshot)  # type: ignore[attr-defined, no-any-return]


def _checkpointing_b(cordon: bool = False) -> tuple[World, CheckpointOnce, str]:
    """A World whose burst node runs job b (180 s long), checkpointing for a move at +150 s."""
    w = World()
    policy = CheckpointOnce(w.rec.policy, cordon)
    w.rec.policy = policy  # type: ignore[assignment]
    w.job("a", hours=5)  # holds the one on-prem node
    w.job("b", hours=0.05)  # bursts
    w.rec.run_once()
    (node,) = w.cloud.list_nodes()
    assert join_and_start(w.pool, node, "b", w.clock.now()) == ["b"]
    w.clock.advance(150)
    policy.ask = (node.node_id, "b")
    w.rec.run_once()
    assert w.rec.state.nodes[node.node_id].state is NodeState.CHECKPOINTING
    return w, policy, node.node_id


def test_a_job_started_where_a_finished_job_was_checkpointing_is_not_drained_under() -> None:
    """b ends mid-checkpoint and c starts on the node; the handshake for b used to go on with c,
    and drained and terminated the node under c at b's deadline."""
    w, _, node_id = _checkpointing_b()
    w.clock.advance(40)  # b ends at +180
    w.pool.events.run_until(w.clock.now())
    w.pool.submit(Demand("c", 8, w.clock.now(), 3600, nodes=1, gpu_model="V100"), w.clock.now())
    w.pool.schedule(w.clock.now())
    assert [p.job.job_id for p in w.pool.running() if node_id in p.node_ids] == ["c"]
    w.clock.advance(30)  # past b's checkpoint deadline
    report = w.rec.run_once()
    assert not report.errors
    assert node_id in {n.node_id for n in w.cloud.list_nodes()}
    assert w.rec.state.nodes[node_id].state is NodeState.READY and node_id not in w.rec.state.tickets
    assert [p.job.job_id for p in w.pool.running() if node_id in p.node_ids] == ["c"]


def test_a_cordoned_node_takes_no_job_as_its_own_leaves_and_is_given_back() -> None:
    """The same with a cordoning checkpoint (a notice's, a budget stop's): c stays queued, and the
    next pass drains and terminates the idle node."""
    w, _, node_id = _checkpointing_b(cordon=True)
    w.clock.advance(40)  # b ends at +180
    w.pool.events.run_until(w.clock.now())
    w.pool.submit(Demand("c", 8, w.clock.now(), 3600, nodes=1, gpu_model="V100"), w.clock.now())
    w.pool.schedule(w.clock.now())
    assert [p for p in w.pool.running() if node_id in p.node_ids] == []
    w.rec.run_once()
    assert w.rec.state.nodes[node_id].state is NodeState.TERMINATED
    assert "c" in {d.job_id for d in w.pool.pending()}


def test_a_node_left_idle_by_the_job_it_checkpointed_is_still_reclaimed() -> None:
    w, _, node_id = _checkpointing_b()
    w.clock.advance(40)  # b ends; nothing takes the node
    w.pool.events.run_until(w.clock.now())
    w.rec.run_once()
    assert w.rec.state.nodes[node_id].state is NodeState.TERMINATED
    assert node_id not in {n.node_id for n in w.cloud.list_nodes()}


def test_a_checkpoint_past_its_deadline_is_drained_and_terminated() -> None:
    """Found by mutation testing: nothing held a checkpoint that never finishes to its deadline."""
    w, _, node_id = _checkpointing_b()
    w.clock.advance(61)  # past the 60 s deadline; the pool's checkpoint never finishes
    report = w.rec.run_once()
    assert w.rec.state.nodes[node_id].state is NodeState.TERMINATED and node_id not in w.rec.state.tickets
    assert [n for n in report.notes if "timed out" in n] == [
        f"checkpoint of job b on {node_id} timed out at {(w.clock.now() - timedelta(seconds=1)):%H:%M:%S}: drained "
        "without it (its work since its last checkpoint is lost; raise cost.checkpoint_write_s if writes take longer)"]


def test_a_checkpoint_past_its_deadline_ends_its_node_though_the_pool_is_down() -> None:
    """The pool answers neither the poll nor the drain (slurmctld down): before, the ticket was kept and
    polled again every pass, so the node billed on for the whole outage; past its deadline it now goes
    unpolled and undrained. Within the deadline a failed poll still waits for the next pass."""
    w, _, node_id = _checkpointing_b()
    w.clock.advance(30)
    w.pool.fail_checkpoint = TransientError("pool: slurmctld not responding")
    w.rec.run_once()
    assert node_id in w.rec.state.tickets and w.rec.state.nodes[node_id].state is NodeState.CHECKPOINTING
    w.clock.advance(31)  # past the 60 s deadline
    w.pool.fail_checkpoint = TransientError("pool: slurmctld not responding")
    w.pool.fail_drain = TransientError("pool: slurmctld not responding")
    report = w.rec.run_once()
    assert w.rec.state.nodes[node_id].state is NodeState.TERMINATED and node_id not in w.rec.state.tickets
    assert f"checkpoint of {node_id} failed: pool: slurmctld not responding" in report.errors
    assert [n for n in report.notes if "timed out" in n] and w.cloud.list_nodes() == []


def test_a_checkpoint_still_within_its_deadline_is_waited_for_without_a_note() -> None:
    w, _, node_id = _checkpointing_b()
    w.clock.advance(59)
    report = w.rec.run_once()
    assert w.rec.state.nodes[node_id].state is NodeState.CHECKPOINTING and node_id in w.rec.state.tickets
    assert not [n for n in report.notes if "timed out" in n]


class CheckpointDueNow(CheckpointOnce):
    """A Checkpoint due at once (``policies.budget_stop``: a run younger than a checkpoint write)."""

    def decide(self, snapshot: Snapshot) -> Plan:
        plan = self.inner.decide(snapshot)  # type: ignore[attr-defined]
        if self.ask is None:
            return plan
        (node_id, job_id), self.ask = self.ask, None
        return Plan(actions=(*plan.actions, Checkpoint(node_id, job_id, snapshot.now, reason="stop: no write")))


def test_a_checkpoint_due_at_once_drains_and_terminates_in_the_same_pass() -> None:
    """No ticket and no wait for a write there is no time for: the job requeues and the node ends now."""
    w = World()
    policy = CheckpointDueNow(w.rec.policy)
    w.rec.policy = policy  # type: ignore[assignment]
    w.job("a", hours=5)
    w.job("b", hours=1)
    w.rec.run_once()
    (node,) = w.cloud.list_nodes()
    assert join_and_start(w.pool, node, "b", w.clock.now()) == ["b"]
    w.clock.advance(10)
    policy.ask = (node.node_id, "b")
    report = w.rec.run_once()
    assert not report.errors and node.node_id not in w.rec.state.tickets
    assert w.rec.state.nodes[node.node_id].state is NodeState.TERMINATED
    assert w.rec.state.nodes[node.node_id].ended_at == w.clock.now()
    assert "b" in {d.job_id for d in w.pool.pending()}
