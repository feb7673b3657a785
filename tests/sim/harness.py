"""Running a hand-built simulated world through the live reconciler, recording every decision."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from burster.clock import FakeClock
from burster.interfaces import Policy
from burster.model import Demand, JobClass, Offering
from burster.reconciler import PassReport, Reconciler
from burster.sim.engine import run
from providers.sim.spot import SpotSeries
from providers.sim.world import SimWorld

IDLE_SPOT_T0 = datetime(2026, 1, 5, tzinfo=UTC)


def run_recorded(world: SimWorld, policy: Policy, clock: FakeClock, end: datetime, *,
                 skip: bool = True) -> tuple[Reconciler, list[str]]:
    """Reconcile ``world`` every 10 s of simulated time until ``end``; the reconciler and each pass's
    decisions, as ``HH:MM:SS explanation`` lines."""
    rec = Reconciler(providers=world.clouds, pool=world.pool, policy=policy, clock=clock)
    decisions: list[str] = []

    def on_pass(report: PassReport) -> None:
        decisions.extend(f"{report.now:%H:%M:%S} {line}" for line in report.plan.explain())

    run(world, rec, clock, tick_s=10.0, end=end, on_pass=on_pass, skip=skip)
    return rec, decisions


def strict_job_after_idle_spot(policy: Policy, offerings: Sequence[Offering], series: Sequence[SpotSeries], *,
                               runtime_s: float, slack_s: float,
                               hours: float = 4.0) -> tuple[SimWorld, Reconciler, list[str]]:
    """Two 10-minute best-effort jobs arrive at ``IDLE_SPOT_T0``, burst onto spot and leave their nodes
    idle; a strict 1-GPU job "dl" of ``runtime_s`` with ``slack_s`` of slack arrives 14 minutes later (the
    pool may start it on an idle spot node). No reserved nodes; reconciled for ``hours``."""
    clock = FakeClock(IDLE_SPOT_T0)
    arrives = IDLE_SPOT_T0 + timedelta(minutes=14)
    job = Demand("dl", 1, arrives, runtime_s, gpu_model="V100", job_class=JobClass.STRICT,
                 deadline=arrives + timedelta(seconds=runtime_s + slack_s))
    short = [Demand(f"s{i}", 1, IDLE_SPOT_T0, 600.0, gpu_model="V100") for i in range(2)]
    world = SimWorld(clock=clock, jobs=[*short, job], offerings=list(offerings), providers=["azure", "aws"],
                     pool_nodes=0, gpus_per_node=8, gpu_model="V100", series=list(series))
    rec, decisions = run_recorded(world, policy, clock, IDLE_SPOT_T0 + timedelta(hours=hours))
    return world, rec, decisions
