"""EASY backfill's reservation for a blocked head job (``providers/sim/starts.py``): a job that
would still run when the head can start may use only the GPUs the head leaves spare then, each
backfilled job's GPUs come off that spare, and reserved nodes held for the head count toward its
reservation (held for another job, they do not)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from burster.model import Demand
from providers.sim.events import EventQueue
from providers.sim.pool import SimPool

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def job(name: str, gpus: int, run_s: float, nodes: int = 1) -> Demand:
    return Demand(name, gpus, T0, run_s, nodes=nodes, gpu_model="V100")


def running(pool: SimPool) -> list[str]:
    return sorted(p.job.job_id for p in pool.running())


def one_node_with_a_blocked_head(*backfill: Demand) -> SimPool:
    """One 8-GPU node: 4 GPUs busy until 1,000 s; a 6-GPU head waits for them (2 spare then)."""
    pool = SimPool(EventQueue(), nodes=1, gpus_per_node=8, gpu_model="V100")
    pool.submit(job("fill", 4, 1000.0), T0)
    pool.schedule(T0)
    for j in (job("head", 6, 3600.0), *backfill):
        pool.submit(j, T0)
    pool.schedule(T0)
    return pool


def test_a_long_job_that_fits_exactly_the_heads_spare_gpus_backfills() -> None:
    assert running(one_node_with_a_blocked_head(job("long", 2, 5000.0))) == ["fill", "long"]
    assert running(one_node_with_a_blocked_head(job("long", 3, 5000.0))) == ["fill"]  # 3 > 2 spare


def test_each_backfilled_long_job_takes_its_gpus_off_the_heads_spare() -> None:
    """Two long 2-GPU jobs fit in the 4 free GPUs now, but only one in the head's 2 spare."""
    pool = one_node_with_a_blocked_head(job("long-a", 2, 5000.0), job("long-b", 2, 5000.0))
    assert running(pool) == ["fill", "long-a"]


def test_a_node_held_for_the_head_counts_toward_its_reservation() -> None:
    """A 2-node gang head; node 0 held for it (busy until 1,000 s), node 1 free from 500 s: the head
    starts at 1,000 s, so a long job may not take node 1's free GPUs now (were the held node not
    counted, the head would never start and the long job would run there)."""
    pool = SimPool(EventQueue(), nodes=2, gpus_per_node=8, gpu_model="V100")
    pool.submit(job("fill-0", 8, 1000.0), T0)
    pool.submit(job("fill-1", 4, 500.0), T0)
    pool.schedule(T0)
    pool.submit(job("head", 16, 3600.0, nodes=2), T0)
    pool.hold("onprem-0000", "head", T0, T0 + timedelta(hours=2))
    pool.submit(job("long", 4, 5000.0), T0)
    pool.schedule(T0)
    assert running(pool) == ["fill-0", "fill-1"]
    pool.submit(job("short", 4, 400.0), T0)  # ends before node 1 is wanted: backfills
    pool.schedule(T0)
    assert running(pool) == ["fill-0", "fill-1", "short"]
