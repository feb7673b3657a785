"""Azure adapter edges the other Azure tests leave open (over the real SDK client and the local ARM
fake): which errors block an offering, what a replay that finds its VMs reads, a retried PUT whose
first try's answer was lost, the SDK poller's view of a create that ends while it is read, and
the bounds on instance-view reads and remembered Scheduled Events."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from azure.core.exceptions import ServiceResponseError
from azure.core.polling import LROPoller
from azure.mgmt.compute.operations import VirtualMachinesOperations

from burster.clock import FakeClock
from burster.errors import NotFoundError, PartialLaunchError, ProviderError, QuotaError, TransientError
from burster.lifecycle import NodeState
from burster.model import Market
from providers.azure import from_config, records, vms
from providers.azure.adapter import MAX_SEEN_EVENTS
from providers.azure.power import PowerWatch
from providers.azure.pricing import parse_prices
from providers.azure.scheduled_events import interruptions_of, parse_document
from tests.fakes.azure_errors import ALLOCATION_FAILED, error, quota_exceeded
from tests.fakes.azure_prices import FakeRetailPrices, items_from_offerings, vm_item
from tests.providers.harness_azure import LOCATION, SSH_KEY, StaticToken, config, fakes, provider, spot_offering


def group() -> str:
    return f"rg-{uuid.uuid4().hex[:8]}"


def vm_puts(rg: str) -> int:
    return fakes().arm.count("PUT", f"/{rg}/providers/Microsoft.Compute/virtualMachines/")


@pytest.fixture(autouse=True)
def _reset() -> Iterator[None]:
    yield
    arm = fakes().arm
    arm.drop_answers(), arm.throttle_next(0), arm.put_faults.clear()
    arm.op_polls = 1
    arm.settle()


def test_only_capacity_blocks_the_offering_and_only_quota_words_make_a_quota_error() -> None:
    rg, arm = group(), fakes().arm
    p = provider(rg)
    arm.fail_next_put(409, quota_exceeded("standardNCADSA100v4Family", "eastus", 24, 24, 24))
    with pytest.raises(QuotaError):
        p.launch(spot_offering(), 1, request_id="quota")
    assert all(o.available for o in p.offerings())  # the account's quota, not the offering's capacity
    arm.fail_next_put(409, error("OperationNotAllowed", "Operation 'PUT' is not allowed on VM 'x' since the "
                                 "VM is marked for deletion."))
    with pytest.raises(ProviderError, match="marked for deletion") as info:
        p.launch(spot_offering(), 1, request_id="not-quota")
    assert not isinstance(info.value, QuotaError)


def test_an_offering_of_another_location_or_oversized_user_data_is_refused_before_any_put() -> None:
    rg, arm = group(), fakes().arm
    p = provider(rg, user_data=lambda o: "#!/bin/sh\n" + "x" * 65_536)  # 87,392 base64 characters
    with pytest.raises(NotFoundError, match="not in the configured location eastus"):
        p.launch(replace(spot_offering(), region="westus2"), 1, request_id="elsewhere")
    with pytest.raises(ProviderError, match="87380") as info:
        p.launch(spot_offering(), 1, request_id="too-long")
    assert info.value.offering_key == spot_offering().key and not info.value.retryable
    assert vm_puts(rg) == 0 and arm.records(rg) == []


def test_a_conflict_answer_is_transient_and_the_put_is_retried() -> None:
    rg, arm = group(), fakes().arm
    arm.fail_next_put(409, error("Conflict", "The request conflicts with the current state of the resource."))
    (node,) = provider(rg).launch(spot_offering(), 1, request_id="conflict")
    assert node.state is NodeState.READY and vm_puts(rg) == 2


def test_a_long_cluster_name_still_makes_short_valid_vm_names() -> None:
    (node,) = provider(group(), cluster="c" * 63).launch(spot_offering(), 1, request_id="long")
    assert len(node.node_id) <= 42 and node.state is NodeState.READY


def test_a_replay_that_finds_all_its_vms_reads_no_launch_record() -> None:
    """docs/providers/azure.md: "A replay that finds its VMs all there reads and writes no record"."""
    rg, arm = group(), fakes().arm
    p = provider(rg)
    first = p.launch(spot_offering(), 2, request_id="whole")
    reads = arm.count("GET", f"/{rg}/providers/Microsoft.Compute/sshPublicKeys")
    again = p.launch(spot_offering(), 2, request_id="whole")
    assert [n.node_id for n in again] == [n.node_id for n in first]
    assert arm.count("GET", f"/{rg}/providers/Microsoft.Compute/sshPublicKeys") == reads


def test_a_throttled_instance_view_read_is_tried_once_a_listing(monkeypatch: pytest.MonkeyPatch) -> None:
    """The views are read with one try: a throttled one waits for a later listing (no backoff
    inside the listing that would meet Compute's GetVM throttle again)."""
    rg, arm = group(), fakes().arm
    clock = FakeClock(datetime(2026, 11, 1, tzinfo=UTC))
    p = provider(rg, now=clock.now)
    (node,) = p.launch(spot_offering(), 1, request_id="view")
    arm.power_off(rg, node.node_id)
    original = VirtualMachinesOperations.list

    def listed_then_throttled(self: Any, *args: Any, **kwargs: Any) -> list[Any]:
        out = list(original(self, *args, **kwargs))
        arm.throttle_next(3)  # the reads after the listing: its instance view
        return out

    monkeypatch.setattr(VirtualMachinesOperations, "list", listed_then_throttled)
    views = f"/{rg}/providers/Microsoft.Compute/virtualMachines/{node.node_id}/instanceView"
    assert [n.state for n in p.list_nodes()] == [NodeState.READY]
    assert arm.count("GET", views) == 1
    monkeypatch.setattr(VirtualMachinesOperations, "list", original)
    arm.throttle_next(0)
    assert [n.state for n in p.list_nodes()] == [NodeState.TERMINATING]


def test_remembered_scheduled_events_are_bounded_oldest_forgotten_first() -> None:
    p = provider(group())
    events = [{"EventId": f"e{i}", "EventType": "Preempt", "Resources": [f"vm-{i}"],
               "NotBefore": "Tue, 09 Aug 2022 17:07:32 GMT"} for i in range(MAX_SEEN_EVENTS + 1)]
    assert len(p.report_scheduled_events({"DocumentIncarnation": 1, "Events": events})) == MAX_SEEN_EVENTS + 1
    p.interruptions()
    doc = {"DocumentIncarnation": 2, "Events": [events[0], events[-1]]}
    assert [i.node_id for i in p.report_scheduled_events(json.dumps(doc))] == ["vm-0"]


@pytest.fixture
def lose_first_put_then_refuse(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The first VM PUT is carried out by ARM but its answer is lost; the retry is refused (409)."""
    arm, original, calls = fakes().arm, VirtualMachinesOperations.begin_create_or_update, [0]

    def put(self: Any, *args: Any, **kwargs: Any) -> Any:
        if "continuation_token" in kwargs:
            return original(self, *args, **kwargs)
        calls[0] += 1
        poller = original(self, *args, **kwargs)
        if calls[0] == 1:
            arm.fail_next_put(409, quota_exceeded("standardNCADSA100v4Family", "eastus", 24, 24, 24))
            raise ServiceResponseError("Connection aborted: RemoteDisconnected")
        return poller

    monkeypatch.setattr(VirtualMachinesOperations, "begin_create_or_update", put)
    yield


def test_a_refused_retry_after_a_lost_answer_still_finds_the_vm_the_first_try_made(
        lose_first_put_then_refuse: None) -> None:
    """ARM made the VM on the first try; the retry's refusal does not unmake it. The launch returns
    it (as a PUT whose answers were all lost does) and records it made, so an eviction before a
    replay does not make a second VM for that index."""
    rg, arm = group(), fakes().arm
    name = vms.vm_name("test", "lost-then-refused", 0)
    (node,) = provider(rg).launch(spot_offering(), 1, request_id="lost-then-refused")
    assert node.node_id == name and arm.vm(rg, name) is not None
    (rec,) = arm.records(rg)
    assert records.decode(rec["tags"][records.MADE_TAG]) == {0}
    arm.evict(rg, name)
    (again,) = provider(rg).launch(spot_offering(), 1, request_id="lost-then-refused")
    assert again.state is NodeState.TERMINATED and arm.vm(rg, name) is None and vm_puts(rg) == 2


def test_a_create_that_ends_while_its_poller_is_read_is_reported_by_its_vm(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The wait runs out while the SDK's polling thread is between the operation's last status read
    and its final GET of the VM, and that thread ends just after: the poller's resource then is
    the operation status document, not the VM. The launch must not make a node of it."""
    rg, arm = group(), fakes().arm
    arm.op_polls = 10**6
    original = LROPoller.result

    def result(self: Any, timeout: float | None = None) -> Any:
        out = original(self, timeout)
        arm.settle()  # the operation ends, and the polling thread with it, right after the read
        self.wait()
        return out

    monkeypatch.setattr(LROPoller, "result", result)
    (node,) = provider(rg, launch_wait_s=0.3, polling_interval_s=0.05).launch(
        spot_offering(), 1, request_id="ends-while-read")
    assert node.node_id == vms.vm_name("test", "ends-while-read", 0)
    assert node.offering.instance_type == spot_offering().instance_type


def test_a_vm_whose_lost_put_ended_failed_is_no_node_of_the_launch(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every PUT's answer is lost and the allocation failed meanwhile: the read that follows finds the
    VM Failed, which is not a node the launch made; the launch fails (a retry PUTs it again)."""
    rg, arm = group(), fakes().arm
    original = VirtualMachinesOperations.get

    def get_later(self: Any, *args: Any, **kwargs: Any) -> Any:
        arm.settle()  # the create's operation ended (Failed) before the read
        return original(self, *args, **kwargs)

    monkeypatch.setattr(VirtualMachinesOperations, "get", get_later)
    arm.fail_next_allocation(error("AllocationFailed", ALLOCATION_FAILED))
    arm.drop_answers(rg, PUT=5)
    with pytest.raises(TransientError, match="network error"):
        provider(rg).launch(spot_offering(), 1, request_id="lost-failed")
    assert arm.vm(rg, vms.vm_name("test", "lost-failed", 0))["properties"]["provisioningState"] == "Failed"  # type: ignore[index]


@pytest.mark.parametrize(("state", "priority", "want"), [
    ("Canceled", "Spot", (NodeState.FAILED, Market.SPOT)),
    ("Updating", "Low", (NodeState.READY, Market.SPOT)),
    ("Migrating", "Regular", (NodeState.READY, Market.ON_DEMAND)),
    ("SomethingNew", None, (NodeState.LAUNCHING, Market.ON_DEMAND)),
])
def test_provisioning_states_and_priorities_map_to_lifecycle_and_market(
        state: str, priority: str | None, want: tuple[NodeState, Market]) -> None:
    vm = {"properties": {"provisioningState": state, "priority": priority}}
    assert (vms.state_of(vm), vms.market_of(vm)) == want
    assert vms.created_at({"properties": {"timeCreated": "not a time"}}) is None


def test_power_states_of_vms_no_longer_listed_are_forgotten() -> None:
    """A VM read deallocated, then gone from the listings (deleted), and made again under its name
    is read again, not taken for the deallocated one."""
    now = datetime(2026, 11, 1, tzinfo=UTC)
    views = {"a": {"statuses": [{"code": "PowerState/deallocated"}]}}
    watch = PowerWatch(lambda name: views[name], lambda: now)
    assert watch.stopped(["a"]) == {"a"}
    assert watch.stopped([]) == set()
    views["a"] = {"statuses": [{"code": "PowerState/running"}]}
    assert watch.stopped(["a"]) == set()


def test_listed_nodes_carry_the_live_price() -> None:
    f, rg = fakes(), group()
    size = spot_offering().instance_type
    live = FakeRetailPrices(f.tls, items_from_offerings(f.catalog, LOCATION, {size: 2.0}))
    try:
        p = provider(rg, prices_url=live.url)
        p.offerings()
        p.launch(spot_offering(), 1, request_id="priced")
        (node,) = p.list_nodes()
    finally:
        live.stop()
    assert node.offering.price_per_hour_usd == pytest.approx(2 * spot_offering().price_per_hour_usd)


def test_terminating_nothing_calls_nothing() -> None:
    rg, arm = group(), fakes().arm
    p = provider(rg)
    before = len(arm.requests)
    p.terminate([], request_id="none")
    assert len(arm.requests) == before


def test_a_vm_found_by_a_retry_without_a_record_is_recorded_made() -> None:
    """A partial launch whose record could not be written; its retry finds VM 0, makes VM 1 and
    records both, so VM 0, evicted before a replay, is reported ended, not made again."""
    rg, arm = group(), fakes().arm
    size, write = spot_offering().instance_type, "Microsoft.Compute/sshPublicKeys/write"
    arm.set_capacity(size, 1)
    arm.denied.add(write)
    try:
        with pytest.raises(PartialLaunchError):
            provider(rg).launch(spot_offering(), 2, request_id="unrecorded")
    finally:
        arm.set_capacity(size, None)
        arm.denied.discard(write)
    first, _ = provider(rg).launch(spot_offering(), 2, request_id="unrecorded")
    arm.evict(rg, first.node_id)
    puts = vm_puts(rg)
    gone, _ = provider(rg).launch(spot_offering(), 2, request_id="unrecorded")
    assert gone.state is NodeState.TERMINATED and vm_puts(rg) == puts


def test_labels_become_valid_tags_and_the_configured_image_is_used() -> None:
    f, rg = fakes(), group()
    f.arm.add_group(rg)
    image = {"publisher": "canonical", "offer": "ubuntu-24_04-lts", "sku": "server", "version": "latest"}
    p = from_config(config(rg, image_reference=image), cluster="test", user_data=lambda o: "#!/bin/sh\n",
                    sleep=lambda s: None, credential=StaticToken(), connection_verify=f.tls.ca_path,
                    polling_interval_s=0.0, prices_url=f.prices.url, ssh_public_key=SSH_KEY)
    (node,) = p.launch(spot_offering(), 1, request_id="tags", labels={"ci/job:id": "7", "team": "v" * 300})
    vm = f.arm.vm(rg, node.node_id)
    assert vm is not None and vm["properties"]["storageProfile"]["imageReference"] == image
    assert vm["tags"]["ci-job-id"] == "7" and vm["tags"]["team"] == "v" * 256


def test_a_retry_keeps_the_indexes_an_earlier_try_may_have_made() -> None:
    """Neither PUT nor read of VM 0 was answered (record: sent 0). Its retry reports VM 0 ended and
    makes VM 1, and the record it rewrites still holds 0 as sent: a later replay makes no VM 0."""
    rg, arm = group(), fakes().arm
    arm.drop_answers(rg, PUT=5, GET=5)
    with pytest.raises(TransientError):
        provider(rg).launch(spot_offering(), 2, request_id="dark")
    arm.evict(rg, vms.vm_name("test", "dark", 0))
    gone, live = provider(rg).launch(spot_offering(), 2, request_id="dark")
    assert (gone.state, live.state) == (NodeState.TERMINATED, NodeState.READY)
    puts = vm_puts(rg)
    assert provider(rg).launch(spot_offering(), 2, request_id="dark")[0].state is NodeState.TERMINATED
    assert vm_puts(rg) == puts


def test_an_error_without_an_arm_body_quotes_the_http_reason() -> None:
    rg, arm = group(), fakes().arm
    for _ in range(5):
        arm.fail_next_put(502, None)  # type: ignore[arg-type]  # a gateway's empty answer
    with pytest.raises(TransientError, match="502: Bad Gateway"):
        provider(rg).launch(spot_offering(), 1, request_id="gateway")


def test_scheduled_event_times_and_resource_types() -> None:
    """NotBefore in the past is now; an unreadable one gives the documented minimum notice; a date
    without a zone is UTC; only VirtualMachine events name VMs."""
    now = datetime(2022, 8, 9, 17, 7, 0, tzinfo=UTC)
    doc = parse_document({"DocumentIncarnation": 1, "Events": [
        {"EventId": "past", "EventType": "Preempt", "Resources": ["a"], "NotBefore": "Tue, 09 Aug 2022 17:00:00 GMT"},
        {"EventId": "odd", "EventType": "Preempt", "Resources": ["b"], "NotBefore": "soon"},
        {"EventId": "naive", "EventType": "Terminate", "Resources": ["c"],
         "NotBefore": "Tue, 09 Aug 2022 17:08:00 -0000"},
        {"EventId": "other", "EventType": "Preempt", "ResourceType": "Disk", "Resources": ["d"]}]})
    assert [(i.node_id, i.terminate_at) for _, i in interruptions_of(doc, now)] == [
        ("a", now), ("b", now + timedelta(seconds=30)), ("c", datetime(2022, 8, 9, 17, 8, tzinfo=UTC))]


def test_prices_in_other_units_or_currencies_are_ignored() -> None:
    size = spot_offering().instance_type
    items = [vm_item(size, LOCATION, 3.0), {**vm_item(size, LOCATION, 9.0), "unitOfMeasure": "1/Month"},
             {**vm_item(size, LOCATION, 8.0), "currencyCode": "EUR"}]  # same start: the later would win
    assert parse_prices(items, datetime(2026, 1, 1, tzinfo=UTC)) == {(LOCATION, size, Market.ON_DEMAND): 3.0}


def test_an_unknown_override_is_refused() -> None:
    with pytest.raises(TypeError, match="polling_interval"):
        from_config(config("x"), cluster="c", user_data=lambda o: "", polling_interval=1.0)


def test_a_value_error_of_ours_surfaces_and_an_undecodable_answer_is_transient() -> None:
    """``_call`` translates what the SDK raises for the cloud's answer, not any ValueError: one from our
    own code (a bug) is raised as it is, not hidden as a degraded provider."""
    from azure.core.exceptions import DeserializationError

    p = provider(group())
    with pytest.raises(ValueError, match="invalid literal") as info:
        p._call(lambda: int("x"), doing="parsing", attempts=1)
    assert not isinstance(info.value, ProviderError)

    def undecodable() -> None:
        raise DeserializationError("Cannot deserialize")

    with pytest.raises(TransientError, match="not Azure Resource Manager JSON"):
        p._call(undecodable, doing="reading", attempts=1)
