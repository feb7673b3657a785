"""Rules of holding reserved nodes for a move back (policies/defrag.py) that a mutation audit found
unpinned: a move onto held nodes keeps a deadline job's margin, a job already holding a node is not
held for again, and a declined hold names no instant past the first end on its nodes."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from burster.lifecycle import NodeState
from burster.model import Demand, JobClass, Market, Node, Offering, Placement, PoolNode, Requeue, Snapshot
from burster.plan import Hold
from policies.cost import CostModel, CostParams
from policies.defrag import held_moves, hold_nodes
from policies.queue import ReservedQueue

NOW = datetime(2026, 3, 2, 12, tzinfo=UTC)
OD8 = Offering("aws", "us-west-2", "usw2-az1", "p3.16xlarge", "V100", 8, Market.ON_DEMAND, 24.48)
COST = CostModel(CostParams(spot_interruptions_per_hour=0.0))
MARGIN_S = 900.0
STARTED = NOW - timedelta(hours=1)


def on_prem(job_id: str, gpus: int, node: str, left_min: float) -> Placement:
    job = Demand(job_id, gpus, STARTED, 3600 + left_min * 60, gpu_model="V100")
    return Placement(job, (node,), STARTED, False, Market.RESERVED)


def on_cloud(job_id: str = "big", left_h: float = 10.0, *, deadline_slack_s: float | None = None,
             price: float = OD8.price_per_hour_usd) -> tuple[Placement, Node]:
    """An 8-GPU job on an on-demand node with ``left_h`` to run (strict, due ``deadline_slack_s``
    after its estimated end, if given)."""
    remaining_s = left_h * 3600
    deadline = None if deadline_slack_s is None else NOW + timedelta(seconds=remaining_s + deadline_slack_s)
    job = Demand(job_id, 8, STARTED, 3600 + remaining_s, gpu_model="V100", deadline=deadline,
                 job_class=JobClass.STRICT if deadline else JobClass.BEST_EFFORT)
    node = Node(f"n-{job_id}", OD8, NodeState.READY, STARTED, f"rq-{job_id}", job_id=job_id)
    return Placement(job, (node.node_id,), STARTED, True, Market.ON_DEMAND, price), node


def holds(snap: Snapshot, requeue: Requeue = Requeue.SUBMISSION) -> list[tuple[str, str, datetime]]:
    queue = ReservedQueue(snap.now, snap.pool_nodes, snap.running)
    wakes: list[datetime] = []
    return [(h.node_id, h.job_id, h.start_at) for h in hold_nodes(snap, COST, queue, requeue, MARGIN_S, wakes)
            if isinstance(h, Hold)]


@pytest.mark.parametrize(("slack_s", "moves"), [(600.0, False), (3 * 3600.0, True), (-60.0, True)])
def test_a_deadline_job_moves_onto_its_held_node_only_if_its_slack_keeps_the_margin(slack_s: float,
                                                                                     moves: bool) -> None:
    """The held node has room now; the pause (checkpoint write and restart) must leave the strict
    job ``MARGIN_S`` of slack, as in move-back (a job late by its estimate may move)."""
    big, node = on_cloud(deadline_slack_s=slack_s)
    pool = (PoolNode("onprem-0", "V100", 8, 8, ("big",)), PoolNode("onprem-1", "V100", 8, 0))
    snap = Snapshot(NOW, (), (on_prem("full", 8, "onprem-1", 600), big), pool, (node,), (OD8,))
    assert bool(held_moves(snap, COST, MARGIN_S)) is moves


def test_a_job_already_holding_a_node_is_not_held_for_again_when_another_empties_sooner() -> None:
    """onprem-0 is held for "big" and empties in 5 h; onprem-1 empties in 30 min. A second hold
    for the same job would keep both idle for it: none is made (the first hold runs its course)."""
    big, node = on_cloud()
    pool = (PoolNode("onprem-0", "V100", 8, 4, ("big",)), PoolNode("onprem-1", "V100", 8, 4))
    running = (on_prem("s0", 4, "onprem-0", 300), on_prem("s1", 4, "onprem-1", 30), big)
    assert holds(Snapshot(NOW, (), running, pool, (node,), (OD8,))) == []
    unheld = (PoolNode("onprem-0", "V100", 8, 4), pool[1])
    assert holds(Snapshot(NOW, (), running, unheld, (node,), (OD8,))) == [
        ("onprem-1", "big", NOW + timedelta(minutes=30))]



def declined_gang(left_h: float) -> tuple[list[tuple[str, str, datetime]], list[datetime]]:
    """A 16-GPU gang with ``left_h`` to run on the cloud; two reserved nodes with 4 GPUs free, whose
    4-GPU jobs end in 30 min and 5 h: (holds, wakes)."""
    gang = Demand("gang", 16, STARTED, 3600 + left_h * 3600, nodes=2, gpu_model="V100")
    nodes = tuple(Node(f"g{i}", OD8, NodeState.READY, STARTED, "rq", job_id="gang") for i in (1, 2))
    place = Placement(gang, ("g1", "g2"), STARTED, True, Market.ON_DEMAND, 2 * OD8.price_per_hour_usd)
    pool = (PoolNode("onprem-0", "V100", 8, 4), PoolNode("onprem-1", "V100", 8, 4))
    running = (on_prem("s0", 4, "onprem-0", 30), on_prem("s1", 4, "onprem-1", 300), place)
    snap = Snapshot(NOW, (), running, pool, nodes, (OD8,))
    wakes: list[datetime] = []
    got = hold_nodes(snap, COST, ReservedQueue(NOW, pool, running), Requeue.SUBMISSION, MARGIN_S, wakes)
    return [(h.node_id, h.job_id, h.start_at) for h in got], wakes


def test_a_declined_hold_names_no_instant_past_the_first_end_on_its_nodes() -> None:
    """The idle cost of the held GPUs falls at a steady rate only until the first job on them ends
    (an event of its own): an instant the hold would pay by that rate counts only before then."""
    held, wakes = declined_gang(8.7)  # pays in about 9 min
    assert held == [] and len(wakes) == 1 and NOW < wakes[0] < NOW + timedelta(minutes=30)
    held, wakes = declined_gang(8.0)  # by that rate, in 93 min: after the first end at 30 min
    assert held == [] and wakes == []


BAND = (1.27,) * 10 + (1.0,) * 20  # a third of recent jobs ran 1.27 x their estimates


def test_a_held_move_and_its_hold_price_the_misses_the_pause_adds() -> None:
    """A strict job 10 h from its estimated end (11 h estimated), due 3 h after it: its deadline allows
    14 / 11 = 1.2727 x its estimate, and the pause (360 s of 39,600) takes 0.0091 off that. A third of
    the recent jobs ran 1.27 x: $166.67 of a $500 miss against about $98 saved at $10/h, so neither
    the move onto its held node nor a hold for it is made (``policies.late.move_miss_usd``); with
    exact ratios both are."""
    big, node = on_cloud(deadline_slack_s=3 * 3600.0, price=10.0)
    held = (PoolNode("onprem-0", "V100", 8, 8, ("big",)), PoolNode("onprem-1", "V100", 8, 0))
    moving = Snapshot(NOW, (), (on_prem("full", 8, "onprem-1", 600), big), held, (node,), (OD8,))
    assert held_moves(replace(moving, runtime_ratios=BAND), COST, MARGIN_S) == []
    assert [c.job_id for c in held_moves(replace(moving, runtime_ratios=(1.0,) * 30), COST, MARGIN_S)] == ["big"]
    free = (PoolNode("onprem-0", "V100", 8, 4), PoolNode("onprem-1", "V100", 8, 4))
    running = (on_prem("s0", 4, "onprem-0", 300), on_prem("s1", 4, "onprem-1", 30), big)
    holding = Snapshot(NOW, (), running, free, (node,), (OD8,))
    assert holds(replace(holding, runtime_ratios=BAND)) == []
    assert holds(replace(holding, runtime_ratios=(1.0,) * 30)) == [("onprem-1", "big", NOW + timedelta(minutes=30))]
