"""The provider contract, run over every adapter (see conftest.HARNESSES)."""

from __future__ import annotations

import pytest

from burster.errors import CapacityError, PartialLaunchError
from burster.lifecycle import NodeState
from burster.plan import request_id
from tests.providers.harness import Harness

LABELS = {"team": "vision", "project": "detector", "sprint": "S42"}


def test_launch_list_terminate_round_trip(harness: Harness) -> None:
    p = harness.provider
    nodes = p.launch(harness.offering, 2, request_id=request_id("rt", 1), labels=LABELS)
    assert len(nodes) == 2
    assert len({n.node_id for n in nodes}) == 2
    listed = {n.node_id for n in p.list_nodes() if n.state is not NodeState.TERMINATED}
    assert {n.node_id for n in nodes} <= listed
    for n in p.list_nodes():
        if n.node_id in listed:
            assert n.offering.instance_type == harness.offering.instance_type
            assert n.offering.market == harness.offering.market
    p.terminate([nodes[0].node_id], request_id=request_id("rt-term", 1))
    live = {n.node_id for n in p.list_nodes()
            if n.state not in (NodeState.TERMINATED, NodeState.TERMINATING)}
    assert nodes[0].node_id not in live
    assert nodes[1].node_id in live


def test_retry_with_same_request_id_creates_nothing_new(harness: Harness) -> None:
    p = harness.provider
    rid = request_id("idem", 1)
    first = p.launch(harness.offering, 1, request_id=rid, labels=LABELS)
    again = p.launch(harness.offering, 1, request_id=rid, labels=LABELS)
    assert {n.node_id for n in again} == {n.node_id for n in first}
    live = [n for n in p.list_nodes() if n.state is not NodeState.TERMINATED]
    assert len(live) == 1


def test_capacity_error_surfaces_with_offering_key(harness: Harness) -> None:
    harness.fail_capacity()
    with pytest.raises(CapacityError) as info:
        harness.provider.launch(harness.offering, 1, request_id=request_id("cap", 1))
    assert info.value.offering_key == harness.offering.key
    assert [n for n in harness.provider.list_nodes() if n.state is not NodeState.TERMINATED] == []


def test_throttling_is_retried_with_backoff(harness: Harness) -> None:
    harness.throttle(2)
    nodes = harness.provider.launch(harness.offering, 1, request_id=request_id("thr", 1))
    assert len(nodes) == 1


def test_partial_launch_reports_the_nodes_that_came_up(harness: Harness) -> None:
    harness.partial(1)
    with pytest.raises(PartialLaunchError) as info:
        harness.provider.launch(harness.offering, 3, request_id=request_id("part", 1))
    got = info.value.nodes
    assert len(got) == 1
    listed = {n.node_id for n in harness.provider.list_nodes()}
    assert {n.node_id for n in got} <= listed  # type: ignore[attr-defined]


def test_an_exclusive_node_says_so_when_listed(harness: Harness) -> None:
    """The tag survives a controller restart: the listing, not only the launch, reports it."""
    p = harness.provider
    (node,) = p.launch(harness.offering, 1, request_id=request_id("ex", 1), labels={**LABELS, "exclusive": "true"})
    (plain,) = p.launch(harness.offering, 1, request_id=request_id("ex", 2), labels=LABELS)
    assert node.exclusive and not plain.exclusive
    listed = {n.node_id: n for n in p.list_nodes()}
    assert listed[node.node_id].exclusive and not listed[plain.node_id].exclusive
