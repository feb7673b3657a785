"""A job that ran past its estimate in an earlier attempt (``Demand.reached_s``) is believed, while it
runs again, as the burst rule will see it once requeued (``policies.estimates.believed_requeued``), end
to end: on a reserved node where the preempt rule prices sending it away, and on the cloud.

Preempt: one 1-GPU reserved node. Strict job "r" (estimated 1,200 s, really 2,800 s) starts on it at
once; an earlier attempt of it reached 1,500 s (no finished jobs: the belief chain's steps are 1.5x
each, so requeued it is believed to need 1,800 s). A minute in, strict job "u" (an hour) arrives with
no slack to wait: on-demand, unless "r" is sent away. By its estimate "r" has 1,140 s left and slack
to spare for a trip to spot; as it will be believed requeued (1,740 s left) its deadline keeps too
little slack for the trip: it stays, "u" bursts, both meet their deadlines. Priced on its estimate,
it was sent away, and the trip (checkpoint, boot, reload) made it miss.

Cloud: the reserved node busy for 3 hours with a strict job. The same "r" (really 2,400 s), due 3,000 s
after it arrives, bursts to on-demand at once (believed requeued, its slack is too short for spot).
Believed so while it runs, it stays there and meets its deadline; believed by its estimate (1,200 s),
it moved to spot for the savings, had to move back to on-demand when its estimate ran out, and the two
pauses made it miss.
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
SPOT = Offering("aws", "us-west-2", "usw2-az1", "p3.2xlarge", "V100", 1, Market.SPOT, 0.92)


def simulate(reached_s: float) -> tuple[SimWorld, list[str]]:
    """The preempt scenario above, with "r"'s earlier attempt having reached ``reached_s``."""
    arrives = T0 + timedelta(minutes=1)
    jobs = [Demand("r", 1, T0, 1200.0, gpu_model="V100", job_class=JobClass.STRICT,
                   deadline=T0 + timedelta(seconds=3300), reached_s=reached_s),
            Demand("u", 1, arrives, 3600.0, gpu_model="V100", job_class=JobClass.STRICT,
                   deadline=arrives + timedelta(seconds=3600 + 180 + 300))]
    return run(jobs, {"r": 2800.0, "u": 3600.0}, hours=3)


def simulate_cloud(reached_s: float) -> tuple[SimWorld, list[str]]:
    """The cloud scenario above, with "r"'s earlier attempt having reached ``reached_s``."""
    arrives = T0 + timedelta(minutes=1)
    hog = Demand("hog", 1, T0, 3 * 3600.0, gpu_model="V100", job_class=JobClass.STRICT,
                 deadline=T0 + timedelta(seconds=3 * 3600 + 600))  # no slack to be sent away
    r = Demand("r", 1, arrives, 1200.0, gpu_model="V100", job_class=JobClass.STRICT,
               deadline=arrives + timedelta(seconds=3000), reached_s=reached_s, attempt=1)
    return run([hog, r], {"hog": 3 * 3600.0, "r": 2400.0}, hours=4)


def run(jobs: list[Demand], runtimes: dict[str, float], hours: float) -> tuple[SimWorld, list[str]]:
    """``jobs`` (really running ``runtimes``) through one 1-GPU reserved node and AWS for ``hours``."""
    clock = FakeClock(T0)
    world = SimWorld(clock=clock, jobs=jobs, offerings=[OD, SPOT], providers=["aws"], pool_nodes=1,
                     gpus_per_node=1, gpu_model="V100", restart_s=300.0, runtimes=runtimes)
    policy = BursterPolicy(CostModel(CostParams(spot_interruptions_per_hour=0.0)))
    _, decisions = run_recorded(world, policy, clock, T0 + timedelta(hours=hours))
    return world, decisions


def test_a_job_that_overran_before_stays_on_its_node_and_both_jobs_meet_their_deadlines() -> None:
    world, decisions = simulate(1500.0)
    m = world.pool.metrics
    assert m.finished_jobs == 2 and m.hard_deadline_misses == 0
    assert not any("requeue reserved job r" in d for d in decisions)
    assert any("launch: job u " in d and "on_demand" in d for d in decisions)


def test_with_no_earlier_overrun_it_is_sent_away_on_its_estimate() -> None:
    _, decisions = simulate(0.0)
    assert any("requeue reserved job r" in d for d in decisions)


def test_a_cloud_job_that_overran_before_stays_on_demand_and_meets_its_deadline() -> None:
    world, decisions = simulate_cloud(1500.0)
    m = world.pool.metrics
    assert m.finished_jobs == 2 and m.hard_deadline_misses == 0
    assert any("launch: job r " in d and "on_demand" in d for d in decisions)
    assert not any("cheaper capacity for running job r" in d for d in decisions)
