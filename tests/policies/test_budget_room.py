"""A launch must fit the budget stop's test at the next pass, not only the committed spend: one with a
short run left fitted the committed rule, was launched, and the budget stop ended it at the next pass
(its billing minimum paid for nothing; near a budget, launch and stop alternated). helper-72's finding."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from burster.lifecycle import NodeState
from burster.model import Market, Node, Snapshot, Spend
from burster.plan import Hold, Launch, Plan, Terminate
from policies.budget_stop import enforce_budget, enforce_team_budgets
from policies.guards import GuardParams, apply_guards
from tests.policies.test_guards import NOW, OD, SPOT

DEAR = replace(OD, instance_type="p3.16xlarge", price_per_hour_usd=36.0)  # $2.60 over the 260 s reach
GUARDS = GuardParams(total_budget_usd=10.0, stop_grace_s=120.0)  # reach at a 10 s tick: 2 x 10 + 2 x 120 s


def _snap(*nodes: Node, spent: float, by_team: tuple[tuple[str, float], ...] = ()) -> Snapshot:
    return Snapshot(NOW, (), (), (), nodes, (SPOT, OD, DEAR), spend=Spend(total_usd=spent, by_team_usd=by_team))


def _short(team: str = "") -> Launch:
    """A node for a job with 36 s left: $0.36 committed."""
    return Launch(DEAR, 1, "burst", "rq-short", job_id="short", est_hours=0.01, team=team)


def test_a_launch_the_budget_stop_would_end_at_the_next_pass_is_refused() -> None:
    plan = apply_guards(Plan((_short(),)), _snap(spent=7.5), GUARDS, tick_s=10.0)
    assert plan.launches == ()
    assert plan.refused[0][1] == ("global budget $10.00 would stop it at the next pass: $7.50 spent + $36.00/h "
                                  "for the stop's 260s reach")
    # what it would have met: launched, ten seconds on, the stop ends it
    node = Node("n", DEAR, NodeState.LAUNCHING, NOW, "rq-short", for_job="short")
    (stop,) = enforce_budget(replace(_snap(node, spent=7.5 + 0.1), now=NOW + timedelta(seconds=10)), GUARDS, 10.0)
    assert isinstance(stop, Terminate) and stop.node_ids == ("n",)


def test_a_launch_within_the_stops_reach_goes_and_the_reach_grows_with_the_tick() -> None:
    assert apply_guards(Plan((_short(),)), _snap(spent=7.39), GUARDS, tick_s=10.0).launches == (_short(),)
    assert apply_guards(Plan((_short(),)), _snap(spent=7.39), GUARDS, tick_s=30.0).launches == ()  # 300 s: $3.00


def test_live_nodes_and_launches_kept_earlier_in_the_pass_burn_within_the_reach_too() -> None:
    live = Node("c1", SPOT, NodeState.READY, NOW - timedelta(hours=1), "rq-c1", job_id="r1")  # $0.90/h
    first, second = (replace(_short(), request_id=f"rq-{j}", job_id=j) for j in ("a", "b"))
    plan = apply_guards(Plan((first, second)), _snap(live, spent=4.7), GUARDS, tick_s=10.0)
    # 4.70 + (0.90 + 36) x 260 s = 7.36 fits; with a second node, 4.70 + 72.90 x 260 s = 9.96 fits ...
    assert plan.launches == (first, second)
    plan = apply_guards(Plan((first, second)), _snap(live, spent=4.8), GUARDS, tick_s=10.0)
    assert plan.launches == (first,) and "would stop it at the next pass" in plan.refused[0][1]  # ... 10.06 not


def test_a_teams_reach_counts_its_own_spend_and_nodes() -> None:
    guards = GuardParams(team_budget_usd={"ml": 10.0}, stop_grace_s=120.0)
    theirs = Node("c1", DEAR, NodeState.READY, NOW - timedelta(hours=1), "rq-c1", job_id="r1", team="cv")
    snap = _snap(theirs, spent=20.0, by_team=(("cv", 12.5), ("ml", 7.5)))
    plan = apply_guards(Plan((_short("ml"),)), snap, guards, tick_s=10.0)
    assert plan.refused[0][1].startswith("team ml budget $10.00 would stop it at the next pass: $7.50 spent")
    snap = _snap(theirs, spent=20.0, by_team=(("cv", 12.61), ("ml", 7.39)))
    assert apply_guards(Plan((_short("ml"),)), snap, guards, tick_s=10.0).launches == (_short("ml"),)


def test_an_idle_node_handed_to_a_job_adds_no_burn_it_did_not_have() -> None:
    """Its idle TTL commits $3.00; 6.50 + 36 x 260 s = 9.10 leaves it to the stop, and handed a job it
    burns no more than idle (counted twice: 11.70)."""
    spot = replace(DEAR, market=Market.SPOT)
    idle = Node("c1", spot, NodeState.READY, NOW - timedelta(hours=1), "rq-c1", idle_since=NOW)
    hold = Hold("c1", "h", NOW, NOW, "hand c1 to h", est_hours=0.01)
    assert apply_guards(Plan((hold,)), _snap(idle, spent=6.5), GUARDS, tick_s=10.0).actions == (hold,)


def test_a_node_handed_to_another_teams_job_brings_its_burn_to_that_teams_reach() -> None:
    """Its bill goes to the job's team once the job starts there (burster/node_bills.py): a standby node
    (no team) handed to ml's job burns $36/h for ml from then, so with $7.60 spent the stop would end it
    at the next pass (7.60 + 36 x 250 s = 10.10), as it would a launch (7.60 + 36 x 260 s = 10.20)."""
    guards = GuardParams(team_budget_usd={"ml": 10.0}, stop_grace_s=120.0, idle_ttl_s=0.0)  # committed: spent
    idle = Node("c1", DEAR, NodeState.READY, NOW - timedelta(hours=1), "rq-c1", idle_since=NOW)
    hold = Hold("c1", "h", NOW, NOW, "hand c1 to h", team="ml", est_hours=0.01)
    plan = apply_guards(Plan((hold,)), _snap(idle, spent=7.6, by_team=(("ml", 7.6),)), guards, tick_s=10.0)
    assert plan.actions == () and "team ml budget $10.00 would stop it at the next pass" in plan.refused[0][1]
    handed = replace(idle, job_id="h", idle_since=None, team="ml")  # what it would have met
    later = replace(_snap(handed, spent=7.7, by_team=(("ml", 7.7),)), now=NOW + timedelta(seconds=10))
    assert [type(a).__name__ for a in enforce_team_budgets(later, guards, 10.0)] == ["Checkpoint"]
    mine = replace(idle, team="ml")  # its own team's node burns for it already
    snap = _snap(mine, spent=7.6, by_team=(("ml", 7.6),))
    assert apply_guards(Plan((hold,)), snap, guards, tick_s=10.0).actions == (hold,)


def test_a_handed_nodes_burn_moves_between_teams_not_into_the_global_budget_and_adds_up_in_a_pass() -> None:
    """The global budget counts the node's burn already (6.00 + 36 x 260 s = 8.60, not 11.20); ml's
    counts each node handed to it this pass: a second $36/h node would reach 5.00 + 72 x 260 s = 10.20."""
    guards = GuardParams(total_budget_usd=10.0, team_budget_usd={"ml": 100.0}, stop_grace_s=120.0, idle_ttl_s=0.0)
    idle = Node("c1", DEAR, NodeState.READY, NOW - timedelta(hours=1), "rq-c1", idle_since=NOW)
    hold = Hold("c1", "h", NOW, NOW, "hand c1 to h", team="ml", est_hours=0.01)
    assert apply_guards(Plan((hold,)), _snap(idle, spent=6.0), guards, tick_s=10.0).actions == (hold,)
    guards = replace(guards, total_budget_usd=None, team_budget_usd={"ml": 10.0})
    other = replace(idle, node_id="c2", request_id="rq-c2")
    second = replace(hold, node_id="c2", job_id="h2")
    plan = apply_guards(Plan((hold, second)), _snap(idle, other, spent=5.0, by_team=(("ml", 5.0),)), guards, 10.0)
    assert plan.actions == (hold,) and "team ml budget $10.00 would stop it at the next pass" in plan.refused[0][1]
