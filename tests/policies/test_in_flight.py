"""Launches in flight (``Snapshot.in_flight``: sent, their reply lost, their nodes not listed yet) count
in every guard as the nodes they may have made: committed spend, the budget stop's burn, the node cap;
and the same launch planned again (its request id) is the controller asking again, not a new launch."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from burster.lifecycle import NodeState
from burster.model import Demand, InFlight, Node, Snapshot, Spend
from burster.plan import Checkpoint, Launch, Plan
from policies.budget_stop import enforce_budget, enforce_team_budgets
from policies.guards import (
    GuardParams,
    NodeRoom,
    apply_guards,
    committed_usd,
    live_nodes,
)
from tests.policies.test_guards import NOW, OD

GUARDS = GuardParams(total_budget_usd=10.0, soft_fraction=1.0, boot_s=180.0, idle_ttl_s=300.0)


def job(job_id: str, hours: float = 1.0) -> Demand:
    return Demand(job_id, 1, NOW - timedelta(hours=1), hours * 3600)


def flying(job_id: str = "b", count: int = 1, sent_s: float = 0.0, team: str = "") -> InFlight:
    """A launch for ``job_id`` on $3.06/h nodes, sent ``sent_s`` ago."""
    return InFlight(f"rq-{job_id}", OD, count, NOW - timedelta(seconds=sent_s), job_id, team)


def launch(job_id: str, count: int = 1, hours: float = 1.05) -> Launch:
    return Launch(OD, count, f"burst {job_id}", f"rq-{job_id}", job_id=job_id, est_hours=hours)


def snap(*in_flight: InFlight, pending: tuple[Demand, ...] = (job("b"), job("c")), spent: float = 0.0,
         nodes: tuple[Node, ...] = (), ml_spent: float = 0.0) -> Snapshot:
    spend = Spend(total_usd=spent + ml_spent, by_team_usd=(("ml", ml_spent),))
    return Snapshot(NOW, pending, (), (), nodes, (OD,), spend=spend, in_flight=in_flight)


def test_a_launch_in_flight_is_committed_as_booting_nodes_its_job_runs_on() -> None:
    # its job's hour plus the boot: 2 x 3.06 x (3600 + 180) s
    assert committed_usd(snap(flying(count=2)), GUARDS)[0] == 2 * 3.06 * 3780 / 3600
    # sent 400 s ago, past the boot: its time since it was sent counts instead (not in the spend yet)
    assert committed_usd(snap(flying(sent_s=400)), GUARDS)[0] == 3.06 * 4000 / 3600
    # for no job it knows: its idle TTL, by team
    total, by_team = committed_usd(snap(flying("gone", team="ml")), GUARDS)
    assert total == by_team["ml"] == 3.06 * 480 / 3600


def test_a_new_launch_is_refused_where_a_launch_in_flight_took_the_budget() -> None:
    """Without it counted, job c's launch fits ($3.21 of $5.00), and both launches ran past it."""
    guards = replace(GUARDS, total_budget_usd=5.0)
    plan = apply_guards(Plan((launch("c"),)), snap(flying("b")), guards)
    assert plan.launches == ()
    assert plan.refused[0][1] == "global budget $5.00 would be exceeded: $3.21 committed + $3.21 for this burst"
    assert apply_guards(Plan((launch("c"),)), snap(), guards).launches == (launch("c"),)


def test_the_launch_in_flight_planned_again_is_asked_again_whatever_the_guards_say() -> None:
    """Its nodes are counted already: asked again (the cloud answers with them, by request id) it is
    not refused, by the budget (here past it already), the cap or the rate, and takes no room twice."""
    guards = replace(GUARDS, total_budget_usd=2.0, max_nodes=1, max_launches_per_minute=0)
    plan = apply_guards(Plan((launch("b"),)), snap(flying("b")), guards)
    assert plan.launches == (launch("b"),) and plan.refused == ()
    held = Plan(held_back=((launch("b"), "max nodes"),))
    assert apply_guards(held, snap(flying("b")), guards).launches == (launch("b"),)
    # another launch for the same job (another offering, another id) is new: refused
    other = replace(launch("b"), request_id="rq-b-elsewhere")
    assert apply_guards(Plan((other,)), snap(flying("b")), guards).launches == ()


def test_the_node_cap_counts_the_nodes_of_launches_in_flight() -> None:
    guards = replace(GUARDS, total_budget_usd=None, max_nodes=3)
    assert live_nodes(snap(flying("b", count=2))) == 2
    plan = apply_guards(Plan((launch("c", count=2),)), snap(flying("b", count=2)), guards)
    assert plan.refused[0][1] == "max nodes 3 reached (2 live, 2 asked)"
    room = NodeRoom(snap(flying("b", count=2)), 3)
    assert room.take(launch("b", count=2)) and room.left == 1  # asked again: no slot taken
    assert not room.take(launch("c", count=2)) and room.held[0][0] == launch("c", count=2)
    room = NodeRoom(snap(flying("b", count=2)), 3)
    waits = room.slot_waits([launch("b", count=2), launch("c", count=1), launch("d", count=1)], lambda: [60.0])
    assert waits == {"rq-d": 60.0}  # b's nodes are counted; c takes the one slot left, d waits for an end


def test_the_budget_stop_counts_the_burn_of_launches_in_flight_it_cannot_stop() -> None:
    """Spent $9.00 and a $3.06/h node: over the stop's 250 s horizon ($0.21) it fits $10.00; with six
    nodes in flight burning $18.36/h ($1.28 more) it does not, and the node it can reach is stopped."""
    busy = Node("c1", OD, NodeState.READY, NOW - timedelta(hours=1), "rq-c1", job_id="r1")
    assert enforce_budget(snap(nodes=(busy,), spent=9.0), GUARDS, tick_s=10.0) == []
    (stop,) = enforce_budget(snap(flying(count=6), nodes=(busy,), spent=9.0), GUARDS, tick_s=10.0)
    assert isinstance(stop, Checkpoint) and stop.node_id == "c1"


def test_a_launch_the_stop_would_end_for_a_launch_in_flights_burn_is_refused() -> None:
    """A job with 36 s left commits $0.03, and $13.60 spent with the flight's $1.10 it fits $15.00; but
    its burn and the flight's ($21.42/h) over the stop's 260 s reach ($1.55) do not: the stop would end
    it at the next pass. Alone, its own burn ($0.22) fits."""
    short, pending = launch("c", hours=0.01), (job("b", hours=0.01),)
    guards = replace(GUARDS, total_budget_usd=15.0)
    assert apply_guards(Plan((short,)), snap(spent=13.6, pending=pending), guards).launches == (short,)
    plan = apply_guards(Plan((short,)), snap(flying("b", count=6), spent=13.6, pending=pending), guards)
    assert "would stop it at the next pass" in plan.refused[0][1]


@pytest.mark.parametrize("theirs", ["ml", "cv"])
def test_a_teams_budget_counts_its_own_launches_in_flight_only(theirs: str) -> None:
    """Team ml's $5.00: a launch for c ($3.21) fits beside cv's flight, not beside its own ($3.21
    committed); its short launch's burn with ml's flight over the stop's reach does not fit ($3.60 spent
    + $1.55); and its stop counts ml's flight's burn ($4.50 + $0.21 for its node + $1.28)."""
    guards = GuardParams(team_budget_usd={"ml": 5.0}, soft_fraction=1.0)
    mine = theirs == "ml"
    ours = replace(launch("c"), team="ml")
    plan = apply_guards(Plan((ours,)), snap(flying("b", team=theirs)), guards)
    assert (plan.launches == ()) is mine
    short, pending = replace(launch("c", hours=0.01), team="ml"), (job("b", hours=0.01),)
    plan = apply_guards(Plan((short,)), snap(flying("b", count=6, team=theirs), ml_spent=3.6, pending=pending), guards)
    assert (plan.launches == ()) is mine and (not mine or "would stop it" in plan.refused[0][1])
    busy = Node("c1", OD, NodeState.READY, NOW - timedelta(hours=1), "rq-c1", job_id="r1", team="ml")
    stops = enforce_team_budgets(snap(flying(count=6, team=theirs), nodes=(busy,), ml_spent=4.5), guards, 10.0)
    assert len(stops) == mine
