"""The Azure adapter's launch records (``providers/azure/records.py``): the made-index tag, which
records a read deletes, a record kept whole across a partial launch's retry, the records' window,
and listings that never show a recorded VM that is gone (the last ones over the real SDK client and
the local ARM fake)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import pytest

from burster.clock import FakeClock
from burster.errors import PartialLaunchError
from burster.lifecycle import NodeState
from burster.model import Node
from providers.azure import records, vms
from providers.azure.records import LaunchRecords, decode, encode
from tests.providers.harness_azure import fakes, provider, spot_offering

NOW = datetime(2026, 3, 2, 12, tzinfo=UTC)


def test_made_indexes_are_written_as_ranges() -> None:
    """A tag value holds 256 characters: 100 VMs must fit."""
    assert encode({5, 0, 1, 2, 3, 9, 10}) == "0-3,5,9-10" and encode(range(100)) == "0-99"
    assert decode("0-3,5,9-10") == {0, 1, 2, 3, 5, 9, 10} and decode("") == frozenset()


class Ops:
    """The sshPublicKeys operations ``LaunchRecords`` calls, over a dict."""

    def __init__(self, res: list[dict[str, Any]]) -> None:
        self.res, self.deleted = res, cast(list[str], [])

    def list_by_resource_group(self, rg: str) -> list[dict[str, Any]]:
        return self.res

    def delete(self, rg: str, name: str) -> None:
        self.deleted.append(name)


def _res(cluster: str, request_id: str, **extra: str) -> dict[str, Any]:
    return {"name": vms.launch_name(cluster, request_id), "tags": {**vms.vm_tags(cluster, request_id, {}), **extra}}


def test_a_read_deletes_only_this_clusters_old_or_unreadable_records() -> None:
    fresh, old = (NOW - timedelta(hours=1)).isoformat(), (NOW - timedelta(seconds=records.KEEP_S + 1)).isoformat()
    ops = Ops([_res("test", "mine", **{records.AT_TAG: fresh, records.MADE_TAG: "0-1"}),
               _res("test", "fresh", **{records.AT_TAG: fresh, records.MADE_TAG: "0"}),
               _res("test", "old", **{records.AT_TAG: old, records.MADE_TAG: "0"}),
               _res("test", "no-time", **{records.MADE_TAG: "0"}),
               _res("other", "old", **{records.AT_TAG: old, records.MADE_TAG: "0"})])
    recs = LaunchRecords(ops, lambda fn, doing: fn(), resource_group="rg", location="eastus", cluster="test",
                         now=lambda: NOW)
    got = recs.read("mine")
    assert got is not None and got.made == {0, 1} and got.launched_at == NOW - timedelta(hours=1)
    assert sorted(ops.deleted) == sorted(vms.launch_name("test", r) for r in ("old", "no-time"))


def test_a_vm_left_failed_by_a_dead_controller_is_put_again_not_reported_ended() -> None:
    """The record lists the VM (written before the wait); its allocation failed while no controller
    ran, so nothing deleted it: a replay PUTs it again."""
    rg, arm = f"rg-{uuid.uuid4().hex[:8]}", fakes().arm
    (node,) = provider(rg).launch(spot_offering(), 1, request_id="failed")
    with arm.lock:
        arm.groups[rg.lower()][node.node_id.lower()]["properties"]["provisioningState"] = "Failed"
    puts = arm.count("PUT", f"/{rg}/providers/Microsoft.Compute/virtualMachines/")
    (again,) = provider(rg).launch(spot_offering(), 1, request_id="failed")
    assert again.node_id == node.node_id and again.state is NodeState.READY
    assert arm.count("PUT", f"/{rg}/providers/Microsoft.Compute/virtualMachines/") == puts + 1


def test_a_partial_launchs_retry_keeps_the_first_vms_and_time_in_its_record() -> None:
    """A gang of 2 gets 1 VM; the retry makes the other and rewrites the record. The first VM,
    evicted later, is still reported ended on a replay (from the first launch), not made again."""
    rg, arm = f"rg-{uuid.uuid4().hex[:8]}", fakes().arm
    clock, size = FakeClock(datetime.now(UTC)), spot_offering().instance_type
    arm.set_capacity(size, 1)
    try:
        with pytest.raises(PartialLaunchError) as info:
            provider(rg, now=clock.now).launch(spot_offering(), 2, request_id="gang")
    finally:
        arm.set_capacity(size, None)
    first = cast(Node, info.value.nodes[0])
    clock.advance(600)
    provider(rg, now=clock.now).launch(spot_offering(), 2, request_id="gang")
    arm.evict(rg, first.node_id)
    clock.advance(600)
    puts = arm.count("PUT", f"/{rg}/providers/Microsoft.Compute/virtualMachines/")
    gone, _ = provider(rg, now=clock.now).launch(spot_offering(), 2, request_id="gang")
    assert arm.count("PUT", f"/{rg}/providers/Microsoft.Compute/virtualMachines/") == puts
    assert gone.node_id == first.node_id and gone.state is NodeState.TERMINATED
    assert gone.launched_at <= first.launched_at + timedelta(seconds=1)


@pytest.mark.parametrize("other_launch_first", [False, True])
def test_a_replay_past_the_records_window_makes_gone_vms_again(other_launch_first: bool) -> None:
    """A record serves replays for KEEP_S: later it is expired, whether or not another launch (which
    deletes old records) came first. The gone VM is made again, under a new record from the replay."""
    rg, arm = f"rg-{uuid.uuid4().hex[:8]}", fakes().arm
    clock = FakeClock(datetime.now(UTC))
    (node,) = provider(rg, now=clock.now).launch(spot_offering(), 1, request_id="late")
    arm.evict(rg, node.node_id)
    clock.advance(records.KEEP_S + 1)
    if other_launch_first:
        provider(rg, now=clock.now).launch(spot_offering(), 1, request_id="other")
    (again,) = provider(rg, now=clock.now).launch(spot_offering(), 1, request_id="late")
    assert again.node_id == node.node_id and again.state is NodeState.READY
    assert arm.vm(rg, node.node_id) is not None
    (rec,) = [r for r in arm.records(rg) if r["tags"][records.REQUEST_TAG] == "late"]
    assert datetime.fromisoformat(rec["tags"][records.AT_TAG]) == clock.now()


def test_a_replay_inside_the_window_reports_the_gone_vm_ended_after_other_launches() -> None:
    rg, arm = f"rg-{uuid.uuid4().hex[:8]}", fakes().arm
    clock = FakeClock(datetime.now(UTC))
    (node,) = provider(rg, now=clock.now).launch(spot_offering(), 1, request_id="inside")
    arm.evict(rg, node.node_id)
    clock.advance(records.KEEP_S - 60)
    provider(rg, now=clock.now).launch(spot_offering(), 1, request_id="other")
    (again,) = provider(rg, now=clock.now).launch(spot_offering(), 1, request_id="inside")
    assert again.state is NodeState.TERMINATED and arm.vm(rg, node.node_id) is None


def test_list_nodes_never_reports_a_recorded_vm_that_is_gone() -> None:
    """Listings come from the VMs alone: an evicted VM of a record is not a node (the record is not read)."""
    rg, arm = f"rg-{uuid.uuid4().hex[:8]}", fakes().arm
    p = provider(rg)
    gone, live = p.launch(spot_offering(), 2, request_id="half")
    arm.evict(rg, gone.node_id)
    reads = arm.count("GET", f"/{rg}/providers/Microsoft.Compute/sshPublicKeys")
    assert [(n.node_id, n.state) for n in p.list_nodes()] == [(live.node_id, NodeState.READY)]
    assert arm.count("GET", f"/{rg}/providers/Microsoft.Compute/sshPublicKeys") == reads
    assert records.decode(arm.records(rg)[0]["tags"][records.MADE_TAG]) == {0, 1}


def test_a_record_whose_vms_are_all_gone_is_kept_for_replays_then_deleted() -> None:
    """Its VMs deleted, a record is no node, but a replay inside KEEP_S still needs it; the first launch
    after KEEP_S deletes it."""
    rg, arm = f"rg-{uuid.uuid4().hex[:8]}", fakes().arm
    clock = FakeClock(datetime.now(UTC))
    p = provider(rg, now=clock.now)
    (node,) = p.launch(spot_offering(), 1, request_id="done")
    p.terminate([node.node_id], request_id="t")
    arm.settle()
    assert p.list_nodes() == [] and len(arm.records(rg)) == 1
    clock.advance(records.KEEP_S - 1)
    (again,) = p.launch(spot_offering(), 1, request_id="done")
    assert again.state is NodeState.TERMINATED and p.list_nodes() == []
    clock.advance(2)
    p.launch(spot_offering(), 1, request_id="next")
    assert [r["tags"][records.REQUEST_TAG] for r in arm.records(rg)] == ["next"]
