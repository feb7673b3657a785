"""Holding a reserved node for a cloud job, end to end: simulated cloud, pool and reconciler.

The pool's free GPUs are split 4 + 4 over two nodes when an 8-GPU job arrives, so it bursts. One
node empties in under an hour; long 1-GPU jobs arriving meanwhile would fill it (best fit), so
without a hold the 8-GPU job stays on the cloud until they end, five hours later. With the hold they go to the
other node, and the 8-GPU job moves back as soon as the held node is empty.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from burster.clock import FakeClock
from burster.model import Demand, Market, Offering
from burster.reconciler import PassReport, Reconciler
from burster.sim.engine import run
from policies.burst import BurstParams
from policies.burster import BursterParams, BursterPolicy
from policies.cost import CostModel, CostParams
from policies.reclaim import ReclaimParams
from providers.sim.world import SimWorld

T0 = datetime(2026, 1, 5, tzinfo=UTC)
OD8 = Offering("aws", "us-east-1", "use1-az1", "p3.16xlarge", "V100", 8, Market.ON_DEMAND, 24.48)


def jobs() -> list[Demand]:
    def job(name: str, gpus: int, at_min: float, run_min: float) -> Demand:
        return Demand(name, gpus, T0 + timedelta(minutes=at_min), run_min * 60.0, gpu_model="V100")

    # best fit: a and f0 share onprem-0000, c and d onprem-0001; f0 and d end at 5 min
    return [job("a", 4, 0, 60), job("f0", 4, 0, 5), job("c", 4, 0, 600), job("d", 4, 0, 5),
            job("big", 8, 6, 360), *(job(f"x{i}", 1, 20 + 5 * i, 300) for i in range(4))]


def simulate(*, hold: bool) -> tuple[Reconciler, list[str], SimWorld]:
    clock = FakeClock(T0)
    world = SimWorld(clock=clock, jobs=jobs(), offerings=[OD8], providers=["aws"], pool_nodes=2,
                     gpus_per_node=8, gpu_model="V100")
    policy = BursterPolicy(CostModel(CostParams(spot_interruptions_per_hour=0.0)),
                           BursterParams(burst=BurstParams(max_wait_s=0.0, wait_fraction=0.0, prewarm=False),
                                         reclaim=ReclaimParams(hold_nodes=hold)))
    rec = Reconciler(providers=world.clouds, pool=world.pool, policy=policy, clock=clock)
    decisions: list[str] = []

    def on_pass(report: PassReport) -> None:
        decisions.extend(f"{report.now:%H:%M:%S} {line}" for line in report.plan.explain())

    run(world, rec, clock, tick_s=10.0, end=T0 + timedelta(days=1), on_pass=on_pass)
    assert world.pool.metrics.finished_jobs == len(jobs())
    return rec, decisions, world


def test_a_held_node_brings_the_cloud_job_back_when_it_empties() -> None:
    rec, decisions, world = simulate(hold=True)
    (node,) = rec.state.ledger  # the 8-GPU job's one cloud node
    assert node.start <= T0 + timedelta(minutes=7)
    assert node.end <= T0 + timedelta(minutes=65)  # a ends at 60 min: the job moved back then
    assert any("hold: hold onprem-0000 for cloud job big" in d for d in decisions)
    assert any("held for job big have room" in d for d in decisions)
    m = world.pool.metrics
    assert (m.node_holds, m.node_holds_landed, m.node_holds_expired) == (1, 1, 0)


def test_without_the_hold_the_arrivals_fill_the_emptying_node_and_the_job_stays_on_the_cloud() -> None:
    held, _, _ = simulate(hold=True)
    rec, decisions, world = simulate(hold=False)
    (node,) = rec.state.ledger
    assert node.end - node.start >= timedelta(hours=5)  # until the arrivals on its node end
    assert not any("hold:" in d for d in decisions) and world.pool.metrics.node_holds == 0
    assert held.state.spent_usd < 0.25 * rec.state.spent_usd
