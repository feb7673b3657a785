"""Rules of which queued jobs the simulated pool starts (``providers/sim/starts.py``) that a mutation
audit found unpinned: the blocked head's reservation is placed best fit and never counts GPUs that
free up on a node held for another job; idle burst nodes take single-node jobs only, and not a
node launched for a job that runs elsewhere."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from burster.model import Demand, Market, Offering
from providers.sim.events import EventQueue
from providers.sim.pool import SimPool

T0 = datetime(2026, 1, 1, tzinfo=UTC)
BIG = Offering("aws", "us-east-1", "use1-az1", "p3.16xlarge", "V100", 8, Market.ON_DEMAND, 24.48)


def job(name: str, gpus: int, run_s: float = 3600.0, nodes: int = 1) -> Demand:
    return Demand(name, gpus, T0, run_s, nodes=nodes, gpu_model="V100")


def placed(pool: SimPool) -> dict[str, tuple[str, ...]]:
    return {p.job.job_id: p.node_ids for p in pool.running()}


def started(pool: SimPool, *jobs: Demand) -> None:
    for j in jobs:
        pool.submit(j, T0)
    pool.schedule(T0)


def test_gpus_that_free_up_on_a_node_held_for_another_job_do_not_count_for_the_head() -> None:
    """Node 0 (busy until 1,000 s) is held for ``other``; node 1 has 4 GPUs busy until 5,000 s. The
    8-GPU head can start at 5,000 s on node 1, so a 4-GPU job running 6,000 s may not take node 1's
    free GPUs now (counting node 0, the head would start at 1,000 s there and the job would)."""
    pool = SimPool(EventQueue(), nodes=2, gpus_per_node=8, gpu_model="V100")
    started(pool, job("a", 8, 1000.0), job("b", 4, 5000.0))
    assert placed(pool) == {"a": ("onprem-0000",), "b": ("onprem-0001",)}
    for j in (job("head", 8), job("long", 4, 6000.0), job("other", 8)):
        pool.submit(j, T0)
    pool.hold("onprem-0000", "other", T0, T0 + timedelta(hours=3))
    pool.schedule(T0)
    assert sorted(placed(pool)) == ["a", "b"]


def test_the_heads_reservation_is_on_the_node_it_will_fill_best() -> None:
    """A 2-node gang ends at 1,000 s, freeing node 0 to 6 GPUs and node 1 to 4: the 4-GPU head will
    take node 1 (best fit), leaving node 0 two spare GPUs more, so a 3-GPU job running long
    backfills on node 0 now."""
    pool = SimPool(EventQueue(), nodes=2, gpus_per_node=8, gpu_model="V100")
    started(pool, job("e", 2, 9000.0), job("gang", 6, 1000.0, nodes=2), job("d", 4, 9000.0))
    assert placed(pool) == {"e": ("onprem-0000",), "gang": ("onprem-0000", "onprem-0001"),
                            "d": ("onprem-0001",)}
    assert pool.onprem.free == [3, 1]
    started(pool, job("head", 4), job("long", 3, 6000.0))
    assert placed(pool)["long"] == ("onprem-0000",)
    assert "head" not in placed(pool)


def test_an_idle_burst_node_does_not_take_a_gang() -> None:
    """A 2-node gang of 1 GPU each fits an 8-GPU node's GPUs, but it needs two nodes."""
    pool = SimPool(EventQueue(), nodes=0, gpus_per_node=8, gpu_model="V100")
    pool.expect("idle", BIG, None)
    pool.join("idle")
    started(pool, job("gang", 2, nodes=2))
    assert placed(pool) == {}
    started(pool, job("single", 2))
    assert placed(pool) == {"single": ("idle",)}


def test_a_node_launched_for_a_job_running_elsewhere_waits_for_it() -> None:
    """``a`` runs on the reserved node; a node launched for it (to move it to) joins idle: a queued
    job does not take it."""
    pool = SimPool(EventQueue(), nodes=1, gpus_per_node=8, gpu_model="V100")
    started(pool, job("a", 8))
    pool.expect("for-a", BIG, "a")
    pool.join("for-a")
    started(pool, job("b", 1))
    assert placed(pool) == {"a": ("onprem-0000",)}
