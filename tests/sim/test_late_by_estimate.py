"""A deadline job its estimate says is late already, end to end (``policies/late.py``): its estimate
runs long (as users' time limits do), so it makes its deadline on spot; the finished jobs' runtime
ratios say a run just within the deadline is rare, so spot's interruptions put little at risk and
it bursts to spot, not to on-demand (as every such job did before ``policy.price_late``)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from burster.clock import FakeClock
from burster.model import Demand, JobClass, Market, Offering
from policies.burst import BurstParams
from policies.burster import BursterParams, BursterPolicy
from providers.sim.world import SimWorld
from tests.sim.harness import IDLE_SPOT_T0 as T0
from tests.sim.harness import run_recorded

SPOT = Offering("aws", "us-west-2", "usw2-az1", "p3.16xlarge", "V100", 8, Market.SPOT, 7.344)
ON_DEMAND = Offering("aws", "us-west-2", "usw2-az1", "p3.16xlarge", "V100", 8, Market.ON_DEMAND, 24.48)
ESTIMATE_S, TRUE_S = 10 * 3600.0, 8 * 3600.0
LATE = Demand("late", 8, T0, ESTIMATE_S, gpu_model="V100", job_class=JobClass.STRICT,
              deadline=T0 + timedelta(hours=9.5))  # 10 h by its estimate: late even on a launch now
HISTORY = [(0.6 + 0.8 * i / 49, "") for i in range(50)]  # finished jobs ran 0.6x to 1.4x their estimates


@pytest.mark.parametrize(("price_late", "market"), [(True, Market.SPOT), (False, Market.ON_DEMAND)])
def test_a_job_late_by_its_estimate_bursts_to_spot_and_makes_its_deadline(price_late: bool, market: Market) -> None:
    clock = FakeClock(T0)
    world = SimWorld(clock=clock, jobs=[LATE], offerings=[SPOT, ON_DEMAND], providers=["aws"], pool_nodes=0,
                     gpus_per_node=8, gpu_model="V100", runtimes={"late": TRUE_S}, history=HISTORY)
    policy = BursterPolicy(params=BursterParams(burst=BurstParams(defer_to_budget=True, market_quantile=0.9,
                                                                  price_late=price_late)))
    rec, decisions = run_recorded(world, policy, clock, T0 + timedelta(hours=12))
    (launch,) = [d for d in decisions if " launch: job late " in d]
    assert f"p3.16xlarge/{market.value}" in launch
    assert [e.market for e in rec.state.ledger] == [market.value]
    assert world.pool.metrics.finished_jobs == 1 and world.pool.metrics.deadline_misses == 0
