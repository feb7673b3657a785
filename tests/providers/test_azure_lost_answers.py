"""Launches whose answers never reached the controller (over the real SDK client and the local ARM fake):
a VM PUT that ARM carried out but whose answer was lost, and a controller that died right after its
VM PUTs were accepted. A retry or replay of the launch must neither make a second VM for an index
nor lose the first (``providers/azure/records.py``)."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from azure.mgmt.compute.operations import VirtualMachinesOperations

from burster.clock import FakeClock
from burster.errors import PartialLaunchError, TransientError
from burster.lifecycle import NodeState
from burster.plan import Launch
from providers.azure import records, vms
from tests.fakes.azure_errors import error
from tests.providers.harness_azure import fakes, provider, spot_offering
from tests.providers.replay import restarted


class Crash(BaseException):
    """The controller process dies here (nothing in the adapter catches it)."""


def group() -> str:
    return f"rg-{uuid.uuid4().hex[:8]}"


def vm_puts(rg: str) -> int:
    return fakes().arm.count("PUT", f"/{rg}/providers/Microsoft.Compute/virtualMachines/")


def record_tags(rg: str) -> dict[str, str]:
    (rec,) = fakes().arm.records(rg)
    return dict(rec["tags"])


@pytest.fixture
def die_after_puts(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """``die_after_puts.append(n)``: the controller dies once ARM has accepted n more VM PUTs."""
    left: list[int] = []
    original = VirtualMachinesOperations.begin_create_or_update

    def put(self: Any, *args: Any, **kwargs: Any) -> Any:
        poller = original(self, *args, **kwargs)
        if left and "continuation_token" not in kwargs:
            left[0] -= 1
            if left[0] == 0:
                left.clear()
                raise Crash
        return poller

    monkeypatch.setattr(VirtualMachinesOperations, "begin_create_or_update", put)
    yield left


@pytest.fixture(autouse=True)
def _reset() -> Iterator[None]:
    yield
    arm = fakes().arm
    arm.drop_answers()
    arm.fail_record_writes()


def test_a_put_whose_answer_is_lost_once_is_sent_again_onto_the_same_vm() -> None:
    rg, arm = group(), fakes().arm
    arm.drop_answers(rg, PUT=1)
    (node,) = provider(rg).launch(spot_offering(), 1, request_id="blip")
    first = arm.vm(rg, node.node_id)
    assert node.state is NodeState.READY and vm_puts(rg) == 2 and first is not None
    assert records.decode(record_tags(rg)[records.MADE_TAG]) == {0}


def test_a_vm_made_by_puts_whose_answers_were_all_lost_is_returned_and_recorded() -> None:
    """Every try's answer is lost (the adapter tries 5 times): ARM made the VM on the first. The launch
    reads it back instead of failing; evicted later, a replay reports it ended and makes no other."""
    rg, arm = group(), fakes().arm
    arm.drop_answers(rg, PUT=5)
    (node,) = provider(rg).launch(spot_offering(), 1, request_id="lost")
    made = arm.vm(rg, node.node_id)
    assert made is not None and node.state is NodeState.LAUNCHING and vm_puts(rg) == 5
    assert records.decode(record_tags(rg)[records.MADE_TAG]) == {0}
    arm.evict(rg, node.node_id)
    (again,) = provider(rg).launch(spot_offering(), 1, request_id="lost")
    assert again.state is NodeState.TERMINATED and again.ended_at is not None
    assert again.ended_at > again.launched_at and vm_puts(rg) == 5 and arm.vm(rg, node.node_id) is None


def test_a_vm_whose_put_and_read_both_went_unanswered_stays_in_the_record_as_sent() -> None:
    """Neither the PUTs' answers nor the read that would tell came back: the record keeps the VM as
    sent. Gone by the replay, it is reported ended at its start (nothing billed), not made again."""
    rg, arm = group(), fakes().arm
    arm.drop_answers(rg, PUT=5, GET=5)
    p = provider(rg)
    with pytest.raises(Exception, match="network error"):
        p.launch(spot_offering(), 1, request_id="dark")
    name = vms.vm_name("test", "dark", 0)
    tags = record_tags(rg)
    assert arm.vm(rg, name) is not None and records.MADE_TAG in tags
    assert records.decode(tags[records.SENT_TAG]) == {0} and not records.decode(tags[records.MADE_TAG])
    arm.evict(rg, name)
    (again,) = provider(rg).launch(spot_offering(), 1, request_id="dark")
    assert (again.node_id, again.state, again.ended_at) == (name, NodeState.TERMINATED, again.launched_at)
    assert vm_puts(rg) == 5


def test_a_controller_dead_after_its_puts_leaves_a_replay_that_finds_the_vms_and_makes_none(
        die_after_puts: list[int]) -> None:
    """It dies once ARM accepted both PUTs, before any later write. The replay re-finds the live VM by
    name; the evicted one is reported ended at its start (the record shows it sent, not whether it
    was made) and not made again."""
    rg, arm = group(), fakes().arm
    die_after_puts.append(2)
    with pytest.raises(Crash):
        provider(rg).launch(spot_offering(), 2, request_id="died")
    names = [vms.vm_name("test", "died", i) for i in (0, 1)]
    assert all(arm.vm(rg, n) is not None for n in names) and vm_puts(rg) == 2
    assert [n.state for n in provider(rg).launch(spot_offering(), 2, request_id="died")] == [NodeState.READY] * 2
    arm.evict(rg, names[0])
    gone, live = provider(rg).launch(spot_offering(), 2, request_id="died")
    assert (gone.node_id, gone.state, gone.ended_at) == (names[0], NodeState.TERMINATED, gone.launched_at)
    assert (live.node_id, live.state) == (names[1], NodeState.READY) and vm_puts(rg) == 2


def test_a_retry_dead_between_its_put_and_the_records_update_makes_no_second_vm(
        die_after_puts: list[int]) -> None:
    """A gang of 2 got 1 VM (record: made 0); the retry's PUT of the other is accepted and the
    controller dies before updating the record. That VM, evicted before the replay, is not made again."""
    rg, arm = group(), fakes().arm
    size = spot_offering().instance_type
    arm.set_capacity(size, 1)
    try:
        with pytest.raises(PartialLaunchError):
            provider(rg).launch(spot_offering(), 2, request_id="gang")
    finally:
        arm.set_capacity(size, None)
    die_after_puts.append(1)
    with pytest.raises(Crash):
        provider(rg).launch(spot_offering(), 2, request_id="gang")
    second = vms.vm_name("test", "gang", 1)
    arm.evict(rg, second)
    before = vm_puts(rg)
    first, gone = provider(rg).launch(spot_offering(), 2, request_id="gang")
    assert first.state is NodeState.READY and (gone.node_id, gone.state) == (second, NodeState.TERMINATED)
    assert vm_puts(rg) == before


def test_a_refused_put_leaves_no_record() -> None:
    """A PUT ARM answered with a refusal made nothing: the record written before it is deleted, and the
    retry makes the VM."""
    rg, arm = group(), fakes().arm
    arm.fail_next_put(409, error("OperationNotAllowed", "Operation could not be completed as it results "
                                 "in exceeding approved standardNCADSA100v4Family Cores quota."))
    with pytest.raises(Exception, match="quota"):
        provider(rg).launch(spot_offering(), 1, request_id="refused")
    assert arm.records(rg) == []
    (node,) = provider(rg).launch(spot_offering(), 1, request_id="refused")
    assert node.state is NodeState.READY


def test_the_reconcile_pass_bills_nothing_for_a_vm_only_sent_and_launches_again(
        die_after_puts: list[int]) -> None:
    """The restarted controller's pass records the VM that may never have existed as ended at its
    start (a ledger entry of $0) and launches again under a new request id."""
    rg, arm = group(), fakes().arm
    clock = FakeClock(datetime.now(UTC) + timedelta(seconds=10))
    launch = Launch(spot_offering(), 1, "burst job-9", "req-died", job_id="job-9", team="vision")
    die_after_puts.append(1)
    with pytest.raises(Crash):
        provider(rg, now=clock.now).launch(launch.offering, 1, request_id=launch.request_id)
    name = vms.vm_name("test", launch.request_id, 0)
    arm.evict(rg, name)
    clock.advance(120)
    rec, state = restarted("azure", provider(rg, now=clock.now), launch, clock)
    assert any("launching again under a new request id" in e for e in rec.run_once().errors)
    (entry,) = state.ledger
    assert entry.node_id == name and entry.usd == 0
    clock.advance(10)
    assert not rec.run_once().errors
    (new,) = state.live()
    assert new.request_id == "req-died-r1" and arm.vm(rg, new.node_id) is not None


def test_a_refused_record_update_leaves_the_vms_sent_and_a_replay_makes_none() -> None:
    """The write after the PUTs is refused (the record keeps them as sent): the launch still returns
    its VMs, and a replay after an eviction reports the gone one ended instead of making it again."""
    rg, arm = group(), fakes().arm
    arm.fail_record_writes(None, (403, error("AuthorizationFailed", "The client 'burster-test' does not "
                                             "have authorization to perform action "
                                             "'Microsoft.Compute/sshPublicKeys/write'.")))
    first = provider(rg).launch(spot_offering(), 2, request_id="unwritten")
    assert [n.state for n in first] == [NodeState.READY] * 2
    assert records.decode(record_tags(rg)[records.SENT_TAG]) == {0, 1}
    arm.evict(rg, first[1].node_id)
    _, gone = provider(rg).launch(spot_offering(), 2, request_id="unwritten")
    assert gone.state is NodeState.TERMINATED and vm_puts(rg) == 2


def test_a_status_read_failing_late_in_the_wait_resumes_for_what_is_left_of_it() -> None:
    """The create's status reads are throttled 0.8 s into a 1 s wait: the resumed poll waits out the
    0.2 s left, not another whole second (launch_wait_s bounds the wait for every try together)."""
    rg, arm = f"rg-{uuid.uuid4().hex[:8]}", fakes().arm
    p = provider(rg, launch_wait_s=1.0, polling_interval_s=0.05)
    arm.op_polls = 10**6  # the create never finishes while it waits
    late = threading.Timer(0.8, arm.throttle_polls, (1,))
    try:
        t0 = time.monotonic()
        late.start()
        (node,) = p.launch(spot_offering(), 1, request_id="late-throttle")
        took = time.monotonic() - t0
    finally:
        late.cancel()
        arm.throttle_polls(0)
        arm.op_polls = 1
        arm.settle()
    assert node.state is NodeState.LAUNCHING and arm.count("DELETE", rg) == 0
    assert took < 1.6, took  # not 0.8 s + a second whole wait


def test_a_create_failed_with_a_transient_code_is_deleted_not_reported_launching() -> None:
    """The create's operation itself fails with ``InternalExecutionError`` (retryable, as a poll's
    failure is): a read of the VM tells the two apart. The Failed VM is deleted and the launch
    fails with the retryable error, so the controller tries again; nothing is reported launching."""
    rg, arm = f"rg-{uuid.uuid4().hex[:8]}", fakes().arm
    p = provider(rg)
    arm.fail_next_allocation(error("InternalExecutionError", "An internal execution error occurred."))
    with pytest.raises(TransientError, match="InternalExecutionError"):
        p.launch(spot_offering(), 1, request_id="failed-transient")
    assert arm.vm(rg, vms.vm_name("test", "failed-transient", 0)) is None  # deleted, not left Failed
    assert p.list_nodes() == []
