"""Consolidation end to end: the simulated clouds, pool and reconciler running Burster's policy.

A 10-hour job bursts onto the only spot pool up (AWS, $1.01/h) while the cheap one (Azure, $0.34/h)
is out; when the cheap pool comes back, nodes are launched there for the running job, the job moves
once they are up, and the pricey node is given back.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from burster.clock import FakeClock
from burster.model import Demand, Market, Offering
from burster.reconciler import Reconciler
from policies.burster import BursterParams, BursterPolicy
from policies.cost import CostModel, CostParams
from policies.reclaim import ReclaimParams
from providers.sim.spot import SpotSeries
from providers.sim.world import SimWorld
from tests.sim.harness import run_recorded

T0 = datetime(2026, 1, 5, tzinfo=UTC)
PRICEY = Offering("aws", "us-west-2", "usw2-az1", "p3.2xlarge", "V100", 1, Market.SPOT, 1.01)
CHEAP = Offering("azure", "westus3", "westus3", "Standard_NC6s_v3", "V100", 1, Market.SPOT, 0.34)
AWS_UP = SpotSeries("aws-up", "aws", "V100", 600.0, (1,) * 300)
AZURE_BACK_AFTER_1H = SpotSeries("azure-back", "azure", "V100", 600.0, (0,) * 6 + (1,) * 294)


def simulate(*, consolidate: bool) -> tuple[Reconciler, list[str]]:
    clock = FakeClock(T0)
    job = Demand("long", 1, T0, 10 * 3600, gpu_model="V100")
    world = SimWorld(clock=clock, jobs=[job], offerings=[PRICEY, CHEAP], providers=["aws", "azure"],
                     pool_nodes=0, gpus_per_node=8, gpu_model="V100", series=[AWS_UP, AZURE_BACK_AFTER_1H])
    policy = BursterPolicy(CostModel(CostParams(spot_interruptions_per_hour=0.0)),
                           BursterParams(reclaim=ReclaimParams(consolidate=consolidate)))
    rec, decisions = run_recorded(world, policy, clock, T0 + timedelta(days=1))
    assert world.pool.metrics.finished_jobs == 1
    return rec, decisions


def test_a_running_job_moves_to_the_cheap_pool_when_it_comes_back_and_the_pricey_node_goes() -> None:
    rec, decisions = simulate(consolidate=True)
    billed = {(e.provider, e.instance_type): e for e in rec.state.ledger}
    assert set(billed) == {("aws", PRICEY.instance_type), ("azure", CHEAP.instance_type)}
    aws, azure = billed["aws", PRICEY.instance_type], billed["azure", CHEAP.instance_type]
    assert aws.end <= azure.start + timedelta(minutes=10)  # the pricey node went once the job moved
    assert timedelta(hours=1) <= aws.end - aws.start <= timedelta(hours=1, minutes=15)
    assert azure.start >= T0 + timedelta(hours=1)  # launched when the cheap pool came back ...
    assert any("cheaper capacity for running job long" in d for d in decisions)  # ... for the running job
    assert any("are up: move it off" in d for d in decisions)
    stayed, _ = simulate(consolidate=False)
    (only,) = stayed.state.ledger
    assert only.provider == "aws" and float(only.usd) == pytest.approx(1.01 * 10, rel=0.05)
    assert rec.state.spent_usd < 0.5 * stayed.state.spent_usd
