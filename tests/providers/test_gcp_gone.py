"""When a GCE instance a replayed insert made went (``interruptions.ended_at``), and the gone node's
times and labels as the adapter reports it (over the real SDK clients and the Compute Engine fake)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest

from burster.clock import FakeClock
from burster.lifecycle import NodeState
from providers.gcp.interruptions import ended_at
from tests.providers.harness_gcp import ZONE, GcpBackend, catalog_offering, gcp_backend

NOW = datetime(2026, 3, 2, 12, tzinfo=UTC)


def _at(minutes: int | None) -> str:
    return "" if minutes is None else (NOW + timedelta(minutes=minutes)).isoformat()


def _op(kind: str, target: int, end_min: int | None, insert_min: int = 0) -> SimpleNamespace:
    return SimpleNamespace(operation_type=kind, target_id=str(target), end_time=_at(end_min),
                           insert_time=_at(insert_min))


def test_ended_at_is_the_earliest_end_of_this_instances_preempted_or_delete_operation() -> None:
    ops = [_op("insert", 7, 1), _op("delete", 7, 30), _op("compute.instances.preempted", 7, 20),
           _op("compute.instances.preempted", 8, 5), _op("delete", 9, None, insert_min=3)]
    assert ended_at(ops, 7, NOW) == NOW + timedelta(minutes=20)
    assert ended_at(ops, 9, NOW) == NOW + timedelta(minutes=3)  # no endTime: its insertTime
    assert ended_at(ops[:1], 7, NOW) is None


@pytest.fixture
def b() -> Iterator[GcpBackend]:
    with gcp_backend() as backend:
        yield backend


def test_a_gone_instance_is_never_dated_after_the_controllers_now(b: GcpBackend) -> None:
    """The controller's clock runs 10 minutes behind GCE's: the insert and preemption times GCE gives
    are later than now, so the gone node is dated now to now (no bill in the future); its labels hold."""
    clock = FakeClock(datetime.now(UTC) - timedelta(minutes=10))
    labels = {"team": "vision", "exclusive": "true"}
    (node,) = b.provider(now=clock.now).launch(catalog_offering(), 1, request_id="skewed", labels=labels)
    b.compute.preempt(ZONE, node.node_id)
    b.compute.settle()
    (gone,) = b.provider(now=clock.now).launch(catalog_offering(), 1, request_id="skewed", labels=labels)
    assert gone.state is NodeState.TERMINATED and gone.launched_at == gone.ended_at == clock.now()
    assert gone.exclusive and gone.team == "vision"
