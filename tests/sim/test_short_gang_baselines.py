"""The baselines give a short set back as Burster does: a gang whose node ended while booting
(a console, its cloud taking back that one alone) is relaunched whole once the set is seen short,
not left billing until the idle TTL or the join timeout. This is the harness's part, like the
interruption handshake: SkyPilot relaunches a whole managed job when any node of it goes."""

from __future__ import annotations

from datetime import timedelta

import pytest

from burster.clock import FakeClock
from burster.model import Demand, Market, Offering
from policies.baselines import ComputeWaitPolicy, GreedySpotPolicy, OnDemandPolicy, UniformProgressPolicy
from providers.sim.world import SimWorld
from tests.sim.harness import IDLE_SPOT_T0 as T0
from tests.sim.harness import run_recorded

X8 = Offering("aws", "us-west-2", "usw2-az1", "p3.16xlarge", "V100", 8, Market.ON_DEMAND, 24.48)
GANG = Demand("gang", 16, T0, 1800.0, nodes=2, gpu_model="V100")


@pytest.mark.parametrize("policy", [OnDemandPolicy, GreedySpotPolicy, UniformProgressPolicy, ComputeWaitPolicy])
def test_a_baselines_gang_with_a_node_gone_while_booting_is_launched_again_whole(policy: type) -> None:
    clock = FakeClock(T0)
    world = SimWorld(clock=clock, jobs=[GANG], offerings=[X8], providers=["aws"], pool_nodes=0,
                     gpus_per_node=8, gpu_model="V100")
    cloud = world.clouds["aws"]
    world.events.at(T0 + timedelta(seconds=60), lambda t: cloud.terminate(["aws-000002"], request_id="console"))
    rec, decisions = run_recorded(world, policy(), clock, T0 + timedelta(hours=3))
    (give_back,) = [d for d in decisions if "gang lost a node before the job started there: 1 of 2 left" in d]
    lone = next(e for e in rec.state.ledger if e.node_id == "aws-000001")
    assert give_back[:8] == "00:05:00" and lone.billed_s == 300.0  # (before: billed until the idle TTL)
    assert world.pool.metrics.finished_jobs == 1
    assert not rec.state.has_live()
