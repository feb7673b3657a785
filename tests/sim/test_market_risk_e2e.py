"""A strict 4-hour job whose slack absorbs one or two interruptions, but not the several a volatile spot
pool may bring (``CostModel.deadline_risk_usd``'s Poisson term), runs on on-demand end to end; on a calm
pool it takes spot, and the pool's drop at 40 minutes interrupts it.

No reserved nodes: the job bursts on arrival. Azure spot ($0.40/h; a 30 s notice loses half a 30-minute
interval) or AWS on-demand ($3.06/h); 4,140 s of slack: the rework limit admits spot at 0.5/h and no
single interruption would cost the deadline, but P(four or more in 4 h) is 14 %: $71 of a $500 miss
against about $10 more on on-demand.
"""

from __future__ import annotations

from datetime import timedelta

from burster.clock import FakeClock
from burster.model import Demand, JobClass, Market, Offering
from policies.burster import BursterPolicy
from policies.cost import CostModel, CostParams
from providers.sim.spot import SpotSeries
from providers.sim.world import SimWorld
from tests.sim.harness import IDLE_SPOT_T0, run_recorded

SPOT = Offering("azure", "eastus", "eastus", "Standard_NC6s_v3", "V100", 1, Market.SPOT, 0.40)
OD = Offering("aws", "us-west-2", "usw2-az1", "p3.2xlarge", "V100", 1, Market.ON_DEMAND, 3.06)
DROPS_AT_40_MIN = SpotSeries("azure-drop-40", "azure", "V100", 600.0, (1,) * 4 + (0,) * 2 + (1,) * 60)


def simulate(rate_per_hour: float) -> tuple[SimWorld, list[str], set[str]]:
    """The job's world reconciled for 6 h with Azure spot interrupted ``rate_per_hour`` by the policy's
    reckoning; the world, the decisions and the markets billed."""
    clock = FakeClock(IDLE_SPOT_T0)
    arrives = IDLE_SPOT_T0 + timedelta(minutes=1)
    job = Demand("dl", 1, arrives, 14_400.0, gpu_model="V100", job_class=JobClass.STRICT,
                 deadline=arrives + timedelta(seconds=14_400 + 180 + 4_140))
    world = SimWorld(clock=clock, jobs=[job], offerings=[SPOT, OD], providers=["azure", "aws"], pool_nodes=0,
                     gpus_per_node=8, gpu_model="V100", series=[DROPS_AT_40_MIN])
    policy = BursterPolicy(CostModel(CostParams(interruption_rates={SPOT.key: rate_per_hour})))
    rec, decisions = run_recorded(world, policy, clock, IDLE_SPOT_T0 + timedelta(hours=6))
    return world, decisions, {e.market for e in rec.state.ledger}


def test_on_a_volatile_pool_the_job_runs_on_demand_and_meets_its_deadline() -> None:
    world, decisions, markets = simulate(0.5)
    m = world.pool.metrics
    assert m.finished_jobs == 1 and m.hard_deadline_misses == 0 and m.preemptions == 0
    assert markets == {"on_demand"}
    assert any("job dl" in d and "aws/usw2-az1/p3.2xlarge/on_demand" in d for d in decisions)


def test_on_a_calm_pool_it_takes_spot_and_the_drop_interrupts_it() -> None:
    world, _, markets = simulate(0.05)
    m = world.pool.metrics
    assert m.finished_jobs == 1 and m.preemptions == 1 and "spot" in markets
