"""A launch replayed with its request id after the instance it made went away (over the real SDK
clients and the local Compute Engine fake). GCE answers the repeated requestId with the original
insert Operation, DONE, and makes nothing; the adapter reports the gone instance as ended, so the
reconcile pass bills it and launches again under a new request id."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from burster.clock import FakeClock
from burster.lifecycle import NodeState
from burster.plan import Launch
from providers.gcp.naming import parse_time
from tests.providers.harness_gcp import ZONE, GcpBackend, catalog_offering, gcp_backend
from tests.providers.replay import restarted


@pytest.fixture
def b() -> Iterator[GcpBackend]:
    with gcp_backend() as backend:
        yield backend


def inserts(b: GcpBackend) -> int:
    return sum(r["method"] == "POST" and r["path"].endswith("/instances") for r in b.compute.requests)


def ops_of(b: GcpBackend, name: str) -> dict[str, dict[str, Any]]:
    return {op.body["operationType"]: op.body for op in b.compute.s.ops.values()
            if op.body["targetLink"].endswith(f"/instances/{name}")}


def test_a_replay_after_a_preemption_reports_the_gone_instance_ended_and_makes_nothing(b: GcpBackend) -> None:
    clock = FakeClock(datetime.now(UTC) + timedelta(seconds=60))
    labels = {"team": "vision"}
    first = b.provider(now=clock.now).launch(catalog_offering(), 2, request_id="crashed", labels=labels)
    b.compute.preempt(ZONE, first[0].node_id)  # Spot: instanceTerminationAction DELETE
    b.compute.settle()
    assert b.compute.instance(ZONE, first[0].node_id) is None
    before = len(b.compute.s.instances)
    again = b.provider(now=clock.now).launch(catalog_offering(), 2, request_id="crashed", labels=labels)  # restarted
    assert len(b.compute.s.instances) == before and inserts(b) == 4  # deduplicated: nothing made
    assert [(n.node_id, n.state) for n in again] == [(first[0].node_id, NodeState.TERMINATED),
                                                     (first[1].node_id, NodeState.READY)]
    gone, ops = again[0], ops_of(b, first[0].node_id)
    assert gone.request_id == "crashed" and gone.team == "vision" and gone.offering == catalog_offering()
    assert gone.launched_at == parse_time(ops["insert"]["insertTime"], clock.now())
    assert gone.ended_at == parse_time(ops["compute.instances.preempted"]["endTime"], clock.now())
    assert gone.launched_at <= gone.ended_at < clock.now()


def test_a_replay_after_a_delete_dates_the_end_by_the_delete_operation(b: GcpBackend) -> None:
    clock = FakeClock(datetime.now(UTC) + timedelta(seconds=60))
    p = b.provider(now=clock.now)
    (node,) = p.launch(catalog_offering(), 1, request_id="deleted")
    p.terminate([node.node_id], request_id="t")
    b.compute.settle()
    (again,) = p.launch(catalog_offering(), 1, request_id="deleted")
    assert again.state is NodeState.TERMINATED and again.node_id == node.node_id
    assert again.ended_at == parse_time(ops_of(b, node.node_id)["delete"]["endTime"], clock.now())


def test_without_the_operations_listing_the_end_is_now(b: GcpBackend) -> None:
    clock = FakeClock(datetime.now(UTC) + timedelta(seconds=60))
    p = b.provider(now=clock.now)
    (node,) = p.launch(catalog_offering(), 1, request_id="no-list")
    b.compute.preempt(ZONE, node.node_id)
    b.compute.settle()
    b.compute.fail_next("GET", 403, "forbidden", "Required 'compute.globalOperations.list' permission",
                        path="/aggregated/operations")
    (again,) = p.launch(catalog_offering(), 1, request_id="no-list")
    assert again.state is NodeState.TERMINATED and again.ended_at == clock.now()


def test_the_reconcile_pass_bills_the_preempted_instance_and_launches_again_under_a_new_id(
        b: GcpBackend) -> None:
    clock = FakeClock(datetime.now(UTC) + timedelta(seconds=10))
    launch = Launch(catalog_offering(), 1, "burst job-7", "req-crashed", job_id="job-7", team="vision")
    (node,) = b.provider(now=clock.now).launch(launch.offering, 1, request_id=launch.request_id)
    b.compute.preempt(ZONE, node.node_id)  # while no controller ran
    b.compute.settle()
    clock.advance(120)
    rec, state = restarted("gcp", b.provider(now=clock.now), launch, clock)
    report = rec.run_once()
    assert any("launching again under a new request id" in e for e in report.errors)
    assert b.compute.instance(ZONE, node.node_id) is None
    (entry,) = state.ledger
    assert entry.node_id == node.node_id and entry.reason == "burst job-7" and entry.usd > 0
    assert entry.end < clock.now()  # billed to its preemption, not to the replay
    clock.advance(10)
    assert not rec.run_once().errors
    (new,) = [n for n in state.live() if n.node_id != node.node_id]
    assert new.request_id == "req-crashed-r1" and b.compute.instance(ZONE, new.node_id) is not None
