"""Spot preemption detection: ``compute.instances.preempted`` operations and instance status."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from burster.model import Market
from burster.plan import request_id
from tests.providers.harness_gcp import ZONE, GcpBackend, catalog_offering, gcp_backend


@pytest.fixture
def b() -> Iterator[GcpBackend]:
    with gcp_backend() as backend:
        yield backend


def test_a_preempted_operation_becomes_one_interruption(b: GcpBackend) -> None:
    p = b.provider()
    (node,) = p.launch(catalog_offering(), 1, request_id=request_id("pre", 1))
    b.compute.settle()
    op = b.compute.preempt(ZONE, node.node_id)
    # The documented system event: listed with operationType="compute.instances.preempted".
    assert op["operationType"] == "compute.instances.preempted" and op["name"].startswith("systemevent-")
    assert op["status"] == "DONE" and op["targetLink"].endswith(f"/instances/{node.node_id}")
    b.compute.settle()  # instanceTerminationAction DELETE: the VM is gone, the operation stays
    assert p.list_nodes() == []
    (notice,) = p.interruptions()
    assert (notice.node_id, notice.provider, notice.kind) == (node.node_id, "gcp", "preempted")
    assert notice.terminate_at - notice.notice_at == timedelta(seconds=30)
    assert p.interruptions() == []  # reported once
    lists = [r for r in b.compute.requests if r["path"].endswith("/aggregated/operations")]
    assert lists[0]["query"]["filter"] == 'operationType="compute.instances.preempted"'


def test_a_restarted_controller_recognises_its_preempted_instances_by_name(b: GcpBackend) -> None:
    (node,) = b.provider().launch(catalog_offering(), 1, request_id=request_id("pre", 2))
    b.compute.preempt(ZONE, node.node_id)
    b.compute.settle()
    assert [n.node_id for n in b.provider().interruptions()] == [node.node_id]
    assert b.provider("other-cluster").interruptions() == []


def test_a_stopping_spot_vm_is_reported_from_its_status_then_not_again(b: GcpBackend) -> None:
    p = b.provider()
    (node,) = p.launch(catalog_offering(), 1, request_id=request_id("pre", 3))
    b.compute.settle()
    b.compute.instance(ZONE, node.node_id)["status"] = "STOPPING"  # before the system event is listed
    assert [n.node_id for n in p.interruptions()] == [node.node_id]
    b.compute.instance(ZONE, node.node_id)["status"] = "RUNNING"
    b.compute.preempt(ZONE, node.node_id)  # the operation for the same VM (same targetId)
    assert p.interruptions() == []


def test_our_own_deletes_and_on_demand_stops_are_not_preemptions(b: GcpBackend) -> None:
    p = b.provider()
    (spot,) = p.launch(catalog_offering(), 1, request_id=request_id("pre", 4))
    (od,) = p.launch(catalog_offering(market=Market.ON_DEMAND), 1, request_id=request_id("pre", 5))
    b.compute.settle()
    p.terminate([spot.node_id], request_id=request_id("pre-term", 4))
    b.compute.instance(ZONE, od.node_id)["status"] = "STOPPING"  # e.g. a user stopped it
    assert p.interruptions() == []


def test_old_preemption_events_are_ignored(b: GcpBackend) -> None:
    (node,) = b.provider().launch(catalog_offering(), 1, request_id=request_id("pre", 6))
    b.compute.preempt(ZONE, node.node_id)
    b.compute.settle()
    later = b.provider(now=lambda: datetime.now(UTC) + timedelta(hours=2))
    assert later.interruptions() == []


def test_without_the_events_list_the_status_path_still_reports(
        b: GcpBackend, caplog: pytest.LogCaptureFixture) -> None:
    p = b.provider()
    (node,) = p.launch(catalog_offering(), 1, request_id=request_id("pre", 7))
    b.compute.settle()
    b.compute.instance(ZONE, node.node_id)["status"] = "STOPPING"
    b.compute.fail_next("GET", 403, "forbidden", "Required 'compute.globalOperations.list' permission for "
                        "'projects/burster-test'")
    assert [n.node_id for n in p.interruptions()] == [node.node_id]
    assert "compute.globalOperations.list" in caplog.text
