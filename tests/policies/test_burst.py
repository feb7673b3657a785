"""Burst decisions on hand-built snapshots: when a queued job stays, and when it bursts and where."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from burster.model import Demand, JobClass, Market, Offering, Placement, PoolNode, Snapshot
from policies.burst import BurstParams, burst, spot_slack_s
from policies.cost import CostModel, CostParams

NOW = datetime(2026, 3, 2, 12, tzinfo=UTC)
SPOT = Offering("aws", "us-west-2", "usw2-az1", "p3.2xlarge", "V100", 1, Market.SPOT, 0.9)
OD = Offering("aws", "us-west-2", "usw2-az1", "p3.2xlarge", "V100", 1, Market.ON_DEMAND, 3.06)
COST = CostModel(CostParams(spot_interruptions_per_hour=0.0, restart_overhead_s=300, launch_latency_s=180,
                            wait_value_usd_per_gpu_hour=0.0, deadline_miss_usd=0.0))
PARAMS = BurstParams(max_wait_s=600, wait_fraction=0.25, deadline_margin_s=900, prewarm=False, cost_trigger=False)


def snapshot(job: Demand, *, busy_for_s: float) -> Snapshot:
    """One full 8-GPU on-prem node whose job ends in ``busy_for_s``, and ``job`` waiting."""
    pool = (PoolNode("onprem-0", "V100", 8, 0),)
    hog = Demand("hog", 8, NOW - timedelta(hours=1), 3600 + busy_for_s, gpu_model="V100")
    running = (Placement(hog, ("onprem-0",), NOW - timedelta(hours=1), False, Market.RESERVED),)
    return Snapshot(NOW, (job,), running, pool, (), (SPOT, OD))


def deadline_job(slack_s: float, runtime_s: float = 36_000) -> Demand:
    return Demand("dl", 1, NOW, runtime_s, gpu_model="V100", job_class=JobClass.STRICT,
                  deadline=NOW + timedelta(seconds=runtime_s + slack_s))


def test_a_job_that_reserved_capacity_starts_within_budget_stays_queued() -> None:
    job = Demand("be", 1, NOW, 36_000, gpu_model="V100")  # budget max(600, 0.25 x 10 h) = 9000 s
    assert burst(snapshot(job, busy_for_s=3_000), COST, PARAMS) == []


def test_a_job_whose_wait_passes_its_budget_bursts_to_the_cheapest_spot() -> None:
    job = Demand("be", 1, NOW, 36_000, gpu_model="V100")
    (launch,) = burst(snapshot(job, busy_for_s=10_000), COST, PARAMS)
    assert launch.offering == SPOT and launch.count == 1 and "wait budget" in launch.reason


def test_spot_slack_is_deadline_slack_less_changeover_margin_and_rework() -> None:
    job = deadline_job(slack_s=5_000)
    # slack 5000 - launch 180 = 4820; minus changeover (300 + 180) and margin 900 -> 3440; no rework at rate 0
    assert spot_slack_s(job, NOW, COST, PARAMS, SPOT) == 3_440
    risky = CostModel(CostParams(spot_interruptions_per_hour=0.5, restart_overhead_s=300, launch_latency_s=180))
    # rework: 36000 s x 0.5/h x (900 + 300) s / 3600 = 6000 s
    assert spot_slack_s(job, NOW, risky, PARAMS, SPOT) == 3_440 - 6_000
    assert spot_slack_s(job, NOW, COST, PARAMS, OD) == float("inf")


def test_a_deadline_job_bursts_on_spot_before_queueing_would_force_it_onto_on_demand() -> None:
    # wait 5000 s < its budget of 9000 s, but more than the 3440 s of slack a spot run can spare
    (launch,) = burst(snapshot(deadline_job(slack_s=5_000), busy_for_s=5_000), COST, PARAMS)
    assert launch.offering.market is Market.SPOT and "too little deadline slack" in launch.reason
    # with plenty of slack the same wait is fine
    assert burst(snapshot(deadline_job(slack_s=50_000), busy_for_s=5_000), COST, PARAMS) == []


def fragmented(job: Demand) -> Snapshot:
    """Two 8-GPU nodes with one GPU free on each: 2 GPUs free in all, but no node fits a 2-GPU job."""
    pool = (PoolNode("onprem-0", "V100", 8, 1), PoolNode("onprem-1", "V100", 8, 1))
    return Snapshot(NOW, (job,), (), pool, (), (SPOT, OD))


def two_gpu_job(waited_s: float, queued_s: float | None = None) -> Demand:
    queued = None if queued_s is None else NOW - timedelta(seconds=queued_s)
    return Demand("frag", 2, NOW - timedelta(seconds=waited_s), 3600, gpu_model="V100", queued_at=queued)


def test_a_job_the_pool_leaves_waiting_on_fragmented_gpus_bursts_once_past_its_budget() -> None:
    wakes: list[datetime] = []
    assert burst(fragmented(two_gpu_job(waited_s=300)), COST, PARAMS, wakes=wakes) == []
    assert wakes == [NOW + timedelta(seconds=900 - 300)]  # budget max(600, 0.25 x 3600 s)
    (launch,) = burst(fragmented(two_gpu_job(waited_s=1200)), COST, PARAMS)
    assert launch.offering == SPOT and launch.count == 2 and "look free" in launch.reason


def test_a_job_just_requeued_is_given_a_scheduler_cycle_before_it_counts_as_stuck() -> None:
    wakes: list[datetime] = []
    assert burst(fragmented(two_gpu_job(waited_s=1200, queued_s=10)), COST, PARAMS, wakes=wakes) == []
    assert wakes == [NOW + timedelta(seconds=50)]
