"""Rules of the simulated pool that a mutation audit found unpinned: what a checkpoint ticket
reports, draining nodes, holds that end with their job, stale events of an earlier run, and
the work a job carries over two stops."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from burster.model import Demand, Market, Offering
from providers.sim.events import EventQueue
from providers.sim.pool import SimPool

T0 = datetime(2026, 1, 1, tzinfo=UTC)
NODE = Offering("aws", "us-east-1", "use1-az1", "p3.2xlarge", "V100", 1, Market.ON_DEMAND, 3.06)
BIG = replace(NODE, instance_type="p3.16xlarge", gpus_per_node=8, price_per_hour_usd=24.48)


def job(name: str, gpus: int = 1, run_s: float = 3600.0, **kw: object) -> Demand:
    return Demand(name, gpus, T0, run_s, gpu_model="V100", **kw)  # type: ignore[arg-type]


def pool_of(nodes: int = 0) -> SimPool:
    events = EventQueue()
    pool = SimPool(events, nodes=nodes, gpus_per_node=8, gpu_model="V100")
    events.before = pool.metrics.advance
    return pool


def on_own_node(pool: SimPool, demand: Demand, node_id: str, offering: Offering = NODE) -> None:
    pool.submit(demand, pool.metrics.now)
    pool.expect(node_id, offering, demand.job_id)
    pool.join(node_id)
    pool.schedule(pool.metrics.now)


def running(pool: SimPool) -> dict[str, tuple[str, ...]]:
    return {p.job.job_id: p.node_ids for p in pool.running()}


def test_a_checkpoint_ticket_reports_the_work_saved_at_the_request_once_done() -> None:
    pool = pool_of()
    pool.metrics.advance(T0)
    on_own_node(pool, job("a"), "n1")
    at = T0 + timedelta(minutes=10)
    pool.events.run_until(at)
    pool.metrics.advance(at)
    deadline = at + timedelta(minutes=5)
    first = pool.checkpoint("n1", deadline)
    assert (first.job_id, first.done, first.saved_s) == ("a", False, 0.0)
    pool.events.run_until(at + timedelta(seconds=60))
    pool.metrics.advance(at + timedelta(seconds=60))
    done = pool.checkpoint("n1", deadline)
    assert (done.done, done.saved_s) == (True, 600.0)  # the work up to the request, not to now


def test_a_checkpoint_event_of_an_earlier_run_does_not_mark_the_restart_checkpointed() -> None:
    """A checkpoint asked on n1, then n1 drained within the minute and the job restarted on n2: the
    first request's completion belongs to the stopped run."""
    pool = pool_of()
    pool.metrics.advance(T0)
    on_own_node(pool, job("a"), "n1")
    pool.checkpoint("n1", T0 + timedelta(minutes=5))
    pool.metrics.advance(T0 + timedelta(seconds=20))
    pool.drain("n1")
    pool.expect("n2", NODE, "a")
    pool.join("n2")
    pool.schedule(T0 + timedelta(seconds=20))
    assert running(pool) == {"a": ("n2",)}
    pool.events.run_until(T0 + timedelta(seconds=60))  # the first request's minute is up
    pool.metrics.advance(T0 + timedelta(seconds=60))
    assert not pool.checkpoint("n2", T0 + timedelta(minutes=5)).done


def test_a_draining_exclusive_node_is_not_handed_to_a_job() -> None:
    pool = pool_of()
    pool.submit(job("a"), T0)
    pool.expect("warm", NODE, None, exclusive=True)
    pool.join("warm")
    pool.drain("warm")
    pool.hold("warm", "a", T0, T0)
    pool.schedule(T0)
    assert running(pool) == {} and pool.metrics.idle_nodes_handed == 0


def test_a_job_whose_only_launched_node_is_draining_may_start_on_reserved_gpus() -> None:
    """Its node is going away while booting: it is not waiting for it any more."""
    pool = pool_of(nodes=1)
    pool.submit(job("fill", gpus=8, run_s=600.0), T0)
    pool.schedule(T0)
    pool.submit(job("a"), T0)
    pool.expect("a-node", NODE, "a")
    pool.drain("a-node")
    pool.events.run_until(T0 + timedelta(seconds=600))  # the filler ends and the pool schedules
    assert running(pool) == {"a": ("onprem-0000",)}


def test_a_hold_ends_when_its_job_finishes_on_the_cloud() -> None:
    pool = pool_of(nodes=1)
    pool.submit(job("fill", gpus=8, run_s=7200.0), T0)
    pool.schedule(T0)
    pool.metrics.advance(T0)
    on_own_node(pool, job("a", gpus=8, run_s=600.0), "a-node", BIG)
    pool.hold("onprem-0000", "a", T0 + timedelta(hours=2), T0 + timedelta(hours=3))
    assert pool.nodes()[0].held_for == ("a",)
    pool.events.run_until(T0 + timedelta(seconds=600))  # a finishes on its cloud node
    assert pool.nodes()[0].held_for == ()
    m = pool.metrics
    assert (m.node_holds, m.node_holds_landed, m.node_holds_expired) == (1, 0, 0)
    pool.events.run_until(T0 + timedelta(hours=3))
    assert pool.metrics.node_holds_expired == 0  # released, so nothing left to expire


def test_a_gangs_surviving_nodes_are_shared_once_it_stops() -> None:
    """A 2-node gang runs at both nodes' price; it loses a node mid-run: it goes back in the queue,
    and its other node, now nobody's, takes a queued single-node job."""
    pool = pool_of()
    pool.metrics.advance(T0)
    pool.submit(job("g", gpus=2, nodes=2), T0)
    for node_id in ("g1", "g2"):
        pool.expect(node_id, NODE, "g")
        pool.join(node_id)
    pool.schedule(T0)
    assert running(pool) == {"g": ("g1", "g2")}
    (gang,) = pool.running()
    assert gang.market is Market.ON_DEMAND and gang.price_per_hour_usd == pytest.approx(2 * 3.06)
    pool.submit(replace(job("b"), submitted_at=T0 + timedelta(minutes=1)), T0 + timedelta(minutes=1))
    pool.leave("g1", preempted=True)
    pool.schedule(T0 + timedelta(minutes=1))
    assert running(pool) == {"b": ("g2",)}
    assert [j.job_id for j in pool.pending()] == ["g"]


def test_a_job_stopped_twice_keeps_the_most_work_it_ever_reached() -> None:
    """Checkpoints every hour: stopped at 2.5 h it saves 2 h and reached 2.5 h; restarted and
    stopped again 10 min later (2 h 10 min done), it still reached 2.5 h."""
    pool = pool_of()
    pool.metrics.advance(T0)
    on_own_node(pool, job("a", run_s=5 * 3600.0, checkpoint_interval_s=3600.0), "n1")
    pool.metrics.advance(T0 + timedelta(hours=2.5))
    pool.leave("n1", preempted=True)
    (again,) = pool.pending()
    assert (again.done_s, again.reached_s) == (7200.0, 9000.0)
    pool.expect("n2", NODE, "a")
    pool.join("n2")
    pool.schedule(T0 + timedelta(hours=2.5))
    pool.metrics.advance(T0 + timedelta(hours=2.5, minutes=10))
    pool.leave("n2", preempted=True)
    (twice,) = pool.pending()
    assert (twice.done_s, twice.reached_s, twice.attempt) == (7200.0, 9000.0, 2)
    assert pool.metrics.lost_gpu_hours == pytest.approx(0.5 + 10 / 60)


def test_a_gang_starts_on_its_own_nodes_only_once_all_have_joined() -> None:
    pool = pool_of()
    pool.submit(job("g", gpus=2, nodes=2), T0)
    for node_id in ("g1", "g2"):
        pool.expect(node_id, NODE, "g")
    pool.join("g1")
    pool.schedule(T0)
    assert running(pool) == {}
    pool.join("g2")
    pool.schedule(T0)
    assert running(pool) == {"g": ("g1", "g2")}


def test_a_preempted_reserved_job_shows_its_stop_in_a_view_read_before() -> None:
    pool = pool_of(nodes=1)
    pool.submit(job("a", gpus=8), T0)
    pool.schedule(T0)
    assert [p.stopping_at for p in pool.running()] == [None]
    pool.preempt("a", T0 + timedelta(minutes=5))
    assert [p.stopping_at for p in pool.running()] == [T0 + timedelta(seconds=60)]


def test_a_job_starts_on_its_new_node_not_on_a_draining_one_launched_for_it_before() -> None:
    pool = pool_of()
    pool.submit(job("a"), T0)
    pool.expect("n1", NODE, "a")
    pool.join("n1")
    pool.drain("n1")  # given back before the pool scheduled
    pool.expect("n2", NODE, "a")
    pool.join("n2")
    pool.schedule(T0)
    assert running(pool) == {"a": ("n2",)}


def test_a_member_larger_than_a_node_needs_ceil_of_its_gpus_over_the_nodes_gpus() -> None:
    """A 3-GPU job on 2-GPU nodes needs two of them; a 6-GPU gang of two 3-GPU members, four."""
    two = replace(NODE, instance_type="p3.4x", gpus_per_node=2)
    assert not job("a", gpus=3).held_by([two]) and job("a", gpus=3).held_by([two, two])
    gang = job("g", gpus=6, nodes=2)
    assert not gang.held_by([two] * 3) and gang.held_by([two] * 4)


@pytest.mark.parametrize(("depth", "started"), [(1, ["short"]), (2, ["short", "short2"])])
def test_backfill_looks_at_most_depth_jobs_past_the_blocked_head(depth: int, started: list[str]) -> None:
    pool = SimPool(EventQueue(), nodes=1, gpus_per_node=8, gpu_model="V100", backfill_depth=depth)
    pool.submit(job("fill", gpus=4, run_s=1000.0), T0)
    pool.schedule(T0)
    for name, gpus in (("head", 8), ("short", 2), ("short2", 2)):
        pool.submit(job(name, gpus=gpus, run_s=100.0), T0)
    pool.schedule(T0)
    assert sorted(running(pool)) == sorted(["fill", *started])


def test_a_fifo_pool_puts_a_stopped_job_behind_jobs_submitted_at_the_same_instant() -> None:
    pool = pool_of()
    pool.submit(job("a"), T0)
    pool.expect("a-node", NODE, "a")
    pool.join("a-node")
    pool.schedule(T0)
    pool.submit(job("b"), T0)
    pool.submit(replace(job("c"), submitted_at=T0 + timedelta(seconds=1)), T0)
    pool.drain("a-node")
    assert [j.job_id for j in pool.pending()] == ["b", "a", "c"]


def test_a_held_node_does_not_take_a_job_whose_own_node_is_booting() -> None:
    """The job is allocated to its booting node (as in the queue's own pass); the hold waits."""
    pool = pool_of(nodes=1)
    pool.submit(job("a", gpus=8), T0)
    pool.expect("a-node", BIG, "a")
    pool.hold("onprem-0000", "a", T0, T0 + timedelta(hours=1))
    pool.schedule(T0)
    assert running(pool) == {}
    pool.join("a-node")
    pool.schedule(T0)
    assert running(pool) == {"a": ("a-node",)}


def test_a_job_ending_exactly_when_the_blocked_head_starts_backfills_onto_its_node() -> None:
    pool = SimPool(EventQueue(), nodes=1, gpus_per_node=8, gpu_model="V100")
    pool.submit(job("fill", gpus=4, run_s=1000.0), T0)
    pool.schedule(T0)
    pool.submit(job("head", gpus=8), T0)
    pool.submit(job("exact", gpus=4, run_s=1000.0), T0)
    pool.schedule(T0)
    assert sorted(running(pool)) == ["exact", "fill"]


def test_a_ranked_pool_breaks_a_tie_of_priority_and_start_by_by_submission() -> None:
    pool = SimPool(EventQueue(), nodes=0, gpus_per_node=8, gpu_model="V100", ranker=lambda j: T0)
    pool.submit(replace(job("a"), submitted_at=T0 + timedelta(seconds=1)), T0)
    pool.submit(job("b"), T0)
    assert [j.job_id for j in pool.pending()] == ["b", "a"]


@pytest.mark.parametrize("cordon", [True, False])
def test_a_cordoning_checkpoint_keeps_new_work_off_its_node_once_its_job_leaves(cordon: bool) -> None:
    """``checkpoint(cordon=True)`` (a spot notice, a budget stop): a's job ends mid-checkpoint and b,
    queued, does not start on the node, which stays idle for its drain; without the cordon b starts
    there (a reclaim's checkpoint is called off for it)."""
    pool = pool_of()
    pool.metrics.advance(T0)
    on_own_node(pool, job("a", run_s=30.0), "n1")
    pool.checkpoint("n1", T0 + timedelta(minutes=2), cordon=cordon)
    pool.submit(job("b"), T0)
    pool.schedule(T0)
    assert running(pool) == {"a": ("n1",)}  # n1 is busy: b waits
    pool.events.run_until(T0 + timedelta(seconds=30))  # a ends
    pool.metrics.advance(T0 + timedelta(seconds=30))
    pool.schedule(T0 + timedelta(seconds=30))
    assert running(pool) == ({} if cordon else {"b": ("n1",)})
    assert pool.checkpoint("n1", T0 + timedelta(minutes=2)).job_id == ("" if cordon else "b")
    pool.schedule(T0 + timedelta(seconds=40))  # a poll leaves the cordon as it is
    assert running(pool) == ({} if cordon else {"b": ("n1",)})
