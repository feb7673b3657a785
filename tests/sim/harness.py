"""Running a hand-built simulated world through the live reconciler, recording every decision."""

from __future__ import annotations

from datetime import datetime

from burster.clock import FakeClock
from burster.interfaces import Policy
from burster.reconciler import PassReport, Reconciler
from burster.sim.engine import run
from providers.sim.world import SimWorld


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
