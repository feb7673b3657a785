"""The cloud node cap end to end: a gang held back at a full cap gets the slots as they free up,
not a stream of later single-node bursts.

No reserved nodes, a cap of 2 cloud nodes. Two 1-GPU V100 jobs burst at once and fill it (one
runs 1 h, the other 1.5 h); a 2-node V100 gang arrives a minute later, then eight 1-GPU A100 jobs, one
every 10 minutes (1 h each: their idle nodes go to the next A100 job, never back to the cap).
When the first V100 node ends, its slot is kept for the gang; when the second ends, the gang
launches. Were the freed slot given to the next A100 job, the gang would wait for the whole
stream to drain.
"""

from __future__ import annotations

from datetime import timedelta

from burster.clock import FakeClock
from burster.model import Demand, Market, Offering
from policies.burster import BursterParams, BursterPolicy
from policies.cost import CostModel
from policies.guards import GuardParams
from providers.sim.world import SimWorld
from tests.sim.harness import IDLE_SPOT_T0 as T0
from tests.sim.harness import run_recorded

V100 = Offering("aws", "us-west-2", "usw2-az1", "p3.2xlarge", "V100", 1, Market.ON_DEMAND, 3.06)
A100 = Offering("gcp", "us-central1", "us-central1-a", "a2-highgpu-1g", "A100", 1, Market.ON_DEMAND, 3.67)


def test_a_gang_held_back_at_the_cap_launches_before_later_single_node_bursts() -> None:
    clock = FakeClock(T0)
    jobs = [Demand("v0", 1, T0, 3600.0, gpu_model="V100"), Demand("v1", 1, T0, 5400.0, gpu_model="V100"),
            Demand("gang", 2, T0 + timedelta(minutes=1), 3600.0, nodes=2, gpu_model="V100")]
    jobs += [Demand(f"a{i}", 1, T0 + timedelta(minutes=5 + 10 * i), 3600.0, gpu_model="A100") for i in range(8)]
    world = SimWorld(clock=clock, jobs=jobs, offerings=[V100, A100], providers=["aws", "gcp"], pool_nodes=0,
                     gpus_per_node=8, gpu_model="V100")
    policy = BursterPolicy(CostModel(), BursterParams(guards=GuardParams(max_nodes=2)))
    _, decisions = run_recorded(world, policy, clock, T0 + timedelta(hours=12))
    m = world.pool.metrics
    assert m.finished_jobs == len(jobs)
    started = m.first_start
    assert started["gang"] - T0 < timedelta(hours=2)  # once v1's node ended (1.5 h and a boot), not after the stream
    assert all(started["gang"] < started[f"a{i}"] for i in range(8))
    assert any(" held back launch: job a0 " in d and "kept for job gang (2 asked)" in d for d in decisions)
    assert not any("refused launch" in d for d in decisions)
