"""The reconcile pass over the real AWS adapter (boto3 -> fault proxy -> moto over HTTP): a
terminate EC2 refuses is made again, and the instance does go."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

pytest.importorskip("moto", reason="the AWS tests need moto[server] and boto3 (dev extras)")

from burster.clock import FakeClock
from burster.lifecycle import NodeState
from burster.model import Node
from burster.reconciler import Reconciler
from policies.burster import BursterParams, BursterPolicy
from policies.reclaim import ReclaimParams
from providers.sim.events import EventQueue
from providers.sim.pool import SimPool
from tests.providers import harness_aws as h


def _adopted_idle_instance(request_id: str, idle_ttl_s: float) -> tuple[Any, Any, Node, FakeClock, Reconciler]:
    """(backend, provider, node, clock, reconciler): an idle instance launched over moto, adopted."""
    b = h.backend()
    b.proxy.reset()
    provider = h.make_provider(b)
    (node,) = provider.launch(h.offering(), 1, request_id=request_id)
    assert node.launched_at is not None
    clock = FakeClock(node.launched_at + timedelta(seconds=10))
    policy = BursterPolicy(params=BursterParams(reclaim=ReclaimParams(idle_ttl_s=idle_ttl_s, move_back=False)))
    pool = SimPool(EventQueue(), nodes=1, gpus_per_node=8, gpu_model="V100")
    rec = Reconciler(providers={"aws": provider}, pool=pool, policy=policy, clock=clock)
    rec.run_once()  # adopts the idle instance
    return b, provider, node, clock, rec


def test_an_idle_instance_whose_terminate_ec2_refused_is_terminated_next_pass() -> None:
    b, provider, node, clock, rec = _adopted_idle_instance("prewarm-1", idle_ttl_s=120)
    clock.advance(3600)
    b.proxy.fail_next("TerminateInstances", "UnauthorizedOperation",
                      "You are not authorized to perform this operation.", 403)
    report = rec.run_once()
    assert report.plan.terminates and "not authorized" in report.errors[0]
    assert rec.state.nodes[node.node_id].state is NodeState.TERMINATING
    states = {n.node_id: n.state for n in provider.list_nodes()}
    assert states[node.node_id] is NodeState.READY  # EC2 kept it running
    clock.advance(10)
    report = rec.run_once()  # the permission is back: the terminate is made again
    assert not report.errors and rec.state.nodes[node.node_id].state is NodeState.TERMINATED
    states = {n.node_id: n.state for n in provider.list_nodes()}
    assert states[node.node_id] in (NodeState.TERMINATING, NodeState.TERMINATED)
    assert b.proxy.actions().count("TerminateInstances") == 2
    (entry,) = rec.state.ledger
    assert entry.node_id == node.node_id and entry.end == clock.now()


def test_an_instance_stopped_outside_the_controller_is_terminated() -> None:
    """A guest `shutdown -h` (EC2's default shutdown behaviour is stop) or a scheduled retirement
    stops an instance: it still exists and bills its volumes, so the controller terminates it and
    bills it up to then; it used to take it for ended and leave it stopped for good."""
    b, _, node, clock, rec = _adopted_idle_instance("prewarm-stop", idle_ttl_s=7200)
    b.client("ec2").stop_instances(InstanceIds=[node.node_id])
    clock.advance(600)
    report = rec.run_once()
    assert not report.errors and b.proxy.actions().count("TerminateInstances") == 1
    assert rec.state.nodes[node.node_id].state is NodeState.TERMINATED
    described = b.client("ec2").describe_instances(InstanceIds=[node.node_id])
    assert described["Reservations"][0]["Instances"][0]["State"]["Name"] in ("shutting-down", "terminated")
    (entry,) = rec.state.ledger
    assert entry.node_id == node.node_id and entry.end == clock.now()


@pytest.mark.parametrize("taken_back", [True, False])
def test_a_spot_instance_ec2_took_back_in_its_first_hour_is_not_billed(taken_back: bool) -> None:
    """No interruption queue is configured, so no notice comes: the listing's StateReason
    (``Server.SpotInstanceTermination``) alone says EC2 took the instance back, which AWS does not
    bill in its first hour; an instance terminated outside us for any other reason is billed."""
    b, provider, node, clock, rec = _adopted_idle_instance(f"prewarm-taken-{taken_back}", idle_ttl_s=7200)
    b.client("ec2").terminate_instances(InstanceIds=[node.node_id])  # EC2 (or someone) ends it, not us
    if taken_back:
        b.proxy.spot_taken_back(node.node_id)
    listed = {n.node_id: n for n in provider.list_nodes()}[node.node_id]
    assert (listed.state, listed.taken_back) == (NodeState.TERMINATED, taken_back)
    clock.advance(600)
    report = rec.run_once()
    assert not report.errors and rec.state.nodes[node.node_id].state is NodeState.TERMINATED
    (entry,) = rec.state.ledger
    assert (entry.billed_s == 0.0) is taken_back
    assert entry.reason.endswith("taken back by its cloud in its first hour: not billed") is taken_back
