"""Rules of the guards, idle reclaim and queue rank that a mutation audit found unpinned.

- committed spend: only live nodes, no negative boot left, a team's live nodes to its team;
- the node room: not open at a full cap (no move to cheaper capacity worked out), the wording
  with no slot left; slot waits: a launch over the cap adds no ends, an exact fit waits none;
- may_reshape (several nodes, a deadline job not best effort, fewest nodes fitting exactly) and
  wanted_until_all (one unnamed instant leaves no quiet time);
- node ends: a draining node now, an idle one at its TTL (never past now);
- apply_guards: no checkpoint or preempt of protected nodes, team-only budgets, a team's kept
  launches and handed idle nodes (Hold) charged, budget and soft threshold boundaries inclusive,
  a team's own spend;
- the budget stop: a tick plus two graces ahead, over exactly 0 stops nothing, dearest first and
  only as many as needed, team stops leave out nodes stopped already, a checkpoint's grace;
- idle reclaim: the last tick of a billing minimum, an unjoined node waits for its join timeout,
  only READY nodes, node id order; short gangs: an ended node does not complete a set, degraded
  providers left alone, sorted ids; stopped_by counts checkpoints;
- start_by: a best-effort job's deadline does not move it.

And two bugs it found, fixed: slot_waits with more live nodes than the cap counted too few node
ends before a held launch's slot, and node_ends_s put a node up for a job still queued at its idle
TTL (which never takes it) instead of after that job's run.
"""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import timedelta

import pytest

from burster.lifecycle import NodeState
from burster.model import Demand, JobClass, Market, Node, Offering, Placement, PoolNode, Snapshot, Spend
from burster.plan import Checkpoint, Hold, Launch, Plan, Preempt, Terminate, request_id
from policies.budget_stop import enforce_budget, enforce_team_budgets
from policies.burst import BurstParams
from policies.burster import BursterParams, BursterPolicy
from policies.cost import CostModel, CostParams
from policies.guards import (
    GuardParams,
    NodeRoom,
    apply_guards,
    committed_usd,
    may_reshape,
    node_ends_s,
    wanted_until_all,
)
from policies.rank import start_by
from policies.reclaim import ReclaimParams, give_back_short, idle_ttl, stopped_by
from tests.policies.test_guards import COST, NOW, OD, PARAMS, SPOT, cloud_node, launch
from tests.policies.test_short_gang import GANG, X8

POOL = (PoolNode("onprem-0", "V100", 8, 0),)


def _snap(*nodes: Node, pending: tuple[Demand, ...] = (), running: tuple[Placement, ...] = (),
          spend: Spend | None = None, offerings: tuple[Offering, ...] = (SPOT, OD)) -> Snapshot:
    return Snapshot(NOW, pending, running, POOL, nodes, offerings, spend=spend or Spend())


def _idle(node_id: str, offering: Offering = OD, *, team: str = "", state: NodeState = NodeState.READY) -> Node:
    return Node(node_id, offering, state, NOW - timedelta(hours=1), f"rq-{node_id}",
                idle_since=NOW - timedelta(seconds=100), team=team)


# committed spend


def test_a_terminated_or_failed_node_commits_nothing() -> None:
    guards = GuardParams(total_budget_usd=100.0, idle_ttl_s=3600.0)
    snap = _snap(_idle("gone", state=NodeState.TERMINATED), _idle("bad", state=NodeState.FAILED),
                 spend=Spend(total_usd=5.0))
    assert committed_usd(snap, guards) == (5.0, {})


def test_a_node_booting_past_its_expected_boot_is_committed_only_its_jobs_run() -> None:
    """Ten minutes into a three-minute boot: the boot left is nothing, never negative time."""
    job = Demand("p", 1, NOW - timedelta(hours=1), 3600.0, gpu_model="V100")
    booting = Node("b", OD, NodeState.LAUNCHING, NOW - timedelta(minutes=10), "rq-b", for_job="p")
    total, _ = committed_usd(_snap(booting, pending=(job,)), GuardParams(boot_s=180.0))
    assert total == pytest.approx(OD.price_per_hour_usd)


def test_a_team_is_committed_its_live_nodes_remaining_cost() -> None:
    """An idle node of team ml is committed its idle TTL to ml: a launch that fits ml's budget only
    without it is refused."""
    guards = GuardParams(team_budget_usd={"ml": 3.5}, idle_ttl_s=3600.0)
    snap = _snap(_idle("n1", team="ml"))
    assert committed_usd(snap, guards)[1] == {"ml": pytest.approx(3.06)}
    plan = apply_guards(Plan((replace(launch("a", 1), team="ml"),)), snap, guards)  # $0.90
    assert not plan.launches and "team ml budget $3.50 would be exceeded" in plan.refused[0][1]


# the node room


def test_at_a_full_cap_no_move_to_cheaper_capacity_is_worked_out() -> None:
    """The room is not open with no slot left: a move's launch is not even held back."""
    dear = Offering("aws", "us-east-1", "use1-az2", "g5.xlarge", "A10G", 1, Market.SPOT, 2.0)
    cheap = Offering("aws", "us-east-1", "use1-az3", "g5.xlarge", "A10G", 1, Market.SPOT, 0.5)
    long = Demand("long", 1, NOW - timedelta(hours=2), 3 * 3600.0, gpu_model="A10G")
    node = Node("nB", dear, NodeState.READY, NOW - timedelta(hours=1), "rb", job_id="long")
    running = (Placement(long, ("nB",), NOW - timedelta(hours=1), True, Market.SPOT, 2.0),)
    snap = _snap(node, running=running, offerings=(dear, cheap))
    assert not NodeRoom(snap, 1).open
    roomy = BursterPolicy(COST, BursterParams(burst=PARAMS)).decide(snap)
    assert [(a.job_id, a.offering) for a in roomy.launches] == [("long", cheap)]
    full = BursterPolicy(COST, BursterParams(burst=PARAMS, guards=GuardParams(max_nodes=1))).decide(snap)
    assert not full.launches and not full.held_back


def test_a_launch_held_back_that_is_larger_than_the_cap_adds_no_ends_to_a_later_ones_wait() -> None:
    room = NodeRoom(_snap(cloud_node(0)), max_nodes=5)  # 4 slots left
    room.keep([launch("huge", 6), launch("gang", 5)])  # huge keeps nothing; the gang keeps the 4
    ends = [10.0 * i for i in range(1, 13)]
    assert room.slot_waits([launch("d", 1)], lambda: ends) == {"rq-d": 20.0}  # 5 + 1 asked, 4 left: 2 ends


def test_a_launch_that_the_slots_left_exactly_fit_waits_for_no_end() -> None:
    """Behind a launch larger than the cap (which keeps nothing), one asking exactly the slots left
    gets them now."""
    room = NodeRoom(_snap(cloud_node(0), cloud_node(1)), max_nodes=5)  # 3 slots left
    waits = room.slot_waits([launch("huge", 6), launch("x", 3)], lambda: [10.0, 20.0, 30.0])
    assert waits == {"rq-huge": math.inf, "rq-x": 0.0}


def test_over_the_cap_a_held_launch_waits_for_the_live_nodes_past_the_cap_to_end_too() -> None:
    """7 live at a cap of 5: a one-node launch fits once 3 have ended (7 - 3 + 1 = 5), not after 1."""
    room = NodeRoom(_snap(*(cloud_node(i) for i in range(7))), max_nodes=5)
    assert room.slot_waits([launch("a", 1)], lambda: [10.0, 20.0, 30.0, 40.0]) == {"rq-a": 30.0}


def test_with_no_slot_left_a_later_launch_is_told_the_cap_is_reached_not_that_slots_are_kept() -> None:
    room = NodeRoom(_snap(*(cloud_node(i) for i in range(3))), max_nodes=3)
    room.keep([launch("a", 1), launch("b", 1)])
    assert [why for _, why in room.held] == [
        "max nodes 3 reached (3 live, 0 slot(s) left this pass, 1 asked); it waits for a node to end"] * 2


@pytest.mark.parametrize(("count", "deadline", "job_class", "left", "may"), [
    (3, True, JobClass.STRICT, 1, True),  # its fewest nodes (one) fit the one slot left exactly
    (3, True, JobClass.STRICT, 0, False),
    (1, True, JobClass.STRICT, 2, False),  # a single node can need no fewer
    (3, False, JobClass.STRICT, 2, False),  # no deadline: its offering does not change with the clock
    (3, True, JobClass.BEST_EFFORT, 2, False),  # a best-effort deadline is no such clock
])
def test_only_a_several_node_launch_for_a_deadline_job_whose_fewest_nodes_fit_may_reshape(
        count: int, deadline: bool, job_class: JobClass, left: int, may: bool) -> None:
    job = Demand("d", count, NOW - timedelta(hours=1), 3600.0, gpu_model="V100", job_class=job_class,
                 deadline=NOW + timedelta(hours=5) if deadline else None)
    assert may_reshape([launch("d", count)], _snap(pending=(job,)), left) is may


def test_a_held_launch_that_may_stop_being_wanted_at_no_named_instant_leaves_no_quiet_time() -> None:
    held = [(launch("a", 1), "capped"), (launch("b", 1), "capped"), (launch("c", 1), "capped")]
    later = NOW + timedelta(hours=1)
    assert wanted_until_all(held[:2], {"rq-a": lambda: later, "rq-b": lambda: NOW}) == [later, NOW]
    assert wanted_until_all(held, {"rq-a": lambda: later, "rq-b": lambda: None, "rq-c": lambda: NOW}) is None
    assert wanted_until_all(held[:2], {"rq-a": lambda: later}) is None  # b's rule named nothing


def test_node_ends_a_draining_node_now_an_idle_one_at_its_ttl_never_before_now() -> None:
    """Draining with no job: now. Up and idle, its job gone (started elsewhere): its idle TTL, not
    never. Idle past its TTL: now."""
    draining = replace(_idle("dr"), state=NodeState.DRAINING, idle_since=None)
    up_for_done = replace(_idle("up"), for_job="done")  # idle 100 s
    stale = replace(_idle("st"), idle_since=NOW - timedelta(seconds=400))
    assert node_ends_s(_snap(up_for_done, draining, stale), idle_ttl_s=300.0) == [0.0, 0.0, 200.0]


def test_a_node_up_for_a_job_still_queued_ends_after_that_jobs_run_as_a_booting_one_does() -> None:
    queued = Demand("p", 1, NOW, 1800.0, gpu_model="V100")
    up_for_p = replace(_idle("up"), for_job="p")  # idle 100 s, the pool has not started p on it yet
    assert node_ends_s(_snap(up_for_p, pending=(queued,)), idle_ttl_s=300.0) == [1800.0]


# apply_guards


def test_a_protected_node_is_neither_checkpointed_nor_preempted() -> None:
    busy = replace(cloud_node(1), protected=True)
    actions = (Checkpoint("c1", "r1", NOW, "move"), Preempt("res", ("onprem-0",), NOW, "urgent"))
    plan = apply_guards(Plan(actions), _snap(busy), GuardParams(protected_node_ids=frozenset({"onprem-0"})))
    assert not plan.actions and [why for _, why in plan.refused] == ["node c1 is protected",
                                                                     "node(s) onprem-0 are protected"]


def test_with_team_budgets_only_the_teams_spend_so_far_counts() -> None:
    ml = replace(launch("a", 1), team="ml")  # $0.90
    snap = _snap(spend=Spend(total_usd=3.0, by_team_usd=(("ml", 3.0),)))
    plan = apply_guards(Plan((ml,)), snap, GuardParams(team_budget_usd={"ml": 3.5}))
    assert not plan.launches and plan.refused[0][1].startswith("team ml budget $3.50 would be exceeded: $3.00")


def test_a_teams_launches_kept_in_a_pass_count_against_its_budget_for_the_next() -> None:
    first, second = (replace(launch(j, 1), team="ml") for j in ("a", "b"))
    plan = apply_guards(Plan((first, second)), _snap(), GuardParams(team_budget_usd={"ml": 1.5}))
    assert [a.job_id for a in plan.launches] == ["a"]
    assert plan.refused[0][1].startswith("team ml budget $1.50 would be exceeded: $0.90 committed")


@pytest.mark.parametrize("budget", ["total", "team"])
def test_an_idle_node_handed_to_a_job_is_charged_before_a_later_launch(budget: str) -> None:
    """Its hour there ($3.06) counts against the budget (and its team's) as a launch would: the
    spot launch after it ($0.90) no longer fits."""
    hold = Hold("c1", "h", NOW, NOW, "hand c1 to h", team="ml", est_hours=1.0)
    guards = (GuardParams(total_budget_usd=3.9, soft_fraction=1.0) if budget == "total" else
              GuardParams(team_budget_usd={"ml": 3.9}, soft_fraction=1.0))
    plan = apply_guards(Plan((hold, replace(launch("b", 1), team="ml"))), _snap(_idle("c1")), guards)
    assert plan.actions == (hold,) and "budget $3.90 would be exceeded" in plan.refused[0][1]


def test_a_launch_that_fills_the_budget_exactly_goes_as_does_one_at_the_soft_threshold_exactly() -> None:
    od2 = replace(OD, price_per_hour_usd=2.0)
    spot = launch("a", 1)  # $0.90
    assert apply_guards(Plan((spot,)), _snap(), GuardParams(total_budget_usd=0.9)).launches == (spot,)
    on_demand = Launch(od2, 1, "burst", "rq-od", job_id="b", est_hours=1.0)  # $2: 3 + 2 = half of 10
    guards = GuardParams(total_budget_usd=10.0, soft_fraction=0.5)
    assert apply_guards(Plan((on_demand,)), _snap(spend=Spend(total_usd=3.0)), guards).launches == (on_demand,)


def test_a_team_budget_counts_the_teams_spend_not_everyones() -> None:
    ml = replace(launch("a", 1), team="ml")
    snap = _snap(spend=Spend(total_usd=10.0, by_team_usd=(("cv", 7.0), ("ml", 3.0))))
    assert apply_guards(Plan((ml,)), snap, GuardParams(team_budget_usd={"ml": 4.0})).launches == (ml,)


# the budget stop

DEAR = replace(OD, instance_type="p3.16xlarge", price_per_hour_usd=36.0)  # $2.50 over the 250 s stop horizon
HALF = replace(OD, instance_type="p3.8xlarge", price_per_hour_usd=18.0)  # $1.25


def test_the_budget_stop_looks_a_tick_and_two_graces_ahead_and_stops_nothing_that_just_fits() -> None:
    guards = GuardParams(total_budget_usd=10.0, stop_grace_s=120.0)
    assert enforce_budget(_snap(_idle("d", DEAR), spend=Spend(total_usd=7.5)), guards, 10.0) == []
    (stop,) = enforce_budget(_snap(_idle("d", DEAR), spend=Spend(total_usd=7.6)), guards, 10.0)
    assert isinstance(stop, Terminate) and stop.node_ids == ("d",)


def test_the_budget_stop_takes_the_dearest_node_first_and_only_as_many_as_it_needs() -> None:
    snap = _snap(_idle("cheap", HALF), _idle("dear", DEAR), spend=Spend(total_usd=7.0))  # $0.75 over
    stops = enforce_budget(snap, GuardParams(total_budget_usd=10.0, stop_grace_s=120.0), 10.0)
    assert [a.node_ids for a in stops] == [("dear",)]


@pytest.mark.parametrize("how", ["checkpoint", "terminate"])
def test_a_team_stop_leaves_out_nodes_stopped_already_and_gives_a_checkpoint_its_grace(how: str) -> None:
    busy = Node("dear", DEAR, NodeState.READY, NOW - timedelta(hours=1), "r", job_id="j", team="ml")
    snap = _snap(busy, _idle("cheap", HALF, team="ml"), spend=Spend(total_usd=7.0, by_team_usd=(("ml", 7.0),)))
    guards = GuardParams(team_budget_usd={"ml": 10.0}, stop_grace_s=120.0)
    (stop,) = enforce_team_budgets(snap, guards, 10.0)
    assert isinstance(stop, Checkpoint) and (stop.node_id, stop.deadline) == ("dear", NOW + timedelta(seconds=120))
    stopping = stop if how == "checkpoint" else Terminate(("dear",), "budget", "t")
    assert enforce_team_budgets(snap, guards, 10.0, stopping=[stopping]) == []  # $7 + $1.25 fits


# idle reclaim


def _reclaimed(*nodes: Node, pending: tuple[Demand, ...] = (), params: ReclaimParams | None = None) -> list[str]:
    return [i for a in idle_ttl(_snap(*nodes, pending=pending), params or ReclaimParams(idle_ttl_s=300.0))
            for i in a.node_ids]


def test_an_idle_node_goes_in_the_last_tick_of_its_billing_minimum_not_before() -> None:
    """AWS bills a minute at least: 50 s in (a 10 s tick), the next pass would be past it."""

    def node(run_s: float) -> Node:
        return Node("n", OD, NodeState.READY, NOW - timedelta(seconds=run_s), "r",
                    idle_since=NOW - timedelta(seconds=40))
    params = ReclaimParams(idle_ttl_s=30.0, tick_s=10.0)
    assert _reclaimed(node(50.0), params=params) == ["n"]
    assert _reclaimed(node(49.5), params=params) == []


def test_a_node_up_for_a_job_still_queued_waits_for_its_join_timeout_not_its_idle_ttl() -> None:
    queued = Demand("p", 1, NOW, 1800.0, gpu_model="V100")
    up = replace(_idle("n"), for_job="p", launched_at=NOW - timedelta(seconds=700),
                 idle_since=NOW - timedelta(seconds=600))
    assert _reclaimed(up, pending=(queued,)) == []
    assert _reclaimed(up) == ["n"]  # its job gone: the idle TTL's


def test_only_a_ready_idle_node_goes_at_its_ttl() -> None:
    draining = replace(_idle("n"), state=NodeState.DRAINING, idle_since=NOW - timedelta(seconds=1000))
    assert _reclaimed(draining) == []


def test_idle_nodes_go_in_node_id_order() -> None:
    assert _reclaimed(_idle("b"), _idle("a"), params=ReclaimParams(idle_ttl_s=60.0)) == ["a", "b"]


# short gangs


def _for_gang(node_id: str, state: NodeState = NodeState.READY) -> Node:
    return Node(node_id, X8, state, NOW - timedelta(minutes=3), "rq-g", for_job="g",
                idle_since=NOW - timedelta(seconds=30))


def test_a_gang_node_that_ended_does_not_complete_the_set() -> None:
    ended = _for_gang("c2", NodeState.TERMINATED)
    (give_back,) = give_back_short(_snap(_for_gang("c1"), ended, pending=(GANG,)), COST)
    assert give_back.node_ids == ("c1",)


def test_a_short_set_on_a_degraded_provider_is_left_alone() -> None:
    snap = replace(_snap(_for_gang("c1"), pending=(GANG,)), degraded_providers=frozenset({"aws"}))
    assert give_back_short(snap, COST) == []


def test_a_short_set_is_given_back_under_its_node_ids_in_order() -> None:
    gang3 = replace(GANG, gpus=24, nodes=3)
    (give_back,) = give_back_short(_snap(_for_gang("c3"), _for_gang("c1"), pending=(gang3,)), COST)
    assert give_back.node_ids == ("c1", "c3") and give_back.request_id == request_id("short", "g", "c1", "c3")


def test_the_nodes_a_pass_stops_are_those_it_terminates_or_checkpoints() -> None:
    actions = [Terminate(("a", "b"), "x", "t"), Checkpoint("c", "j", NOW, "y"), Hold("d", "k", NOW, NOW, "z")]
    assert stopped_by(actions) == {"a", "b", "c"}


# queue rank


def test_a_best_effort_jobs_deadline_does_not_move_its_start_by() -> None:
    params = BurstParams(max_wait_s=600, wait_fraction=0.25, deadline_margin_s=900)
    job = Demand("be", 1, NOW, 14_400, job_class=JobClass.BEST_EFFORT, deadline=NOW + timedelta(seconds=16_200))
    assert start_by(job, CostModel(CostParams(launch_latency_s=180)), params) == NOW + timedelta(seconds=3_600)
