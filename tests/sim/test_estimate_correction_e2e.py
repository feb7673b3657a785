"""Estimates that run long, corrected end to end: simulated cloud, pool and reconciler.

One 8-GPU reserved node, estimates twice the runtimes (like time limits). An 8-GPU job takes the
node; then a 1-GPU strict-deadline job estimated at 4 hours (really 2) arrives, due 3 hours later.
On its estimate it cannot make the deadline anywhere, so the policy sends it to on-demand at once.
With 24 finished jobs behind it that ran half their estimates, the policy reads it as a 2-hour
job with an hour of slack and runs it on spot, for less, still on time.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from burster.clock import FakeClock
from burster.model import Demand, JobClass, Market, Offering
from policies.burst import BurstParams
from policies.burster import BursterParams, BursterPolicy
from policies.cost import CostModel, CostParams
from providers.sim.world import SimWorld
from tests.sim.harness import run_recorded

T0 = datetime(2026, 1, 5, tzinfo=UTC)
SPOT = Offering("aws", "us-west-2", "usw2-az1", "p3.2xlarge", "V100", 1, Market.SPOT, 0.92)
OD = Offering("aws", "us-west-2", "usw2-az1", "p3.2xlarge", "V100", 1, Market.ON_DEMAND, 3.06)
DUE_AT = T0 + timedelta(hours=1, minutes=1)


def simulate(*, history: bool) -> tuple[float, list[str], int]:
    """The deadline job's cloud spend, every decision, and deadline misses."""
    clock = FakeClock(T0)
    short = [Demand(f"s{i}", 1, T0, 1_200.0, gpu_model="V100") for i in range(24)] if history else []
    jobs = [*short, Demand("hog", 8, T0 + timedelta(hours=1), 6 * 3600.0, gpu_model="V100"),
            Demand("dl", 1, DUE_AT, 4 * 3600.0, gpu_model="V100", job_class=JobClass.STRICT,
                   deadline=DUE_AT + timedelta(hours=3))]
    world = SimWorld(clock=clock, jobs=jobs, offerings=[SPOT, OD], providers=["aws"], pool_nodes=1,
                     gpus_per_node=8, gpu_model="V100", runtimes={j.job_id: j.est_runtime_s / 2 for j in jobs})
    policy = BursterPolicy(CostModel(CostParams(spot_interruptions_per_hour=0.0)),
                           BursterParams(burst=BurstParams(prewarm=False, defer_to_budget=True)))
    rec, decisions = run_recorded(world, policy, clock, T0 + timedelta(days=1))
    metrics = world.pool.metrics
    assert metrics.finished_jobs == len(jobs)
    spent = sum(float(e.usd) for e in rec.state.ledger if "job dl " in e.reason)
    return spent, decisions, metrics.deadline_misses


def test_trusting_a_long_estimate_sends_a_deadline_job_to_on_demand() -> None:
    usd, decisions, misses = simulate(history=False)
    (launch,) = [d for d in decisions if "launch: job dl" in d]
    assert "on_demand" in launch and misses == 0 and usd > 3.06 * 2  # two hours of on-demand at least


def test_the_learned_correction_runs_it_on_spot_on_time_for_less() -> None:
    trusting, _, _ = simulate(history=False)
    usd, decisions, misses = simulate(history=True)
    (launch,) = [d for d in decisions if "launch: job dl" in d]
    assert "/spot" in launch and misses == 0
    assert 0 < usd < 0.5 * trusting
