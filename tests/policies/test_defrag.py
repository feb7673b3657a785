"""Holds on reserved nodes for cloud jobs that no node has room for yet (policies/defrag.py)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from burster.lifecycle import NodeState
from burster.model import Demand, Market, Node, Offering, Placement, PoolNode, Snapshot
from burster.plan import Checkpoint, Hold
from policies.burst import BurstParams
from policies.burster import BursterParams, BursterPolicy
from policies.cost import CostModel, CostParams
from policies.queue import ReservedQueue
from policies.reclaim import ReclaimParams

NOW = datetime(2026, 3, 2, 12, tzinfo=UTC)
OD8 = Offering("aws", "us-west-2", "usw2-az1", "p3.16xlarge", "V100", 8, Market.ON_DEMAND, 24.48)
# the hold rule alone: preempting a reserved job for a queued one is policies/preempt.py's (test_preempt.py)
POLICY = BursterPolicy(CostModel(CostParams(spot_interruptions_per_hour=0.0)),
                       BursterParams(burst=BurstParams(prewarm=False, cost_trigger=False), preempt_onprem=False))


def snapshot(*, small_ends_min: tuple[float, float] = (30, 600), cloud_left_h: float = 10.0,
             pending: tuple[Demand, ...] = (), held_for: tuple[str, ...] = ()) -> Snapshot:
    """Two 8-GPU reserved nodes with 4 GPUs free each (8 free in all), each running a 4-GPU job
    (ending in ``small_ends_min``), and an 8-GPU job on an on-demand node with ``cloud_left_h`` to run."""
    pool = (PoolNode("onprem-0", "V100", 8, 4, held_for), PoolNode("onprem-1", "V100", 8, 4))
    running = [Placement(Demand(f"small-{i}", 4, NOW - timedelta(hours=1), 3600 + end * 60, gpu_model="V100"),
                         (f"onprem-{i}",), NOW - timedelta(hours=1), False, Market.RESERVED)
               for i, end in enumerate(small_ends_min)]
    big = Demand("big", 8, NOW - timedelta(hours=1), (1 + cloud_left_h) * 3600, gpu_model="V100")
    running.append(Placement(big, ("n1",), NOW - timedelta(hours=1), True, Market.ON_DEMAND, OD8.price_per_hour_usd))
    node = Node("n1", OD8, NodeState.READY, NOW - timedelta(hours=1), "rq", job_id="big")
    return Snapshot(NOW, pending, tuple(running), pool, (node,), (OD8,))


def holds(snap: Snapshot, policy: BursterPolicy = POLICY) -> list[Hold]:
    return [a for a in policy.decide(snap).actions if isinstance(a, Hold)]


def test_the_node_that_empties_first_is_held_for_a_long_cloud_job_that_fits_no_node() -> None:
    got = holds(snapshot())
    assert [(h.node_id, h.job_id) for h in got] == [("onprem-0", "big")]
    assert got[0].until == NOW + timedelta(minutes=30, seconds=900)  # empties in 30 min, then a grace
    assert "ends in 30 min" in got[0].reason


def test_no_hold_when_the_node_empties_too_late_to_pay() -> None:
    # 9 h 50 min of held GPUs against 10 min of cloud saved
    assert holds(snapshot(small_ends_min=(590, 600))) == []
    # and none when the node empties after the cloud job ends
    assert holds(snapshot(small_ends_min=(700, 800))) == []


def test_no_hold_when_the_free_gpus_are_owed_to_a_job_queued_ahead() -> None:
    head = Demand("head", 8, NOW - timedelta(hours=3), 3600, gpu_model="V100")
    assert holds(snapshot(pending=(head,))) == []


def test_no_hold_when_turned_off() -> None:
    off = BursterPolicy(POLICY.cost, replace(POLICY.params, reclaim=ReclaimParams(hold_nodes=False)))
    assert holds(snapshot(), off) == []


def test_a_job_holding_a_node_is_not_held_for_again_and_moves_once_the_node_has_room() -> None:
    waiting = snapshot(held_for=("big",))
    assert holds(waiting) == []
    assert not any(isinstance(a, Checkpoint) for a in POLICY.decide(waiting).actions)  # 4 of 8 free
    emptied = replace(waiting, pool_nodes=(PoolNode("onprem-0", "V100", 8, 8, ("big",)), waiting.pool_nodes[1]),
                      running=waiting.running[1:])
    moves = [a for a in POLICY.decide(emptied).actions if isinstance(a, Checkpoint)]
    assert [(a.node_id, a.job_id) for a in moves] == [("n1", "big")]
    assert "held for job big" in moves[0].reason


def test_a_held_nodes_free_gpus_are_nobody_elses() -> None:
    # the held node's 4 free GPUs do not count as room for a queued 4-GPU job; the other node is full
    queued = Demand("q", 4, NOW, 3600, gpu_model="V100")
    snap = snapshot(held_for=("big",), pending=(queued,))
    full = replace(snap, pool_nodes=(snap.pool_nodes[0], PoolNode("onprem-1", "V100", 8, 0)))
    queue = ReservedQueue(NOW, full.pool_nodes, full.running)
    assert queue.free_gpus("V100") == 0
    assert queue.expected_wait_s(queued) == 30 * 60  # until small-0 ends on the held node
    unheld = replace(full, pool_nodes=(PoolNode("onprem-0", "V100", 8, 4), full.pool_nodes[1]))
    assert ReservedQueue(NOW, unheld.pool_nodes, unheld.running).expected_wait_s(queued) == 0


def test_one_plan_never_both_holds_a_node_and_moves_another_job_back_onto_it() -> None:
    # onprem-0: 4 free, its 4-GPU job ends in 20 min; onprem-1 and -2: 2 free each, long jobs. The
    # 8-GPU cloud job gets onprem-0 held (holds come first); the 4-GPU one, which would fit onprem-0
    # now and keep it from ever having room for the 8-GPU one, stays on the cloud
    def on_prem(name: str, gpus: int, node: str, left_min: float) -> Placement:
        job = Demand(name, gpus, NOW - timedelta(hours=1), 3600 + left_min * 60, gpu_model="V100")
        return Placement(job, (node,), NOW - timedelta(hours=1), False, Market.RESERVED)

    od4 = replace(OD8, instance_type="p3.8xlarge", gpus_per_node=4, price_per_hour_usd=12.24)
    pool = (PoolNode("onprem-0", "V100", 8, 4), PoolNode("onprem-1", "V100", 8, 2), PoolNode("onprem-2", "V100", 8, 2))
    big = Demand("big", 8, NOW - timedelta(hours=1), 11 * 3600, gpu_model="V100")
    x = Demand("x", 4, NOW - timedelta(hours=1), 11 * 3600, gpu_model="V100")
    running = (on_prem("s0", 4, "onprem-0", 20), on_prem("s1", 6, "onprem-1", 6000),
               on_prem("s2", 6, "onprem-2", 6000),
               Placement(big, ("n1",), NOW - timedelta(hours=1), True, Market.ON_DEMAND, OD8.price_per_hour_usd),
               Placement(x, ("n2",), NOW - timedelta(hours=1), True, Market.ON_DEMAND, od4.price_per_hour_usd))
    nodes = (Node("n1", OD8, NodeState.READY, NOW - timedelta(hours=1), "rq", job_id="big"),
             Node("n2", od4, NodeState.READY, NOW - timedelta(hours=1), "rq2", job_id="x"))
    plan = POLICY.decide(Snapshot(NOW, (), running, pool, nodes, (OD8, od4)))
    assert [(a.node_id, a.job_id) for a in plan.actions if isinstance(a, Hold)] == [("onprem-0", "big")]
    assert [a for a in plan.actions if isinstance(a, Checkpoint)] == []


def test_a_declined_hold_names_the_instant_it_would_pay() -> None:
    # 4 free GPUs idle for up to ~2 h on each node would cost more than what the move saves now,
    # less and less as the small job's end nears: the plan says when to look again
    snap = snapshot(small_ends_min=(150, 600), cloud_left_h=3.5)
    plan = POLICY.decide(snap)
    assert not any(isinstance(a, Hold) for a in plan.actions)
    assert plan.quiet_until is not None and NOW < plan.quiet_until < NOW + timedelta(minutes=150)
    assert [h.node_id for h in holds(_aged(snap, plan.quiet_until + timedelta(seconds=1)))] == ["onprem-0"]
    assert holds(_aged(snap, plan.quiet_until - timedelta(seconds=1))) == []


def _aged(snap: Snapshot, now: datetime) -> Snapshot:
    """``snap`` seen at ``now``: the same runs (their ends fixed), nothing else changed."""
    return replace(snap, now=now)


@st.composite
def fragmented(draw: st.DrawFn) -> Snapshot:
    """Reserved nodes part-filled by small jobs ending at random times, 8-GPU cloud jobs, and a few
    jobs queued before them."""
    pool, running = [], []
    for i in range(draw(st.integers(1, 6))):
        used = 0
        for k in range(draw(st.integers(0, 3))):
            gpus = draw(st.integers(1, 8 - used)) if used < 8 else 0
            if gpus:
                left_min = draw(st.floats(1, 6 * 60))
                job = Demand(f"s{i}-{k}", gpus, NOW - timedelta(hours=1), 3600 + left_min * 60, gpu_model="V100")
                running.append(Placement(job, (f"onprem-{i}",), NOW - timedelta(hours=1), False, Market.RESERVED))
                used += gpus
        pool.append(PoolNode(f"onprem-{i}", "V100", 8, 8 - used))
    nodes = []
    for c in range(draw(st.integers(1, 3))):
        gang = draw(st.integers(1, 2))
        big = Demand(f"big{c}", 8 * gang, NOW - timedelta(hours=1), 3600 + draw(st.floats(0.5, 48)) * 3600,
                     gpu_model="V100", nodes=gang)
        ids = tuple(f"n{c}-{g}" for g in range(gang))
        price = OD8.price_per_hour_usd * gang
        running.append(Placement(big, ids, NOW - timedelta(hours=1), True, Market.ON_DEMAND, price))
        nodes += [Node(i, OD8, NodeState.READY, NOW - timedelta(hours=1), "rq", job_id=big.job_id) for i in ids]
    # queued jobs submitted before every cloud job: in a FIFO pool all of them are ahead of it
    pending = tuple(Demand(f"q{k}", draw(st.integers(1, 8)), NOW - timedelta(hours=2), 3600.0, gpu_model="V100")
                    for k in range(draw(st.integers(0, 2))))
    return Snapshot(NOW, pending, tuple(running), tuple(pool), tuple(nodes), (OD8,))


@settings(max_examples=200, deadline=None)
@given(fragmented())
def test_holds_reserve_the_nodes_that_have_room_soonest_for_whole_gangs(snap: Snapshot) -> None:
    plan = POLICY.decide(snap)
    holds = [a for a in plan.actions if isinstance(a, Hold)]
    moved = {a.job_id for a in plan.actions if isinstance(a, Checkpoint)}
    assert len({h.node_id for h in holds}) == len(holds)
    cloud = {p.job.job_id: p.job for p in snap.running if p.on_cloud}
    free = {n.node_id: n.free_gpus for n in snap.pool_nodes}
    for job_id in moved:  # a move back holds the nodes it was fitted to from now, one per gang member
        mine = [h for h in holds if h.job_id == job_id]
        assert len(mine) == cloud[job_id].nodes and all(h.start_at == NOW for h in mine)
        assert all(free[h.node_id] >= cloud[job_id].gpus_per_node for h in mine)
    got = [h for h in holds if h.job_id not in moved]  # the holds for jobs that cannot move yet
    by_job: dict[str, list[Hold]] = {}
    for h in got:
        by_job.setdefault(h.job_id, []).append(h)
    for job_id, hs in by_job.items():
        job = cloud[job_id]
        assert len(hs) == job.nodes  # the whole gang or nothing
        assert len({h.start_at for h in hs}) == 1 and hs[0].start_at > NOW
        # only when the free GPUs would cover it, or (fewer free than it needs yet) no pending job is
        # owed them as they free, and no node left unheld (nor taken by a move back in this plan)
        # has room for it now
        held = {h.node_id for h in got}
        landing = sum(cloud[j].nodes for j in moved)
        if sum(free.values()) >= job.gpus:
            assert sum(free.values()) - sum(q.gpus for q in snap.pending) >= job.gpus  # not owed to the queue
        else:
            assert not snap.pending
        assert sum(f >= 8 for node, f in free.items() if node not in held) - landing < job.nodes
        for h in hs:  # each held node has room for a gang member once the hold starts
            freed = sum(p.job.gpus for p in snap.running if not p.on_cloud and h.node_id in p.node_ids
                        and p.ends_at_ts <= h.start_at.timestamp() + 1e-6)
            assert free[h.node_id] + freed >= job.gpus_per_node


def _gang_on_cloud(*, pending: tuple[Demand, ...] = (), ratios: tuple[float, ...] = ()) -> Snapshot:
    """The two reserved nodes of ``snapshot`` (4 of 8 GPUs free each, small jobs ending in 30 and
    60 min), and a 16-GPU gang on two on-demand nodes with 10 h to run: fewer GPUs free (8) than
    it needs."""
    base = snapshot(small_ends_min=(30, 60), pending=pending)
    gang = Demand("gang", 16, NOW - timedelta(hours=1), 11 * 3600, nodes=2, gpu_model="V100")
    nodes = tuple(Node(f"g{i}", OD8, NodeState.READY, NOW - timedelta(hours=1), "rq", job_id="gang") for i in (1, 2))
    running = (*base.running[:2], Placement(gang, ("g1", "g2"), NOW - timedelta(hours=1), True, Market.ON_DEMAND,
                                            2 * OD8.price_per_hour_usd))
    return replace(base, running=running, cloud_nodes=nodes, runtime_ratios=ratios)


def test_a_gang_is_held_for_before_the_free_gpus_cover_it_when_nobody_waits_and_estimates_hold() -> None:
    """A gang on a busy pool rarely sees all its GPUs free at once: the rule used to plan no hold
    until they were, and the demo week's 16-GPU strict job rode spot for two days ($356.78; $61.95
    held for)."""
    got = holds(_gang_on_cloud())
    assert sorted((h.node_id, h.job_id) for h in got) == [("onprem-0", "gang"), ("onprem-1", "gang")]
    assert {h.start_at for h in got} == {NOW + timedelta(minutes=60)}  # when both have room


def test_no_such_hold_with_a_job_waiting_or_with_estimates_that_run_long() -> None:
    head = Demand("head", 4, NOW - timedelta(hours=3), 3600, gpu_model="V100")
    assert holds(_gang_on_cloud(pending=(head,))) == []
    # finished jobs ran up to 2.5x their estimates: ends cannot be planned on (with the estimates
    # uncorrected; corrected, the ratios left are what decides)
    uncorrected = BursterPolicy(POLICY.cost, replace(POLICY.params, correct_estimates=False))
    assert holds(_gang_on_cloud(ratios=(0.4, 2.5) * 20), uncorrected) == []
    assert len(holds(_gang_on_cloud(ratios=(1.0,) * 40), uncorrected)) == 2
