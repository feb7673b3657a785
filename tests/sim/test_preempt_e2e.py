"""Preempting a reserved job for an urgent one, end to end: simulated cloud, pool and reconciler.

One full 8-GPU reserved node runs a 7-GPU strict job and a 1-GPU best-effort one, both for hours.
A strict 1-GPU job arrives with too little deadline slack for spot. Without the rule it runs on
on-demand ($3.06/h); with it, the best-effort job checkpoints and requeues, runs on spot ($0.92/h)
while the urgent job has its GPU, and moves back when that job is done.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from burster.clock import FakeClock
from burster.model import Demand, JobClass, Market, Offering
from burster.reconciler import Reconciler
from policies.burst import BurstParams
from policies.burster import BursterParams, BursterPolicy
from policies.cost import CostModel, CostParams
from providers.sim.world import SimWorld
from tests.sim.harness import run_recorded

T0 = datetime(2026, 1, 5, tzinfo=UTC)
OD = Offering("aws", "us-east-1", "use1-az1", "p3.2xlarge", "V100", 1, Market.ON_DEMAND, 3.06)
SPOT = Offering("aws", "us-west-2", "usw2-az1", "p3.2xlarge", "V100", 1, Market.SPOT, 0.92)


def jobs() -> list[Demand]:
    bulk = Demand("bulk", 7, T0, 8 * 3600.0, gpu_model="V100", deadline=T0 + timedelta(hours=9),
                  job_class=JobClass.STRICT)
    best = Demand("best", 1, T0, 6 * 3600.0, gpu_model="V100")
    at = T0 + timedelta(hours=1)
    urgent = Demand("urgent", 1, at, 2 * 3600.0, gpu_model="V100", deadline=at + timedelta(hours=2, minutes=10),
                    job_class=JobClass.STRICT)
    return [bulk, best, urgent]


def simulate(*, preempt: bool, skip: bool = True) -> tuple[Reconciler, list[str], SimWorld]:
    clock = FakeClock(T0)
    world = SimWorld(clock=clock, jobs=jobs(), offerings=[OD, SPOT], providers=["aws"], pool_nodes=1,
                     gpus_per_node=8, gpu_model="V100")
    params = BursterParams(burst=BurstParams(prewarm=False), preempt_onprem=preempt)
    policy = BursterPolicy(CostModel(CostParams(spot_interruptions_per_hour=0.0)), params)
    rec, decisions = run_recorded(world, policy, clock, T0 + timedelta(days=1), skip=skip)
    assert world.pool.metrics.finished_jobs == 3
    return rec, decisions, world


def test_without_the_rule_the_urgent_job_runs_on_on_demand() -> None:
    rec, _, world = simulate(preempt=False)
    assert [e.market for e in rec.state.ledger] == ["on_demand"]
    assert world.pool.metrics.onprem_preemptions == 0 and world.pool.metrics.deadline_misses == 0


def test_the_best_effort_job_gives_its_gpu_runs_on_spot_meanwhile_and_comes_back() -> None:
    off, _, _ = simulate(preempt=False)
    rec, decisions, world = simulate(preempt=True)
    assert any(d.startswith("01:00:00 preempt: requeue reserved job best") for d in decisions)
    assert any(d.startswith("01:00:00 hold: hold onprem-0000 for job urgent") for d in decisions)
    assert [e.market for e in rec.state.ledger] == ["spot"]  # the best-effort job's node
    (node,) = rec.state.ledger
    assert node.end <= T0 + timedelta(hours=3, minutes=15)  # back on-prem once the urgent job is done
    assert any("move job best back on-prem" in d for d in decisions)
    m = world.pool.metrics
    # two holds landed: the node held for the urgent job, then the one the move back went to
    assert (m.onprem_preemptions, m.deadline_misses, m.node_holds_landed) == (1, 0, 2)
    assert m.first_start["urgent"] == T0 + timedelta(hours=1, minutes=1)  # after the checkpoint minute
    assert rec.state.spent_usd < 0.5 * off.state.spent_usd


def test_the_same_decisions_whether_passes_are_skipped_or_not() -> None:
    skipped, ticked = simulate(preempt=True), simulate(preempt=True, skip=False)
    assert skipped[1] == ticked[1]
    assert skipped[0].state.spent_usd == ticked[0].state.spent_usd
    assert skipped[2].pool.metrics.onprem_preemptions == 1
