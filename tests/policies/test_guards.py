"""The node cap and launch rate guards, and the node room the rules see them through."""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from burster.lifecycle import NodeState
from burster.model import Demand, JobClass, Market, Node, Offering, Placement, PoolNode, Snapshot, Spend
from burster.plan import Checkpoint, Launch, Plan
from policies.baselines import GreedySpotPolicy
from policies.burst import BurstParams
from policies.burster import BursterParams, BursterPolicy
from policies.cost import CostModel, CostParams
from policies.guards import GuardParams, NodeRoom, apply_guards, committed_usd, node_ends_s
from tests.policies.strategies import snapshots

NOW = datetime(2026, 3, 2, 12, tzinfo=UTC)
SPOT = Offering("aws", "us-west-2", "usw2-az1", "p3.2xlarge", "V100", 1, Market.SPOT, 0.9)
OD = Offering("aws", "us-west-2", "usw2-az1", "p3.2xlarge", "V100", 1, Market.ON_DEMAND, 3.06)
COST = CostModel(CostParams(spot_interruptions_per_hour=0.0, wait_value_usd_per_gpu_hour=0.0, deadline_miss_usd=0.0))
PARAMS = BurstParams(max_wait_s=600, prewarm=False, cost_trigger=False)


def launch(job: str, count: int) -> Launch:
    return Launch(SPOT, count, f"burst {job}", f"rq-{job}", job_id=job, est_hours=1.0)


def cloud_node(i: int, state: NodeState = NodeState.READY) -> Node:
    return Node(f"c{i}", SPOT, state, NOW - timedelta(hours=1), f"rq{i}", job_id=f"r{i}")


def no_reserved_room(jobs: tuple[Demand, ...], live: int, launched_last_minute: int = 0) -> Snapshot:
    """A full on-prem node with a day of work left, ``jobs`` waiting past their budgets, ``live`` cloud nodes."""
    pool = (PoolNode("onprem-0", "V100", 8, 0),)
    nodes = tuple(cloud_node(i) for i in range(live))
    return Snapshot(NOW, jobs, (), pool, nodes, (SPOT,), spend=Spend(launches_last_minute=launched_last_minute))


def waiting(job_id: str, gpus: int = 1) -> Demand:
    return Demand(job_id, gpus, NOW - timedelta(hours=2), 3600, gpu_model="V100")


def test_the_guards_refuse_launches_past_the_node_cap_and_the_launch_rate() -> None:
    snap = no_reserved_room((), live=3)
    plan = apply_guards(Plan((launch("a", 1), launch("b", 2), launch("c", 1))), snap, GuardParams(max_nodes=5))
    assert [a.job_id for a in plan.launches] == ["a", "c"]  # b's two nodes would make 6
    assert [why for _, why in plan.refused] == ["max nodes 5 reached (4 live, 2 asked)"]
    rated = apply_guards(Plan((launch("a", 1), launch("b", 1))), no_reserved_room((), 0, launched_last_minute=59),
                         GuardParams())
    assert [a.job_id for a in rated.launches] == ["a"]
    assert [why for _, why in rated.refused] == ["launch rate limit 60/min reached"]


def test_the_node_room_takes_launches_in_turn_and_keeps_the_slots_left_for_the_first_held_back() -> None:
    # terminated and failed nodes no longer count; booting ones do
    snap = Snapshot(NOW, (), (), (), (cloud_node(0), cloud_node(1, NodeState.LAUNCHING),
                                      cloud_node(2, NodeState.TERMINATED), cloud_node(3, NodeState.FAILED)), ())
    room = NodeRoom(snap, max_nodes=5)
    assert room.left == 3 and room.open
    kept = room.keep([launch("a", 1), launch("gang", 4), launch("b", 2), launch("c", 1)])
    assert [a.job_id for a in kept] == ["a"] and not room.open
    assert [(a.job_id, why) for a, why in room.held] == [
        ("gang", "max nodes 5 reached (2 live, 2 slot(s) left this pass, 4 asked); it waits for a node to end"),
        ("b", "max nodes 5 reached (2 live): the 2 slot(s) left are kept for job gang (4 asked), held back first; "
              "it waits for a node to end"),
        ("c", "max nodes 5 reached (2 live): the 2 slot(s) left are kept for job gang (4 asked), held back first; "
              "it waits for a node to end")]


def test_held_back_launches_wait_for_the_node_ends_in_turn_and_the_room_is_left_as_it_was() -> None:
    snap = Snapshot(NOW, (), (), (), (cloud_node(0), cloud_node(1, NodeState.LAUNCHING)), ())
    room = NodeRoom(snap, max_nodes=5)  # 3 slots left
    launches = [launch("a", 1), launch("gang", 4), launch("b", 1), launch("huge", 6), launch("c", 1)]
    waits = room.slot_waits(launches, lambda: [60.0, 600.0])
    # gang: 2 slots kept, then the first two ends; b and c: ends beyond the two known; huge: never
    assert waits == {"rq-gang": 600.0, "rq-b": math.inf, "rq-huge": math.inf, "rq-c": math.inf}
    assert room.slot_waits(launches[:3], lambda: [60.0, 600.0, 900.0]) == {"rq-gang": 600.0, "rq-b": 900.0}
    assert room.slot_waits(launches[:1], lambda: [1.0 / 0.0]) == {}  # nothing held back: no ends worked out
    assert room.left == 3 and room.open and not room.held  # only a forecast
    kept = room.keep(launches[:2])  # then d queues behind the gang held back: 2 slots kept, 3 ends
    assert [a.job_id for a in kept] == ["a"]
    assert room.slot_waits([launch("d", 1)], lambda: [60.0, 600.0, 900.0]) == {"rq-d": 900.0}


def test_node_ends_count_each_live_node_by_its_job_idle_ttl_boot_or_termination() -> None:
    running_job = Demand("r0", 1, NOW - timedelta(hours=2), 3 * 3600, gpu_model="V100")
    running = Placement(running_job, ("c0",), NOW - timedelta(hours=1), True, Market.SPOT, 0.9)  # 2 h left
    booting_for = Demand("p", 1, NOW, 1800, gpu_model="V100")
    nodes = (cloud_node(0),
             replace(cloud_node(1), job_id=None, idle_since=NOW - timedelta(seconds=100)),
             replace(cloud_node(2, NodeState.LAUNCHING), job_id=None, for_job="p"),
             replace(cloud_node(3, NodeState.TERMINATED), job_id=None),
             replace(cloud_node(4), job_id="gone"),
             replace(cloud_node(5, NodeState.TERMINATING), job_id=None))
    snap = Snapshot(NOW, (booting_for,), (running,), (), nodes, ())
    assert node_ends_s(snap, idle_ttl_s=300.0) == [0.0, 200.0, 1800.0, 7200.0, math.inf]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 6), max_size=12), st.integers(0, 8), st.integers(0, 8))
def test_the_room_keeps_launches_in_turn_until_the_first_that_does_not_fit(counts: list[int], max_nodes: int,
                                                                           live: int) -> None:
    """Every launch before the first one held back that the cap could ever fit is kept while it
    fits; from that one on, none is; the kept ones never pass the cap."""
    snap = Snapshot(NOW, (), (), (), tuple(cloud_node(i) for i in range(live)), ())
    room = NodeRoom(snap, max_nodes)
    launches = [launch(f"j{i}", c) for i, c in enumerate(counts)]
    kept = {a.request_id for a in room.keep(launches)}
    left, blocked = max_nodes - live, False
    for a in launches:
        fits = not blocked and a.count <= left
        assert (a.request_id in kept) == fits
        if fits:
            left -= a.count
        elif a.count <= max_nodes:
            blocked = True
    assert sum(a.count for a in launches if a.request_id in kept) <= max(max_nodes - live, 0)
    assert len(kept) + len(room.held) == len(launches)


def test_a_launch_larger_than_the_cap_itself_keeps_no_slots() -> None:
    room = NodeRoom(Snapshot(NOW, (), (), (), (cloud_node(0),), ()), max_nodes=5)
    kept = room.keep([launch("huge", 6), launch("a", 1), launch("b", 4)])
    assert [a.job_id for a in kept] == ["a"] and [a.job_id for a, _ in room.held] == ["huge", "b"]
    assert room.waiting is not None and room.waiting.job_id == "b"


def test_a_gang_the_cap_leaves_no_room_for_keeps_the_slots_left_and_a_later_burst_waits() -> None:
    """A stream of single nodes would otherwise take every slot as it frees up, and the gang
    (often a deadline job, which then turns on-demand) would wait for ever."""
    jobs = (waiting("big", gpus=2), waiting("small"))  # 2 GPUs: two 1-GPU nodes, a gang
    capped = BursterPolicy(COST, BursterParams(burst=PARAMS, guards=GuardParams(max_nodes=4)))
    plan = capped.decide(no_reserved_room(jobs, live=3))
    assert plan.launches == () and plan.refused == ()
    assert [(a.job_id, a.count) for a, _ in plan.held_back] == [("big", 2), ("small", 1)]
    assert capped.decide(no_reserved_room(jobs, live=2)).launches[0].job_id == "big"
    roomy = BursterPolicy(COST, BursterParams(burst=PARAMS, guards=GuardParams(max_nodes=6)))
    assert [(a.job_id, a.count) for a in roomy.decide(no_reserved_room(jobs, live=3)).launches] == [
        ("big", 2), ("small", 1)]


def test_a_plan_whose_kept_slots_block_a_later_launch_is_quiet_only_while_the_first_surely_stays_wanted() -> None:
    """The launch the slots are kept for may stop being wanted with no event (its reserved GPUs come
    close enough to wait for), and the later one would then go: a quiet plan would skip that pass
    (seen: the demo's day 4 at a cap of 4 nodes, sigma 0.5, launched a burst ten minutes late).
    The burst rule says until when a job with no deadline stays wanted (``burst.wanted_until``), for
    Burster's policy and the baselines alike: quiet until then (for ever for a job no reserved GPUs
    can run); a deadline job's launch keeps the plan deciding."""
    big = waiting("big", gpus=3)  # three 1-GPU nodes, then one
    hog = Demand("hog", 8, NOW - timedelta(hours=1), 3 * 3600, gpu_model="V100")  # the on-prem node frees in 2 h
    frees = (Placement(hog, ("onprem-0",), NOW - timedelta(hours=1), False, Market.RESERVED),)
    burster = BursterPolicy(COST, BursterParams(burst=PARAMS, guards=GuardParams(max_nodes=4)))
    # nothing on-prem ends: "big" waits for ever; the node frees in 2 h: quiet until a second before
    for running, quiet in (((), datetime.max.replace(tzinfo=UTC)), (frees, NOW + timedelta(seconds=7_199))):
        blocked = burster.decide(replace(no_reserved_room((big, waiting("small")), live=2), running=running))
        assert [a.job_id for a, _ in blocked.held_back] == ["big", "small"] and blocked.quiet_until == quiet
    strict = replace(big, deadline=NOW + timedelta(hours=6), job_class=JobClass.STRICT)
    for policy, jobs in ((burster, (strict, waiting("small"))), (GreedySpotPolicy(COST, GuardParams(max_nodes=4)),
                                                                 (big, waiting("small")))):
        blocked = policy.decide(no_reserved_room(jobs, live=2))
        assert [a.job_id for a, _ in blocked.held_back] == ["big", "small"]
        assert blocked.quiet_until == (None if policy is burster else datetime.max.replace(tzinfo=UTC))
        full = policy.decide(no_reserved_room(jobs, live=4))  # no slot left: nothing waits on "big" alone
        assert [a.job_id for a, _ in full.held_back] == ["big", "small"]
        assert (full.quiet_until is not None) == (policy is not burster)  # the strict job's may turn urgent


def test_a_held_back_on_demand_burst_keeps_the_policy_deciding_while_a_reserved_job_may_replace_it() -> None:
    """Reserved GPUs may take an urgent on-demand launch's place (policies/preempt.py), and whether
    they do changes as their jobs near their ends, with no event: such a plan names no quiet time."""
    snap = replace(no_reserved_room((waiting("a"),), live=2), offerings=(OD,))
    for preempt, quiet in ((True, False), (False, True)):
        policy = BursterPolicy(COST, BursterParams(burst=PARAMS, guards=GuardParams(max_nodes=2),
                                                   preempt_onprem=preempt))
        plan = policy.decide(snap)
        assert plan.actions == () and [a.job_id for a, _ in plan.held_back] == ["a"]
        assert (plan.quiet_until is not None) == quiet


def test_a_held_back_spot_burst_keeps_the_policy_deciding_only_for_a_job_with_a_deadline_to_meet() -> None:
    """A deadline job's spot launch turns on-demand as its slack runs out (then preempt may weigh
    reserved GPUs against it), with no event; a best-effort job's deadline is no such clock."""
    policy = BursterPolicy(COST, BursterParams(burst=PARAMS, guards=GuardParams(max_nodes=2)))
    for job_class, quiet in ((JobClass.STRICT, False), (JobClass.BEST_EFFORT, True)):
        job = replace(waiting("a"), deadline=NOW + timedelta(hours=6), job_class=job_class)
        plan = policy.decide(no_reserved_room((job,), live=2))
        assert [(a.job_id, a.offering.market) for a, _ in plan.held_back] == [("a", Market.SPOT)]
        assert (plan.quiet_until is not None) == quiet


def test_at_a_full_cap_the_plan_holds_bursts_back_and_stays_quiet() -> None:
    """Room opens only when a node ends (an event): the plan is empty, names a quiet time, and
    lists what it held back, for --explain; the guards refuse nothing."""
    snap = no_reserved_room((waiting("a"), waiting("b")), live=2)
    for policy in (BursterPolicy(COST, BursterParams(burst=PARAMS, guards=GuardParams(max_nodes=2))),
                   GreedySpotPolicy(COST, GuardParams(max_nodes=2))):
        plan = policy.decide(snap)
        assert plan.actions == () and plan.refused == ()
        assert sorted(a.job_id or "" for a, _ in plan.held_back) == ["a", "b"]
        assert plan.quiet_until is not None
        assert any(line.startswith("held back launch: ") and "max nodes 2 reached" in line for line in plan.explain())
    roomy = BursterPolicy(COST, BursterParams(burst=PARAMS, guards=GuardParams(max_nodes=3))).decide(snap)
    assert len(roomy.launches) == 1 and len(roomy.held_back) == 1


@settings(max_examples=150, deadline=None)
@given(snapshots(), st.integers(0, 8))
def test_no_launch_is_refused_for_the_node_cap(snap: Snapshot, max_nodes: int) -> None:
    """The rules see the cap through the node room: whatever does not fit is held back, so the
    guards never refuse a launch for it, and held-back launches are never also in the plan."""
    plan = BursterPolicy(CostModel(), BursterParams(guards=GuardParams(max_nodes=max_nodes))).decide(snap)
    assert not any(why.startswith("max nodes") for _, why in plan.refused)
    live = sum(1 for n in snap.cloud_nodes if n.state not in (NodeState.TERMINATED, NodeState.FAILED))
    assert sum(a.count for a in plan.launches) <= max(max_nodes - live, 0)
    assert not {a.request_id for a, _ in plan.held_back} & {a.request_id for a in plan.launches}


def test_room_a_budget_refusal_leaves_under_the_cap_goes_to_the_launches_held_back_for_it() -> None:
    """A gang the budget refuses held its nodes' slots while the plan was made: the job held back
    behind it at the cap would wait for good (the refused gang comes first every pass). Found by
    running the chaos test (tests/test_reconcile_chaos.py) under a budget and a cap of four."""
    snap = replace(no_reserved_room((), live=0), spend=Spend(total_usd=20.0))
    big, small, after = launch("big", 4), launch("small", 1), launch("after", 4)
    plan = Plan((big,), held_back=((small, "max nodes 4 reached"), (after, "max nodes 4 reached")))
    guarded = apply_guards(plan, snap, GuardParams(total_budget_usd=23.0, max_nodes=4))
    assert [a.job_id for a in guarded.launches] == ["small"]  # $0.90 fits where the gang's $3.60 did not
    assert [(a.job_id, why.split(":")[0]) for a, why in guarded.refused] == [
        ("big", "global budget $23.00 would be exceeded"), ("after", "global budget $23.00 would be exceeded")]
    assert guarded.held_back == ()
    # without the budget, the gang takes the slots and the others stay held, in turn
    capped = apply_guards(plan, snap, GuardParams(max_nodes=4))
    assert [a.job_id for a in capped.launches] == ["big"] and [a.job_id for a, _ in capped.held_back] == ["small",
                                                                                                             "after"]


def test_a_node_still_booting_stays_committed_for_the_rest_of_its_boot() -> None:
    """A launch is counted at its run plus its boot; a pass later, the node still booting is
    committed the same (spent so far, the rest of its boot, then its job's run), so the boot left
    is not room another launch takes past the hard budget."""
    big = Offering("aws", "us-east-1", "use1-az1", "p4d.24xlarge", "A100", 8, Market.SPOT, 36.0)
    small = Offering("aws", "us-east-1", "use1-az1", "g5.2xlarge", "A10G", 1, Market.SPOT, 2.0)
    cost = CostModel(CostParams(launch_latency_s=600.0, spot_interruptions_per_hour=0.0))
    budget = 36.0 * (3600 + 600) / 3600 + 1e-6  # launch A, exactly
    guards = GuardParams(total_budget_usd=budget, boot_s=600.0)
    policy = BursterPolicy(cost, BursterParams(burst=PARAMS, guards=guards))
    a = Demand("a", 8, NOW - timedelta(hours=1), 3600.0, gpu_model="A100")
    pool = (PoolNode("onprem-0", "V100", 8, 8),)
    (launch_a,) = policy.decide(Snapshot(NOW, (a,), (), pool, (), (big, small))).launches
    later = NOW + timedelta(seconds=10)
    booting = Node("nA", big, NodeState.LAUNCHING, NOW, launch_a.request_id, for_job="a")
    b = Demand("b", 1, later - timedelta(hours=1), 3600.0, gpu_model="A10G")
    spent = Spend(36.0 * 10 / 3600)  # billed while it boots
    snap = Snapshot(later, (a, b), (), pool, (booting,), (big, small), spend=spent)
    total, _ = committed_usd(snap, guards)
    assert total == pytest.approx(budget, abs=1e-3)  # 10 s spent, 590 s of boot and the 1 h run to come
    plan = policy.decide(snap)
    assert not plan.launches and [a.job_id for a, _ in plan.refused] == ["b"]


def _team_nodes_running() -> Snapshot:
    """Team ml's job on an on-demand A100 node (ml has spent $160), team cv's idle node."""
    a100 = Offering("aws", "us-east-1", "use1-az1", "p4d.24xlarge", "A100", 8, Market.ON_DEMAND, 32.0)
    job = Demand("j", 8, NOW - timedelta(hours=5), 10 * 3600.0, gpu_model="A100", team="ml")
    ml = Node("n-ml", a100, NodeState.READY, NOW - timedelta(hours=5), "r", job_id="j", for_job="j", team="ml")
    cv = Node("n-cv", SPOT, NodeState.READY, NOW - timedelta(minutes=2), "r2", team="cv",
              idle_since=NOW - timedelta(minutes=1))
    running = (Placement(job, ("n-ml",), NOW - timedelta(hours=5), True, Market.ON_DEMAND, 32.0),)
    return Snapshot(NOW, (), running, (PoolNode("onprem-0", "V100", 8, 0),), (ml, cv), (a100, SPOT),
                    spend=Spend(total_usd=160.5, by_team_usd=(("cv", 0.5), ("ml", 160.0))))


@pytest.mark.parametrize("total", [None, 10_000.0])
def test_a_team_past_its_hard_budget_has_its_burn_stopped_and_other_teams_keep_theirs(total: float | None) -> None:
    """A team's hard budget is hard too: once its spend plus the burn until nodes can be stopped
    passes it (jobs that ran past their estimates), its nodes are stopped, most expensive first;
    another team's nodes, within its own budget (or with none), are not."""
    guards = GuardParams(total_budget_usd=total, team_budget_usd={"ml": 100.0, "cv": 50.0})
    plan = BursterPolicy(COST, BursterParams(burst=PARAMS, guards=guards)).decide(_team_nodes_running())
    (stop,) = plan.actions
    assert isinstance(stop, Checkpoint) and stop.node_id == "n-ml"
    assert stop.reason == "team ml's hard budget $100.00 reached: stop n-ml"
    within = GuardParams(total_budget_usd=total, team_budget_usd={"ml": 170.0})
    assert not BursterPolicy(COST, BursterParams(burst=PARAMS, guards=within)).decide(_team_nodes_running()).actions


def test_no_move_to_cheaper_capacity_is_launched_while_the_hard_budget_stops_the_burn() -> None:
    """A dear node about to finish its job brings spend plus burn past the hard budget, though what
    is committed leaves room for a move of another job to a cheaper pool: with the burn being
    stopped, nothing new is launched, that move's nodes included."""
    h100 = Offering("aws", "us-east-1", "use1-az1", "p5.48xlarge", "H100", 8, Market.ON_DEMAND, 500.0)
    dear = Offering("aws", "us-east-1", "use1-az2", "g5.xlarge", "A10G", 1, Market.SPOT, 2.0)
    cheap = Offering("aws", "us-east-1", "use1-az3", "g5.xlarge", "A10G", 1, Market.SPOT, 0.5)
    ending = Demand("ending", 8, NOW - timedelta(hours=2), 3600.0, gpu_model="H100")
    long = Demand("long", 1, NOW - timedelta(hours=2), 3 * 3600.0, gpu_model="A10G")
    nodes = (Node("nA", h100, NodeState.READY, NOW - timedelta(hours=1), "ra", job_id="ending"),
             Node("nB", dear, NodeState.READY, NOW - timedelta(hours=1), "rb", job_id="long"))
    running = (Placement(ending, ("nA",), NOW - timedelta(seconds=3595), True, Market.ON_DEMAND, 500.0),
               Placement(long, ("nB",), NOW - timedelta(hours=1), True, Market.SPOT, 2.0))
    snap = Snapshot(NOW, (), running, (PoolNode("onprem-0", "V100", 8, 0),), nodes, (h100, dear, cheap),
                    spend=Spend(total_usd=90.0))
    free = BursterPolicy(COST, BursterParams(burst=PARAMS)).decide(snap)
    assert [(a.job_id, a.offering) for a in free.launches] == [("long", cheap)]  # the move pays
    guards = GuardParams(total_budget_usd=100.0)
    plan = BursterPolicy(COST, BursterParams(burst=PARAMS, guards=guards)).decide(snap)
    assert not plan.launches and not plan.refused
    assert [a.node_id for a in plan.actions if isinstance(a, Checkpoint)] == ["nA"]
