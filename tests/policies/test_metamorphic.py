"""Metamorphic relations of decide(): changes to a snapshot that must not change the plan.

A live controller decides again every pass from what clouds and the pool list, and those lists come
in no promised order (EC2 DescribeInstances, GCP aggregatedList, Azure list; a catalog's rows). A plan
that depended on that order would flap between passes. The Snapshot's tuples are therefore taken as
sets by the policies, ties broken by a stable key (an id, an offering key, a model's name); only
``pending`` is in an order that means something (the pool's queue order).
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from dataclasses import fields, replace
from datetime import datetime, timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from burster.lifecycle import NodeState
from burster.model import Demand, JobClass, Market, Node, Offering, Placement, PoolNode, Signal, Snapshot
from burster.plan import Plan
from policies.baselines import GreedySpotPolicy, OnDemandPolicy, UniformProgressPolicy
from policies.burster import BursterParams, BursterPolicy
from policies.cost import CostModel
from policies.guards import GuardParams
from policies.quiet import FOREVER
from policies.standby import StandbyParams
from tests.policies.strategies import MODELS, NOW, snapshots

EXAMPLES = int(os.environ.get("BURSTER_METAMORPHIC_EXAMPLES", "60"))  # more: a deeper search
SETTINGS = settings(max_examples=EXAMPLES, deadline=None)
PROVIDERS = ("aws", "gcp", "azure")


def burster(max_nodes: int = 256, budget: float | None = 1000.0, warm: bool = False) -> BursterPolicy:
    guards = GuardParams(total_budget_usd=budget, max_nodes=max_nodes)
    return BursterPolicy(CostModel(), BursterParams(guards=guards, exclusive_nodes=warm,
                                                    standby=StandbyParams(enabled=warm)))


POLICIES: dict[str, Callable[[], object]] = {
    "burster": burster,
    "burster-warm": lambda: burster(warm=True),
    "burster-capped": lambda: burster(max_nodes=3),  # launches held back: which ones depends on ranking
    "burster-tight-budget": lambda: burster(budget=60.0),
    "on-demand": OnDemandPolicy,
    "greedy-spot": GreedySpotPolicy,
    "uniform-progress": UniformProgressPolicy,
}


def decide(name: str, snap: Snapshot) -> Plan:
    return POLICIES[name]().decide(snap)  # type: ignore[attr-defined, no-any-return]


def repriced(snap: Snapshot, price: dict[str, float]) -> Snapshot:
    """``snap`` with offerings at these prices, by key (and the nodes of them, and the jobs on those)."""
    def offering(o: Offering) -> Offering:
        return replace(o, price_per_hour_usd=price[o.key])
    nodes = tuple(replace(n, offering=offering(n.offering)) for n in snap.cloud_nodes)
    rate = {n.node_id: n.offering.price_per_hour_usd for n in nodes}
    running = tuple(replace(p, price_per_hour_usd=sum(rate[i] for i in p.node_ids)) if p.on_cloud else p
                    for p in snap.running)
    return replace(snap, offerings=tuple(offering(o) for o in snap.offerings), cloud_nodes=nodes, running=running)


@st.composite
def listed_snapshots(draw: st.DrawFn) -> Snapshot:
    """The property tests' snapshots, plus what a pass also lists: a second on-prem GPU model, demand
    signals whose pre-warm is open (one per source and window start, as ``burster.signalfile`` loads
    them), offerings blocked after refused launches and providers degraded this pass, and often
    offerings at equal prices (an instance type in two zones of a region), and often every cloud
    node exclusive (``policy.exclusive_nodes``)."""
    snap = draw(snapshots())
    a100 = tuple(PoolNode(f"onprem-a{i}", "A100", 8, draw(st.integers(0, 8))) for i in range(draw(st.integers(0, 3))))
    signals = []
    for i in range(draw(st.integers(0, 3))):
        start = NOW + timedelta(seconds=draw(st.floats(0, 600)))  # pre-warm opens two boots before
        signals.append(Signal(f"sprint-{i}", draw(st.floats(1.0, 400.0)), start,
                              start + timedelta(hours=draw(st.floats(0.5, 48.0))),
                              gpu_model=draw(st.sampled_from(("", *MODELS))), team=draw(st.sampled_from(("a", "b")))))
    if draw(st.booleans()):  # prices from a short list: ties between offerings, broken by key
        snap = repriced(snap, {o.key: draw(st.sampled_from((0.5, 1.0, 4.0))) for o in snap.offerings})
    # the same instance type at the same price in another zone (on-demand prices are per region)
    twins = tuple(replace(o, zone=f"{o.zone}b") for o in snap.offerings if draw(st.booleans()))
    snap = replace(snap, offerings=snap.offerings + twins)
    if draw(st.booleans()):  # a warm policy's nodes: all exclusive, busy ones too
        snap = replace(snap, cloud_nodes=tuple(replace(n, exclusive=True) for n in snap.cloud_nodes))
    keys = [o.key for o in snap.offerings]
    blocked = frozenset(draw(st.lists(st.sampled_from(keys), max_size=2)))
    degraded = frozenset(draw(st.lists(st.sampled_from(PROVIDERS), max_size=1)))
    return replace(snap, pool_nodes=snap.pool_nodes + a100, signals=tuple(signals),
                   blocked_offerings=blocked, degraded_providers=degraded)


# ``pending`` is not among them: ``PoolReader.pending`` is the pool's queue in the order it serves it,
# which in a FIFO pool that requeues at the back (``pool.requeue = "back"``) no field of a job says,
# and move-back's view of EASY backfill takes the queue's head from it (``reclaim._Backfill``).
ORDER_FREE = ("offerings", "cloud_nodes", "pool_nodes", "interruptions", "signals", "running")


def shuffled(snap: Snapshot, rnd: random.Random) -> Snapshot:
    """The same snapshot with every listed tuple in another order."""
    lists: dict[str, Any] = {name: tuple(rnd.sample(getattr(snap, name), len(getattr(snap, name))))
                             for name in ORDER_FREE}
    return replace(snap, **lists)


@settings(SETTINGS, max_examples=5 * EXAMPLES)  # the relation a live controller leans on most
@given(listed_snapshots(), st.randoms(use_true_random=False), st.sampled_from(sorted(POLICIES)))
def test_the_order_things_are_listed_in_does_not_change_the_plan(snap: Snapshot, rnd: random.Random,
                                                                   name: str) -> None:
    """The same actions in the same order (actuate and the node cap take them in plan order), the
    same refusals, held-back launches and quiet time."""
    assert decide(name, shuffled(snap, rnd)) == decide(name, snap)


# --- irrelevant additions ------------------------------------------------------------------------

@st.composite
def with_idle_offering(draw: st.DrawFn) -> tuple[Snapshot, Snapshot]:
    """A snapshot, and the same with one more offering no rule may pick: blocked, on a degraded
    provider, or listed unavailable (any GPU model and price)."""
    snap = draw(listed_snapshots())
    why = draw(st.sampled_from(("blocked", "degraded", "unavailable")))
    provider = draw(st.sampled_from(PROVIDERS))
    extra = Offering(provider, "r9", "z-extra", "type-extra", draw(st.sampled_from(MODELS)),
                     draw(st.sampled_from((1, 4, 8))), draw(st.sampled_from((Market.SPOT, Market.ON_DEMAND))),
                     draw(st.floats(0.01, 40.0)), available=why != "unavailable")
    offerings = list(snap.offerings)
    offerings.insert(draw(st.integers(0, len(offerings))), extra)
    more = replace(snap, offerings=tuple(offerings))
    if why == "blocked":
        more = replace(more, blocked_offerings=more.blocked_offerings | {extra.key})
        snap = replace(snap, blocked_offerings=more.blocked_offerings)  # a block on an unlisted key: inert
    elif why == "degraded":
        more = replace(more, degraded_providers=more.degraded_providers | {provider})
        snap = replace(snap, degraded_providers=more.degraded_providers)
    return snap, more


@SETTINGS
@given(with_idle_offering(), st.sampled_from(sorted(POLICIES)))
def test_an_offering_that_cannot_be_launched_changes_nothing(pair: tuple[Snapshot, Snapshot], name: str) -> None:
    snap, more = pair
    assert decide(name, more) == decide(name, snap)


def _modelled(snap: Snapshot) -> Snapshot:
    """``snap`` with every job that takes any GPU model asking for V100 (the pool's)."""
    def ask(job: Demand) -> Demand:
        return job if job.gpu_model else replace(job, gpu_model="V100")
    return replace(snap, pending=tuple(ask(j) for j in snap.pending),
                   running=tuple(replace(p, job=ask(p.job)) for p in snap.running))


@st.composite
def with_unwanted_offering(draw: st.DrawFn) -> tuple[Snapshot, Snapshot]:
    """A snapshot with no demand signals, every job asking for a GPU model, and the same with one
    more offering of a model none asks for, dearer than every other. (A job with no model may run on
    any offering, however dear, if it is the only one left; pre-warm for a signal may launch one of
    the model the signal names.)"""
    snap = replace(_modelled(draw(listed_snapshots())), signals=())
    extra = Offering(draw(st.sampled_from(PROVIDERS)), "r9", "z-extra", "type-extra", "H100",
                     draw(st.sampled_from((1, 8))), draw(st.sampled_from((Market.SPOT, Market.ON_DEMAND))),
                     2.0 * max((o.price_per_hour_usd for o in snap.offerings), default=1.0) + 1.0)
    offerings = list(snap.offerings)
    offerings.insert(draw(st.integers(0, len(offerings))), extra)
    return snap, replace(snap, offerings=tuple(offerings))


@SETTINGS
@given(with_unwanted_offering(), st.sampled_from(sorted(POLICIES)))
def test_a_dearer_offering_of_no_use_changes_nothing(pair: tuple[Snapshot, Snapshot], name: str) -> None:
    snap, more = pair
    assert decide(name, more) == decide(name, snap)


# --- time translation ----------------------------------------------------------------------------

def shift_all(value: object, by: timedelta) -> object:
    """``value`` with every datetime in it moved by ``by`` (in dataclasses and tuples, as a Snapshot
    and a Plan hold them)."""
    if isinstance(value, datetime):
        return value + by
    if isinstance(value, tuple):
        return tuple(shift_all(v, by) for v in value)
    if hasattr(value, "__dataclass_fields__"):
        changes = {f.name: shift_all(getattr(value, f.name), by) for f in fields(value) if f.init}  # type: ignore[arg-type]
        return replace(value, **changes)  # type: ignore[type-var]
    return value


def timeless(plan: Plan, by: timedelta) -> object:
    """``plan`` moved back by ``by``, but for pre-warm's reasons and request ids (they name the
    signal's window start, a date and instant); a quiet time of "never" stays."""
    back = shift_all(replace(plan, quiet_until=None), -by)
    assert isinstance(back, Plan)
    quiet = plan.quiet_until if plan.quiet_until in (None, FOREVER) else plan.quiet_until - by

    def strip(a: object) -> object:
        prewarm = getattr(a, "reason", "").startswith("pre-warm")
        return replace(a, reason="", request_id="") if prewarm else a  # type: ignore[type-var]
    return (tuple(strip(a) for a in back.actions), tuple((strip(a), "") for a, _ in back.refused),
            tuple((strip(a), "") for a, _ in back.held_back), quiet)


@SETTINGS
@given(listed_snapshots(), st.integers(-400, 400), st.sampled_from(sorted(POLICIES)))
def test_moving_every_instant_by_whole_days_moves_the_plan(snap: Snapshot, days: int, name: str) -> None:
    """Spend is given for the period (``Spend``), so a shift by days needs no period to hold: the
    policy never reads the calendar. Whole days keep every instant's microseconds."""
    by = timedelta(days=days)
    moved = shift_all(snap, by)
    assert isinstance(moved, Snapshot) and moved.now == snap.now + by
    assert timeless(decide(name, moved), by) == timeless(decide(name, snap), timedelta(0))


def test_a_job_of_any_model_is_projected_onto_the_same_pool_model_whatever_the_node_order() -> None:
    """Found by the order relation: with as many A100 as V100 GPUs on-prem, the model a job of any
    model was projected onto (the pool's largest) was the first listed, so a pool listing its nodes
    in another order flipped the plan between a burst and a wait for the one free A100 GPU."""
    job = Demand("p0", gpus=1, submitted_at=NOW, est_runtime_s=60.0, deadline=NOW + timedelta(minutes=1),
                 job_class=JobClass.STRICT)
    v100 = PoolNode("onprem-v", "V100", 8, 0)
    a100 = PoolNode("onprem-a", "A100", 8, 1)
    spot = Offering("aws", "r1", "z0", "type0", "V100", 1, Market.SPOT, 1.0)
    plans = [burster().decide(Snapshot(NOW, (job,), (), pool, (), (spot,))) for pool in ((v100, a100), (a100, v100))]
    assert plans[0] == plans[1]
    assert not plans[0].launches  # the tie goes to the model first by name, A100, where it starts now


def test_a_standby_launch_is_named_by_its_unowned_nodes_whatever_order_they_are_listed_in() -> None:
    """Found reading the code behind the order relation: the standby stock's request id named the
    exclusive nodes launched for no job in the order the snapshot listed them (launch order, and
    for nodes adopted from a listing after a crash, the cloud's order), so the same launch could
    get another id."""
    spot = Offering("aws", "r1", "z0", "type0", "V100", 1, Market.SPOT, 1.0)
    nodes, running = [], []
    for i in range(4):  # four recent single-node starts, on exclusive nodes launched for no job
        job = Demand(f"r{i}", 1, NOW - timedelta(minutes=10), 7200.0, gpu_model="V100")
        nodes.append(Node(f"c{i}", spot, NodeState.READY, NOW - timedelta(minutes=9), "rq", job_id=job.job_id,
                          exclusive=True))
        running.append(Placement(job, (f"c{i}",), NOW - timedelta(minutes=8 - i), True, Market.SPOT, 1.0))
    pending = tuple(Demand(f"p{i}", 1, NOW - timedelta(minutes=1), 7200.0, gpu_model="V100") for i in range(3))
    plans = [burster(warm=True).decide(Snapshot(NOW, pending, tuple(running), (), tuple(order), (spot,)))
             for order in (nodes, nodes[::-1])]
    assert any(a.reason.startswith("standby") for a in plans[0].launches)
    assert plans[0] == plans[1]


def test_pre_warm_for_a_signal_of_any_model_weighs_the_same_pool_model_whatever_the_node_order() -> None:
    """The same tie for a signal that names no model: pre-warm weighed the first listed pool model's
    spare GPUs, so it launched V100 nodes or none as the pool listed its nodes."""
    v100 = PoolNode("onprem-v", "V100", 8, 0)
    a100 = PoolNode("onprem-a", "A100", 8, 8)
    sprint = Signal("sprint", 64.0, NOW + timedelta(minutes=5), NOW + timedelta(hours=9))  # 8 GPUs for 8 h
    offerings = (Offering("aws", "r1", "z0", "type0", "V100", 8, Market.ON_DEMAND, 8.0),
                 Offering("aws", "r1", "z0", "type1", "A100", 8, Market.ON_DEMAND, 16.0))
    plans = [burster().decide(Snapshot(NOW, (), (), pool, (), offerings, signals=(sprint,)))
             for pool in ((v100, a100), (a100, v100))]
    assert plans[0] == plans[1]
    assert not plans[0].launches  # the tie goes to A100, whose 8 spare GPUs cover the signal
