"""Deferring to the wait budget, end to end: simulated cloud, pool and reconciler.

One 8-GPU reserved node runs an 8-GPU job for 3 hours. A 1-GPU, 10-hour job arrives a minute
later; its wait budget is 2.5 hours (a quarter of its runtime), and the pool frees up after about 3.
Bursting at once, it runs on spot until the pool frees up and it moves back; deferring, it waits
out its budget (less a boot and a margin), runs on spot only for the last half hour, and then
moves back, for a fraction of the cloud spend and still within its budget.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from burster.clock import FakeClock
from burster.model import Demand, Market, Offering
from burster.reconciler import Reconciler
from policies.burst import BurstParams
from policies.burster import BursterParams, BursterPolicy
from policies.cost import CostModel, CostParams
from providers.sim.world import SimWorld
from tests.sim.harness import run_recorded

T0 = datetime(2026, 1, 5, tzinfo=UTC)
SPOT = Offering("aws", "us-west-2", "usw2-az1", "p3.2xlarge", "V100", 1, Market.SPOT, 0.92)
BUDGET_S = 0.25 * 10 * 3600.0


def simulate(*, defer: bool, skip: bool = True) -> tuple[Reconciler, list[str], SimWorld]:
    clock = FakeClock(T0)
    jobs = [Demand("hog", 8, T0, 3 * 3600.0, gpu_model="V100"),
            Demand("long", 1, T0 + timedelta(minutes=1), 10 * 3600.0, gpu_model="V100")]
    world = SimWorld(clock=clock, jobs=jobs, offerings=[SPOT], providers=["aws"], pool_nodes=1,
                     gpus_per_node=8, gpu_model="V100")
    params = BursterParams(burst=BurstParams(prewarm=False, defer_to_budget=defer))
    policy = BursterPolicy(CostModel(CostParams(spot_interruptions_per_hour=0.0)), params)
    rec, decisions = run_recorded(world, policy, clock, T0 + timedelta(days=1), skip=skip)
    assert world.pool.metrics.finished_jobs == 2
    return rec, decisions, world


def spend(rec: Reconciler) -> float:
    return sum(float(e.usd) for e in rec.state.ledger)


def test_bursting_at_once_runs_the_long_job_on_spot_until_the_pool_frees_up() -> None:
    rec, decisions, world = simulate(defer=False)
    assert any("would pass its wait budget" in d for d in decisions)
    assert world.pool.metrics.waits_s[1] < 600  # a boot
    assert spend(rec) > 2.5 * SPOT.price_per_hour_usd  # about 3 hours of spot


def test_deferring_waits_out_the_budget_and_spends_a_fraction() -> None:
    eager, _, _ = simulate(defer=False)
    rec, decisions, world = simulate(defer=True)
    burst_at = [d for d in decisions if "a boot and a margin short" in d]
    assert len(burst_at) == 1 and burst_at[0].startswith("02:26:")  # 1 min + 9000 - 180 - 120 s, next tick
    wait_s = world.pool.metrics.waits_s[1]
    assert BUDGET_S - 600 < wait_s <= BUDGET_S  # within its budget, near its end
    assert any("back on-prem" in d for d in decisions)  # it moves back once the pool frees up
    assert 0 < spend(rec) < 0.4 * spend(eager)


def test_deferring_is_exact_under_skipped_passes() -> None:
    fast, fast_decisions, _ = simulate(defer=True)
    slow, slow_decisions, _ = simulate(defer=True, skip=False)
    assert fast_decisions == slow_decisions and spend(fast) == spend(slow)
