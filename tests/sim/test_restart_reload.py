"""A restarted job reloads from its checkpoint before it works again (``cost.restart_overhead_s`` in
the world, ``SimPool(restart_s=...)``): its run lasts that much longer, the reload is lost work, a
checkpoint taken during it saves nothing new, the pool's backfill counts it, and the placement the
controller reads says so (``Placement.reload_s``)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from burster.model import Demand
from providers.sim.events import EventQueue
from providers.sim.pool import SimPool
from tests.sim.test_pool_edges import NODE, T0, job, on_own_node, running

RELOAD_S = 300.0


def pool_of(nodes: int = 0, restart_s: float = RELOAD_S) -> SimPool:
    events = EventQueue()
    pool = SimPool(events, nodes=nodes, gpus_per_node=8, gpu_model="V100", restart_s=restart_s)
    events.before = pool.metrics.advance
    pool.metrics.advance(T0)
    return pool


def at(pool: SimPool, minutes: float) -> None:
    when = T0 + timedelta(minutes=minutes)
    pool.events.run_until(when)
    pool.metrics.advance(when)


def stopped_after_a_checkpoint(pool: SimPool) -> None:
    """Job a (1 h) on n1, checkpointed at 10 min (saved at 11 min), its node drained at 11 min, and
    restarted on n2 at once: 3,000 s of work left."""
    on_own_node(pool, job("a"), "n1")
    at(pool, 10)
    pool.checkpoint("n1", T0 + timedelta(minutes=15))
    at(pool, 11)
    pool.drain("n1")
    pool.expect("n2", NODE, "a")
    pool.join("n2")
    pool.schedule(pool.metrics.now)
    assert running(pool) == {"a": ("n2",)}


def test_a_restarted_run_reloads_before_it_works_and_the_reload_is_lost_work() -> None:
    pool = pool_of()
    stopped_after_a_checkpoint(pool)
    (p,) = pool.running()
    assert p.reload_s == RELOAD_S and p.job.done_s == 600.0
    assert p.ends_at_ts == (T0 + timedelta(minutes=11 + 5 + 50)).timestamp()
    assert p.done_s(T0 + timedelta(minutes=14)) == 600.0  # still reloading
    assert p.done_s(T0 + timedelta(minutes=26)) == 600.0 + 600.0
    at(pool, 65.9)
    assert running(pool) == {"a": ("n2",)}
    at(pool, 66)
    assert running(pool) == {} and pool.metrics.finished_jobs == 1
    # 60 s done past the checkpoint on n1, then the 300 s reload on n2: 1 GPU
    assert pool.metrics.lost_gpu_hours == pytest.approx(360.0 / 3600)


def test_a_first_run_does_not_reload() -> None:
    pool = pool_of()
    on_own_node(pool, job("a"), "n1")
    (p,) = pool.running()
    assert p.reload_s == 0.0
    at(pool, 60)
    assert pool.metrics.finished_jobs == 1 and pool.metrics.lost_gpu_hours == 0.0


def test_a_checkpoint_during_the_reload_saves_no_new_work() -> None:
    pool = pool_of()
    stopped_after_a_checkpoint(pool)
    at(pool, 13)  # 2 min into the 5 min reload
    pool.checkpoint("n2", T0 + timedelta(minutes=20))
    at(pool, 14)
    ticket = pool.checkpoint("n2", T0 + timedelta(minutes=20))
    assert (ticket.done, ticket.saved_s) == (True, 600.0)
    pool.drain("n2")
    # lost: 60 s on n1; on n2 its 3 minutes, all reloading
    assert pool.metrics.lost_gpu_hours == pytest.approx((60.0 + 180.0) / 3600)


@pytest.mark.parametrize(("restart_s", "starts"), [(0.0, True), (RELOAD_S, False)])
def test_backfill_before_a_hold_counts_the_reload(restart_s: float, starts: bool) -> None:
    """A reserved node held for job h from 50 min on takes before then only jobs that end by then: a
    restarted job with 48 min of work left does, unless its 5 min reload is counted."""
    pool = pool_of(nodes=1, restart_s=restart_s)
    wide = Demand("h", 8, T0, 3600.0, gpu_model="V100", nodes=2)  # two nodes: never fits this pool
    pool.submit(wide, T0)
    pool.hold("onprem-0000", "h", T0 + timedelta(minutes=50), T0 + timedelta(hours=2))
    again = Demand("r", 8, T0, 3600.0, gpu_model="V100", done_s=720.0, attempt=1)
    pool.submit(again, T0)
    pool.schedule(T0)
    assert ("r" in running(pool)) is starts


def test_a_restart_with_nothing_saved_starts_over_without_a_reload() -> None:
    """Drained 10 min in with no checkpoint (one every 30 min): all lost, and the next run is a fresh
    start, as long as the first."""
    pool = pool_of()
    on_own_node(pool, job("a"), "n1")
    at(pool, 10)
    pool.drain("n1")
    pool.expect("n2", NODE, "a")
    pool.join("n2")
    pool.schedule(pool.metrics.now)
    (p,) = pool.running()
    assert (p.job.attempt, p.job.done_s, p.reload_s) == (1, 0.0, 0.0)
    at(pool, 70)
    assert pool.metrics.finished_jobs == 1 and pool.metrics.lost_gpu_hours == pytest.approx(600.0 / 3600)
