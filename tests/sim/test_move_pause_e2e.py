"""A cloud job on time by its estimate stays where a move back on-prem would cost it its deadline by
the spread of the finished jobs' runtimes (``policies.late.move_miss_usd``), end to end.

One 8-GPU reserved node, busy for 15 minutes. A strict 1-GPU job estimated at 3,000 s (really 4,100 s)
is due 4,500 s after it arrives: its wait would pass its budget, so it bursts onto on-demand. When the
node frees up its estimate leaves 1,320 s of slack after the move's pause (60 s checkpoint + 300 s
reload), over the pause and the 900 s margin, so the margin rule lets it move; but a third of the 30
finished jobs ran 1.35 x their estimates, within the pause below the 1.44 its deadline allows: $167 of
a $500 miss against about $2 saved. It stays and meets the deadline with about 4 minutes to spare.
Trusting its estimate (no history), it moves back, and the pause makes it miss.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from burster.clock import FakeClock
from burster.model import Demand, JobClass, Market, Offering
from policies.burster import BursterPolicy
from policies.cost import CostModel, CostParams
from providers.sim.world import SimWorld
from tests.sim.harness import run_recorded

T0 = datetime(2026, 1, 5, tzinfo=UTC)
OD = Offering("aws", "us-west-2", "usw2-az1", "p3.2xlarge", "V100", 1, Market.ON_DEMAND, 3.06)
SPREAD = ((1.0, ""),) * 20 + ((1.35, ""),) * 10  # (true / estimated runtime, team) of the last jobs to finish


def simulate(history: tuple[tuple[float, str], ...]) -> tuple[SimWorld, list[str]]:
    clock = FakeClock(T0)
    arrives = T0 + timedelta(minutes=1)
    jobs = [Demand("hog", 8, T0, 900.0, gpu_model="V100"),
            Demand("dl", 1, arrives, 3_000.0, gpu_model="V100", job_class=JobClass.STRICT,
                   deadline=arrives + timedelta(seconds=4_500))]
    world = SimWorld(clock=clock, jobs=jobs, offerings=[OD], providers=["aws"], pool_nodes=1, gpus_per_node=8,
                     gpu_model="V100", restart_s=300.0, runtimes={"hog": 900.0, "dl": 4_100.0}, history=history)
    policy = BursterPolicy(CostModel(CostParams(spot_interruptions_per_hour=0.0)))
    _, decisions = run_recorded(world, policy, clock, T0 + timedelta(hours=3))
    return world, decisions


def test_a_job_on_time_by_its_estimate_stays_where_the_pause_would_likely_cost_its_deadline() -> None:
    world, decisions = simulate(SPREAD)
    m = world.pool.metrics
    assert m.finished_jobs == 2 and m.hard_deadline_misses == 0
    assert any("launch" in d and "job dl" in d for d in decisions)  # it did burst
    assert not any("move job dl back on-prem" in d for d in decisions)


def test_trusting_its_estimate_it_moves_back_and_the_pause_makes_it_miss() -> None:
    world, decisions = simulate(())
    m = world.pool.metrics
    assert m.finished_jobs == 2 and m.hard_deadline_misses == 1
    assert any("move job dl back on-prem" in d for d in decisions)
