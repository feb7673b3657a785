"""Rules of move-back (policies/reclaim.py) that a mutation audit found unpinned:
a pending job submitted in the same second is ahead of a requeued one; the pool's EASY backfill
(its head is the first job not bound for its own booting nodes, a run ending exactly at the head's
start or fitting exactly its spare GPUs backfills, each backfilled job uses up spare GPUs, one that
cannot start uses none); moves go most expensive first and take their GPUs off the free ones; a
best-effort job's deadline, and a deadline met with no slack to spare; a draining job's claim; a
node held for another job. And the two bugs it found in the backfill's spare: a job that passed
the check but did not move took spare GPUs, and moves within the free GPUs did not."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from burster.lifecycle import NodeState
from burster.model import Demand, JobClass, Market, Node, Offering, Placement, PoolNode, Requeue, Snapshot
from burster.plan import Checkpoint, Hold
from policies.cost import CostModel, CostParams
from policies.queue import ReservedQueue
from policies.reclaim import move_back

NOW = datetime(2026, 3, 2, 12, tzinfo=UTC)
OD = Offering("aws", "us-west-2", "usw2-az1", "p3.2xlarge", "V100", 1, Market.ON_DEMAND, 3.06)
COST = CostModel(CostParams(spot_interruptions_per_hour=0.0))
SUBMITTED = NOW - timedelta(hours=1)


def snapshot(pending: tuple[Demand, ...] = (), cloud_nodes: tuple[Node, ...] = ()) -> Snapshot:
    """Two 8-GPU reserved nodes with 1 GPU free, a 15-GPU job on them ending in 30 min, and a 1-GPU
    job submitted an hour ago with 5 h left on an on-demand node."""
    pool = (PoolNode("onprem-0", "V100", 8, 1), PoolNode("onprem-1", "V100", 8, 0))
    hog = Demand("hog", 15, SUBMITTED, 3600 + 1800, gpu_model="V100", nodes=2)
    cj = Demand("cj", 1, SUBMITTED, 6 * 3600, gpu_model="V100")
    running = (Placement(hog, ("onprem-0", "onprem-1"), SUBMITTED, False, Market.RESERVED),
               Placement(cj, ("n1",), SUBMITTED, True, Market.ON_DEMAND, OD.price_per_hour_usd))
    node = Node("n1", OD, NodeState.READY, SUBMITTED, "rq", job_id="cj")
    return Snapshot(NOW, pending, running, pool, (node, *cloud_nodes), (OD,))


def moved(snap: Snapshot, requeue: Requeue = Requeue.SUBMISSION) -> list[str]:
    queue = ReservedQueue(snap.now, snap.pool_nodes, snap.running)
    return [a.job_id for a in move_back(snap, COST, queue, requeue) if isinstance(a, Checkpoint)]


def test_a_pending_job_submitted_at_the_same_instant_is_ahead_of_a_requeued_one() -> None:
    """The pool puts a stopped job back after the jobs submitted no later than it (ties included):
    a blocked 16-GPU job submitted the same second as the cloud job is owed the free GPU."""
    tie = Demand("tie", 16, SUBMITTED, 4 * 3600, gpu_model="V100", nodes=2)
    assert moved(snapshot((tie,))) == []
    later = Demand("tie", 16, SUBMITTED + timedelta(seconds=1), 4 * 3600, gpu_model="V100", nodes=2)
    assert moved(snapshot((later,))) == ["cj"]


def test_the_backfill_head_is_the_first_queued_job_not_waiting_for_its_own_booting_nodes() -> None:
    """The pool gives a job whose burst nodes are booting to those nodes, not to its reserved
    queue: the blocked head that backfill works around is the next job. Behind an 8-GPU head, 8
    GPUs are spare when the 15-GPU job ends, so the 1-GPU cloud job backfills; behind the 16-GPU
    job booting on the cloud, none would be."""
    booting = Demand("b", 16, NOW - timedelta(hours=3), 4 * 3600, gpu_model="V100", nodes=2)
    head = Demand("h", 8, NOW - timedelta(hours=2), 4 * 3600, gpu_model="V100")
    on_its_way = Node("nb", OD, NodeState.LAUNCHING, NOW - timedelta(minutes=1), "rq-b", for_job="b")
    assert moved(snapshot((booting, head), (on_its_way,))) == ["cj"]
    assert moved(snapshot((booting, head))) == []  # "b" is the head: 0 GPUs spare at its start


def behind_a_blocked_head(head_gpus: int, *cloud: tuple[str, float, float] | tuple[str, float, float, int]) -> Snapshot:
    """One 8-GPU reserved node with 2 GPUs free and a 6-GPU job on it ending in 30 min; a head of
    ``head_gpus`` queued before everything (blocked until then); ``cloud``: (id, price/h, hours
    left[, GPUs: 1]) of jobs on on-demand nodes."""
    pool = (PoolNode("onprem-0", "V100", 8, 2),)
    six = Demand("six", 6, SUBMITTED, 3600 + 1800, gpu_model="V100")
    head = Demand("head", head_gpus, NOW - timedelta(hours=3), 4 * 3600, gpu_model="V100")
    running = [Placement(six, ("onprem-0",), SUBMITTED, False, Market.RESERVED)]
    nodes = []
    for job_id, price, hours_left, *gpus in cloud:
        job = Demand(job_id, gpus[0] if gpus else 1, SUBMITTED, 3600 + hours_left * 3600, gpu_model="V100")
        running.append(Placement(job, (f"n-{job_id}",), SUBMITTED, True, Market.ON_DEMAND, price))
        nodes.append(Node(f"n-{job_id}", OD, NodeState.READY, SUBMITTED, f"rq-{job_id}", job_id=job_id))
    return Snapshot(NOW, (head,), tuple(running), pool, tuple(nodes), (OD,))


def test_a_job_whose_restart_ends_exactly_at_the_heads_start_backfills() -> None:
    """EASY backfill starts a job that ends by the head's reserved start (the pool: not past it);
    its run left plus the restart (300 s) against the 30 min shadow, 0 GPUs spare then."""
    restart_h = COST.p.restart_overhead_s / 3600
    assert moved(behind_a_blocked_head(8, ("c", 3.06, 0.5 - restart_h))) == ["c"]
    assert moved(behind_a_blocked_head(8, ("c", 3.06, 0.5 - restart_h + 1 / 3600))) == []


def test_a_long_job_that_fits_exactly_the_heads_spare_gpus_moves_back() -> None:
    """A 7-GPU head leaves 1 of the node's GPUs spare when it starts: a 1-GPU job running past the
    head's start fits exactly in it; an 8-GPU head leaves none."""
    assert moved(behind_a_blocked_head(7, ("c", 3.06, 5.0))) == ["c"]
    assert moved(behind_a_blocked_head(8, ("c", 3.06, 5.0))) == []


def test_each_job_backfilled_past_the_heads_start_takes_its_gpus_off_the_heads_spare() -> None:
    """Two 1-GPU jobs fit the 2 free GPUs now, but only one fits the 1 a 7-GPU head leaves spare:
    the dearer one moves back, the other stays on the cloud."""
    assert moved(behind_a_blocked_head(7, ("cheap", 3.06, 5.0), ("dear", 4.0, 5.0))) == ["dear"]


def with_deadline(snap: Snapshot, job_class: JobClass, slack_s: float,
                  price: float = OD.price_per_hour_usd) -> Snapshot:
    """``snap`` with its cloud job "cj" due ``slack_s`` after its estimated end, at ``price`` $/h."""
    hog, p = snap.running
    job = replace(p.job, job_class=job_class, deadline=NOW + timedelta(seconds=p.remaining_s(NOW) + slack_s))
    return replace(snap, running=(hog, replace(p, job=job, price_per_hour_usd=price)))


@pytest.mark.parametrize(("job_class", "expected"), [(JobClass.STRICT, []), (JobClass.SOFT, []),
                                                      (JobClass.BEST_EFFORT, ["cj"])])
def test_a_best_effort_jobs_deadline_does_not_keep_it_on_the_cloud(job_class: JobClass,
                                                                   expected: list[str]) -> None:
    """Ten minutes of slack is under the pause plus the margin: a strict or soft job stays; a
    best-effort job's deadline is no reason to keep it on the cloud."""
    assert moved(with_deadline(snapshot(), job_class, 600.0)) == expected


def test_a_deadline_job_due_exactly_at_its_estimated_end_is_not_late_and_stays() -> None:
    """No slack at all is not "late by its estimate" (those may move): the pause would make it late.
    At $200/h the 5 h left on the cloud ($1,000) would outweigh even the miss it prices ($500)."""
    assert moved(with_deadline(snapshot(), JobClass.STRICT, 0.0, price=200.0)) == []
    assert moved(with_deadline(snapshot(), JobClass.STRICT, -1.0, price=200.0)) == ["cj"]


def test_a_job_too_big_for_the_free_gpus_leaves_the_heads_spare_to_the_next() -> None:
    """A 4-GPU head waits for the 6-GPU job's end, 4 spare then. A dearer 3-GPU job does not fit
    the 2 GPUs free now, so it takes none of that spare: the 2-GPU job behind it moves back."""
    assert moved(behind_a_blocked_head(4, ("three", 9.0, 5.0, 3), ("two", 6.0, 5.0, 2))) == ["two"]


def test_most_expensive_first_and_each_move_takes_its_gpus_off_the_free_ones() -> None:
    """3 GPUs free on one node, 1 of them owed to a job queued ahead (its burst node booting, so no
    backfill head either): of three 1-GPU cloud jobs the two dearest move back, the third stays."""
    pool = (PoolNode("onprem-0", "V100", 8, 3),)
    five = Demand("five", 5, SUBMITTED, 11 * 3600, gpu_model="V100")
    ahead = Demand("ahead", 1, NOW - timedelta(hours=3), 3600, gpu_model="V100")
    running = [Placement(five, ("onprem-0",), SUBMITTED, False, Market.RESERVED)]
    nodes = [Node("n-ahead", OD, NodeState.LAUNCHING, NOW - timedelta(minutes=1), "rq-ahead", for_job="ahead")]
    for job_id, price in (("c3", 3.0), ("c5", 5.0), ("c4", 4.0)):
        job = Demand(job_id, 1, SUBMITTED, 6 * 3600, gpu_model="V100")
        running.append(Placement(job, (f"n-{job_id}",), SUBMITTED, True, Market.ON_DEMAND, price))
        nodes.append(Node(f"n-{job_id}", OD, NodeState.READY, SUBMITTED, f"rq-{job_id}", job_id=job_id))
    snap = Snapshot(NOW, (ahead,), tuple(running), pool, tuple(nodes), (OD,))
    assert moved(snap) == ["c5", "c4"]


def test_a_job_whose_cloud_node_is_draining_has_first_claim_like_one_checkpointing() -> None:
    """A 1-GPU cloud job on its way back (node draining after its checkpoint) is owed the one free
    GPU, so "cj" does not move into it."""
    leaving = Demand("leaving", 1, NOW - timedelta(minutes=30), 6 * 3600, gpu_model="V100")
    draining = Node("n0", OD, NodeState.DRAINING, NOW - timedelta(minutes=30), "rq0", job_id="leaving")
    snap = snapshot((), (draining,))
    place = Placement(leaving, ("n0",), NOW - timedelta(minutes=30), True, Market.ON_DEMAND, OD.price_per_hour_usd)
    assert moved(replace(snap, running=(*snap.running, place))) == []
    assert moved(snap) == ["cj"]


def test_a_node_held_for_another_job_takes_no_move_back() -> None:
    """2 GPUs free on two nodes (1 each) and 8 on a node held for another job: the 2-GPU cloud job
    fits no node that is not held, so it stays."""
    pool = (PoolNode("onprem-0", "V100", 8, 8, ("other",)), PoolNode("onprem-1", "V100", 8, 1),
            PoolNode("onprem-2", "V100", 8, 1))
    sevens = tuple(Placement(Demand(f"s{i}", 7, SUBMITTED, 11 * 3600, gpu_model="V100"), (f"onprem-{i}",),
                             SUBMITTED, False, Market.RESERVED) for i in (1, 2))
    two = Demand("two", 2, SUBMITTED, 6 * 3600, gpu_model="V100")
    place = Placement(two, ("n1",), SUBMITTED, True, Market.ON_DEMAND, 6.12)
    node = Node("n1", OD, NodeState.READY, SUBMITTED, "rq", job_id="two")
    snap = Snapshot(NOW, (), (*sevens, place), pool, (node,), (OD,))
    assert moved(snap) == []
    assert moved(replace(snap, pool_nodes=(PoolNode("onprem-0", "V100", 8, 8), *pool[1:]))) == ["two"]



def test_a_job_skipped_after_the_backfill_check_leaves_the_heads_spare_to_the_next() -> None:
    """Behind a 7-GPU head 1 GPU is spare. The dearer job passes the backfill check but is a strict
    deadline job too tight to pause, so it stays: the spare GPU is still there for the cheaper one
    (the check used to take it before the move was decided)."""
    snap = behind_a_blocked_head(7, ("cheap", 3.06, 5.0), ("dear", 4.0, 5.0))
    assert moved(snap) == ["dear"]
    run = list(snap.running)
    dear = run[2]
    run[2] = replace(dear, job=replace(dear.job, job_class=JobClass.STRICT,
                                       deadline=NOW + timedelta(seconds=dear.remaining_s(NOW) + 600)))
    assert moved(replace(snap, running=tuple(run))) == ["cheap"]


def test_moves_within_the_free_gpus_come_off_the_spare_a_later_backfill_counts_on() -> None:
    """3 GPUs free, 1 owed to a job queued before three 1-GPU cloud jobs: two move (dearest first);
    the third may not backfill into the owed GPU (the head's spare used to count GPUs those two
    moves had taken, so all three moved and one was stranded and burst again)."""
    pool = (PoolNode("onprem-0", "V100", 8, 3),)
    five = Demand("five", 5, SUBMITTED, 11 * 3600, gpu_model="V100")
    ahead = Demand("ahead", 1, NOW - timedelta(hours=3), 3600, gpu_model="V100")
    running = [Placement(five, ("onprem-0",), SUBMITTED, False, Market.RESERVED)]
    nodes = []
    for job_id, price in (("c3", 3.0), ("c5", 5.0), ("c4", 4.0)):
        job = Demand(job_id, 1, SUBMITTED, 6 * 3600, gpu_model="V100")
        running.append(Placement(job, (f"n-{job_id}",), SUBMITTED, True, Market.ON_DEMAND, price))
        nodes.append(Node(f"n-{job_id}", OD, NodeState.READY, SUBMITTED, f"rq-{job_id}", job_id=job_id))
    assert moved(Snapshot(NOW, (ahead,), tuple(running), pool, tuple(nodes), (OD,))) == ["c5", "c4"]


def test_a_move_backs_checkpoint_leaves_a_long_write_its_time_and_the_hold_lasts_past_it() -> None:
    """With 10-minute writes the move's checkpoint is due in 20 minutes (it was due after the 300 s
    restart overhead, and timed out), and the free GPU is held until then plus a boot."""
    slow = CostModel(replace(COST.p, checkpoint_write_s=600.0))
    snap = snapshot()
    actions = move_back(snap, slow, ReservedQueue(snap.now, snap.pool_nodes, snap.running), Requeue.SUBMISSION)
    (cp,) = [a for a in actions if isinstance(a, Checkpoint)]
    assert cp.job_id == "cj" and cp.deadline == NOW + timedelta(seconds=1200)
    (hold,) = [a for a in actions if isinstance(a, Hold)]
    assert hold.node_id == "onprem-0" and hold.until == NOW + timedelta(seconds=1200 + slow.p.launch_latency_s)


def test_a_late_job_due_sooner_than_the_pause_stays_until_its_deadline_passes() -> None:
    """Late by its estimate (5 h left) and due within the 360 s pause (60 s write + 300 s restart):
    the move would make it miss for certain, where staying meets its deadline if it ends sooner than
    believed (SLO day 2, sigma 0.5: a job moved back 340 s before its deadline missed by 20 s).
    Due in 361 s, or past due, a soft job moves; a strict one stays while due within the pause and
    the 900 s margin (once the world charged restarts their reload, strict jobs moved back 12 minutes
    before their deadlines missed: sigma 0.5, 49 -> 26 hard misses over the suite's 24 runs)."""
    left = snapshot().running[1].remaining_s(NOW)
    for due_in, expected in ((300.0, []), (360.0, []), (361.0, ["cj"]), (0.0, ["cj"]), (-1.0, ["cj"])):
        assert moved(with_deadline(snapshot(), JobClass.SOFT, due_in - left)) == expected, due_in
    for due_in, expected in ((360.0, []), (1260.0, []), (1261.0, ["cj"]), (0.0, ["cj"]), (-1.0, ["cj"])):
        assert moved(with_deadline(snapshot(), JobClass.STRICT, due_in - left)) == expected, due_in
