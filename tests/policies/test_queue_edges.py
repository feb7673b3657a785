"""Rules of the reserved queue's projection (policies/queue.py) that a mutation audit found
unpinned: a job with nodes held for it starts at the sooner of its held nodes and the queue, a
gang's held nodes have room once enough of them do, and a run past its estimate frees its GPUs now,
not in the past."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from burster.model import Demand, Market, Placement, PoolNode
from policies.queue import ReservedQueue

NOW = datetime(2026, 3, 2, 12, tzinfo=UTC)
STARTED = NOW - timedelta(hours=1)


def on_prem(job_id: str, gpus: int, node: str, left_min: float) -> Placement:
    job = Demand(job_id, gpus, STARTED, 3600 + left_min * 60, gpu_model="V100")
    return Placement(job, (node,), STARTED, False, Market.RESERVED)


HOLDER = Demand("h", 8, NOW - timedelta(minutes=10), 4 * 3600, gpu_model="V100")


def test_a_holder_waits_for_its_held_node_or_the_queue_whichever_starts_it_first() -> None:
    # its held node has room in an hour, but another node is free now: the pool starts it there
    held_later = (PoolNode("onprem-0", "V100", 8, 4, ("h",)), PoolNode("onprem-1", "V100", 8, 8))
    queue = ReservedQueue(NOW, held_later, (on_prem("s0", 4, "onprem-0", 60),))
    assert queue.held_room_s(HOLDER) == 3600
    assert queue.expected_wait_s(HOLDER) == 0
    # its held node is empty now; the queue alone would start it in 5 h
    held_now = (PoolNode("onprem-0", "V100", 8, 8, ("h",)), PoolNode("onprem-1", "V100", 8, 0))
    queue = ReservedQueue(NOW, held_now, (on_prem("s1", 8, "onprem-1", 300),))
    assert queue.expected_wait_s(HOLDER) == 0


def test_a_gangs_held_nodes_have_room_once_enough_of_them_do() -> None:
    """Three nodes held for a 2-node gang: room now, in 60 min, in 90 min: it fits in 60 min."""
    gang = Demand("h", 16, NOW - timedelta(minutes=10), 4 * 3600, nodes=2, gpu_model="V100")
    pool = (PoolNode("onprem-0", "V100", 8, 8, ("h",)), PoolNode("onprem-1", "V100", 8, 4, ("h",)),
            PoolNode("onprem-2", "V100", 8, 2, ("h",)))
    running = (on_prem("s1", 4, "onprem-1", 60), on_prem("s2", 6, "onprem-2", 90))
    assert ReservedQueue(NOW, pool, running).held_room_s(gang) == 3600
    assert ReservedQueue(NOW, pool, running).held_room_s(HOLDER) == 0  # a single node: the first
    assert ReservedQueue(NOW, pool[1:], running).held_room_s(gang) == 5400


def test_a_run_past_its_estimated_end_frees_its_gpus_now_not_in_the_past() -> None:
    """A job 1 h past its estimate counts as ending now: no wait comes out negative."""
    pool = (PoolNode("onprem-0", "V100", 8, 0, ("h",)), PoolNode("onprem-1", "V100", 8, 0))
    over = (on_prem("late0", 8, "onprem-0", -60), on_prem("late1", 8, "onprem-1", -60))
    queue = ReservedQueue(NOW, pool, over)
    assert queue.expected_wait_s(Demand("q", 8, NOW, 3600, gpu_model="V100")) == 0
    assert queue.held_room_s(HOLDER) == 0


def test_a_job_of_any_model_frees_gpus_of_the_model_it_runs_on() -> None:
    """A V100 node busy for 10 more minutes with a job of any model, beside two busy T4 nodes (the pool's
    largest model, which jobs of any model are projected onto): a V100 job waits those 10 minutes. The
    run's GPUs were counted as T4s, so no V100 ever freed and the V100 job was taken to wait forever."""
    pool = (PoolNode("v-0", "V100", 8, 0), PoolNode("t-0", "T4", 8, 0), PoolNode("t-1", "T4", 8, 0))
    anywhere = Demand("any", 8, STARTED, 3600 + 600)  # no model
    t4_day = Demand("t4", 16, STARTED, 25 * 3600, gpu_model="T4", nodes=2)
    running = (Placement(anywhere, ("v-0",), STARTED, False, Market.RESERVED),
               Placement(t4_day, ("t-0", "t-1"), STARTED, False, Market.RESERVED))
    queue = ReservedQueue(NOW, pool, running)
    assert queue.any_model == "T4"
    assert queue.expected_wait_s(replace(HOLDER, job_id="v")) == 600
    assert queue.expected_wait_s(Demand("t", 8, NOW, 3600, gpu_model="T4")) == 24 * 3600


def test_a_job_of_any_model_is_projected_onto_the_model_that_frees_gpus_for_it_soonest() -> None:
    """Two V100 nodes (the pool's largest model) busy for two hours, a T4 node free: a job of any model
    starts now on the T4s. It was projected onto the V100s and taken to wait two hours."""
    pool = (PoolNode("v-0", "V100", 8, 0), PoolNode("v-1", "V100", 8, 0), PoolNode("t-0", "T4", 8, 8))
    running = (Placement(Demand("v", 16, STARTED, 3 * 3600, gpu_model="V100", nodes=2), ("v-0", "v-1"), STARTED,
                         False, Market.RESERVED),)
    queue = ReservedQueue(NOW, pool, running)
    anywhere = Demand("any", 8, NOW, 3600)
    assert queue.model_for(anywhere) == "T4" and queue.expected_wait_s(anywhere) == 0
    queue.enqueue(anywhere)  # counted where it was projected: the next such job waits for the V100s
    assert queue.expected_wait_s(replace(anywhere, job_id="next")) == 2 * 3600
    assert queue.model_for(Demand("gang", 16, NOW, 3600, nodes=2)) == "V100"  # 16 GPUs: only V100 has them


def test_a_job_of_any_model_too_big_for_the_largest_models_nodes_runs_on_another() -> None:
    """Three 4-GPU T4 nodes (12 GPUs, the largest model) and one 8-GPU V100 node, all free: an 8-GPU job
    of any model on one node fits only the V100. It was taken never to start on-prem."""
    pool = (*(PoolNode(f"t-{i}", "T4", 4, 4) for i in range(3)), PoolNode("v-0", "V100", 8, 8))
    queue = ReservedQueue(NOW, pool, ())
    assert queue.any_model == "T4"
    assert queue.model_for(Demand("any", 8, NOW, 3600)) == "V100"
    assert queue.model_for(Demand("huge", 16, NOW, 3600)) is None
