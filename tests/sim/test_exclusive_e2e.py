"""Idle exclusive nodes handed out, and the standby stock, end to end: simulated clouds, pool and
the live reconciler.

The one reserved node is taken for 50 minutes by an 8-GPU job. A 10-minute job bursts and
finishes; a 4-hour job that arrived meanwhile defers to its 1-hour wait budget. With nodes the
pool hands to any queued job, the long job takes the first node as soon as it is idle and runs on
the cloud until the reserved node frees (then a checkpoint and a restart), and the next short job
waits for a boot. With exclusive nodes, the idle node waits for the policy, which hands it to the
next short job; the long job waits for the reserved node, as its budget allows, and runs there.

Standby: two batches of short jobs, eight minutes apart. Without a stock, the second batch waits
for boots like the first; with one, most of it starts on nodes launched ahead.
"""

from __future__ import annotations

import statistics
from datetime import UTC, datetime, timedelta

from burster.clock import FakeClock
from burster.model import Demand, Market, Offering
from policies.burst import BurstParams
from policies.burster import BursterParams, BursterPolicy
from policies.cost import CostModel, CostParams
from policies.standby import StandbyParams
from providers.sim.spot import SpotSeries
from providers.sim.world import SimWorld
from tests.sim.harness import run_recorded

T0 = datetime(2026, 1, 5, tzinfo=UTC)
SPOT = Offering("azure", "eastus", "eastus", "Standard_NC6s_v3", "V100", 1, Market.SPOT, 0.3)
UP = SpotSeries("azure-up", "azure", "V100", 600.0, (1,) * 300)
COST = CostModel(CostParams(spot_interruptions_per_hour=0.0))


def simulate(jobs: list[Demand], params: BursterParams,
             hog_s: float = 10 * 3600.0) -> tuple[SimWorld, list[str], float]:
    clock = FakeClock(T0)
    hog = Demand("hog", 8, T0, hog_s, gpu_model="V100")
    world = SimWorld(clock=clock, jobs=[hog, *jobs], offerings=[SPOT], providers=["azure"], pool_nodes=1,
                     gpus_per_node=8, gpu_model="V100", series=[UP])
    rec, decisions = run_recorded(world, BursterPolicy(COST, params), clock, T0 + timedelta(hours=12))
    assert world.pool.metrics.finished_jobs == len(jobs) + 1
    return world, decisions, sum(float(e.usd) for e in rec.state.ledger)


def wait_s(world: SimWorld, job_id: str) -> float:
    job = next(j for j in world._jobs if j.job_id == job_id)
    return (world.pool.metrics.first_start[job_id] - job.submitted_at).total_seconds()


BURST = BurstParams(prewarm=False, defer_to_budget=True)
HOG_S = 50 * 60.0
HANDING = [Demand("s0", 1, T0 + timedelta(minutes=1), 600.0, gpu_model="V100"),
           Demand("long", 1, T0 + timedelta(minutes=2), 4 * 3600.0, gpu_model="V100"),
           Demand("s1", 1, T0 + timedelta(minutes=16), 600.0, gpu_model="V100")]


def test_an_idle_exclusive_node_goes_to_the_next_job_that_bursts_not_to_a_deferring_one() -> None:
    world, decisions, _ = simulate(HANDING, BursterParams(burst=BURST, exclusive_nodes=True), HOG_S)
    assert wait_s(world, "s1") <= 20.0  # no boot: the first node was idle
    assert any("taken, no boot, by job s1 " in d for d in decisions)
    assert world.pool.metrics.idle_nodes_handed == sum("no boot" in d for d in decisions) == 1
    assert wait_s(world, "long") > 45 * 60  # it waited for the reserved node
    assert world.clouds["azure"].launches == 1  # s0's node, nothing else


def test_a_node_any_job_may_take_goes_to_the_deferring_job() -> None:
    _, _, exclusive_usd = simulate(HANDING, BursterParams(burst=BURST, exclusive_nodes=True), HOG_S)
    world, decisions, usd = simulate(HANDING, BursterParams(burst=BURST, exclusive_nodes=False), HOG_S)
    assert wait_s(world, "long") < 20 * 60  # the pool gave it s0's idle node
    assert wait_s(world, "s1") > 120.0  # and s1 waited for a boot
    assert not any("no boot" in d for d in decisions)
    assert any("move job long back on-prem" in d for d in decisions)  # a restart when the hog ended
    assert usd > exclusive_usd


BATCHES = [Demand(f"a{i}", 1, T0 + timedelta(minutes=1), 1_200.0, gpu_model="V100") for i in range(6)] + \
          [Demand(f"b{i}", 1, T0 + timedelta(minutes=9), 1_200.0, gpu_model="V100") for i in range(6)]


def test_a_standby_stock_starts_the_next_batch_without_boots() -> None:
    """Only the standby nodes are exclusive here (the default): the policy hands them out."""
    cold, _, cold_usd = simulate(BATCHES, BursterParams(burst=BURST))
    warm, decisions, warm_usd = simulate(BATCHES, BursterParams(burst=BURST, standby=StandbyParams()))
    assert statistics.median(wait_s(cold, f"b{i}") for i in range(6)) > 120.0
    assert statistics.median(wait_s(warm, f"b{i}") for i in range(6)) <= 20.0
    assert any(d.split(" ", 1)[1].startswith("launch: standby: 6 x V100 1-GPU") for d in decisions)
    assert warm_usd > cold_usd  # the stock idled before the batch came: that is its price
