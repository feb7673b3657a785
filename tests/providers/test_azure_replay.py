"""A launch replayed with its request id after the VMs it made went away (over the real SDK client and
the local ARM fake). ARM's PUT is idempotent only while the VM exists; the adapter's launch records
(``providers/azure/records.py``) keep that it was made, so a replay reports the VM ended instead of
making it again, and the reconcile pass bills it and launches under a new request id."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from burster.clock import FakeClock
from burster.errors import CapacityError
from burster.lifecycle import NodeState
from burster.plan import Launch
from providers.azure import records
from tests.providers.harness_azure import fakes, provider, spot_offering
from tests.providers.replay import restarted


def group() -> str:
    return f"rg-{uuid.uuid4().hex[:8]}"


def puts(rg: str, kind: str = "virtualMachines") -> int:
    return fakes().arm.count("PUT", f"/{rg}/providers/Microsoft.Compute/{kind}/")


def test_a_replay_after_an_eviction_puts_nothing_and_reports_the_vm_ended() -> None:
    """The controller died during the launch; one VM of the gang was evicted (evictionPolicy Delete)
    before it restarted. The new process's replay re-finds the live VM and reports the gone one
    TERMINATED, since its start: no PUT."""
    rg, arm = group(), fakes().arm
    clock = FakeClock(datetime.now(UTC))
    first = provider(rg, now=clock.now).launch(spot_offering(), 2, request_id="crashed")
    arm.evict(rg, first[0].node_id)
    before = puts(rg)
    clock.advance(300)
    again = provider(rg, now=clock.now).launch(spot_offering(), 2, request_id="crashed")  # a new process
    assert puts(rg) == before and arm.vm(rg, first[0].node_id) is None
    assert [(n.node_id, n.state) for n in again] == [(first[0].node_id, NodeState.TERMINATED),
                                                     (first[1].node_id, NodeState.READY)]
    gone = again[0]
    assert gone.request_id == "crashed" and gone.ended_at == clock.now()
    assert gone.launched_at <= first[0].launched_at + timedelta(seconds=1)


def test_a_replay_while_the_vm_is_being_deleted_puts_nothing_and_reports_it_terminating() -> None:
    rg = group()
    p = provider(rg)
    (node,) = p.launch(spot_offering(), 1, request_id="deleting")
    p.terminate([node.node_id], request_id="t")
    before = puts(rg)
    (again,) = p.launch(spot_offering(), 1, request_id="deleting")
    assert again.node_id == node.node_id and again.state is NodeState.TERMINATING
    assert puts(rg) == before


def test_vms_whose_allocation_failed_are_not_recorded_and_a_retry_makes_them() -> None:
    rg, arm = group(), fakes().arm
    p, size = provider(rg), spot_offering().instance_type
    arm.set_capacity(size, 0)
    try:
        with pytest.raises(CapacityError):
            p.launch(spot_offering(), 1, request_id="no-room")
    finally:
        arm.set_capacity(size, None)
    (node,) = provider(rg).launch(spot_offering(), 1, request_id="no-room")
    assert node.state is NodeState.READY and arm.vm(rg, node.node_id) is not None


def test_records_are_written_before_and_after_the_puts_and_old_ones_are_deleted() -> None:
    rg, arm = group(), fakes().arm
    clock = FakeClock(datetime.now(UTC))
    p = provider(rg, now=clock.now)
    p.launch(spot_offering(), 3, request_id="a")
    assert puts(rg, "sshPublicKeys") == 2 and len(arm.records(rg)) == 1
    assert records.SENT_TAG not in arm.records(rg)[0]["tags"]
    p.launch(spot_offering(), 3, request_id="a")  # a replay that finds every VM: no write
    assert puts(rg, "sshPublicKeys") == 2
    clock.advance(records.KEEP_S + 1)
    p.launch(spot_offering(), 1, request_id="b")
    assert [r["tags"][records.REQUEST_TAG] for r in arm.records(rg)] == ["b"]


def test_without_the_record_permission_launches_still_work() -> None:
    rg, arm = group(), fakes().arm
    denied = {"Microsoft.Compute/sshPublicKeys/read", "Microsoft.Compute/sshPublicKeys/write"}
    arm.denied |= denied
    try:
        (node,) = provider(rg).launch(spot_offering(), 1, request_id="no-role")
    finally:
        arm.denied -= denied
    assert node.state is NodeState.READY and arm.records(rg) == []


def test_the_reconcile_pass_bills_the_evicted_vm_and_launches_again_under_a_new_id() -> None:
    rg, arm = group(), fakes().arm
    clock = FakeClock(datetime.now(UTC) + timedelta(seconds=10))
    launch = Launch(spot_offering(), 1, "burst job-7", "req-crashed", job_id="job-7", team="vision")
    (node,) = provider(rg, now=clock.now).launch(launch.offering, 1, request_id=launch.request_id)
    arm.evict(rg, node.node_id)  # while no controller ran
    clock.advance(120)
    rec, state = restarted("azure", provider(rg, now=clock.now), launch, clock)
    report = rec.run_once()
    assert any("launching again under a new request id" in e for e in report.errors)
    assert arm.vm(rg, node.node_id) is None
    (entry,) = state.ledger
    assert entry.node_id == node.node_id and entry.reason == "burst job-7" and entry.usd > 0
    clock.advance(10)
    assert not rec.run_once().errors
    (new,) = [n for n in state.live() if n.node_id != node.node_id]
    assert new.request_id == "req-crashed-r1" and arm.vm(rg, new.node_id) is not None
