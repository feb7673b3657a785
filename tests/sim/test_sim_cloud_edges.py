"""Rules of the simulated cloud that a mutation audit found unpinned: a gang boots together, the
60 s join, a terminated node is reclaimed (not preempted) and gets no notice, a taken-back node is
listed once, waived $ follow the per-second bill, and the availability-change lookahead moves on."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from burster.clock import FakeClock
from burster.lifecycle import NodeState
from burster.model import Demand, Market, Offering
from providers.sim.cloud import SimCloudProvider
from providers.sim.events import EventQueue
from providers.sim.pool import SimPool
from providers.sim.spot import SpotSeries

T0 = datetime(2026, 1, 5, tzinfo=UTC)
SPOT = Offering("aws", "us-west-2", "usw2-az1", "p3.16xlarge", "V100", 8, Market.SPOT, 7.3)
ON_DEMAND = Offering("aws", "us-west-2", "usw2-az1", "p3.16xlarge", "V100", 8, Market.ON_DEMAND, 24.48)


def cloud_of(data: tuple[int, ...] = (1,), *, gap_s: float = 600.0, seed: int = 0,
             join_s: float | None = None) -> tuple[FakeClock, SimPool, SimCloudProvider]:
    """(join_s None: the cloud's default)"""
    kw = {} if join_s is None else {"join_s": join_s}
    clock = FakeClock(T0)
    pool = SimPool(EventQueue(), nodes=0, gpus_per_node=8, gpu_model="V100")
    pool.events.before = pool.metrics.advance
    pool.metrics.advance(T0)
    cloud = SimCloudProvider("aws", [SPOT, ON_DEMAND], events=pool.events, pool=pool, now=clock.now, start=T0,
                             series=[SpotSeries("edges", "aws", "V100", gap_s, data)], seed=seed, **kw)
    return clock, pool, cloud


def states(cloud: SimCloudProvider) -> dict[str, str]:
    return {n.node_id: n.state.name for n in cloud.list_nodes()}


def test_a_gangs_nodes_all_join_at_the_same_instant() -> None:
    _, pool, cloud = cloud_of()
    nodes = cloud.launch(ON_DEMAND, 3, request_id="gang", labels={"job": "g"})
    first = pool.events.next_time()
    assert first is not None
    pool.events.run_until(first)
    assert set(states(cloud).values()) == {"READY"}
    assert all(pool.burst[n.node_id].joined for n in nodes)
    assert pool.events.next_time() is None  # no node left booting


def test_a_node_takes_its_boot_plus_60_s_to_join_the_pool() -> None:
    """docs/simulation.md: launch latency (seeded) plus 60 s to join the pool."""
    ready = []
    for join_s in (None, 0.0):
        _, pool, cloud = cloud_of(seed=7, join_s=join_s)
        cloud.launch(ON_DEMAND, 1, request_id="r")
        at = pool.events.next_time()
        assert at is not None
        ready.append(at)
    assert ready[0] - ready[1] == timedelta(seconds=60)
    assert ready[1] > T0


def test_terminating_a_running_node_is_a_reclaim_not_a_preemption() -> None:
    _, pool, cloud = cloud_of()
    pool.submit(Demand("a", 8, T0, 3600.0, gpu_model="V100"), T0)
    (node,) = cloud.launch(ON_DEMAND, 1, request_id="r", labels={"job": "a"})
    ready = pool.events.next_time()
    assert ready is not None
    pool.events.run_until(ready)
    pool.schedule(ready)
    assert [p.job.job_id for p in pool.running()] == ["a"]
    cloud.terminate([node.node_id], request_id="t")
    m = pool.metrics
    assert (m.reclaims, m.preemptions) == (1, 0)
    assert [j.job_id for j in pool.pending()] == ["a"]


def test_a_node_terminated_before_its_series_drops_gets_no_notice() -> None:
    clock, pool, cloud = cloud_of((1, 1, 0))
    (node,) = cloud.launch(SPOT, 1, request_id="r")
    clock.advance(600)
    pool.events.run_until(clock.now())
    cloud.terminate([node.node_id], request_id="t")
    clock.advance(1200)  # past the drop at 1200 s and the 120 s notice
    pool.events.run_until(clock.now())
    assert cloud.interruptions() == []
    assert states(cloud) == {}
    assert pool.metrics.preemptions == 0 and pool.metrics.waived_usd == 0.0


def test_a_node_its_cloud_took_back_is_listed_terminated_once() -> None:
    clock, pool, cloud = cloud_of((1, 0))
    (node,) = cloud.launch(SPOT, 1, request_id="r")
    clock.advance(600 + 120)
    pool.events.run_until(clock.now())
    (notice,) = cloud.interruptions()
    assert notice.node_id == node.node_id and notice.terminate_at - notice.notice_at == timedelta(seconds=120)
    assert states(cloud) == {node.node_id: NodeState.TERMINATED.name}
    assert states(cloud) == {}  # reported once; the controller has seen it go


def test_waived_dollars_follow_the_per_second_bill_of_the_run() -> None:
    """Launched half a second into the run, taken back at 3000 + 120 s: 3119.5 s run, billed (so
    waived) as 3120 s, AWS billing per whole second."""
    clock, pool, cloud = cloud_of((1,) * 5 + (0,) * 20)
    clock.advance(0.5)
    cloud.launch(SPOT, 1, request_id="r")
    pool.events.run_until(T0 + timedelta(seconds=3300))
    assert pool.metrics.waived_usd == pytest.approx(7.3 * 3120 / 3600, rel=1e-9)


def test_the_next_availability_change_asked_at_a_change_is_the_one_after_it() -> None:
    """Flips at 1200 s (down) and 2400 s (up); asked again at the first, the answer moves on."""
    _, _, cloud = cloud_of((1, 1, 0, 0, 1, 1))
    first = cloud.next_availability_change(T0)
    assert first == T0 + timedelta(seconds=1200)
    assert cloud.next_availability_change(first) == T0 + timedelta(seconds=2400)
    assert cloud.next_availability_change(T0 + timedelta(seconds=2400)) == T0 + timedelta(seconds=4800)
