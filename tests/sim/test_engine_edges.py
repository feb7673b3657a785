"""The simulation loop and its KPIs at the edges a mutation audit found unpinned: a tick that is not
a whole number of seconds (the skip once rounded a wake on a tick up to the next one, and the last
tick by the end down to the one before), the capacity timeline the bench report plots (sampled
with the levels of the tick the skip woke at, after the boundary, and cut where the skip jumped
past the end), and deadline misses and waits of jobs the run ended before."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from burster.app import DEMO_TRACE, build_policy, build_simulation, cost_model
from burster.catalog import load_catalog
from burster.clock import FakeClock
from burster.config import parse_config
from burster.model import Demand, JobClass, Market
from burster.reconciler import PassReport, Reconciler
from burster.sim.engine import run
from burster.sim.summary import summarize
from burster.sim.timeline import Timeline
from burster.traces import load_trace
from burster.traces.base import Trace
from providers.sim.metrics import PoolMetrics
from providers.sim.world import SimWorld

T0 = datetime(2026, 1, 5, tzinfo=UTC)


def _burst_one(tick_s: float, arrives_s: float, *, skip: bool) -> tuple[list[str], list[float]]:
    """One 8-GPU job and no reserved pool: Burster's policy bursts it at the first pass after it arrives."""
    trace = Trace("one", "memory", (Demand("j", 8, T0 + timedelta(seconds=arrives_s), 3600.0, gpu_model="V100"),))
    sim = build_simulation(parse_config({"pool": {"nodes": 0, "gpu_model": "V100"}}), trace, policy="burster",
                           seed=0, days=1)
    decided: list[str] = []

    def on_pass(report: PassReport) -> None:
        decided.extend(f"{(report.now - T0).total_seconds():.1f} {line}" for line in report.plan.explain())

    world: Any = sim.world
    run(world, sim.reconciler, sim.clock, tick_s=tick_s, end=sim.end, on_pass=on_pass, skip=skip)
    return decided, world.pool.metrics.waits_s


def test_a_wake_on_a_tick_of_a_fractional_tick_is_not_jumped_over() -> None:
    """999 s is the 30th tick of 33.3 s (ticking adds 33.3 s up exactly, in microseconds), but
    999 / 33.3 is 30.000000000000004 in floats: the skip once jumped to the 31st tick and burst
    the job 33.3 s later than ticking through."""
    fast, fast_waits = _burst_one(33.3, 999.0, skip=True)
    slow, slow_waits = _burst_one(33.3, 999.0, skip=False)
    assert slow[0].startswith("999.0 launch: job j")
    assert fast == slow
    assert fast_waits == slow_waits


def _stuck(*, tick_s: float, end: datetime, skip: bool, step_s: int = 3600) -> tuple[SimWorld, Timeline, int]:
    """Reserved-only on one 8-GPU node, no cloud offerings: "big" (16 GPUs, from 1 min) never starts,
    "j" (8 GPUs, from 2 min) runs an hour. After j ends nothing changes any more: the skip jumps
    past the end."""
    clock = FakeClock(T0)
    jobs = [Demand("big", 16, T0 + timedelta(minutes=1), 3600.0, gpu_model="V100"),
            Demand("j", 8, T0 + timedelta(minutes=2), 3600.0, gpu_model="V100")]
    world = SimWorld(clock=clock, jobs=jobs, offerings=[], providers=["aws"], pool_nodes=1, gpus_per_node=8,
                     gpu_model="V100")
    config = parse_config({"pool": {"nodes": 1, "gpu_model": "V100"}})
    rec = Reconciler(providers=world.clouds, pool=world.pool, clock=clock,
                     policy=build_policy("reserved-only", config, cost_model(config)))
    timeline = Timeline(world, T0, step_s=step_s, reserved_gpus=8)
    passes = run(world, rec, clock, tick_s=tick_s, end=end, on_progress=timeline.observe, skip=skip)
    return world, timeline, passes


def test_the_last_tick_of_a_fractional_tick_is_where_ticking_through_ends() -> None:
    """The end is the 1,201st tick of 0.1 s; in floats 120.1 / 0.1 is 1200.9999999999998, so the
    skip once brought the world only to the tick before and counted big's wait 0.1 s short."""
    end = T0 + timedelta(seconds=120.1)
    fast, _, fast_passes = _stuck(tick_s=0.1, end=end, skip=True)
    slow, _, slow_passes = _stuck(tick_s=0.1, end=end, skip=False)
    assert fast_passes < slow_passes
    assert slow.pool.metrics.unstarted_waits_s() == [60.1]
    assert fast.pool.metrics.unstarted_waits_s() == slow.pool.metrics.unstarted_waits_s()


def test_the_timeline_samples_what_held_at_each_boundary_when_skipping() -> None:
    """At 1 h j still runs (8 used + 16 queued); the skip's next tick after 00:02 is j's end at
    01:02, where only big is left: sampled there, hour 1 read 16. After it the skip jumps past
    the end, and the hours it jumped over are sampled as ticking through samples them."""
    end = T0 + timedelta(hours=6)
    _, fast, fast_passes = _stuck(tick_s=10.0, end=end, skip=True)
    _, slow, slow_passes = _stuck(tick_s=10.0, end=end, skip=False)
    assert fast_passes < 10
    assert slow_passes == (6 * 3600 - 60) // 10 + 1  # every tick from big's arrival to the end, the end's too
    assert slow.as_dict()["demand_gpus"] == [0, 24, 16, 16, 16, 16, 16]
    assert slow.as_dict()["reserved_used_gpus"] == [0, 8, 0, 0, 0, 0, 0]
    assert fast.as_dict() == slow.as_dict()


def test_the_bench_timeline_is_the_same_when_skipping() -> None:
    """A day of the demo at the bench's 5-minute step (burster.eval.compare.run_arm)."""
    trace = load_trace(DEMO_TRACE, "philly")

    def sampled(skip: bool) -> dict[str, Any]:
        sim = build_simulation(parse_config({"pool": {"nodes": 12}}), trace, policy="burster", seed=3, days=1,
                               start_day=1)
        world: Any = sim.world
        timeline = Timeline(world, sim.clock.now(), step_s=300, reserved_gpus=sim.pool_gpus)
        run(world, sim.reconciler, sim.clock, tick_s=10.0, end=sim.end, on_progress=timeline.observe, skip=skip)
        return timeline.as_dict()

    fast, slow = sampled(True), sampled(False)
    assert max(slow["cloud_gpus"]) > 0 and len(slow["t_h"]) > 288
    assert fast == slow


def test_each_late_job_is_one_deadline_miss_and_each_unstarted_one_waits_to_the_end() -> None:
    """Finished late (counted when it ends), running or never started past its deadline at the end
    (counted then), each once; a best-effort job and a job finished in time or due after the end
    miss nothing. The wait percentiles count the jobs never started at what they waited by the end."""
    due = T0 + timedelta(hours=1)
    end = T0 + timedelta(hours=2)

    def job(name: str, job_class: JobClass, deadline: datetime = due) -> Demand:
        return Demand(name, 1, T0, 600.0, gpu_model="V100", deadline=deadline, job_class=job_class)

    done_late, done_early = job("done-late", JobClass.STRICT), job("done-early", JobClass.STRICT)
    running_late, at_end = job("running-late", JobClass.SOFT), job("due-at-end", JobClass.STRICT, end)
    waiting_late, best = job("waiting-late", JobClass.STRICT), job("best", JobClass.BEST_EFFORT)
    m = PoolMetrics(8)
    m.advance(T0)
    for j in (done_late, done_early, running_late, at_end, waiting_late, best):
        m.submitted(j)
    m.started(done_early, T0, on_cloud=False)
    m.finished(done_early, T0 + timedelta(minutes=10))
    m.started(done_late, T0 + timedelta(minutes=55), on_cloud=True)
    m.finished(done_late, due + timedelta(seconds=1))
    m.started(running_late, T0 + timedelta(minutes=50), on_cloud=False)
    m.advance(end)
    r = summarize(metrics=m, ledger=[], launches=0, passes=0, policy="p", trace="t", pool_gpus=8, seed=0, wall_s=0.0)
    assert (r["jobs"], r["jobs_finished"], r["jobs_started_on_cloud"]) == (6, 2, 1)
    assert (r["deadline_misses"], r["hard_deadline_misses"]) == (3, 2)
    assert r["jobs_never_started"] == 3  # due-at-end, waiting-late, best
    # waits: 0, 3300, 3000 (started); 7200 x 3 (never started): p50 is the 3rd of 6
    assert (r["wait_p50_s"], r["wait_p95_s"], r["wait_p99_s"]) == (3300.0, 7200.0, 7200.0)


@pytest.mark.parametrize("cloud_gpus", [2, 6])
def test_stranded_gpus_count_past_the_arrival_window_and_utilization_does_not(cloud_gpus: int) -> None:
    """8 reserved GPUs, 4 busy, ``cloud_gpus`` of cloud work the pool could run, for 2 h of which
    the arrival window is the first: idle reserved GPUs beside cloud work are min(4 idle, cloud)
    over the whole run; utilization is busy over the window only."""
    m = PoolMetrics(8, window_end=T0 + timedelta(hours=1))
    m.advance(T0)
    m.set_busy(4, cloud_gpus)
    m.advance(T0 + timedelta(hours=2))
    assert m.stranded_gpu_hours == pytest.approx(2 * min(4, cloud_gpus))
    assert m.utilization == pytest.approx(0.5)
    assert m.elapsed_s == 3600.0


def test_the_wait_budget_is_of_the_true_runtime_and_stops_count_by_kind() -> None:
    """A job estimated at 1,000 s that runs 4,000 s may wait a quarter of 4,000 s; a preemption and a
    reclaim are counted apart, and the work each loses in GPU-hours."""
    m = PoolMetrics(8)
    j = Demand("j", 4, T0, 1000.0, gpu_model="V100")
    m.started(j, T0 + timedelta(seconds=900), on_cloud=True, runtime_s=4000.0)
    assert m.within_budget == 1
    m.stopped(j, lost_s=1800.0, preempted=True)
    m.stopped(j, lost_s=900.0, preempted=False)
    m.stopped(j, lost_s=0.0, preempted=False)
    assert (m.preemptions, m.reclaims) == (1, 2)
    assert m.lost_gpu_hours == pytest.approx(4 * 0.75)


def test_a_node_still_up_when_the_run_stops_is_paid_to_the_stop_when_skipping() -> None:
    """A 10-hour job on an on-demand node (no spot offering to flip), the run stopped after 2 h: once
    the job runs nothing changes until it ends, so the skip jumps past the stop; the node is still
    charged to the stop, as ticking through charges it."""
    stop = T0 + timedelta(hours=2)
    offerings = [o for o in load_catalog() if o.market is Market.ON_DEMAND and o.gpu_model == "V100"]
    config = parse_config({"pool": {"nodes": 0, "gpu_model": "V100"}})

    def ledger(skip: bool) -> tuple[int, list[tuple[str, datetime, datetime, Any]]]:
        clock = FakeClock(T0)
        world = SimWorld(clock=clock, jobs=[Demand("j", 8, T0 + timedelta(minutes=1), 36000.0, gpu_model="V100")],
                         offerings=offerings, providers=["aws"], pool_nodes=0, gpus_per_node=8, gpu_model="V100")
        rec = Reconciler(providers=world.clouds, pool=world.pool, clock=clock,
                         policy=build_policy("on-demand", config, cost_model(config)))
        passes = run(world, rec, clock, tick_s=10.0, end=stop, skip=skip)
        return passes, [(e.node_id, e.start, e.end, e.usd) for e in rec.state.ledger]

    (fast_passes, fast), (slow_passes, slow) = ledger(True), ledger(False)
    assert fast_passes < 20 < slow_passes
    assert slow and all(end == stop for _, _, end, _ in slow)
    assert fast == slow
