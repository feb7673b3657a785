"""Rules of policies/late.py that a mutation audit found unpinned: who is late by its estimate (a
best-effort job never is; slack of exactly 0 is not late; the launch latency counts), the band
``share_within`` counts ((low, high]), what one interruption loses, spot's late risk (gang rate,
band over the whole estimate), the ratio a late job's deadline allows (saved work, a boot), and
when a late job on spot stays there (the move's sure miss and its extra $, changeover run
included). Each hand-computed."""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from burster.model import Demand, JobClass, Market, Offering, Placement, Snapshot
from burster.plan import Launch
from policies.burst import BurstParams, burst
from policies.cost import CostModel, CostParams
from policies.late import (
    choose_late,
    late_by_estimate,
    late_spot_risk_usd,
    late_stays_on_spot,
    share_within,
)
from policies.offers import offer_book
from tests.policies.test_late import queued

NOW = datetime(2026, 3, 2, 12, tzinfo=UTC)
SPOT = Offering("aws", "us-west-2", "usw2-az1", "p3.2xlarge", "V100", 1, Market.SPOT, 0.9)  # saves on notice
AZURE = Offering("azure", "eastus", "eastus", "Standard_NC6s_v3", "V100", 1, Market.SPOT, 0.9)  # 30 s notice
OD = Offering("aws", "us-west-2", "usw2-az1", "p3.2xlarge", "V100", 1, Market.ON_DEMAND, 3.06)
COST = CostModel(CostParams(spot_interruptions_per_hour=0.1, restart_overhead_s=300, launch_latency_s=180,
                            checkpoint_write_s=60, wait_value_usd_per_gpu_hour=0.0))
PARAMS = BurstParams(max_wait_s=600, deadline_margin_s=900, prewarm=False, cost_trigger=False, market_quantile=0.9,
                     price_late=True)


def job_due(in_s: float, est_s: float = 3600.0, job_class: JobClass = JobClass.STRICT) -> Demand:
    return Demand("j", 1, NOW, est_s, gpu_model="V100", job_class=job_class, deadline=NOW + timedelta(seconds=in_s))


def test_late_by_estimate_needs_a_negative_slack_after_the_launch_latency() -> None:
    assert not late_by_estimate(job_due(3600 + 180), NOW, COST)  # slack exactly 0: it still makes it
    assert late_by_estimate(job_due(3600 + 179), NOW, COST)
    assert late_by_estimate(job_due(3600 + 100), NOW, COST)  # within its run, but not after a boot


def test_a_best_effort_job_with_a_deadline_is_never_late_and_takes_the_cheapest_market() -> None:
    """Its deadline is not one to buy: the late rule (and its miss $) is for strict and soft jobs. A
    40-min job 60 s late by its estimate on Azure spot goes to on-demand when strict, to spot when
    best-effort."""
    strict = job_due(2400 + 180 - 60, est_s=2400)
    best = replace(strict, job_class=JobClass.BEST_EFFORT)
    assert late_by_estimate(strict, NOW, COST) and not late_by_estimate(best, NOW, COST)
    (launch,) = burst(queued(best, offerings=(AZURE, OD)), COST, PARAMS)
    assert isinstance(launch, Launch) and launch.offering is AZURE
    assert burst(queued(strict, offerings=(AZURE, OD)), COST, PARAMS)[0].offering is OD


def test_share_within_is_open_below_and_closed_above() -> None:
    assert share_within((), 1.0, 2.0) == 0.0  # too few ratios: estimates trusted, 1 is not above 1
    assert share_within((), 0.5, 1.0) == 1.0
    ratios = (1.0,) * 10 + (2.0,) * 10
    assert share_within(ratios, 1.0, 2.0) == 0.5  # the 2.0s, not the 1.0s
    assert share_within(ratios, 0.5, 1.0) == 0.5


def test_one_interruption_loses_a_restart_a_boot_and_the_write_on_notice_or_half_an_interval() -> None:
    job = replace(job_due(7200), checkpoint_interval_s=1800.0)
    assert COST.interruption_loss_s(SPOT, job.checkpoint_interval_s) == 300 + 180 + 60  # AWS: 120 s notice, 60 s write
    assert COST.interruption_loss_s(AZURE, job.checkpoint_interval_s) == 300 + 180 + 900


def test_late_spot_risk_is_the_gangs_interruption_chance_times_the_band_share_over_the_whole_estimate() -> None:
    """A 2-node gang, 1 h of its 2 h estimate left: P(interrupted) = 1 - exp(-2 x 0.1/h x 1 h); the band
    is one loss (480 s) over the 7,200 s estimate, (1 - 1/15, 1]: the 0.95s are in it, the 0.9s not;
    x $500 for a strict miss."""
    job = Demand("g", 2, NOW, 7200.0, nodes=2, gpu_model="V100", job_class=JobClass.STRICT,
                 deadline=NOW + timedelta(hours=1), done_s=3600.0)
    ratios = (0.95,) * 10 + (0.9,) * 10
    expected = (1 - math.exp(-0.2)) * 0.5 * 500.0
    assert math.isclose(late_spot_risk_usd(job, SPOT, 1.0, ratios, COST), expected)
    assert math.isclose(late_spot_risk_usd(job, SPOT, 1.0, ratios, COST, run_s=1800.0),
                        (1 - math.exp(-0.1)) * 0.5 * 500.0)


ANY = frozenset({Market.SPOT, Market.ON_DEMAND})


def half_done(deadline_in_s: float) -> Demand:
    """A strict 10,000 s job with 5,000 s of it saved."""
    return Demand("j", 1, NOW, 10_000.0, gpu_model="V100", job_class=JobClass.STRICT,
                  deadline=NOW + timedelta(seconds=deadline_in_s), done_s=5000.0)


def test_a_late_jobs_allowed_ratio_counts_its_saved_work_and_a_boot() -> None:
    """Deadline 4,180 s away: a whole run may take (4,180 - 180 boot + 5,000 saved) / 10,000 = 0.9 of its
    estimate; one interruption's loss (480 s) is a band of 0.048 below it. Runs of 0.855 its estimate
    are in the band (an interruption decides their deadline: on-demand, its $3 premium well under the
    $65 risk), runs of 0.95 miss either way (spot)."""
    job = half_done(180 + 4000)
    book = offer_book(Snapshot(NOW, (job,), (), (), (), (SPOT, OD)), COST)
    assert choose_late(job, NOW, COST, book, ANY, (0.855,) * 20) is OD
    assert choose_late(job, NOW, COST, book, ANY, (0.95,) * 20) is SPOT


def on_spot_since_now(deadline_in_s: float = 4000.0) -> Placement:
    return Placement(half_done(deadline_in_s), ("s",), NOW, True, Market.SPOT, SPOT.price_per_hour_usd)


def test_a_late_job_on_spot_moves_only_where_an_interruption_not_the_changeover_decides_its_deadline() -> None:
    """Started now with 5,000 s saved, deadline 4,000 s on: allowed (4,000 + 5,000) / 10,000 = 0.9. Staying
    risks the band (0.852, 0.9] (a 480 s loss), x P(interrupted in 5,000 s) = 0.13, x $500 = $65; the
    move's 360 s changeover surely costs the band (0.864, 0.9], x $500, plus its extra $3.40."""
    p = on_spot_since_now()
    assert not late_stays_on_spot(p, SPOT, OD, 360.0, (0.86,) * 20, COST)  # only an interruption tips it over
    assert late_stays_on_spot(p, SPOT, OD, 360.0, (0.88,) * 20, COST)  # the move would tip it over surely
    assert late_stays_on_spot(p, SPOT, OD, 360.0, (0.95,) * 20, COST)  # late either way


def test_the_moves_extra_dollars_include_running_the_changeover_on_the_target() -> None:
    """Estimates trusted (too few ratios) and the job late by them: neither staying nor moving keeps
    the deadline, so the $ decide. On-demand here at spot's $0.90/h: finishing there costs $0.01 less
    than spot's rework does, but the 360 s changeover run there makes it $0.08 more: it stays."""
    at_spot_price = replace(OD, price_per_hour_usd=SPOT.price_per_hour_usd)
    assert late_stays_on_spot(on_spot_since_now(), SPOT, at_spot_price, 360.0, (), COST)
