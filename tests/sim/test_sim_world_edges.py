"""Rules of the simulated world that a mutation audit found unpinned: jobs arriving together are all
queued before the pool schedules, an arrival comes before an event at the same instant, and burst
nodes still up keep the world from being quiet or finished."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from burster.clock import FakeClock
from burster.model import Demand, Market, Offering, Requeue
from providers.sim.world import SimWorld

T0 = datetime(2026, 1, 1, tzinfo=UTC)
NODE = Offering("aws", "us-east-1", "use1-az1", "p3.16xlarge", "V100", 8, Market.ON_DEMAND, 24.48)


def job(name: str, at_s: float = 0.0, **kw: object) -> Demand:
    return Demand(name, 8, T0 + timedelta(seconds=at_s), 3600.0, gpu_model="V100", **kw)  # type: ignore[arg-type]


def world_of(jobs: list[Demand], **kw: object) -> SimWorld:
    return SimWorld(clock=FakeClock(T0), jobs=jobs, offerings=[NODE], providers=["aws"], pool_nodes=1,
                    gpus_per_node=8, gpu_model="V100", **kw)  # type: ignore[arg-type]


def running(world: SimWorld) -> list[str]:
    return [p.job.job_id for p in world.pool.running()]


def test_jobs_arriving_together_are_all_queued_before_the_pool_picks_one() -> None:
    """A ranked pool: of two jobs submitted at one instant, the higher priority starts, wherever
    the trace lists it."""
    world = world_of([job("low"), job("high", priority=1)], ranker=lambda j: j.submitted_at)
    world.advance_to(T0)
    assert running(world) == ["high"]
    assert [j.job_id for j in world.pool.pending()] == ["low"]


def test_a_job_arriving_when_a_checkpointed_one_is_requeued_at_the_back_is_ahead_of_it() -> None:
    """``requeue = back``: r is checkpointed (60 s) for the queue at 60 s and stops at 120 s, the
    instant n arrives; arrivals at an instant come before its events, so n is queued first and starts."""
    world = world_of([job("r"), job("n", at_s=120.0)], requeue=Requeue.BACK)
    world.advance_to(T0 + timedelta(seconds=60))
    assert running(world) == ["r"]
    world.pool.preempt("r", T0 + timedelta(minutes=5))
    world.advance_to(T0 + timedelta(seconds=120))
    assert running(world) == ["n"]
    assert [j.job_id for j in world.pool.pending()] == ["r"]


def test_a_burst_node_still_up_keeps_the_world_awake_and_unfinished() -> None:
    world = world_of([])
    world.advance_to(T0)
    assert world.quiet and world.finished
    cloud = world.clouds["aws"]
    (node,) = cloud.launch(NODE, 1, request_id="r")
    world.advance_to(T0 + timedelta(minutes=10))  # joined, idle, nobody's
    assert not world.quiet and not world.finished
    cloud.terminate([node.node_id], request_id="t")
    assert world.quiet and world.finished
