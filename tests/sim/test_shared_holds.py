"""A reserved node held for several jobs: two cloud jobs moving back that fit one node together
are both held there, and both start there once checkpointed. Before, a node held for one job
only: the second job was requeued with nowhere to go and burst again a minute later (15 of 157
moves back on the demo week)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from burster.lifecycle import NodeState
from burster.model import Demand, Market, Node, Offering, Placement, PoolNode, Snapshot
from burster.plan import Checkpoint, Drain, Hold
from policies.burst import BurstParams
from policies.burster import BursterParams, BursterPolicy
from policies.cost import CostModel, CostParams
from policies.guards import one_per_node
from providers.sim.events import EventQueue
from providers.sim.onprem import OnPremNodes
from providers.sim.pool import SimPool

T0 = datetime(2026, 1, 1, tzinfo=UTC)
SPOT = Offering("aws", "us-west-2", "usw2-az1", "p3.2xlarge", "V100", 1, Market.SPOT, 1.01)


def job(name: str, gpus: int = 1, run_s: float = 6 * 3600.0) -> Demand:
    return Demand(name, gpus, T0, run_s, gpu_model="V100")


def test_a_node_held_for_two_jobs_takes_either_and_nobody_else() -> None:
    onprem = OnPremNodes(1, 8, "V100")
    onprem.take(((0, 6),))  # 2 GPUs free
    onprem.hold(0, "a", 500.0)
    onprem.hold(0, "b", 100.0)
    assert onprem.pool_nodes()[0].held_for == ("a", "b")
    assert onprem.fit(job("a"), now_ts=200.0) == ((0, 1),)
    assert onprem.fit(job("b"), now_ts=200.0) == ((0, 1),)
    assert onprem.fit_held(job("b")) == ((0, 1),)
    # another job may use it only if it ends before the earliest hold starts (b's, at 100)
    assert onprem.fit(job("x", run_s=100.0), now_ts=0.0) == ((0, 1),)
    assert onprem.fit(job("x", run_s=101.0), now_ts=0.0) is None
    assert onprem.release("b") == 1
    assert onprem.pool_nodes()[0].held_for == ("a",)
    assert onprem.fit(job("x", run_s=101.0), now_ts=0.0) == ((0, 1),)  # now a's start counts: 500
    assert onprem.release("a") == 1
    assert onprem.held == {} and onprem.pool_nodes()[0].held_for == ()


def pool_with_two_cloud_jobs() -> SimPool:
    """One reserved node with 2 GPUs free (a 6-GPU job runs there for 3 h), cloud jobs a and b
    (1 GPU each) running on their own spot nodes, and a queued 1-GPU job x submitted after them."""
    events = EventQueue()
    pool = SimPool(events, nodes=1, gpus_per_node=8, gpu_model="V100")
    events.before = pool.metrics.advance
    pool.submit(job("fill", gpus=6, run_s=3 * 3600.0), T0)
    pool.schedule(T0)
    for name in ("a", "b"):
        pool.submit(job(name), T0)
        pool.expect(f"{name}-node", SPOT, name)
        pool.join(f"{name}-node")
    pool.schedule(T0)
    assert {p.job.job_id for p in pool.running() if p.on_cloud} == {"a", "b"}
    return pool


def test_two_jobs_moving_back_onto_one_node_both_start_there() -> None:
    pool = pool_with_two_cloud_jobs()
    now = T0 + timedelta(minutes=10)
    pool.events.run_until(now)
    for name in ("a", "b"):
        pool.hold("onprem-0000", name, now, now + timedelta(minutes=5))
        pool.checkpoint(f"{name}-node", now + timedelta(minutes=2))
    assert pool.nodes()[0].held_for == ("a", "b")
    pool.submit(replace(job("x"), submitted_at=now), now)  # would take a freed GPU were it not held
    pool.events.run_until(now + timedelta(minutes=2))  # the checkpoints are written
    assert all(pool.checkpoint(f"{name}-node", now + timedelta(minutes=2)).done for name in ("a", "b"))
    for name in ("a", "b"):
        pool.drain(f"{name}-node")  # the reconciler drains a node once its checkpoint is done
    pool.schedule(pool.metrics.now)
    on_prem = {p.job.job_id: p.node_ids for p in pool.running() if not p.on_cloud}
    assert on_prem == {"fill": ("onprem-0000",), "a": ("onprem-0000",), "b": ("onprem-0000",)}
    assert pool.nodes()[0].held_for == ()
    m = pool.metrics
    assert (m.node_holds, m.node_holds_landed, m.node_holds_expired) == (2, 2, 0)


def test_each_jobs_hold_on_a_shared_node_runs_out_on_its_own() -> None:
    pool = pool_with_two_cloud_jobs()
    pool.hold("onprem-0000", "a", T0, T0 + timedelta(minutes=5))
    pool.hold("onprem-0000", "b", T0, T0 + timedelta(minutes=10))
    pool.events.run_until(T0 + timedelta(minutes=6))
    assert pool.nodes()[0].held_for == ("b",)
    pool.events.run_until(T0 + timedelta(minutes=11))
    assert pool.nodes()[0].held_for == ()
    assert pool.metrics.node_holds_expired == 2


def snapshot_two_cloud_jobs() -> Snapshot:
    """The pool's view of ``pool_with_two_cloud_jobs`` an hour in."""
    now = T0 + timedelta(hours=1)
    fill = Placement(job("fill", gpus=6, run_s=3 * 3600.0), ("onprem-0000",), T0, False, Market.RESERVED)
    running = [fill]
    nodes = []
    for name in ("a", "b"):
        running.append(Placement(job(name), (f"{name}-node",), T0, True, Market.SPOT, SPOT.price_per_hour_usd))
        nodes.append(Node(f"{name}-node", SPOT, NodeState.READY, T0, f"rq-{name}", job_id=name))
    return Snapshot(now, (), tuple(running), (PoolNode("onprem-0000", "V100", 8, 2),), tuple(nodes), (SPOT,))


def test_the_policy_holds_one_node_for_both_jobs_it_moves_back_onto_it() -> None:
    policy = BursterPolicy(CostModel(CostParams(spot_interruptions_per_hour=0.0)),
                           BursterParams(burst=BurstParams(prewarm=False, cost_trigger=False)))
    plan = policy.decide(snapshot_two_cloud_jobs())
    assert sorted(a.job_id for a in plan.actions if isinstance(a, Checkpoint)) == ["a", "b"]
    holds = sorted((a.node_id, a.job_id) for a in plan.actions if isinstance(a, Hold))
    assert holds == [("onprem-0000", "a"), ("onprem-0000", "b")]


def test_one_action_per_node_but_a_reserved_node_may_be_held_for_several_jobs() -> None:
    snap = snapshot_two_cloud_jobs()
    hold_a = Hold("onprem-0000", "a", snap.now, snap.now, "r")
    hold_b = replace(hold_a, job_id="b")
    cloud_a = replace(hold_a, node_id="a-node")
    cloud_b = replace(hold_b, node_id="a-node")
    drain = Drain("a-node", "r")
    kept = one_per_node([hold_a, hold_b, hold_a, cloud_a, cloud_b, drain], snap.pool_nodes)
    assert kept == [hold_a, hold_b, cloud_a]  # a cloud node: one job, one action
    assert one_per_node([hold_a, hold_b]) == [hold_a]  # no reserved nodes named: one per node
