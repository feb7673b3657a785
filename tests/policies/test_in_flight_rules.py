"""The rules ahead of the guards see a launch in flight (``Snapshot.in_flight``) as the guards do: a
move in flight is asked again at a node cap its own nodes fill, its nodes end as booting ones do where
the cap's waits are worked out, and all of them count toward holding their job's gang."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from burster.lifecycle import NodeState
from burster.model import Demand, InFlight, Node, Snapshot
from burster.plan import Launch
from policies.burster import BursterParams, BursterPolicy
from policies.consolidate import consolidate
from policies.guards import GuardParams, NodeRoom, node_ends_s
from policies.reclaim import give_back_short
from tests.policies.test_consolidate import COST, PARAMS, launched, snapshot
from tests.policies.test_guards import NOW, OD
from tests.policies.test_short_gang import X8, node, pending


def test_a_move_in_flight_is_asked_again_at_the_cap_its_own_nodes_fill() -> None:
    """Job cj's move to a cheaper pool was sent and its reply lost: at a cap of two its node and the
    move's fill the cap. A burst in flight is asked again there (tests/test_reconcile_in_flight.py);
    the move was not even worked out (no room), so it waited unasked until listed, or forgotten a
    listing grace (300 s) later. A move that is not in flight still is not proposed at a full cap."""
    (move,) = consolidate(snapshot(), COST, PARAMS)
    flying = replace(snapshot(), in_flight=(InFlight(move.request_id, move.offering, move.count, NOW, "cj"),))
    capped = BursterPolicy(COST, BursterParams(burst=PARAMS, guards=GuardParams(max_nodes=2)))
    plan = capped.decide(flying)
    # the same launch, exclusive as every Burster launch by default (``policy.exclusive_nodes``)
    assert plan.launches == (replace(move, exclusive=True),) and plan.refused == () and plan.held_back == ()
    room = NodeRoom(flying, 2)
    assert consolidate(flying, COST, PARAMS, room=room) == [move] and room.held == []
    # another move for it (another id) is new: not proposed with no room (nor held back)
    elsewhere = replace(flying, in_flight=(replace(flying.in_flight[0], request_id="rq-other"),))
    plan = capped.decide(elsewhere)
    assert launched(plan.actions) == [] and plan.held_back == ()


def test_the_nodes_of_a_launch_in_flight_end_as_booting_ones_do() -> None:
    """At the cap (one node, in flight for job b with 600 s to run) a held-back launch waits for b's
    node to end: 600 s, as for b's node listed booting; it was taken to wait forever (priced as a
    day's wait where an urgent job weighs preempting a reserved one, ``preempt.py``)."""
    job = Demand("b", 1, NOW - timedelta(hours=1), 600.0)
    booting = Node("c1", OD, NodeState.LAUNCHING, NOW, "rq-b", for_job="b")
    listed = Snapshot(NOW, (job,), (), (), (booting,), (OD,))
    flying = replace(listed, cloud_nodes=(), in_flight=(InFlight("rq-b", OD, 1, NOW, "b"),))
    assert node_ends_s(flying, 300.0) == node_ends_s(listed, 300.0) == [600.0]
    for_none = replace(flying, in_flight=(InFlight("rq-sb", OD, 2, NOW),))  # a standby launch
    assert node_ends_s(for_none, 300.0) == [float("inf")] * 2
    other = Launch(OD, 1, "burst u", "rq-u", job_id="u")
    assert NodeRoom(flying, 1).slot_waits([other], lambda: node_ends_s(flying, 300.0)) == {"rq-u": 600.0}


def test_every_node_of_a_launch_in_flight_counts_toward_holding_the_gang() -> None:
    """A 3-node gang with one node listed and two in flight holds; with one in flight it is short."""
    gang = replace(pending().pending[0], gpus=24, nodes=3)
    listed = pending(node("c1"), job=gang)
    two = replace(listed, in_flight=(InFlight("rq-g", X8, 2, NOW, "g"),))
    assert give_back_short(two, COST) == []
    one = replace(listed, in_flight=(InFlight("rq-g", X8, 1, NOW, "g"),))
    assert [a.node_ids for a in give_back_short(one, COST)] == [("c1",)]
