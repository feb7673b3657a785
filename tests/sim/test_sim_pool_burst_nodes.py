"""The simulated pool's burst nodes: which job an idle, expected or exclusive node takes, where a
stopped job is requeued with the work it kept, and the waits and idle GPUs it measures."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from burster.model import Demand, Market, Offering, Requeue
from providers.sim.events import EventQueue
from providers.sim.pool import SimPool
from tests.sim.sim_pool_common import ON_DEMAND, SPOT, T0


def job(name: str, submitted_min: int = 0) -> Demand:
    return Demand(name, 1, T0 + timedelta(minutes=submitted_min), 3600.0, gpu_model="V100")


def test_an_idle_burst_node_does_not_take_a_job_whose_own_node_is_booting() -> None:
    """The controller launched an on-demand node for A (say, for its deadline); an idle spot node must
    not take A meanwhile (the controller would pull it off again and launch another node); B is free
    to take the idle node, and A starts on its own node when that joins."""
    pool = SimPool(EventQueue(), nodes=0, gpus_per_node=8, gpu_model="V100")
    pool.submit(job("a"), T0)
    pool.expect("spare", SPOT, None)
    pool.join("spare")
    pool.expect("a-node", ON_DEMAND, "a")
    pool.schedule(T0)
    assert [p.job.job_id for p in pool.running()] == []  # A waits for its own node
    pool.submit(job("b"), T0)
    pool.schedule(T0)
    assert {p.job.job_id: p.node_ids for p in pool.running()} == {"b": ("spare",)}
    pool.join("a-node")
    pool.schedule(T0)
    assert {p.job.job_id: p.node_ids for p in pool.running()} == {"b": ("spare",), "a": ("a-node",)}
    assert pool.metrics.reclaims == 0


def test_an_exclusive_node_takes_only_its_own_job_or_one_held_for_it() -> None:
    """A plain idle node takes the queue's head; an exclusive one waits for the controller's Hold."""
    pool = SimPool(EventQueue(), nodes=0, gpus_per_node=8, gpu_model="V100")
    for name in ("a", "b", "c"):
        pool.submit(job(name), T0)
    pool.expect("mine", SPOT, "c", exclusive=True)
    pool.expect("warm", SPOT, None, exclusive=True)
    for node_id in ("mine", "warm"):
        pool.join(node_id)
    pool.schedule(T0)
    assert {p.job.job_id: p.node_ids for p in pool.running()} == {"c": ("mine",)}
    pool.hold("warm", "b", T0, T0)
    pool.schedule(T0)
    assert {p.job.job_id: p.node_ids for p in pool.running()} == {"c": ("mine",), "b": ("warm",)}
    pool.hold("warm", "a", T0, T0)  # busy: a hold on it does nothing
    pool.schedule(T0)
    assert [j.job_id for j in pool.pending()] == ["a"]
    assert pool.metrics.idle_nodes_handed == 1


@pytest.mark.parametrize(("requeue", "order"), [(Requeue.SUBMISSION, ["a", "b", "c"]),
                                                (Requeue.BACK, ["b", "c", "a"])])
def test_a_stopped_job_is_requeued_where_the_pool_puts_it(requeue: Requeue, order: list[str]) -> None:
    """A, submitted first, runs on a burst node that is drained while B and C wait."""
    pool = SimPool(EventQueue(), nodes=0, gpus_per_node=8, gpu_model="V100", requeue=requeue)
    pool.submit(job("a"), T0)
    pool.expect("a-node", ON_DEMAND, "a")
    pool.join("a-node")
    pool.schedule(T0)
    later = T0 + timedelta(minutes=5)
    pool.submit(job("b", 1), later)
    pool.submit(job("c", 2), later)
    pool.drain("a-node")
    assert [j.job_id for j in pool.pending()] == order
    assert pool.pending()[order.index("a")].attempt == 1


def test_a_job_stopped_after_running_past_its_estimate_is_requeued_with_the_work_it_reached() -> None:
    """Estimated at 10 min, it really runs an hour; interrupted 25 min in with no checkpoint yet
    (every 30 min), it keeps no work but tells the policy it needed more than 25 min."""
    pool = SimPool(EventQueue(), nodes=0, gpus_per_node=8, gpu_model="V100", runtimes={"a": 3600.0})
    pool.submit(Demand("a", 1, T0, 600.0, gpu_model="V100"), T0)
    pool.expect("n1", SPOT, "a")
    pool.join("n1")
    pool.schedule(T0)
    pool.metrics.advance(T0 + timedelta(minutes=25))
    pool.leave("n1", preempted=True)
    (again,) = pool.pending()
    assert (again.done_s, again.reached_s, again.attempt) == (0.0, 25 * 60.0, 1)


def test_the_pause_of_a_stopped_job_until_its_restart_is_measured() -> None:
    """A 2-GPU job stopped 5 min in and restarted 10 min later: 2 GPUs x 10 min queued again, which
    the first-wait percentiles do not see."""
    x4 = replace(ON_DEMAND, instance_type="p3.8xlarge", gpus_per_node=4, price_per_hour_usd=12.24)
    pool = SimPool(EventQueue(), nodes=0, gpus_per_node=8, gpu_model="V100")
    pool.submit(Demand("a", 2, T0, 3600.0, gpu_model="V100"), T0)
    pool.expect("n1", x4, "a")
    pool.join("n1")
    pool.schedule(T0)
    pool.metrics.advance(T0 + timedelta(minutes=5))
    pool.drain("n1")
    assert pool.metrics.requeued_wait_gpu_hours == 0.0
    pool.expect("n2", x4, "a")
    pool.join("n2")
    pool.schedule(T0 + timedelta(minutes=15))
    assert [p.job.job_id for p in pool.running()] == ["a"]
    assert pool.metrics.requeued_wait_gpu_hours == pytest.approx(2 * 10 / 60)
    assert pool.metrics.waits_s == [0.0]  # its first wait only


def test_reserved_gpus_idle_while_jobs_that_could_use_them_run_on_the_cloud_are_measured() -> None:
    """One 8-GPU reserved node runs A (4 GPUs); B (6 GPUs, V100) and C (1 GPU, A100, which the pool
    cannot run) run on burst nodes. For 30 min, min(4 idle, 6) reserved GPUs sit idle beside B; once
    B's node is drained (B does not fit the 4 free GPUs and waits) nothing more is counted."""
    big = Offering("aws", "us-east-1", "use1-az1", "p3.16xlarge", "V100", 8, Market.ON_DEMAND, 24.48)
    a100 = Offering("aws", "us-east-1", "use1-az1", "p4d.24xlarge", "A100", 8, Market.ON_DEMAND, 32.77)
    pool = SimPool(EventQueue(), nodes=1, gpus_per_node=8, gpu_model="V100")
    pool.submit(Demand("a", 4, T0, 7200.0, gpu_model="V100"), T0)
    pool.schedule(T0)
    pool.submit(Demand("b", 6, T0, 7200.0, gpu_model="V100"), T0)
    pool.submit(Demand("c", 1, T0, 7200.0, gpu_model="A100"), T0)
    pool.expect("b-node", big, "b")
    pool.expect("c-node", a100, "c")
    pool.join("b-node")
    pool.join("c-node")
    pool.schedule(T0)
    assert {p.job.job_id: p.on_cloud for p in pool.running()} == {"a": False, "b": True, "c": True}
    pool.metrics.advance(T0 + timedelta(minutes=30))
    assert pool.metrics.stranded_gpu_hours == pytest.approx(4 * 0.5)
    pool.drain("b-node")
    pool.schedule(T0 + timedelta(minutes=30))
    pool.metrics.advance(T0 + timedelta(minutes=45))
    assert [j.job_id for j in pool.pending()] == ["b"]
    assert pool.metrics.stranded_gpu_hours == pytest.approx(4 * 0.5)


def test_queued_jobs_take_the_cheapest_idle_burst_node_that_fits_in_queue_order() -> None:
    """Idle nodes: an 8-GPU on-demand ($24.48/h), a 1-GPU on-demand and a 1-GPU spot. The first job
    (1 GPU) gets the spot node, the second the 1-GPU on-demand, the third (4 GPUs) the big one."""
    big = Offering("aws", "us-east-1", "use1-az1", "p3.16xlarge", "V100", 8, Market.ON_DEMAND, 24.48)
    pool = SimPool(EventQueue(), nodes=0, gpus_per_node=8, gpu_model="V100")
    for node_id, offering in (("a-big", big), ("b-od", ON_DEMAND), ("c-spot", SPOT)):
        pool.expect(node_id, offering, None)
        pool.join(node_id)
    pool.submit(job("first"), T0)
    pool.submit(job("second"), T0)
    pool.submit(Demand("third", 4, T0, 3600.0, gpu_model="V100"), T0)
    pool.schedule(T0)
    assert {p.job.job_id: p.node_ids for p in pool.running()} == {
        "first": ("c-spot",), "second": ("b-od",), "third": ("a-big",)}


def test_a_job_starts_on_as_many_of_its_nodes_as_its_gang_needs() -> None:
    """A one-node job handed an idle exclusive node while its own launch was booting has two nodes for it
    once both joined: it starts on one (the first by id), and the other stays idle for the controller
    to reclaim; before, it ran on both (fuzz seed 1300), billing a node it did not use as busy."""
    pool = SimPool(EventQueue(), nodes=0, gpus_per_node=8, gpu_model="V100")
    pool.submit(job("a"), T0)
    pool.expect("a-own", ON_DEMAND, "a", exclusive=True)
    pool.expect("a-handed", ON_DEMAND, None, exclusive=True)
    pool.join("a-handed")
    pool.hold("a-handed", "a", T0, T0 + timedelta(hours=1))
    pool.join("a-own")
    pool.schedule(T0)
    assert {p.job.job_id: p.node_ids for p in pool.running()} == {"a": ("a-handed",)}
    assert pool.burst["a-own"].job_id is None
    gang = Demand("g", 16, T0, 3600.0, nodes=2, gpu_model="V100")  # two 8-GPU members, three nodes for it
    pool.submit(gang, T0)
    big = Offering("aws", "us-east-1", "use1-az1", "p3.16xlarge", "V100", 8, Market.ON_DEMAND, 24.48)
    for name in ("g-3", "g-1", "g-2"):
        pool.expect(name, big, "g")
        pool.join(name)
    pool.schedule(T0)
    assert {p.job.job_id: p.node_ids for p in pool.running()}["g"] == ("g-1", "g-2")
