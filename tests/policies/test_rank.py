"""The start-by rule a ranked pool serves its queue by, against hand-computed times."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from burster.model import Demand, JobClass
from policies.burst import BurstParams
from policies.cost import CostModel, CostParams
from policies.rank import start_by

NOW = datetime(2026, 3, 2, 12, tzinfo=UTC)
COST = CostModel(CostParams(launch_latency_s=180))
PARAMS = BurstParams(max_wait_s=600, wait_fraction=0.25, deadline_margin_s=900)


def test_a_job_without_a_deadline_starts_by_its_submission_plus_its_wait_budget() -> None:
    short = Demand("s", 1, NOW, 1_800)  # budget max(600, 450) = 600 s
    long = Demand("l", 1, NOW, 14_400)  # budget max(600, 3600) = 3600 s
    assert start_by(short, COST, PARAMS) == NOW + timedelta(seconds=600)
    assert start_by(long, COST, PARAMS) == NOW + timedelta(seconds=3_600)


def test_a_tight_deadline_moves_the_start_by_earlier() -> None:
    # 4 h of work due in 4 h 30 min: latest start = deadline - (work 14400 + launch 180 + margin 900)
    job = Demand("d", 1, NOW, 14_400, job_class=JobClass.STRICT, deadline=NOW + timedelta(seconds=16_200))
    assert start_by(job, COST, PARAMS) == NOW + timedelta(seconds=16_200 - 15_480)
    # a loose deadline leaves the wait budget in charge
    loose = Demand("d", 1, NOW, 14_400, job_class=JobClass.STRICT, deadline=NOW + timedelta(days=1))
    assert start_by(loose, COST, PARAMS) == NOW + timedelta(seconds=3_600)


def test_work_already_saved_counts_for_the_deadline_rule() -> None:
    job = Demand("d", 1, NOW, 14_400, job_class=JobClass.STRICT, deadline=NOW + timedelta(seconds=9_000),
                 done_s=7_200)
    assert start_by(job, COST, PARAMS) == NOW + timedelta(seconds=9_000 - 7_200 - 1_080)
