"""The cost formulas against hand-computed cases."""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from burster.billing import BILLING
from burster.model import Demand, JobClass, Market, Offering
from policies.cost import CostModel, CostParams, amortized_usd_per_gpu_hour, exposed_s, poisson_tail

NOW = datetime(2026, 3, 2, 12, tzinfo=UTC)
# GCP: its 30 s preemption notice is too short to write a checkpoint, so interruptions lose work
SPOT = Offering("gcp", "us-west1", "us-west1-b", "n1-highmem-64-v100x8", "V100", 8, Market.SPOT, 8.0)
OD = Offering("aws", "us-west-2", "usw2-az1", "p3.16xlarge", "V100", 8, Market.ON_DEMAND, 24.48)


@pytest.mark.parametrize(("provider", "run_s", "billed_s"), [
    ("aws", 30, 60),        # 60 s minimum
    ("aws", 61.2, 62),      # then per second, rounded up
    ("gcp", 59, 60),
    ("gcp", 3600, 3600),
    ("azure", 405, 360),    # 6 min 45 s -> 6 full minutes (Azure's published example)
    ("azure", 59, 0),       # under a minute: no full minute
    ("azure", 3600, 3600),
])
def test_billing_granularity(provider: str, run_s: float, billed_s: float) -> None:
    assert BILLING[provider].billed_s(run_s) == billed_s


def test_amortized_onprem_rate() -> None:
    # $240k of 8-GPU server over 4 years + $20k/yr power and space: (60k + 20k) / (8 * 8760)
    assert amortized_usd_per_gpu_hour(240_000, 4, 20_000, 8) == pytest.approx(80_000 / 70_080)


def test_spot_rework_fraction_and_effective_price() -> None:
    cost = CostModel(CostParams(spot_interruptions_per_hour=0.2, restart_overhead_s=300))
    # lost per interruption: 1800/2 + 300 = 1200 s = 1/3 h; x 0.2/h = 0.0667 extra hours per hour
    assert cost.rework_fraction(SPOT, 1800) == pytest.approx(0.2 / 3)
    assert cost.effective_price_per_gpu_hour(SPOT, 1800) == pytest.approx(1.0 * (1 + 0.2 / 3))
    assert cost.rework_fraction(OD, 1800) == 0.0
    assert cost.effective_price_per_gpu_hour(OD, 1800) == pytest.approx(24.48 / 8)


def test_interruption_rate_per_offering_overrides_default() -> None:
    cost = CostModel(CostParams(spot_interruptions_per_hour=0.2, interruption_rates={SPOT.key: 0.5}))
    assert cost.interruption_rate(SPOT) == 0.5
    assert cost.interruption_rate(OD) == 0.0


def test_job_cost_counts_gang_nodes_rework_latency_and_billing() -> None:
    cost = CostModel(CostParams(spot_interruptions_per_hour=0.0, launch_latency_s=180))
    job = Demand("j", gpus=16, nodes=2, submitted_at=NOW, est_runtime_s=3600)
    # 2 nodes x $24.48 x (3600 + 180) s, plus half a second: per-second billing rounds the end up
    assert cost.job_cost_usd(job, OD) == pytest.approx(2 * 24.48 * 3780.5 / 3600)
    one_gpu = Demand("k", gpus=1, submitted_at=NOW, est_runtime_s=20)
    # a whole 8-GPU node, 60 s minimum does not apply since 20 + 180 > 60
    assert cost.job_cost_usd(one_gpu, OD) == pytest.approx(24.48 * 200.5 / 3600)


def test_wait_cost_scales_with_gpus_priority_and_deadline() -> None:
    cost = CostModel(CostParams(wait_value_usd_per_gpu_hour=2.0, deadline_miss_usd=500))
    job = Demand("j", gpus=4, submitted_at=NOW, est_runtime_s=3600, priority=1)
    assert cost.wait_cost_usd(job, 1800, NOW) == pytest.approx(4 * 0.5 * 2.0 * 2)
    strict = Demand("s", gpus=1, submitted_at=NOW, est_runtime_s=3600, job_class=JobClass.STRICT,
                    deadline=NOW + timedelta(hours=1, minutes=10))
    assert cost.wait_cost_usd(strict, 300, NOW) == pytest.approx(1 / 12 * 2.0)  # still on time
    assert cost.wait_cost_usd(strict, 900, NOW) == pytest.approx(0.25 * 2.0 + 500)  # misses it
    assert cost.wait_cost_usd(strict, 0, NOW) == 0.0
    late = Demand("l", gpus=1, submitted_at=NOW, est_runtime_s=3600, job_class=JobClass.STRICT,
                  deadline=NOW + timedelta(minutes=50))  # misses it even starting now
    assert cost.wait_cost_usd(late, 900, NOW) == pytest.approx(0.25 * 2.0)  # the wait costs no miss


def test_a_gang_on_spot_is_interrupted_once_per_member_interruption() -> None:
    cost = CostModel(CostParams(spot_interruptions_per_hour=0.2, restart_overhead_s=300, launch_latency_s=0))
    assert cost.rework_fraction(SPOT, 1800, nodes=4) == pytest.approx(4 * 0.2 / 3)
    gang = Demand("g", gpus=32, nodes=4, submitted_at=NOW, est_runtime_s=3600)
    # 4 nodes x $8 x (1 h work + 4 x 0.2 x 1/3 h rework + half a second of per-second rounding)
    assert cost.job_cost_usd(gang, SPOT) == pytest.approx(4 * 8.0 * (1 + 0.8 / 3 + 0.5 / 3600))


def test_exposed_time_is_where_unsaved_work_exceeds_the_room() -> None:
    # 2 full 1800 s intervals exposed above 1000 s (800 s each) + a 900 s tail below the room
    assert exposed_s(4_500, 1_800, 1_000) == 1_600
    assert exposed_s(4_500, 1_800, 400) == 2 * 1_400 + 500
    assert exposed_s(4_500, 1_800, 1_800) == 0  # the room covers a whole interval
    assert exposed_s(4_500, 1_800, -1) == 4_500  # no room: exposed throughout
    assert exposed_s(1_980, 3_600, 1_000) == 980  # checkpoints rarer than the run


def test_deadline_risk_is_miss_cost_times_chance_of_an_interruption_while_exposed() -> None:
    cost = CostModel(CostParams(spot_interruptions_per_hour=0.5, restart_overhead_s=300, launch_latency_s=180,
                                deadline_miss_usd=500.0))
    now = datetime(2026, 3, 2, tzinfo=UTC)
    job = Demand("j", 1, now, 3_600, gpu_model="V100", job_class=JobClass.STRICT,
                 deadline=now + timedelta(seconds=5_000), checkpoint_interval_s=1_800)
    spot = Offering("azure", "r", "z", "t", "V100", 1, Market.SPOT, 1.0)
    # slack 1000 s - changeover 480 s = 520 s of room: exposed 2 x (1800 - 520) = 2560 s
    expected = 500.0 * (1 - math.exp(-0.5 * 2_560 / 3_600))
    assert cost.deadline_risk_usd(job, spot, 1_000) == pytest.approx(expected)
    soft = replace(job, job_class=JobClass.SOFT)
    assert cost.deadline_risk_usd(soft, spot, 1_000) == pytest.approx(0.25 * expected)
    assert cost.deadline_risk_usd(job, replace(spot, market=Market.ON_DEMAND), 1_000) == 0.0
    assert cost.deadline_risk_usd(replace(job, deadline=None), spot, 1_000) == 0.0


def test_a_notice_long_enough_for_the_checkpoint_handshake_loses_only_the_write_and_the_restart() -> None:
    aws_spot = Offering("aws", "us-west-2", "usw2-az1", "p3.16xlarge", "V100", 8, Market.SPOT, 8.0)
    cost = CostModel(CostParams(spot_interruptions_per_hour=0.2, restart_overhead_s=300))
    assert cost.saves_on_notice(aws_spot) and not cost.saves_on_notice(SPOT)  # 120 s vs 30 s >= 60 s write
    assert cost.notice_loss_s(aws_spot, 1800) == 60 and cost.notice_loss_s(SPOT, 1800) == 900
    assert cost.rework_fraction(aws_spot, 1800) == pytest.approx(0.2 * (300 + 60) / 3600)
    slow = CostModel(CostParams(spot_interruptions_per_hour=0.2, restart_overhead_s=300, checkpoint_write_s=150))
    assert cost.rework_fraction(SPOT, 1800) == slow.rework_fraction(aws_spot, 1800) == pytest.approx(0.2 / 3)
    # deadline risk: while the slack covers one changeover only a second interruption misses (P(N >= 2)
    # over the hour's 0.2 expected), once it does not the first does
    job = Demand("j", 8, NOW, 3_600, gpu_model="V100", job_class=JobClass.STRICT,
                 deadline=NOW + timedelta(seconds=5_000))
    two = 500 * (1 - math.exp(-0.2) * 1.2)
    assert cost.deadline_risk_usd(job, aws_spot, 1_000) == pytest.approx(two)
    assert cost.deadline_risk_usd(job, aws_spot, 400) == pytest.approx(500 * (1 - math.exp(-0.2)))
    # 300 s restart + 180 s boot + the 60 s write on notice: 540 s of slack is just enough, 530 s is not
    assert cost.deadline_risk_usd(job, aws_spot, 540) == pytest.approx(two)
    assert cost.deadline_risk_usd(job, aws_spot, 530) == pytest.approx(500 * (1 - math.exp(-0.2)))
    assert cost.deadline_risk_usd(job, aws_spot, 1_080) == pytest.approx(500 * (1 - math.exp(-0.2) * 1.22))


def test_deadline_risk_counts_several_interruptions_that_together_outlast_the_slack() -> None:
    """Azure (30 s notice: half a 1800 s interval lost) at 0.5/h: an interruption costs 300 s restart +
    180 s boot + 900 s = 1380 s on average. A 4 h run with 3000 s of slack is never exposed to one
    (room 2520 s > the 1800 s interval), but three (N ~ Poisson(2)) outlast it."""
    cost = CostModel(CostParams(spot_interruptions_per_hour=0.5, restart_overhead_s=300, launch_latency_s=180,
                                deadline_miss_usd=500.0))
    azure = Offering("azure", "eastus", "eastus", "Standard_NC6s_v3", "V100", 1, Market.SPOT, 0.40)
    job = Demand("j", 1, NOW, 14_400, gpu_model="V100", job_class=JobClass.STRICT,
                 deadline=NOW + timedelta(hours=6), checkpoint_interval_s=1_800)
    assert exposed_s(14_400, 1_800, 3_000 - 480) == 0
    assert cost.deadline_risk_usd(job, azure, 3_000) == pytest.approx(500 * (1 - 5 * math.exp(-2)))
    assert cost.deadline_risk_usd(job, azure, 4_140) == pytest.approx(500 * (1 - 19 / 3 * math.exp(-2)))
    assert cost.deadline_risk_usd(job, azure, 4_140, work_s=3_600) == \
        pytest.approx(500 * (1 - math.exp(-0.5) * (1 + 0.5 + 0.125 + 0.5 ** 3 / 6)))
    assert cost.deadline_risk_usd(job, azure, 20 * 3_600) == 0.0  # 53 of them: nothing to price
    assert poisson_tail(2.0, 0) == 1.0 and poisson_tail(0.0, 1) == 0.0
    assert poisson_tail(2.0, 1) == pytest.approx(1 - math.exp(-2))


def test_a_forecast_bill_prices_the_rounding_at_its_mean() -> None:
    """Azure bills 6 min 45 s as 6 min once it has run; a forecast cannot know where a run will end
    within its last minute, so it takes off half a minute, whatever the seconds (AWS: half a second
    more; its 60 s minimum still applies)."""
    assert BILLING["azure"].billed_s(405) == 360 and BILLING["azure"].expected_billed_s(405) == 375
    assert BILLING["azure"].expected_billed_s(361) == 331 and BILLING["azure"].expected_billed_s(10) == 0
    assert BILLING["aws"].expected_billed_s(20) == 60 and BILLING["aws"].expected_billed_s(0) == 0
    assert BILLING["aws"].expected_billed_s(100) == 100.5
    cost = CostModel(CostParams(spot_interruptions_per_hour=0.0, launch_latency_s=0))
    azure = Offering("azure", "eastus", "eastus", "Standard_NC6s_v3", "V100", 1, Market.ON_DEMAND, 3.06)
    job = Demand("j", gpus=1, submitted_at=NOW, est_runtime_s=405)
    assert cost.job_cost_usd(job, azure) == pytest.approx(3.06 * 375 / 3600)


def test_boot_miss_risk_from_the_boot_spread() -> None:
    """Start within 240 s, boots log-normal around 180 s with sigma 0.25: P(late) = erfc(ln(4/3) /
    (0.25 sqrt 2)) / 2 = 12.49 %, of a $500 strict miss; a quarter for a soft deadline; nothing
    without a deadline, when even an immediate start is late, or with exact boots that fit."""
    now = datetime(2026, 3, 2, 12, tzinfo=UTC)
    job = Demand("d", 1, now, 1200.0, deadline=now + timedelta(seconds=1440), job_class=JobClass.STRICT)
    cost = CostModel(CostParams(launch_latency_s=180.0, launch_latency_sigma=0.25, deadline_miss_usd=500.0))
    assert cost.boot_miss_usd(job, now) == pytest.approx(500 * 0.12492, rel=1e-4)
    assert cost.boot_miss_usd(replace(job, job_class=JobClass.SOFT), now) == pytest.approx(125 * 0.12492, rel=1e-4)
    assert cost.boot_miss_usd(replace(job, job_class=JobClass.BEST_EFFORT), now) == 0.0
    assert cost.boot_miss_usd(replace(job, deadline=now + timedelta(seconds=1100)), now) == 0.0
    exact = CostModel(CostParams(launch_latency_s=180.0, launch_latency_sigma=0.0))
    assert exact.boot_miss_usd(job, now) == 0.0
    assert exact.boot_miss_usd(replace(job, deadline=now + timedelta(seconds=1300)), now) == 500.0


def test_the_rework_memo_keeps_gang_sizes_apart() -> None:
    """One cost model prices many gangs: a memo keyed without the gang size underpriced them."""
    cost = CostModel(CostParams(spot_interruptions_per_hour=0.2, restart_overhead_s=300))
    one = cost.rework_fraction(SPOT, 1800)
    assert cost.rework_fraction(SPOT, 1800, nodes=4) == 4 * one


@pytest.mark.parametrize(("write_s", "due_s"), [(60.0, 120.0), (600.0, 1200.0), (20.0, 80.0), (0.0, 60.0)])
def test_a_checkpoint_is_due_after_its_write_and_as_long_again_at_least_a_minute(write_s: float, due_s: float) -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    cost = CostModel(CostParams(checkpoint_write_s=write_s, restart_overhead_s=300.0))
    assert cost.checkpoint_deadline(now) == now + timedelta(seconds=due_s)
