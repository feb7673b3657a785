"""A standby stock launch in flight (``Snapshot.in_flight``, exclusive, for no job: its reply lost, its
nodes not listed yet) is stock on the way: asked again under its id while the stock wants all of it,
and never launched anew beside it. Before, a stock whose count changed meanwhile was launched whole
under a new id, and the lost launch's nodes idled beside it."""

from __future__ import annotations

from dataclasses import replace

from burster.lifecycle import NodeState
from burster.model import InFlight, Snapshot
from burster.plan import Launch
from policies.burster import BursterParams, BursterPolicy
from policies.guards import GuardParams
from policies.standby import standby, stock_launches
from tests.policies.test_standby import BURST, COST, NOW, OD, PARAMS, SPOT, batch, idle, snap


def _stock(s: Snapshot) -> list[Launch]:
    return stock_launches(standby(s, COST, PARAMS), 180.0)


def _lost() -> InFlight:
    """The launch of a stock of one (three starts), sent and its reply lost."""
    nodes, running = batch(3)
    (first,) = _stock(snap(nodes, running))
    return InFlight(first.request_id, first.offering, first.count, NOW, exclusive=True)


def test_a_stock_that_grows_while_its_launch_is_in_flight_launches_only_the_rest() -> None:
    flying = _lost()
    nodes, running = batch(10)  # the stock grows to five
    launches = _stock(replace(snap(nodes, running), in_flight=(flying,)))
    assert [(a.request_id, a.count, a.exclusive) for a in launches[:1]] == [(flying.request_id, 1, True)]
    (rest,) = launches[1:]
    assert rest.count == 4 and rest.request_id != flying.request_id
    assert _stock(replace(snap(nodes, running), in_flight=(flying,))) == launches  # the same next pass
    # the same stock with nothing in flight launches five, under another id again
    (whole,) = _stock(snap(nodes, running))
    assert whole.count == 5 and whole.request_id not in (flying.request_id, rest.request_id)


def test_a_stock_launch_in_flight_past_what_the_stock_wants_is_not_asked_again_nor_added_to() -> None:
    nodes, running = batch(3)  # a stock of one
    three = replace(_lost(), request_id="rq-three", count=3)
    assert _stock(replace(snap(nodes, running), in_flight=(three,))) == []


def test_a_stock_launch_listed_in_part_or_to_a_blocked_offering_is_counted_not_asked_again() -> None:
    """The reconciler makes a launch listed in part again whole itself (asked for its unseen nodes
    alone, the cloud would take the id for another request); one to a blocked offering would fail."""
    nodes, running = batch(10)  # a stock of five
    two = replace(_lost(), count=2)
    seen = replace(idle(9, state=NodeState.LAUNCHING), for_job=None, request_id=f"{two.request_id}-r1")
    (rest,) = _stock(replace(snap([*nodes, seen], running), in_flight=(two,)))  # one listed, two not
    assert rest.count == 2 and rest.request_id != two.request_id
    on_od = replace(two, offering=OD)  # sent where the stock launched then, blocked since
    blocked = replace(snap(nodes, running), in_flight=(on_od,), blocked_offerings=frozenset({OD.key}))
    (rest,) = _stock(blocked)
    assert rest.count == 3 and rest.offering == SPOT


def test_a_job_launch_in_flight_is_not_stock() -> None:
    nodes, running = batch(3)
    for_job = replace(_lost(), request_id="rq-b", job_id="b")
    (launch,) = _stock(replace(snap(nodes, running), in_flight=(for_job,)))
    assert launch.count == 1 and launch.request_id != "rq-b"


def test_the_policy_asks_a_stock_launch_in_flight_again_at_a_full_node_cap() -> None:
    """Ten nodes and the one in flight fill a cap of eleven: the launch in flight is asked again (its
    node is counted already), the rest of the stock waits for a slot."""
    nodes, running = batch(10)
    flying = _lost()
    policy = BursterPolicy(COST, BursterParams(burst=BURST, standby=PARAMS, guards=GuardParams(max_nodes=11)))
    plan = policy.decide(replace(snap(nodes, running), in_flight=(flying,)))
    assert [(a.request_id, a.count) for a in plan.launches] == [(flying.request_id, 1)]
    assert [a.count for a, _ in plan.held_back] == [4]
