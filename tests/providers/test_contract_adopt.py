"""A controller that starts with no state (a lost store, a new one) over a cloud that still lists
this cluster's ended nodes, run over every adapter (see conftest.HARNESSES)."""

from __future__ import annotations

from datetime import timedelta

from burster.clock import FakeClock
from burster.lifecycle import NodeState
from burster.plan import Launch, request_id
from burster.reconciler import Reconciler
from burster.state import MemoryState
from policies.burster import BursterPolicy
from providers.sim.events import EventQueue
from providers.sim.pool import SimPool
from tests.providers.harness import Harness


def test_a_node_that_ended_before_the_controller_knew_it_is_neither_tracked_nor_billed(harness: Harness) -> None:
    p = harness.provider
    (node,) = p.launch(harness.offering, 1, request_id=request_id("earlier-run", 1))
    p.terminate([node.node_id], request_id=request_id("earlier-run-term", 1))
    clock = FakeClock((node.launched_at or FakeClock().now()) + timedelta(seconds=60))
    pool = SimPool(EventQueue(), nodes=1, gpus_per_node=8, gpu_model="V100")
    rec = Reconciler(providers={p.name: p}, pool=pool, policy=BursterPolicy(), clock=clock)
    for _ in range(2):
        report = rec.run_once()
        assert rec.state.live() == [] and rec.state.ledger == [] and not report.errors
        clock.advance(10)
    assert all(r.state in (NodeState.TERMINATED, NodeState.FAILED) for r in rec.state.nodes.values())


def test_a_node_launched_for_an_intent_and_gone_while_the_controller_was_down_is_billed_once(
        harness: Harness) -> None:
    p = harness.provider
    launch = Launch(harness.offering, 1, "burst job-7", request_id("crashed", 1), job_id="job-7")
    (node,) = p.launch(harness.offering, 1, request_id=launch.request_id)
    p.terminate([node.node_id], request_id=request_id("preempted", 1))  # while no controller ran
    clock = FakeClock((node.launched_at or FakeClock().now()) + timedelta(seconds=60))
    pool = SimPool(EventQueue(), nodes=1, gpus_per_node=8, gpu_model="V100")
    state = MemoryState()
    state.put_intent(launch)  # written before the call; the controller died before it recorded the node
    rec = Reconciler(providers={p.name: p}, pool=pool, policy=BursterPolicy(), clock=clock, state=state)
    for _ in range(3):
        assert not rec.run_once().errors
        clock.advance(10)
    listed_as = {"aws": "ended", "azure": "deleting", "gcp": "deleted"}.get(type(p).__module__.split(".")[1])
    if listed_as == "ended":  # EC2 lists a terminated instance for a while: it ran, for us
        (entry,) = state.ledger
        assert entry.node_id == node.node_id and entry.reason == "burst job-7" and entry.usd > 0
        assert state.nodes[node.node_id].for_job == "job-7" and state.live() == []
    elif listed_as == "deleting":  # the ARM fake lists it deleting (its delete never polled): followed
        (kept,) = state.live()
        assert kept.node_id == node.node_id and kept.state is NodeState.TERMINATING and state.ledger == []
    elif listed_as == "deleted":  # the GCE fake's delete is done in a few calls: followed, billed once gone
        (entry,) = state.ledger  # by the pass whose listing leaves it out, not a listing grace after its launch
        assert entry.node_id == node.node_id and entry.reason == "burst job-7" and state.live() == []
        assert state.nodes[node.node_id].state is NodeState.TERMINATED
    else:  # the fake and the simulator list nothing of a node ended before it was ever listed
        assert state.nodes == {} and state.ledger == []


def test_a_node_adopted_with_no_intent_is_attributed_by_its_tags(harness: Harness) -> None:
    """A lost store, a node of an earlier run still up: its record (and so its ledger entries) takes
    the team, project and sprint its launch tagged it with, exactly (GCE labels lowercase and cut
    values: its adapter reads them back from the instance's metadata)."""
    p = harness.provider
    project = "Detector-" + "x" * 60  # past GCE's 63-character label value
    labels = {"team": "Vision", "project": project, "sprint": "ML Sprint 42 (Q4)", "exclusive": "true"}
    (node,) = p.launch(harness.offering, 1, request_id=request_id("earlier-run", 2), labels=labels)
    clock = FakeClock((node.launched_at or FakeClock().now()) + timedelta(seconds=60))
    pool = SimPool(EventQueue(), nodes=1, gpus_per_node=8, gpu_model="V100")
    rec = Reconciler(providers={p.name: p}, pool=pool, policy=BursterPolicy(), clock=clock)
    assert not rec.run_once().errors
    got = rec.state.nodes[node.node_id]
    assert (got.team, got.project, got.sprint, got.exclusive, got.for_job) == (
        "Vision", project, "ML Sprint 42 (Q4)", True, None)
