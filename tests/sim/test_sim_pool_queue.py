"""The simulated pool's queue: priority and start-by ranking against arrival order, a stopped job
ranked again, and the backfill reservation that keeps the head from being overtaken."""

from __future__ import annotations

import random
from datetime import datetime, timedelta

import pytest

from burster.model import Demand, Requeue, queue_key
from providers.sim.events import EventQueue
from providers.sim.pool import SimPool
from tests.sim.sim_pool_common import ON_DEMAND, T0


def _by_budget(j: Demand) -> datetime:
    """A start-by rule for the tests: submission + a quarter of the runtime."""
    return j.submitted_at + timedelta(seconds=0.25 * j.est_runtime_s)


def test_a_ranked_pool_serves_priority_then_the_earliest_start_by_whatever_the_arrival_order() -> None:
    """One free GPU after a 1-GPU job ends. Queued: a 10 h job (start by 2.5 h after it came), a
    1 h job that came a minute later (start by 16 min) and a priority job that came last."""
    pool = SimPool(EventQueue(), nodes=1, gpus_per_node=1, gpu_model="V100", ranker=_by_budget)
    pool.submit(Demand("running", 1, T0, 600.0, gpu_model="V100"), T0)
    pool.schedule(T0)
    pool.submit(Demand("long", 1, T0, 36_000.0, gpu_model="V100"), T0)
    pool.submit(Demand("short", 1, T0 + timedelta(minutes=1), 3600.0, gpu_model="V100"), T0 + timedelta(minutes=1))
    assert [j.job_id for j in pool.pending()] == ["short", "long"]
    assert pool.pending()[0].start_by == T0 + timedelta(minutes=16)
    pool.submit(Demand("urgent", 1, T0 + timedelta(minutes=2), 36_000.0, gpu_model="V100", priority=1),
                T0 + timedelta(minutes=2))
    assert [j.job_id for j in pool.pending()] == ["urgent", "short", "long"]
    pool.events.run_until(T0 + timedelta(minutes=10))  # "running" ends; the head takes its GPU
    assert [p.job.job_id for p in pool.running()] == ["urgent"]


def test_a_fifo_pool_serves_in_arrival_order() -> None:
    pool = SimPool(EventQueue(), nodes=0, gpus_per_node=1, gpu_model="V100")
    pool.submit(Demand("long", 1, T0, 36_000.0, gpu_model="V100"), T0)
    pool.submit(Demand("short", 1, T0 + timedelta(minutes=1), 3600.0, gpu_model="V100"), T0)
    assert [(j.job_id, j.start_by) for j in pool.pending()] == [("long", None), ("short", None)]


@pytest.mark.parametrize("requeue", list(Requeue))
def test_a_ranked_pool_ranks_a_stopped_job_again_by_its_remaining_work(requeue: Requeue) -> None:
    """A 2 h deadline-free job checkpointed after 1 h: its start-by comes from the rule again, and it
    keeps its place ahead of a job that must start later, whatever ``requeue`` says."""
    def by_remaining(j: Demand) -> datetime:
        return j.submitted_at + timedelta(seconds=j.remaining_s)

    pool = SimPool(EventQueue(), nodes=0, gpus_per_node=8, gpu_model="V100", requeue=requeue, ranker=by_remaining)
    pool.submit(Demand("a", 1, T0, 7200.0, gpu_model="V100"), T0)
    pool.expect("a-node", ON_DEMAND, "a")
    pool.join("a-node")
    pool.schedule(T0)
    hour = T0 + timedelta(hours=1)
    pool.events.run_until(hour)
    pool.submit(Demand("b", 1, hour, 7200.0, gpu_model="V100"), hour)
    pool.checkpoint("a-node", hour + timedelta(minutes=5))
    pool.events.run_until(hour + timedelta(minutes=1))
    pool.drain("a-node")
    a = pool.pending()[0]
    assert [j.job_id for j in pool.pending()] == ["a", "b"]
    assert a.remaining_s == 3600.0 and a.start_by == T0 + timedelta(hours=1)


def test_a_ranked_queue_stays_in_rank_order_as_jobs_come_start_and_stop() -> None:
    """The ranked queue is kept sorted as jobs arrive, backfill starts jobs from its middle and
    stopped jobs come back: after every step it is what sorting it afresh would give."""
    rng = random.Random(7)
    pool = SimPool(EventQueue(), nodes=2, gpus_per_node=8, gpu_model="V100", ranker=_by_budget)
    now = T0
    for i in range(300):
        now += timedelta(seconds=rng.randrange(0, 300))
        pool.events.run_until(now)
        pool.submit(Demand(f"j{i}", rng.choice((1, 2, 4, 8)), now, float(rng.randrange(60, 7200)),
                           gpu_model="V100", priority=rng.choice((0, 0, 0, 1))), now)
        if i % 50 == 49:  # a burst node takes the head, then is drained: its job is requeued
            head = pool.pending()[0].job_id
            pool.expect(f"n{i}", ON_DEMAND, head)
            pool.join(f"n{i}")
            pool.schedule(now)
            pool.drain(f"n{i}")
        pool.schedule(now)
        queued = list(pool.pending())
        # the policies' projection reads the same order (queue_key): the two must not drift apart
        assert queued == sorted(queued, key=lambda j: (queue_key(j), j.submitted_at, j.job_id))
        assert queued == sorted(queued, key=lambda j: (-j.priority, j.start_by, j.submitted_at, j.job_id))
        assert {j.job_id for j in queued} == set(pool.queue)
    assert len(pool.pending()) > 20  # the queue grew long enough for the order to matter


def _starts_by(pool: SimPool, events: EventQueue, until: datetime) -> dict[str, float]:
    """Run the pool's events (scheduling after each) up to ``until``; each job's first start, s after T0."""
    while (t := events.next_time()) is not None and t <= until:
        events.run_until(t)
        pool.schedule(t)
    return {k: (v - T0).total_seconds() for k, v in pool.metrics.first_start.items()}


@pytest.mark.parametrize("never_fits", [None, "A100", "gang"])
def test_a_job_the_reserved_nodes_can_never_run_does_not_take_the_heads_reservation(never_fits: str | None) -> None:
    """EASY backfill reserves for the first queued job that can run on the reserved nodes: one that
    never can (another GPU model, a gang larger than the pool) waits for the cloud and reserves
    nothing, so a long job behind the real head does not overtake it."""
    events = EventQueue()
    pool = SimPool(events, nodes=2, gpus_per_node=8, gpu_model="V100")
    events.before = pool.metrics.advance
    for j in (Demand("A", 8, T0, 100.0, gpu_model="V100"), Demand("B", 8, T0, 200.0, gpu_model="V100")):
        pool.submit(j, T0)
    pool.schedule(T0)
    at = T0 + timedelta(seconds=1)
    if never_fits == "A100":
        pool.submit(Demand("X", 1, at, 600.0, gpu_model="A100"), at)
    elif never_fits == "gang":
        pool.submit(Demand("X", 24, at, 600.0, nodes=3, gpu_model="V100"), at)
    pool.submit(Demand("Y", 16, at, 600.0, nodes=2, gpu_model="V100"), at)  # the head: both nodes
    pool.submit(Demand("Z", 8, at, 5000.0, gpu_model="V100"), at)  # long, behind it
    pool.schedule(at)
    starts = _starts_by(pool, events, T0 + timedelta(hours=3))
    assert starts["Y"] == 200.0 and starts["Z"] == 800.0


def test_a_backfilled_job_never_takes_the_node_the_head_is_reserved_on() -> None:
    """Two 8-GPU nodes, each with a 4-GPU job left (to 100 s on node 0, 1000 s on node 1): the 8-GPU
    head can start at 100 s, on node 0. A 4-GPU job of 5000 s behind it still backfills, onto node
    1 (free GPUs enough there), not onto node 0, where it would hold the head back to 1000 s: the
    reservation is per node, not a count of free GPUs."""
    events = EventQueue()
    pool = SimPool(events, nodes=2, gpus_per_node=8, gpu_model="V100")
    events.before = pool.metrics.advance
    for name, run_s in (("A", 100.0), ("A2", 50.0), ("B", 1000.0), ("B2", 50.0)):
        pool.submit(Demand(name, 4, T0, run_s, gpu_model="V100"), T0)
    pool.schedule(T0)
    for name, gpus, run_s, at_s in (("H", 8, 100.0, 60), ("C", 4, 5000.0, 61)):
        at = T0 + timedelta(seconds=at_s)
        _starts_by(pool, events, at)
        pool.submit(Demand(name, gpus, at, run_s, gpu_model="V100"), at)
        pool.schedule(at)
    starts = _starts_by(pool, events, T0 + timedelta(hours=3))
    assert starts["C"] == 61.0 and starts["H"] == 100.0
