"""The simulated pool's node holds (a reserved node kept for one job: landed, expired, renewed,
ignored) and its preemption of a reserved job for a holder."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from burster.model import Demand
from providers.sim.events import EventQueue
from providers.sim.pool import SimPool
from tests.sim.sim_pool_common import ON_DEMAND, SPOT, T0


def _pool_with_two_half_full_nodes() -> SimPool:
    """Two 8-GPU reserved nodes, each running a 4-GPU job (ending at 30 and 90 min)."""
    pool = SimPool(EventQueue(), nodes=2, gpus_per_node=8, gpu_model="V100")
    for name, minutes in (("s0", 30), ("filler", 0), ("s1", 90)):  # best fit: s0 and filler share a node
        pool.submit(Demand(name, 4, T0, minutes * 60.0, gpu_model="V100"), T0)
    pool.schedule(T0)
    pool.events.run_until(T0)  # the filler ends at once
    assert {p.job.job_id: p.node_ids for p in pool.running()} == {"s0": ("onprem-0000",), "s1": ("onprem-0001",)}
    return pool


def test_a_held_node_takes_only_the_job_it_is_held_for_even_behind_a_blocked_head() -> None:
    pool = _pool_with_two_half_full_nodes()
    pool.submit(Demand("big", 8, T0, 3600.0, gpu_model="V100"), T0)  # waits: no node has 8 free
    pool.hold("onprem-0000", "big", T0 + timedelta(minutes=30), T0 + timedelta(hours=2))
    assert pool.nodes()[0].held_for == ("big",)
    pool.submit(Demand("head", 12, T0, 600.0, gpu_model="V100", nodes=2), T0)
    pool.submit(Demand("short", 2, T0, 1200.0, gpu_model="V100"), T0)
    pool.submit(Demand("long", 2, T0, 3600.0, gpu_model="V100"), T0)
    pool.schedule(T0)
    # backfill: "short" ends before the hold starts, so it may use the held node; "long" may not
    running = {p.job.job_id: p.node_ids for p in pool.running()}
    assert (running["short"], running["long"]) == (("onprem-0000",), ("onprem-0001",))
    pool.events.run_until(T0 + timedelta(minutes=30))  # s0 and "short" end: the held node is empty
    pool.schedule(T0 + timedelta(minutes=30))
    running = {p.job.job_id: p.node_ids for p in pool.running()}
    assert running["big"] == ("onprem-0000",)  # it starts there though "head" is ahead and blocked
    assert "head" not in running
    assert pool.nodes()[0].held_for == ()  # started on-prem: the hold is done
    m = pool.metrics
    assert (m.node_holds, m.node_holds_landed, m.node_holds_expired) == (1, 1, 0)


def test_a_hold_ends_at_its_deadline_and_survives_a_restart_on_the_cloud() -> None:
    pool = _pool_with_two_half_full_nodes()
    pool.submit(Demand("big", 8, T0, 7200.0, gpu_model="V100"), T0)
    pool.expect("big-node", replace(ON_DEMAND, gpus_per_node=8), "big")
    pool.join("big-node")
    pool.schedule(T0)
    pool.hold("onprem-0000", "big", T0, T0 + timedelta(minutes=20))
    pool.drain("big-node")  # stopped: back in the queue, then restarted on a new cloud node
    pool.expect("big-node-2", replace(ON_DEMAND, gpus_per_node=8), "big")
    pool.join("big-node-2")
    pool.schedule(T0)
    assert {p.job.job_id: p.node_ids for p in pool.running()}["big"] == ("big-node-2",)
    assert pool.nodes()[0].held_for == ("big",)
    pool.submit(Demand("other", 2, T0, 600.0, gpu_model="V100"), T0)
    pool.schedule(T0)
    assert {p.job.job_id: p.node_ids for p in pool.running()}["other"] == ("onprem-0001",)
    pool.events.run_until(T0 + timedelta(minutes=20))  # the hold expires
    assert pool.nodes()[0].held_for == ()
    assert (pool.metrics.node_holds, pool.metrics.node_holds_expired) == (1, 1)
    pool.submit(Demand("late", 4, T0, 600.0, gpu_model="V100"), T0 + timedelta(minutes=20))
    pool.schedule(T0 + timedelta(minutes=20))
    assert {p.job.job_id: p.node_ids for p in pool.running()}["late"] == ("onprem-0000",)


def test_a_hold_for_a_gone_job_a_job_running_on_prem_or_a_cloud_node_is_ignored() -> None:
    pool = _pool_with_two_half_full_nodes()
    pool.hold("onprem-0000", "nobody", T0, T0 + timedelta(hours=1))
    pool.hold("onprem-0000", "s1", T0, T0 + timedelta(hours=1))  # s1 runs on onprem-0001
    pool.hold("big-node", "s0", T0, T0 + timedelta(hours=1))
    assert [n.held_for for n in pool.nodes()] == [(), ()]


def test_a_hold_renewed_for_longer_is_not_cut_short_by_the_first_ones_end() -> None:
    pool = _pool_with_two_half_full_nodes()
    pool.submit(Demand("big", 12, T0, 3600.0, gpu_model="V100", nodes=2), T0)  # 6 + 6: waits for s1
    pool.hold("onprem-0001", "big", T0, T0 + timedelta(minutes=20))
    pool.hold("onprem-0001", "big", T0, T0 + timedelta(minutes=40))
    pool.events.run_until(T0 + timedelta(minutes=25))
    assert pool.nodes()[1].held_for == ("big",)
    pool.events.run_until(T0 + timedelta(minutes=40))
    assert pool.nodes()[1].held_for == ()
    assert (pool.metrics.node_holds, pool.metrics.node_holds_expired) == (1, 1)


@pytest.mark.parametrize("depth", [256, 0])
def test_a_holder_starts_on_its_held_node_not_on_the_best_fit_one_whatever_its_queue_place(depth: int) -> None:
    """Best fit would pick the other empty node (lowest index) and the blocked head would keep the
    job off it; the held node is the job's: it starts there, even past the backfill depth."""
    pool = SimPool(EventQueue(), nodes=3, gpus_per_node=8, gpu_model="V100", backfill_depth=depth)
    for name, minutes in (("x", 30), ("y", 30), ("z", 60)):
        pool.submit(Demand(name, 8, T0, minutes * 60.0, gpu_model="V100"), T0)
    pool.schedule(T0)
    pool.submit(Demand("head", 16, T0 - timedelta(hours=1), 600.0, gpu_model="V100", nodes=2), T0)
    pool.submit(Demand("big", 8, T0, 20000.0, gpu_model="V100"), T0)
    pool.hold("onprem-0001", "big", T0 + timedelta(minutes=30), T0 + timedelta(minutes=45))
    pool.events.run_until(T0 + timedelta(minutes=30))  # x and y end: nodes 0 and 1 are empty
    pool.schedule(T0 + timedelta(minutes=30))
    assert {p.job.job_id: p.node_ids for p in pool.running()}["big"] == ("onprem-0001",)
    assert [j.job_id for j in pool.pending()] == ["head"]
    assert (pool.metrics.node_holds, pool.metrics.node_holds_landed) == (1, 1)


def test_a_preempted_reserved_job_checkpoints_then_requeues_with_its_work_and_the_holder_takes_its_gpus() -> None:
    pool = _pool_with_two_half_full_nodes()
    pool.submit(Demand("fill", 4, T0, 7200.0, gpu_model="V100"), T0)
    pool.submit(Demand("fill2", 4, T0, 7200.0, gpu_model="V100"), T0)
    pool.schedule(T0)
    assert [n.free_gpus for n in pool.nodes()] == [0, 0]
    at = T0 + timedelta(minutes=10)
    pool.events.run_until(at)
    pool.metrics.advance(at)
    pool.submit(Demand("urgent", 4, at, 1800.0, gpu_model="V100"), at)
    pool.hold("onprem-0001", "urgent", at, at + timedelta(minutes=5))
    pool.preempt("s1", at + timedelta(minutes=2))
    stopping = {p.job.job_id: p for p in pool.running()}["s1"]
    assert stopping.stopping_at == at + timedelta(seconds=60) and stopping.remaining_s(at) == 60.0
    pool.preempt("s1", at + timedelta(minutes=2))  # asking again changes nothing
    pool.events.run_until(at + timedelta(seconds=59))
    assert "s1" in {p.job.job_id for p in pool.running()}
    pool.events.run_until(at + timedelta(seconds=60))
    running = {p.job.job_id: p.node_ids for p in pool.running()}
    assert running["urgent"] == ("onprem-0001",)
    (s1,) = [j for j in pool.pending() if j.job_id == "s1"]
    assert (s1.done_s, s1.attempt, s1.queued_at) == (600.0, 1, at + timedelta(seconds=60))  # saved at the request
    m = pool.metrics
    assert (m.onprem_preemptions, m.reclaims, m.preemptions) == (1, 1, 0)
    assert m.lost_gpu_hours == pytest.approx(4 / 60)  # the checkpoint write minute
    assert (m.node_holds, m.node_holds_landed) == (1, 1)


def test_preempting_a_cloud_job_a_finished_one_or_an_unknown_one_does_nothing() -> None:
    pool = _pool_with_two_half_full_nodes()
    pool.submit(Demand("c", 1, T0, 600.0, gpu_model="V100"), T0)
    pool.expect("n1", SPOT, "c")
    pool.join("n1")
    pool.schedule(T0)
    for job_id in ("c", "nobody"):
        pool.preempt(job_id, T0 + timedelta(minutes=2))
    pool.events.run_until(T0 + timedelta(minutes=40))  # s0 has ended
    pool.preempt("s0", T0 + timedelta(minutes=42))
    assert pool.metrics.onprem_preemptions == 0
    assert all(p.stopping_at is None for p in pool.running())
