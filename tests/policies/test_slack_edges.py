"""Rules of policies/slack.py that a mutation audit found unpinned: the spot rework limit's zero-room
and no-work-left edges; a deadline job defers while the smaller of its spot slack and its slack less
the margin covers the wait left (ties defer); a compute-proportional wait budget counts every GPU
hour. Each hand-computed."""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from burster.model import Demand, JobClass, Market, Offering
from policies.burst import BurstParams
from policies.cost import CostModel, CostParams
from policies.slack import defers, spot_rework_limit, wait_budget_s

NOW = datetime(2026, 3, 2, 12, tzinfo=UTC)
SPOT = Offering("aws", "us-west-2", "usw2-az1", "p3.2xlarge", "V100", 1, Market.SPOT, 0.9)  # saves on notice
OD = Offering("aws", "us-west-2", "usw2-az1", "p3.2xlarge", "V100", 1, Market.ON_DEMAND, 3.06)
COST = CostModel(CostParams(spot_interruptions_per_hour=0.1, restart_overhead_s=300, launch_latency_s=180,
                            checkpoint_write_s=60))
PARAMS = BurstParams(max_wait_s=600, wait_fraction=0.25, deadline_margin_s=900, defer_to_budget=True,
                     defer_margin_s=120, prewarm=False)


def job(est_s: float, slack: float | None = None, job_class: JobClass = JobClass.STRICT, done_s: float = 0.0) -> Demand:
    """A 1-GPU job with ``slack`` seconds of deadline slack now (after its remaining run and a boot)."""
    deadline = None if slack is None else NOW + timedelta(seconds=est_s - done_s + 180 + slack)
    return Demand("j", 1, NOW, est_s, gpu_model="V100", deadline=deadline, job_class=job_class, done_s=done_s)


def test_no_room_left_still_qualifies_classic_uniform_progress_and_a_finished_run_any_spot() -> None:
    classic = replace(PARAMS, rework_aware=False)
    assert spot_rework_limit(job(3600, 1380), NOW, COST, classic) == math.inf  # room exactly 0
    assert spot_rework_limit(job(3600, 1380), NOW, COST, PARAMS) == 0.0
    assert spot_rework_limit(job(3600, 1380, done_s=3600), NOW, COST, PARAMS) == math.inf  # no work left


FOUR_H = 4 * 3600.0  # budget a quarter of it: 3,600 s; 3,300 s of it left to wait after a boot and the margin


def test_a_deadline_job_defers_while_its_slack_less_the_margin_covers_the_wait_left_ties_included() -> None:
    assert defers(job(FOUR_H, 900 + 3300), 0.0, NOW, COST, PARAMS, OD)
    assert not defers(job(FOUR_H, 900 + 3299), 0.0, NOW, COST, PARAMS, OD)


def test_on_spot_the_smaller_spot_slack_decides() -> None:
    """4,200 s slack less 900 margin covers the 3,300 s wait, but spot slack (less rework 14,400 x 0.1/h
    x 300 s = 120 s, a 480 s changeover and the margin: 2,700 s) does not."""
    dl = job(FOUR_H, 4200)
    assert defers(dl, 0.0, NOW, COST, PARAMS, OD)
    assert not defers(dl, 0.0, NOW, COST, PARAMS, SPOT)


def test_a_compute_proportional_budget_counts_every_gpu_hour() -> None:
    eight = Demand("j", 8, NOW, FOUR_H, gpu_model="V100")
    assert wait_budget_s(eight, replace(PARAMS, wait_s_per_gpu_hour=200.0)) == 200 * 8 * 4  # over 3,600 s
    assert wait_budget_s(eight, PARAMS) == 3600  # a quarter of its run
