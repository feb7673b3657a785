"""Move-back decisions on hand-built snapshots: free reserved GPUs, and who has first claim on them."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from burster.lifecycle import NodeState
from burster.model import Demand, JobClass, Market, Node, Offering, Placement, PoolNode, Requeue, Snapshot
from burster.plan import Checkpoint, Hold, Launch, Terminate
from policies.burst import BurstParams
from policies.burster import BursterParams, BursterPolicy
from policies.cost import CostModel, CostParams
from policies.guards import GuardParams
from policies.rank import start_by
from policies.reclaim import ReclaimParams, idle_ttl

NOW = datetime(2026, 3, 2, 12, tzinfo=UTC)
OD = Offering("aws", "us-west-2", "usw2-az1", "p3.2xlarge", "V100", 1, Market.ON_DEMAND, 3.06)
POLICY = BursterPolicy(CostModel(CostParams(spot_interruptions_per_hour=0.0)),
                       BursterParams(burst=BurstParams(prewarm=False, cost_trigger=False)))


def snapshot(pending: tuple[Demand, ...]) -> Snapshot:
    """Two 8-GPU on-prem nodes with 1 GPU free, and one 1-GPU job with 5 h left on an on-demand node."""
    pool = (PoolNode("onprem-0", "V100", 8, 1), PoolNode("onprem-1", "V100", 8, 0))
    hog = Demand("hog", 15, NOW - timedelta(hours=1), 3600 + 1800, gpu_model="V100", nodes=2)
    cloud_job = Demand("cj", 1, NOW - timedelta(hours=1), 6 * 3600, gpu_model="V100")
    running = (
        Placement(hog, ("onprem-0", "onprem-1"), NOW - timedelta(hours=1), False, Market.RESERVED),
        Placement(cloud_job, ("n1",), NOW - timedelta(hours=1), True, Market.ON_DEMAND, OD.price_per_hour_usd),
    )
    node = Node("n1", OD, NodeState.READY, NOW - timedelta(hours=1), "rq", job_id="cj")
    return Snapshot(NOW, pending, running, pool, (node,), (OD,))


def moved(plan_actions: tuple[object, ...]) -> list[str]:
    return [a.job_id for a in plan_actions if isinstance(a, Checkpoint)]


def test_a_cloud_job_moves_back_onto_free_reserved_gpus_nobody_waits_for() -> None:
    plan = POLICY.decide(snapshot(()))
    assert moved(plan.actions) == ["cj"]
    assert "move job cj back on-prem" in plan.actions[0].reason  # type: ignore[attr-defined]
    # the node it was fitted to is held for it while it checkpoints, so the pool cannot give the
    # free GPU away in that minute; the hold runs out a boot after the checkpoint's deadline
    (checkpoint,) = [a for a in plan.actions if isinstance(a, Checkpoint)]
    (hold,) = [a for a in plan.actions if isinstance(a, Hold)]
    assert (hold.node_id, hold.job_id, hold.start_at) == ("onprem-0", "cj", NOW)
    assert hold.until == checkpoint.deadline + timedelta(seconds=POLICY.cost.p.launch_latency_s)


def policy(requeue: Requeue) -> BursterPolicy:
    return BursterPolicy(POLICY.cost, replace(POLICY.params, reclaim=ReclaimParams(requeue=requeue)))


@pytest.mark.parametrize("requeue", list(Requeue))
def test_free_gpus_owed_to_an_earlier_queued_job_are_not_spare(requeue: Requeue) -> None:
    # a 16-GPU job submitted before the cloud job waits for the hog (30 min): the free GPU is its,
    # and the cloud job (5 h left) would not end before the head starts, so no backfill either
    head = Demand("head", 16, NOW - timedelta(hours=2), 4 * 3600, gpu_model="V100", nodes=2)
    assert moved(policy(requeue).decide(snapshot((head,))).actions) == []


@pytest.mark.parametrize("requeue", list(Requeue))
def test_a_job_the_pools_backfill_would_start_moves_back_behind_a_blocked_head(requeue: Requeue) -> None:
    # EASY backfill: behind a head that waits for the hog, a job starts now if it ends before the
    # head's reserved start (30 min) or fits in what the head leaves spare then
    whole = Demand("head", 16, NOW - timedelta(hours=2), 4 * 3600, gpu_model="V100", nodes=2)
    short = _with_cloud_job(snapshot((whole,)), hours_left=20 / 60)  # 20 min + a 5 min restart: fits
    assert moved(policy(requeue).decide(short).actions) == ["cj"]
    half = Demand("head", 8, NOW - timedelta(hours=2), 4 * 3600, gpu_model="V100")
    assert moved(policy(requeue).decide(snapshot((half,))).actions) == ["cj"]  # 8 spare at 30 min


def _with_cloud_job(snap: Snapshot, *, hours_left: float) -> Snapshot:
    """``snap`` with its cloud job replaced by one started an hour ago with ``hours_left`` to run."""
    cj = Demand("cj", 1, NOW - timedelta(hours=1), (1 + hours_left) * 3600, gpu_model="V100")
    running = (snap.running[0], Placement(cj, ("n1",), NOW - timedelta(hours=1), True, Market.ON_DEMAND,
                                          OD.price_per_hour_usd))
    return replace(snap, running=running)


@pytest.mark.parametrize(("requeue", "expected"), [(Requeue.SUBMISSION, ["cj"]), (Requeue.BACK, [])])
def test_a_later_queued_job_blocks_a_move_only_when_the_pool_requeues_at_the_back(
        requeue: Requeue, expected: list[str]) -> None:
    # the cloud job was submitted an hour before the queued one: requeued by submission time, it is
    # ahead of it and may take the free GPU; requeued at the back, it would wait behind it
    later = Demand("later", 16, NOW - timedelta(minutes=1), 4 * 3600, gpu_model="V100", nodes=2)
    assert moved(policy(requeue).decide(snapshot((later,))).actions) == expected


@pytest.mark.parametrize("requeue", list(Requeue))
@pytest.mark.parametrize(("deadline_h", "expected"), [(None, ["cj"]), (4.5, [])])
def test_in_a_ranked_pool_who_is_ahead_goes_by_start_by(requeue: Requeue, deadline_h: float | None,
                                                        expected: list[str]) -> None:
    # the pool ranks by start-by (and ranks a requeued job again, whatever ``requeue`` says). The
    # cloud job's is submission + budget 1.5 h = in 30 min. A 4 h job queued a minute ago starts by
    # +59 min: behind it. With a deadline in 4.5 h, it must start within 15 min: ahead of it
    cost, params = POLICY.cost, POLICY.params.burst
    deadline = None if deadline_h is None else NOW + timedelta(hours=deadline_h)
    later = Demand("later", 16, NOW - timedelta(minutes=1), 4 * 3600, gpu_model="V100", nodes=2,
                   deadline=deadline, job_class=JobClass.STRICT if deadline else JobClass.BEST_EFFORT)
    snap = snapshot((replace(later, start_by=start_by(later, cost, params)),))
    ranked = tuple(replace(p, job=replace(p.job, start_by=start_by(p.job, cost, params))) for p in snap.running)
    assert moved(policy(requeue).decide(replace(snap, running=ranked)).actions) == expected


@pytest.mark.parametrize("requeue", list(Requeue))
@pytest.mark.parametrize("submitted_ago", [timedelta(hours=3), timedelta(minutes=30)])
def test_a_job_already_leaving_the_cloud_has_first_claim(requeue: Requeue, submitted_ago: timedelta) -> None:
    # a 1-GPU cloud job is checkpointing on its way back: the one free GPU is owed to it, whether it
    # was submitted before the cloud job "cj" or after it (a submission-order requeue would put "cj"
    # ahead of it, take the GPU, and send the leaving job back to the cloud after its checkpoint)
    snap = snapshot(())
    leaving_job = Demand("leaving", 1, NOW - submitted_ago, 6 * 3600, gpu_model="V100")
    leaving = Node("n0", OD, NodeState.CHECKPOINTING, NOW - submitted_ago, "rq0", job_id="leaving")
    running = (*snap.running, Placement(leaving_job, ("n0",), NOW - submitted_ago, True, Market.ON_DEMAND,
                                        OD.price_per_hour_usd))
    busy = Snapshot(NOW, (), running, snap.pool_nodes, (leaving, *snap.cloud_nodes), snap.offerings)
    assert moved(policy(requeue).decide(busy).actions) == []


def test_a_job_is_not_moved_back_onto_gpus_scattered_over_nodes() -> None:
    # 2 GPUs free in all, one on each node: a 2-GPU single-node job cannot run there
    snap = snapshot(())
    pool = (PoolNode("onprem-0", "V100", 8, 1), PoolNode("onprem-1", "V100", 8, 1))
    two = Demand("cj", 2, NOW - timedelta(hours=1), 6 * 3600, gpu_model="V100")
    running = (snap.running[0], Placement(two, ("n1",), NOW - timedelta(hours=1), True, Market.ON_DEMAND, 6.12))
    scattered = Snapshot(NOW, (), running, pool, snap.cloud_nodes, snap.offerings)
    assert moved(POLICY.decide(scattered).actions) == []


def _cloud(job_id: str, gpus: int, *, state: NodeState = NodeState.READY,
           submitted_h_ago: float = 2.0) -> tuple[Placement, Node]:
    job = Demand(job_id, gpus, NOW - timedelta(hours=submitted_h_ago), 8 * 3600, gpu_model="V100")
    node = Node(f"n-{job_id}", OD, state, NOW - timedelta(hours=1), f"rq-{job_id}", job_id=job_id)
    return Placement(job, (node.node_id,), NOW - timedelta(hours=1), True, Market.ON_DEMAND, 3.06 * gpus), node


def test_a_leaving_job_is_counted_on_the_node_it_will_land_on_not_only_in_the_total() -> None:
    # 16 GPUs free: 8 on one node, 4 and 4 on two others. An 8-GPU job leaving the cloud will take
    # the 8; the 8-GPU cloud job "c" would not fit the 4 + 4 left, though 16 - 8 = 8 GPUs are free
    pool = (PoolNode("p0", "V100", 8, 8), PoolNode("p1", "V100", 8, 4), PoolNode("p2", "V100", 8, 4))
    leaving, ln = _cloud("leaving", 8, state=NodeState.CHECKPOINTING, submitted_h_ago=1.0)
    c, cn = _cloud("c", 8)
    snap = Snapshot(NOW, (), (leaving, c), pool, (ln, cn), (OD,))
    assert moved(POLICY.decide(snap).actions) == []
    alone = Snapshot(NOW, (), (c,), pool, (cn,), (OD,))
    assert moved(POLICY.decide(alone).actions) == ["c"]


def test_a_job_moving_to_cloud_nodes_launched_for_it_has_no_claim_on_reserved_gpus() -> None:
    # "m" is checkpointing to move onto a cheaper node already up for it: the pool will start it
    # there, so the one free reserved GPU is the cloud job "c"'s
    pool = (PoolNode("p0", "V100", 8, 1),)
    m, mn = _cloud("m", 1, state=NodeState.CHECKPOINTING, submitted_h_ago=3.0)
    new = Node("n-new", OD, NodeState.READY, NOW, "rq-move", for_job="m", idle_since=NOW)
    c, cn = _cloud("c", 1)
    snap = Snapshot(NOW, (), (m, c), pool, (mn, new, cn), (OD,))
    assert moved(POLICY.decide(snap).actions) == ["c"]


@pytest.mark.parametrize(("slack_s", "expected"), [(600.0, []), (3 * 3600.0, ["cj"]), (-60.0, ["cj"])])
def test_a_deadline_job_moves_back_only_if_its_slack_keeps_the_margin_after_the_pause(
        slack_s: float, expected: list[str]) -> None:
    # the pause is the checkpoint write and the restart; a job late by its estimate has no deadline to keep
    snap = snapshot(())
    p = snap.running[1]
    job = replace(p.job, job_class=JobClass.STRICT,
                  deadline=NOW + timedelta(seconds=p.remaining_s(NOW) + slack_s))
    tight = replace(snap, running=(snap.running[0], replace(p, job=job)))
    assert moved(POLICY.decide(tight).actions) == expected


SPOT = Offering("aws", "us-west-2", "usw2-az1", "p3.2xlarge", "V100", 1, Market.SPOT, 0.92)


def late_on_spot(*, switching: bool = False) -> Snapshot:
    """``snapshot``'s cloud job on spot, strict, due in 1 h with 5 h left: behind schedule (a switch
    to on-demand) and late by its estimate (so it may move back). ``switching``: its on-demand node,
    launched by an earlier switch, is up."""
    snap = snapshot(())
    p = snap.running[1]
    job = replace(p.job, job_class=JobClass.STRICT, deadline=NOW + timedelta(hours=1))
    placed = replace(p, job=job, market=Market.SPOT, price_per_hour_usd=SPOT.price_per_hour_usd)
    nodes = (replace(snap.cloud_nodes[0], offering=SPOT),)
    if switching:
        nodes += (Node("n2", OD, NodeState.READY, NOW - timedelta(minutes=5), "rq2", for_job="cj"),)
    return replace(snap, running=(snap.running[0], placed), cloud_nodes=nodes, offerings=(SPOT, OD))


def test_a_late_job_moving_back_is_not_also_switched_to_on_demand() -> None:
    """Behind schedule on spot and late by its estimate: it moves back on-prem (cheaper, no slower),
    and no on-demand node is launched for it in the same pass (it would only idle)."""
    plan = POLICY.decide(late_on_spot())
    assert moved(plan.actions) == ["cj"] and "back on-prem" in plan.actions[-2].reason  # type: ignore[attr-defined]
    assert [a.node_id for a in plan.actions if isinstance(a, Hold)] == ["onprem-0"]
    assert not [a for a in plan.actions if isinstance(a, Launch)]
    trusting = BursterPolicy(POLICY.cost, replace(POLICY.params, reclaim=ReclaimParams(move_back=False)))
    (switch,) = [a for a in trusting.decide(late_on_spot()).actions if isinstance(a, Launch)]
    assert switch.job_id == "cj" and switch.offering == OD  # what the move back replaces


def test_a_job_leaving_for_its_on_demand_node_gets_no_reserved_node_held() -> None:
    """The switch's on-demand node is up: the switch checkpoints the job to move it there, so the
    move back is displaced, and with it the hold on the reserved node (it would idle for minutes)."""
    plan = POLICY.decide(late_on_spot(switching=True))
    (checkpoint,) = [a for a in plan.actions if isinstance(a, Checkpoint)]
    assert checkpoint.job_id == "cj" and "its on-demand nodes are up" in checkpoint.reason
    assert not [a for a in plan.actions if isinstance(a, Hold)]


def _unjoined(state: NodeState, age_s: float, *, job_pending: bool = True, provider_degraded: bool = False) -> Snapshot:
    """A node launched ``age_s`` ago for job ``w``, which has not started on it."""
    w = Demand("w", 1, NOW - timedelta(hours=1), 3600.0, gpu_model="V100")
    n = Node("n9", OD, state, NOW - timedelta(seconds=age_s), "rq", for_job="w",
             idle_since=NOW - timedelta(seconds=min(age_s, 200.0)) if state is NodeState.READY else None)
    pool = (PoolNode("onprem-0", "V100", 8, 0),)
    hog = Placement(Demand("hog", 8, NOW - timedelta(hours=1), 9 * 3600, gpu_model="V100"), ("onprem-0",),
                    NOW - timedelta(hours=1), False, Market.RESERVED)
    return Snapshot(NOW, (w,) if job_pending else (), (hog,), pool, (n,), (OD,),
                    degraded_providers=frozenset({"aws"}) if provider_degraded else frozenset())


@pytest.mark.parametrize("state", [NodeState.LAUNCHING, NodeState.JOINING, NodeState.READY])
def test_a_node_whose_job_has_not_started_on_it_by_the_join_timeout_goes(state: NodeState) -> None:
    assert not [a for a in POLICY.decide(_unjoined(state, 1199.0)).actions if isinstance(a, Terminate)]
    plan = POLICY.decide(_unjoined(state, 1200.0))
    (stop,) = [a for a in plan.actions if isinstance(a, Terminate)]
    assert stop.node_ids == ("n9",) and "launched 1200s ago for w, which has not started on it" in stop.reason
    assert "join timeout 1200s" in stop.reason and stop.never_joined  # (the reconciler blocks its offering)
    # its job left the queue (started elsewhere): not a join failure, the idle TTL's business
    assert not [a for a in POLICY.decide(_unjoined(state, 1200.0, job_pending=False)).actions
                if isinstance(a, Terminate) and ("join timeout" in a.reason or a.never_joined)]
    # a provider we cannot see well: nothing there is reclaimed
    assert not [a for a in POLICY.decide(_unjoined(state, 5000.0, provider_degraded=True)).actions
                if isinstance(a, Terminate)]
    shorter = BursterPolicy(POLICY.cost, replace(POLICY.params, reclaim=ReclaimParams(join_timeout_s=600.0)))
    assert [a for a in shorter.decide(_unjoined(state, 600.0)).actions if isinstance(a, Terminate)]


@pytest.mark.parametrize("exclusive", [True, False])
@pytest.mark.parametrize("idle_s", [300.0, 400.0])
def test_an_idle_node_past_its_ttl_that_a_job_takes_is_not_also_terminated(exclusive: bool, idle_s: float) -> None:
    """An idle node past its TTL that a bursting job takes (held for it if exclusive, the pool's to
    give if not) stays: ending it in the same plan would end the job's node (or leave the job
    counted on a node that goes). With no job to take it, it goes."""
    hog = Placement(Demand("hog", 8, NOW - timedelta(hours=1), 30 * 3600.0, gpu_model="V100"), ("onprem-0",),
                    NOW - timedelta(hours=1), False, Market.RESERVED)
    idle = Node("idle1", SPOT, NodeState.READY, NOW - timedelta(seconds=800), "q1", for_job="done1",
                idle_since=NOW - timedelta(seconds=idle_s), exclusive=exclusive)
    job = Demand("short", 1, NOW, 1800.0, gpu_model="V100")
    pool = (PoolNode("onprem-0", "V100", 8, 0),)
    plan = POLICY.decide(Snapshot(NOW, (job,), (hog,), pool, (idle,), (SPOT,)))
    assert not [a for a in plan.actions if isinstance(a, Terminate)]
    assert not plan.launches  # the idle node is the job's
    if exclusive:
        (hold,) = [a for a in plan.actions if isinstance(a, Hold)]
        assert (hold.node_id, hold.job_id) == ("idle1", "short")
    alone = POLICY.decide(Snapshot(NOW, (), (hog,), pool, (idle,), (SPOT,)))
    assert [a.node_ids for a in alone.actions if isinstance(a, Terminate)] == [("idle1",)]


@pytest.mark.parametrize("how", ["node", "guards"])
@pytest.mark.parametrize("gang", [True, False])
def test_a_job_on_a_protected_node_is_not_moved_back_nor_held_for(how: str, gang: bool) -> None:
    """A protected node may not be checkpointed: a gang with one protected node is not stopped
    through its other node, and no reserved node is held for a move that cannot happen (the guards
    refused only the protected node's own checkpoint). Unprotected, the same job moves back."""
    od4 = Offering("aws", "us-west-2", "usw2-az1", "p3.8xlarge", "V100", 4, Market.ON_DEMAND, 12.0)
    ids = ("c1", "c2") if gang else ("c2",)
    job = Demand("j", 4 * len(ids), NOW - timedelta(hours=1), 10 * 3600.0, nodes=len(ids), gpu_model="V100")
    place = Placement(job, ids, NOW - timedelta(minutes=50), True, Market.ON_DEMAND, 12.0 * len(ids))
    pool = (PoolNode("onprem-0", "V100", 8, 8), PoolNode("onprem-1", "V100", 8, 8))

    def decide(protect: bool) -> tuple[list[object], list[object]]:
        nodes = tuple(Node(i, od4, NodeState.READY, NOW - timedelta(hours=1), "r", job_id="j", for_job="j",
                           protected=protect and how == "node" and i == "c2") for i in ids)
        guards = GuardParams(protected_node_ids=frozenset({"c2"} if protect and how == "guards" else ()))
        policy = BursterPolicy(POLICY.cost, replace(POLICY.params, guards=guards))
        plan = policy.decide(Snapshot(NOW, (), (place,), pool, nodes, (od4,)))
        return [a for a in plan.actions if isinstance(a, Checkpoint | Hold)], list(plan.refused)

    moves, refused = decide(protect=False)
    assert not refused
    assert {a.node_id for a in moves if isinstance(a, Checkpoint)} == set(ids)
    assert decide(protect=True) == ([], [])


AZURE = Offering("azure", "eastus", "eastus-1", "NC6", "V100", 1, Market.ON_DEMAND, 3.0)


@pytest.mark.parametrize(("offering", "idle_s", "run_s"), [
    (OD, 300.0, 3600.0),  # per-second billing: the TTL is the boundary
    (AZURE, 3600.0, 3650.0),  # per-minute billing, long past the TTL: the last tick (10 s) of a billed minute
])
def test_an_idle_node_goes_at_its_ttl_and_billing_point_not_a_moment_before(
        offering: Offering, idle_s: float, run_s: float) -> None:
    """Seen 1 ms before the boundary the node is kept, at it the node goes: pins the idle rule's
    comparisons against firing early (or late)."""
    node = Node("n1", offering, NodeState.READY, NOW - timedelta(seconds=run_s), "rq",
                idle_since=NOW - timedelta(seconds=idle_s))
    params = ReclaimParams(idle_ttl_s=300.0, tick_s=10.0)

    def reclaimed(now: datetime) -> list[tuple[str, ...]]:
        snap = Snapshot(now, (), (), (), (node,), (offering,))
        return [a.node_ids for a in idle_ttl(snap, params) if isinstance(a, Terminate)]

    assert reclaimed(NOW - timedelta(milliseconds=1)) == []
    assert reclaimed(NOW) == [("n1",)]
