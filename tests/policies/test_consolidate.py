"""Consolidation on hand-built snapshots: a cloud job moves to cheaper cloud capacity only when it pays."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from burster.lifecycle import NodeState
from burster.model import Demand, JobClass, Market, Node, Offering, Placement, PoolNode, Snapshot
from burster.plan import Checkpoint
from policies.burst import BurstParams
from policies.burster import BursterParams, BursterPolicy
from policies.consolidate import consolidate
from policies.cost import CostModel, CostParams
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


def moved(actions: list[Checkpoint] | tuple[object, ...]) -> list[str]:
    return [a.job_id for a in actions if isinstance(a, Checkpoint)]


def test_a_long_job_moves_off_a_pricey_spot_pool_when_a_cheaper_one_is_back() -> None:
    actions = consolidate(snapshot(), COST, PARAMS)
    assert moved(actions) == ["cj"]
    assert "cheaper capacity" in actions[0].reason and CHEAP.key in actions[0].reason


def test_no_move_when_nothing_cheaper_is_launchable() -> None:
    gone = replace(CHEAP, available=False)
    assert consolidate(snapshot(offerings=(PRICEY, gone)), COST, PARAMS) == []
    assert consolidate(snapshot(offerings=(PRICEY,)), COST, PARAMS) == []


def test_no_move_when_the_changeover_costs_more_than_the_rest_of_the_run() -> None:
    # 6 minutes left: $0.07 saved at most, less than a boot, a restart and the wait of the changeover
    assert consolidate(snapshot(hours_left=0.1), COST, PARAMS) == []


def test_a_deadline_job_without_room_for_a_changeover_stays() -> None:
    assert moved(consolidate(snapshot(deadline_in_h=10.2), COST, PARAMS)) == []  # 12 min of slack
    assert moved(consolidate(snapshot(deadline_in_h=14.0), COST, PARAMS)) == ["cj"]  # hours of slack


def test_a_job_still_inside_its_wait_budget_stays_and_names_when_it_may_move() -> None:
    # submitted 2.5 h ago, budget 0.25 x 12 h = 3 h: requeued now, it could wait for reserved GPUs
    # (paused, not moved), so it stays until the budget is spent
    wakes: list[datetime] = []
    assert consolidate(snapshot(submitted_h_ago=2.5), COST, PARAMS, wakes=wakes) == []
    assert wakes == [NOW + timedelta(minutes=30, microseconds=1)]


def test_a_job_that_would_land_on_an_idle_burst_node_stays() -> None:
    # the pool hands a requeued job to an idle burst node that fits, whatever it costs
    idle = Node("n2", replace(PRICEY, instance_type="p3.8xlarge", gpus_per_node=4, price_per_hour_usd=4.04),
                NodeState.READY, NOW - timedelta(hours=1), "rq2", idle_since=NOW - timedelta(minutes=1))
    assert consolidate(snapshot(extra_nodes=(idle,)), COST, PARAMS) == []


def test_nodes_already_being_stopped_are_left_alone() -> None:
    assert consolidate(snapshot(), COST, PARAMS, frozenset({"n1"})) == []


def test_the_composed_policy_moves_back_on_prem_first_and_consolidates_only_when_enabled() -> None:
    on = BursterPolicy(COST, BursterParams(burst=PARAMS))
    off = BursterPolicy(COST, BursterParams(burst=PARAMS, reclaim=ReclaimParams(consolidate=False)))
    assert moved(on.decide(snapshot()).actions) == ["cj"]
    assert "cheaper capacity" in on.decide(snapshot()).actions[0].reason  # type: ignore[attr-defined]
    assert moved(off.decide(snapshot()).actions) == []
    free = on.decide(snapshot(pool_free=1)).actions  # a reserved GPU is free: one checkpoint, to move back
    assert moved(free) == ["cj"] and "back on-prem" in free[0].reason  # type: ignore[attr-defined]
