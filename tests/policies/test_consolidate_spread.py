"""A move to spot weighs the spread of runtime estimates (``policy.price_late``): a strict job on
on-demand, 15 minutes into an hour's estimated run, 30 minutes of slack. AWS spot at $0.90/h (0.5
interruptions/h) saves about $1.10 over on-demand's $3.06/h for its 45 minutes left, and its slack
covers an interruption's loss by the estimate. But if it runs 1.25-1.4x its estimate, the move's
pause leaves no room for an interruption's loss (restart 300 s + boot 180 s + the 60 s write on
notice): with 3 of 20 finished jobs at 1.3x, that is P(interrupted) 0.31 x 0.15 x $500 = $23 of
miss risk, and it stays. Found on SLO day 2 (sigma 0.5): a job switched to on-demand because its
spot run risked its deadline was moved back to another spot pool for $0.13, interrupted, and missed.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from burster.lifecycle import NodeState
from burster.model import Demand, JobClass, Market, Node, Offering, Placement, Snapshot
from policies.consolidate import consolidate
from policies.cost import CostModel, CostParams
from tests.policies.test_consolidate import NOW, PARAMS, launched

OD = Offering("aws", "us-east-1", "use1-az1", "p3.2xlarge", "V100", 1, Market.ON_DEMAND, 3.06)
SPOT = Offering("aws", "us-east-1", "use1-az6", "p3.2xlarge", "V100", 1, Market.SPOT, 0.90)
COST = CostModel(CostParams(interruption_rates={SPOT.key: 0.5}))
SPREAD = (1.0,) * 17 + (1.3,) * 3
LATE = replace(PARAMS, price_late=True)


def on_demand_job(ratios: tuple[float, ...], job_class: JobClass = JobClass.STRICT) -> Snapshot:
    job = Demand("dl", 1, NOW - timedelta(minutes=20), 3600.0, gpu_model="V100", job_class=job_class,
                 deadline=NOW + timedelta(seconds=2700 + 1800))
    p = Placement(job, ("od-1",), NOW - timedelta(minutes=15), True, Market.ON_DEMAND, OD.price_per_hour_usd)
    node = Node("od-1", OD, NodeState.READY, NOW - timedelta(minutes=18), "rq", job_id="dl")
    return Snapshot(NOW, (), (p,), (), (node,), (OD, SPOT), runtime_ratios=ratios)


def test_a_deadline_job_stays_on_on_demand_when_the_spread_puts_a_spot_runs_miss_above_the_saving() -> None:
    assert launched(consolidate(on_demand_job(SPREAD), COST, LATE)) == []


def test_it_moves_when_the_estimates_hold_or_the_spread_is_not_priced() -> None:
    assert launched(consolidate(on_demand_job((1.0,) * 20), COST, LATE)) == [("dl", SPOT.key)]
    assert launched(consolidate(on_demand_job(SPREAD), COST, PARAMS)) == [("dl", SPOT.key)]  # price_late off
    assert launched(consolidate(on_demand_job(SPREAD[:19]), COST, LATE)) == [("dl", SPOT.key)]  # too few ratios


def test_a_best_effort_job_has_no_deadline_to_risk() -> None:
    snap = on_demand_job(SPREAD, JobClass.BEST_EFFORT)
    assert launched(consolidate(snap, COST, LATE)) == [("dl", SPOT.key)]


def test_a_job_on_spot_weighs_its_own_pools_risk_too() -> None:
    """On $2.00/h spot as flaky as the target: its run there allows up to 1.5x its estimate, the
    move's pause 1.4x; with 3 of 20 jobs at 1.3x and 3 at 1.45x each side risks $23, and the move's
    saving on price stands."""
    pricey = replace(SPOT, zone="use1-az2", price_per_hour_usd=2.0)
    cost = CostModel(CostParams(interruption_rates={SPOT.key: 0.5, pricey.key: 0.5}))
    snap = on_demand_job((1.0,) * 14 + (1.3,) * 3 + (1.45,) * 3)
    p = replace(snap.running[0], market=Market.SPOT, price_per_hour_usd=2.0)
    node = replace(snap.cloud_nodes[0], offering=pricey)
    snap = replace(snap, running=(p,), cloud_nodes=(node,), offerings=(OD, SPOT, pricey))
    assert launched(consolidate(snap, cost, LATE)) == [("dl", SPOT.key)]
