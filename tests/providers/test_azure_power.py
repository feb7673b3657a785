"""Azure VMs stopped outside the controller: their instance views, read a few a listing, make them
TERMINATING, and the reconcile pass deletes them (over the real SDK client and the local ARM fake)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from burster.clock import FakeClock
from burster.errors import NotFoundError, ThrottledError
from burster.lifecycle import NodeState
from burster.reconciler import Reconciler
from policies.burster import BursterParams, BursterPolicy
from policies.reclaim import ReclaimParams
from providers.azure.power import INTERVAL_S, PER_PASS, PowerWatch, power_state
from providers.sim.events import EventQueue
from providers.sim.pool import SimPool
from tests.providers.harness_azure import fakes, provider, spot_offering

VIEWS = "/instanceView"


def group() -> str:
    return f"rg-{uuid.uuid4().hex[:8]}"


def test_power_state_reads_the_power_status_code() -> None:
    view = {"statuses": [{"code": "ProvisioningState/succeeded"}, {"code": "PowerState/deallocated"}]}
    assert power_state(view) == "deallocated"
    assert power_state({"statuses": [{"code": "ProvisioningState/creating"}]}) == ""
    assert power_state({}) == ""


@pytest.mark.parametrize("power", ["stopped", "deallocated"])
def test_a_vm_stopped_outside_the_controller_is_listed_terminating_and_can_be_deleted(power: str) -> None:
    """Its provisioningState still says Succeeded: only the instance view tells."""
    rg = group()
    clock = FakeClock(datetime(2026, 11, 1, tzinfo=UTC))
    p = provider(rg, now=clock.now)
    a, b = p.launch(spot_offering(), 2, request_id="req-power")
    assert {n.state for n in p.list_nodes()} == {NodeState.READY}
    fakes().arm.power_off(rg, a.node_id, power)
    clock.advance(INTERVAL_S)
    assert {n.node_id: n.state for n in p.list_nodes()} == {a.node_id: NodeState.TERMINATING,
                                                            b.node_id: NodeState.READY}
    p.terminate([a.node_id], request_id="req-power-end")
    fakes().arm.settle()
    assert [n.node_id for n in p.list_nodes()] == [b.node_id]


def test_views_are_read_a_few_a_listing_and_each_at_most_once_an_interval() -> None:
    rg = group()
    arm = fakes().arm
    clock = FakeClock(datetime(2026, 11, 1, tzinfo=UTC))
    p = provider(rg, now=clock.now)
    nodes = p.launch(spot_offering(), PER_PASS + 2, request_id="req-many")

    def reads() -> int:
        return sum(1 for m, path in arm.requests if m == "GET" and path.endswith(VIEWS) and f"/{rg}/" in path)

    p.list_nodes()
    assert reads() == PER_PASS
    p.list_nodes()  # the two left, then nothing is due
    p.list_nodes()
    assert reads() == PER_PASS + 2
    arm.power_off(rg, nodes[0].node_id)
    clock.advance(INTERVAL_S - 1)
    assert NodeState.TERMINATING not in {n.state for n in p.list_nodes()}  # not read again yet
    clock.advance(1)
    states = {n.node_id: n.state for n in p.list_nodes()}
    assert states[nodes[0].node_id] is NodeState.TERMINATING  # the least recently read went first


def test_a_refused_view_read_leaves_the_listing_whole() -> None:
    """A throttled or forbidden instance view is a warning, not a failed listing: the VMs keep
    their last known state and the read is tried again on a later listing."""
    rg = group()
    arm = fakes().arm
    clock = FakeClock(datetime(2026, 11, 1, tzinfo=UTC))
    p = provider(rg, now=clock.now)
    (node,) = p.launch(spot_offering(), 1, request_id="req-denied")
    arm.power_off(rg, node.node_id)
    arm.denied.add("Microsoft.Compute/virtualMachines/instanceView/read")
    try:
        assert [n.state for n in p.list_nodes()] == [NodeState.READY]
    finally:
        arm.denied.discard("Microsoft.Compute/virtualMachines/instanceView/read")
    assert [n.state for n in p.list_nodes()] == [NodeState.TERMINATING]


def test_the_reconcile_pass_deletes_a_deallocated_vm_and_bills_it_to_then() -> None:
    rg = group()
    arm = fakes().arm
    clock = FakeClock(datetime.now(UTC) + timedelta(seconds=10))
    p = provider(rg, now=clock.now)
    (node,) = p.launch(spot_offering(), 1, request_id="req-adopt")
    policy = BursterPolicy(params=BursterParams(reclaim=ReclaimParams(idle_ttl_s=7200, move_back=False)))
    pool = SimPool(EventQueue(), nodes=1, gpus_per_node=8, gpu_model="V100")
    rec = Reconciler(providers={"azure": p}, pool=pool, policy=policy, clock=clock)
    rec.run_once()  # adopts the idle VM
    assert rec.state.nodes[node.node_id].state is NodeState.READY
    arm.power_off(rg, node.node_id, "deallocated")
    clock.advance(INTERVAL_S)
    report = rec.run_once()
    assert not report.errors and rec.state.nodes[node.node_id].state is NodeState.TERMINATED
    assert arm.count("DELETE", node.node_id) == 1
    (entry,) = rec.state.ledger
    assert entry.node_id == node.node_id and entry.end == clock.now()


def test_a_view_of_a_vm_deleted_since_the_listing_is_skipped_and_the_others_still_read() -> None:
    """PowerWatch over a plain reader: a NotFoundError skips that VM; any other error ends this
    listing's reads (they are tried again later)."""
    now = datetime(2026, 11, 1, tzinfo=UTC)
    views = {"b": {"statuses": [{"code": "PowerState/stopped"}]}, "c": {"statuses": [{"code": "PowerState/running"}]}}
    asked: list[str] = []

    def read(name: str) -> dict[str, object]:
        asked.append(name)
        if name not in views:
            raise NotFoundError(f"azure: VM {name} not found", provider="azure")
        return views[name]

    watch = PowerWatch(read, lambda: now)
    assert watch.stopped(["a", "b", "c"]) == {"b"} and asked == ["a", "b", "c"]

    def throttled(name: str) -> dict[str, object]:
        asked.append(name)
        raise ThrottledError("azure: throttled", provider="azure")

    again = PowerWatch(throttled, lambda: now)
    asked.clear()
    assert again.stopped(["a", "b"]) == set() and asked == ["a"]
