"""Deadline jobs their estimate says are late already: spot or on-demand, priced by the spread."""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from statistics import NormalDist

from burster.lifecycle import NodeState
from burster.model import Demand, JobClass, Market, Node, Offering, Placement, PoolNode, Snapshot
from burster.plan import Launch
from policies.burst import BurstParams, burst
from policies.cost import CostModel, CostParams
from policies.deadline import switch_behind_schedule
from policies.late import late_spot_risk_usd, share_within

NOW = datetime(2026, 3, 2, 12, tzinfo=UTC)
SPOT = Offering("aws", "us-west-2", "usw2-az1", "p3.2xlarge", "V100", 1, Market.SPOT, 0.9)
AZURE = Offering("azure", "eastus", "eastus", "Standard_NC6s_v3", "V100", 1, Market.SPOT, 0.9)
OD = Offering("aws", "us-west-2", "usw2-az1", "p3.2xlarge", "V100", 1, Market.ON_DEMAND, 3.06)
COST = CostModel(CostParams(spot_interruptions_per_hour=0.1, restart_overhead_s=300, launch_latency_s=180,
                            checkpoint_write_s=60, wait_value_usd_per_gpu_hour=0.0))
PARAMS = BurstParams(max_wait_s=600, deadline_margin_s=900, prewarm=False, cost_trigger=False, market_quantile=0.9,
                     price_late=True)
# users' estimates off by exp(N(0, 0.5)): 256 ratios at its quantiles
SPREAD = tuple(math.exp(0.5 * NormalDist().inv_cdf((i + 0.5) / 256)) for i in range(256))
MARGIN = 900.0


def late_job(est_s: float, late_s: float) -> Demand:
    """A strict 1-GPU job whose estimate ends ``late_s`` past its deadline if launched now."""
    return Demand("late", 1, NOW, est_s, gpu_model="V100", job_class=JobClass.STRICT,
                  deadline=NOW + timedelta(seconds=est_s + 180 - late_s))


def queued(job: Demand, ratios: tuple[float, ...] = SPREAD, offerings: tuple[Offering, ...] = (SPOT, OD)) -> Snapshot:
    """``job`` waiting behind a full node that frees in 10 h."""
    hog = Demand("hog", 8, NOW - timedelta(hours=1), 11 * 3600, gpu_model="V100")
    running = (Placement(hog, ("onprem-0",), NOW - timedelta(hours=1), False, Market.RESERVED),)
    return Snapshot(NOW, (job,), running, (PoolNode("onprem-0", "V100", 8, 0),), (), offerings,
                    runtime_ratios=ratios)


def test_share_within_counts_the_ratios_in_the_band_and_trusts_estimates_until_enough_finished() -> None:
    assert share_within((0.5, 0.9, 1.0, 1.1, 2.0) * 4, 0.9, 1.1) == 0.4
    assert share_within((0.5,) * 19, 0.9, 1.1) == 1.0  # too few: as exact, and 1 is within
    assert share_within((), 0.5, 0.9) == 0.0


def test_a_long_job_late_by_its_estimate_goes_to_spot_where_an_interruption_rarely_decides_its_deadline() -> None:
    """12 h, 600 s past its deadline by the estimate: it makes it only if it runs short, and an
    interruption (a 480 s loss on AWS, which saves on notice) tips few such runs over; on-demand
    would cost $26 more for about $3 of expected miss. It used to go to on-demand."""
    job = late_job(12 * 3600, 600)
    assert late_spot_risk_usd(job, SPOT, (12 * 3600 - 600) / (12 * 3600), SPREAD, COST) < 5.0
    (launch,) = burst(queued(job), COST, PARAMS)
    assert isinstance(launch, Launch) and launch.offering is SPOT
    assert burst(queued(job), COST, replace(PARAMS, price_late=False))[0].offering is OD


def test_a_short_job_near_the_line_keeps_on_demand_where_an_interruption_would_lose_half_an_interval() -> None:
    """40 min, 60 s late by its estimate, on Azure spot (a 30 s notice: a checkpoint interval's half is
    lost too): the band an interruption tips over is wide and the on-demand premium small."""
    job = late_job(2400, 60)
    (launch,) = burst(queued(job, offerings=(AZURE, OD)), COST, PARAMS)
    assert launch.offering is OD


def test_with_exact_estimates_a_late_job_is_late_and_takes_the_cheapest_market() -> None:
    job = late_job(12 * 3600, 600)
    assert burst(queued(job, ratios=(1.0,) * 256), COST, PARAMS)[0].offering is SPOT


def on_spot(est_s: float, late_s: float, *, with_od_node: bool = False) -> Snapshot:
    """A strict job started on AWS spot an hour ago whose estimate ends ``late_s`` past its deadline."""
    start = NOW - timedelta(hours=1)
    job = Demand("dl", 1, start, est_s, gpu_model="V100", job_class=JobClass.STRICT,
                 deadline=start + timedelta(seconds=est_s - late_s))
    p = Placement(job, ("spot-1",), start, True, Market.SPOT, SPOT.price_per_hour_usd)
    nodes = [Node("spot-1", SPOT, NodeState.READY, start, "rq", job_id="dl", for_job="dl")]
    if with_od_node:
        nodes.append(Node("od-1", OD, NodeState.LAUNCHING, NOW, "rq-switch", for_job="dl"))
    return Snapshot(NOW, (), (p,), (), tuple(nodes), (SPOT, OD), runtime_ratios=SPREAD)


def test_a_late_job_on_spot_stays_where_the_move_would_cost_its_deadline_as_surely_as_an_interruption() -> None:
    """Late by 600 s on a 12 h estimate: the switch to on-demand (a 360 s changeover, for sure) keeps no
    more runs in time than staying does (a 480 s loss, if interrupted). It used to switch at once."""
    snap = on_spot(12 * 3600, 600)
    assert switch_behind_schedule(snap, COST, MARGIN, price_late=True) == []
    (launch,) = switch_behind_schedule(snap, COST, MARGIN)
    assert isinstance(launch, Launch) and launch.offering is OD


def test_a_late_job_whose_move_is_under_way_still_moves() -> None:
    """On-demand nodes launched for it already (before the spread changed) are not left to idle."""
    assert switch_behind_schedule(on_spot(12 * 3600, 600, with_od_node=True), COST, MARGIN, price_late=True) == []
    up = on_spot(12 * 3600, 600, with_od_node=True)
    up = replace(up, cloud_nodes=(up.cloud_nodes[0], replace(up.cloud_nodes[1], state=NodeState.READY)))
    assert switch_behind_schedule(up, COST, MARGIN, price_late=True) != []


def test_a_job_behind_but_not_late_switches_as_before() -> None:
    snap = on_spot(12 * 3600, -1000)  # 1000 s of slack < changeover + margin
    (launch,) = switch_behind_schedule(snap, COST, MARGIN, price_late=True)
    assert isinstance(launch, Launch) and launch.offering is OD
