"""Consolidation on hand-built snapshots: a cloud job moves to cheaper cloud capacity only when it pays,
its new nodes launched first (make before break)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from burster.lifecycle import NodeState
from burster.model import Demand, JobClass, Market, Node, Offering, Placement, PoolNode, Snapshot
from burster.plan import Action, Checkpoint, Launch
from policies.burst import BurstParams
from policies.burster import BursterParams, BursterPolicy
from policies.consolidate import consolidate, spot_qualifies_at
from policies.cost import CostModel, CostParams
from policies.guards import GuardParams
from policies.offers import offer_book
from policies.reclaim import ReclaimParams

NOW = datetime(2026, 3, 2, 12, tzinfo=UTC)
PRICEY = Offering("aws", "us-west-2", "usw2-az1", "p3.2xlarge", "V100", 1, Market.SPOT, 1.01)
CHEAP = Offering("azure", "westus3", "westus3", "Standard_NC6s_v3", "V100", 1, Market.SPOT, 0.34)
COST = CostModel(CostParams(spot_interruptions_per_hour=0.0))
PARAMS = BurstParams(prewarm=False)


def snapshot(hours_left: float = 10.0, *, offerings: tuple[Offering, ...] = (PRICEY, CHEAP),
             deadline_in_h: float | None = None, pool_free: int = 0, submitted_h_ago: float = 12.0,
             extra_nodes: tuple[Node, ...] = ()) -> Snapshot:
    """One 1-GPU job on the pricey spot pool, started 2 h ago (submitted 12 h ago: its wait budget
    of a quarter of its run is spent); a full one-node on-prem pool."""
    deadline = NOW + timedelta(hours=deadline_in_h) if deadline_in_h is not None else None
    job = Demand("cj", 1, NOW - timedelta(hours=submitted_h_ago), (2 + hours_left) * 3600, gpu_model="V100",
                 deadline=deadline, job_class=JobClass.STRICT if deadline else JobClass.BEST_EFFORT)
    running = (Placement(job, ("n1",), NOW - timedelta(hours=2), True, Market.SPOT, PRICEY.price_per_hour_usd),)
    node = Node("n1", PRICEY, NodeState.READY, NOW - timedelta(hours=2), "rq", job_id="cj")
    return Snapshot(NOW, (), running, (PoolNode("onprem-0", "V100", 8, pool_free),), (node, *extra_nodes),
                    offerings)


def moved(actions: list[Action] | tuple[object, ...]) -> list[str]:
    return [a.job_id for a in actions if isinstance(a, Checkpoint)]


def launched(actions: list[Action] | tuple[object, ...]) -> list[tuple[str | None, str]]:
    return [(a.job_id, a.offering.key) for a in actions if isinstance(a, Launch)]


def new_node(state: NodeState) -> Node:
    """The node launched on the cheap pool for the running job ``cj``."""
    return Node("n9", CHEAP, state, NOW - timedelta(minutes=3), "rq9", for_job="cj")


def test_a_long_job_gets_nodes_on_a_cheaper_pool_first_and_moves_once_they_are_up() -> None:
    actions = consolidate(snapshot(), COST, PARAMS)
    assert launched(actions) == [("cj", CHEAP.key)] and moved(actions) == []
    assert "cheaper capacity for running job cj" in actions[0].reason
    assert consolidate(snapshot(extra_nodes=(new_node(NodeState.JOINING),)), COST, PARAMS) == []  # booting
    up = consolidate(snapshot(extra_nodes=(new_node(NodeState.READY),)), COST, PARAMS)
    assert moved(up) == ["cj"] and launched(up) == []
    assert "are up: move it off" in up[0].reason  # type: ignore[union-attr]


def test_no_move_when_nothing_cheaper_is_launchable() -> None:
    gone = replace(CHEAP, available=False)
    assert consolidate(snapshot(offerings=(PRICEY, gone)), COST, PARAMS) == []
    assert consolidate(snapshot(offerings=(PRICEY,)), COST, PARAMS) == []


def test_no_move_when_the_changeover_costs_more_than_the_rest_of_the_run() -> None:
    # 6 minutes left: $0.07 saved at most, less than a boot, a restart and the wait of the pause
    assert consolidate(snapshot(hours_left=0.1), COST, PARAMS) == []


def test_a_deadline_job_without_room_for_a_changeover_stays() -> None:
    assert consolidate(snapshot(deadline_in_h=10.2), COST, PARAMS) == []  # 12 min of slack
    assert launched(consolidate(snapshot(deadline_in_h=14.0), COST, PARAMS)) == [("cj", CHEAP.key)]


def test_a_flaky_cheap_pool_is_charged_its_interruptions_pauses() -> None:
    # the cheap pool loses a node every 15 minutes: each costs a restart (rework) and a boot's wait
    flaky = CostModel(CostParams(spot_interruptions_per_hour=0.0, interruption_rates={CHEAP.key: 4.0}))
    assert consolidate(snapshot(), flaky, PARAMS) == []


def test_nodes_already_being_stopped_are_left_alone() -> None:
    assert consolidate(snapshot(), COST, PARAMS, frozenset({"n1"})) == []


def test_a_job_on_a_protected_node_gets_no_new_nodes() -> None:
    # its checkpoint would be refused, so new nodes would only idle until their TTL, again and again
    guarded = BursterPolicy(COST, BursterParams(burst=PARAMS, guards=GuardParams(protected_node_ids=frozenset({"n1"}))))
    assert launched(guarded.decide(snapshot()).actions) == []


def test_the_composed_policy_moves_back_on_prem_first_and_consolidates_only_when_enabled() -> None:
    on = BursterPolicy(COST, BursterParams(burst=PARAMS))
    off = BursterPolicy(COST, BursterParams(burst=PARAMS, reclaim=ReclaimParams(consolidate=False)))
    assert launched(on.decide(snapshot()).actions) == [("cj", CHEAP.key)]
    assert off.decide(snapshot()).actions == ()
    free = on.decide(snapshot(pool_free=1)).actions  # a reserved GPU is free: one checkpoint, to move back
    assert moved(free) == ["cj"] and "back on-prem" in free[0].reason  # type: ignore[attr-defined]
    assert launched(free) == []


def test_with_the_node_cap_full_no_move_is_proposed_but_a_started_one_finishes() -> None:
    """A move launches first: at a full cap the guards would refuse that launch at every pass, so the
    policy does not ask; a move whose nodes are up still checkpoints (that needs no launch)."""
    capped = BursterPolicy(COST, BursterParams(burst=PARAMS, guards=GuardParams(max_nodes=1)))
    plan = capped.decide(snapshot())
    assert plan.actions == () and plan.refused == ()
    roomy = BursterPolicy(COST, BursterParams(burst=PARAMS, guards=GuardParams(max_nodes=2)))
    assert launched(roomy.decide(snapshot()).actions) == [("cj", CHEAP.key)]
    full = BursterPolicy(COST, BursterParams(burst=PARAMS, guards=GuardParams(max_nodes=2)))
    up = full.decide(snapshot(extra_nodes=(new_node(NodeState.READY),))).actions
    assert moved(up) == ["cj"] and launched(up) == []


@pytest.mark.parametrize("hours_left", [0.5, 3.0, 12.4])
def test_a_move_that_stops_paying_does_not_start_paying_again_as_the_clock_runs(hours_left: float) -> None:
    """The saving of a move only shrinks with the run left, also on a per-minute-billed target: the
    simulator skips the passes in between on that promise (policies/quiet.py). Priced just under the
    break-even, the move pays for a while, then stops for good."""
    def moves(price: float, after_s: float) -> bool:
        at = replace(snapshot(hours_left, offerings=(PRICEY, replace(CHEAP, price_per_hour_usd=price))),
                     now=NOW + timedelta(seconds=after_s))
        return bool(launched(consolidate(at, COST, PARAMS)))

    low, high = 0.01, PRICEY.price_per_hour_usd  # the move pays at low, not at high: bisect the break-even
    assert moves(low, 0) and not moves(high, 0)
    for _ in range(40):
        mid = (low + high) / 2
        low, high = (mid, high) if moves(mid, 0) else (low, mid)
    for below in (1e-5, 1e-4, 1e-3):
        seen = [moves(low - below, s) for s in range(0, 1200, 10)]
        assert seen[0] and seen == sorted(seen, reverse=True), below  # on, then off for good


def test_a_deadline_jobs_move_is_weighed_afresh_as_its_work_gets_done() -> None:
    """A deadline job on on-demand: its spot rework limit (slack over remaining work) grows as the
    work gets done, so a spot pool too risky for it early may take it later. A policy that decided
    the earlier pass (same offerings) decides the later one as a fresh policy does."""
    t0 = NOW
    od = Offering("gcp", "us-central1", "us-central1-a", "a2-od", "A100", 1, Market.ON_DEMAND, 10.0)
    spot = Offering("gcp", "us-central1", "us-central1-b", "a2-spot", "A100", 1, Market.SPOT, 3.0)
    left_s, est_s = 20_000.0, 30_000.0
    started = t0 - timedelta(seconds=est_s - left_s)
    job = Demand("dl", 1, started - timedelta(minutes=5), est_s, gpu_model="A100", job_class=JobClass.STRICT,
                 deadline=t0 + timedelta(seconds=left_s + 180 + 3_000))
    node = Node("c1", od, NodeState.READY, started - timedelta(minutes=3), "r", job_id="dl", for_job="dl")
    place = Placement(job, ("c1",), started, True, Market.ON_DEMAND, 10.0)
    offerings = (od, spot)  # one tuple, as a live controller's passes share it

    def at(t: datetime) -> Snapshot:
        return Snapshot(t, (), (place,), (PoolNode("onprem-0", "V100", 8, 0),), (node,), offerings)

    def policy() -> BursterPolicy:  # a $50 miss: the later move's three-interruption risk (10 %) stays under its saving
        return BursterPolicy(CostModel(CostParams(interruption_rates={spot.key: 0.5}, deadline_miss_usd=50.0)),
                             BursterParams(burst=BurstParams(prewarm=False)))
    early, late = at(t0), at(t0 + timedelta(seconds=12_000))
    seen = policy()
    assert not seen.decide(early).launches  # spot's rework would eat the slack left
    (move,) = seen.decide(late).launches
    assert move.offering == spot and move.job_id == "dl"
    assert policy().decide(late).launches == (move,)


def test_an_empty_plan_wakes_when_a_spot_pool_comes_within_a_deadline_jobs_rework_limit() -> None:
    """A deadline job on on-demand: its rework limit (room over remaining work) grows as the work
    gets done, and a spot pool above it now qualifies at the instant remaining = room / fraction.
    The empty plan's quiet_until names that instant (the simulator skipped the move by hours)."""
    spot = Offering("aws", "us-west-2", "usw2-az1", "p3.2xlarge", "V100", 1, Market.SPOT, 0.9)
    od = Offering("aws", "us-west-2", "usw2-az1", "p3.2xlarge", "V100", 1, Market.ON_DEMAND, 3.06)
    # rework 5/3 x (300 + 60) s / 3600 s = 1/6; a $5 miss: the risk of the five interruptions that would
    # outlast the slack (24 % at 7,190 s left) stays under the move's saving
    cost = CostModel(CostParams(interruption_rates={spot.key: 5 / 3}, deadline_miss_usd=5.0))
    left_s = 3 * 3600.0
    job = Demand("dl", 1, NOW - timedelta(minutes=10), left_s, gpu_model="V100", job_class=JobClass.STRICT,
                 deadline=NOW + timedelta(seconds=left_s + 2760))  # room 1,200 s: qualifies at 7,200 s left
    running = (Placement(job, ("od-1",), NOW, True, Market.ON_DEMAND, od.price_per_hour_usd),
               Placement(Demand("hog", 8, NOW - timedelta(hours=1), 30 * 3600.0, gpu_model="V100"), ("onprem-0",),
                         NOW - timedelta(hours=1), False, Market.RESERVED))
    node = Node("od-1", od, NodeState.READY, NOW - timedelta(minutes=3), "rq", job_id="dl", for_job="dl")

    def at(s: float) -> Snapshot:
        return Snapshot(NOW + timedelta(seconds=s), (), running, (PoolNode("onprem-0", "V100", 8, 0),), (node,),
                        (spot, od))
    plan = BursterPolicy(cost).decide(at(0))
    assert not plan.actions and plan.quiet_until == NOW + timedelta(seconds=3600)
    assert not BursterPolicy(cost).decide(at(3590)).actions
    (move,) = BursterPolicy(cost).decide(at(3610)).launches
    assert move.offering == spot and move.job_id == "dl"


def test_the_wake_is_when_the_least_risky_spot_pool_above_the_limit_qualifies() -> None:
    """Several spot pools: one already within the job's rework limit, two above it, one for another
    GPU model. The job's choice may turn when the least risky pool above the limit comes within it
    (remaining = room / its fraction); the other model's pool does not count."""
    def spot(zone: str, model: str = "V100") -> Offering:
        return Offering("aws", "us-west-2", zone, "p3.2xlarge", model, 1, Market.SPOT, 0.9)
    within, sixth, quarter, other = spot("usw2-az1"), spot("usw2-az2"), spot("usw2-az3"), spot("usw2-az4", "A100")
    rates = {within.key: 5 / 12, sixth.key: 5 / 3, quarter.key: 2.5, other.key: 1.25}  # x 360 s: 1/24, 1/6, 1/4, 1/8
    cost = CostModel(CostParams(interruption_rates=rates))
    left_s = 3 * 3600.0
    job = Demand("dl", 1, NOW, left_s, gpu_model="V100", job_class=JobClass.STRICT,
                 deadline=NOW + timedelta(seconds=left_s + 2760))  # limit 1,200 s / 10,800 s = 1/9
    snap = Snapshot(NOW, (job,), (), (), (), (quarter, other, within, sixth))
    at = spot_qualifies_at(job, NOW, cost, PARAMS, offer_book(snap, cost))
    assert at == NOW + timedelta(seconds=left_s - 1200 * 6)  # the 1/6 pool, at 7,200 s left
    only_quarter = Snapshot(NOW, (job,), (), (), (), (quarter, other))
    assert spot_qualifies_at(job, NOW, cost, PARAMS, offer_book(only_quarter, cost)) == \
        NOW + timedelta(seconds=left_s - 1200 * 4)
    none_above = Snapshot(NOW, (job,), (), (), (), (within, other))
    assert spot_qualifies_at(job, NOW, cost, PARAMS, offer_book(none_above, cost)) is None
