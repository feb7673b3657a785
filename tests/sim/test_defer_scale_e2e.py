"""Deferring with estimates that run long, end to end: the controller learns how far off they are.

One 8-GPU reserved node. Estimates are twice the runtimes (like time limits). With a history of 24
finished 1-GPU jobs behind it, a 1-GPU job estimated at 20 hours (really 10) arrives just after an
8-GPU job estimated at 6 hours (really 3) took the node. Its estimate gives a 5-hour wait budget, its
true runtime 2.5 hours. Trusting the estimate, it defers for nearly 5 hours and starts when the pool
frees up after 3: past its true budget. Having seen estimates run twice the runtimes, the policy
reads the job as 10 hours (the median correction) or, with that off, defers for the share of the
budget the ratios' 5th percentile gives (half); either way it bursts within the true budget and
moves back when the pool frees up.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from burster.clock import FakeClock
from burster.model import Demand, Market, Offering
from policies.burst import BurstParams
from policies.burster import BursterParams, BursterPolicy
from policies.cost import CostModel, CostParams
from providers.sim.world import SimWorld
from tests.sim.harness import run_recorded

T0 = datetime(2026, 1, 5, tzinfo=UTC)
SPOT = Offering("aws", "us-west-2", "usw2-az1", "p3.2xlarge", "V100", 1, Market.SPOT, 0.92)
LONG_AT = T0 + timedelta(hours=1, minutes=1)
TRUE_BUDGET_S = 0.25 * 10 * 3600.0


def simulate(*, history: bool, correct: bool = True) -> tuple[float, list[str]]:
    """The long job's first wait, and every decision."""
    clock = FakeClock(T0)
    short = [Demand(f"s{i}", 1, T0, 1_200.0, gpu_model="V100") for i in range(24)] if history else []
    jobs = [*short, Demand("hog", 8, T0 + timedelta(hours=1), 6 * 3600.0, gpu_model="V100"),
            Demand("long", 1, LONG_AT, 20 * 3600.0, gpu_model="V100")]
    runtimes = {j.job_id: j.est_runtime_s / 2 for j in jobs}
    world = SimWorld(clock=clock, jobs=jobs, offerings=[SPOT], providers=["aws"], pool_nodes=1,
                     gpus_per_node=8, gpu_model="V100", runtimes=runtimes)
    policy = BursterPolicy(CostModel(CostParams(spot_interruptions_per_hour=0.0)),
                           BursterParams(burst=BurstParams(prewarm=False, defer_to_budget=True),
                                         correct_estimates=correct))
    _, decisions = run_recorded(world, policy, clock, T0 + timedelta(days=2))
    metrics = world.pool.metrics
    assert metrics.finished_jobs == len(jobs)
    return (metrics.first_start["long"] - LONG_AT).total_seconds(), decisions


def test_without_history_the_estimate_is_trusted_and_the_true_budget_passes() -> None:
    wait_s, decisions = simulate(history=False)
    assert wait_s > TRUE_BUDGET_S  # it got the pool after about 3 hours
    assert not any("estimates run long" in d for d in decisions)


@pytest.mark.parametrize(("correct", "reason"), [
    (True, "waited 8710s of its 9000s wait budget, a boot"),  # read as a 10-hour job
    (False, "waited 8710s of its 18000s wait budget (50% of it: estimates run long)"),
])
def test_with_history_it_bursts_within_its_true_budget(correct: bool, reason: str) -> None:
    wait_s, decisions = simulate(history=True, correct=correct)
    (burst_at,) = [d for d in decisions if reason in d]
    assert burst_at.startswith("03:26:")  # 1:01 + 9000 s - 180 - 120 s, the next tick
    assert TRUE_BUDGET_S - 600 < wait_s <= TRUE_BUDGET_S
    assert any("back on-prem" in d for d in decisions)
