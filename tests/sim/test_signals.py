"""Pre-warm ahead of a signal, end to end: a signal source the reconciler reads (as it would read
Jira sprints), the simulated world, the Burster policy. The reserved pool is full; a sprint's three
8-GPU jobs arrive when its window opens. Seen ahead, the signal gets nodes launched before the
window, so the jobs start on warm nodes instead of waiting for a boot; the decisions are the same
whether the simulator skips quiet passes or ticks through."""

from __future__ import annotations

from datetime import timedelta

import pytest

from burster.clock import FakeClock
from burster.model import Demand, Market, Offering, Signal
from burster.reconciler import PassReport, Reconciler
from burster.signalfile import AnnouncedSignal
from burster.sim.engine import run
from policies.burster import BursterParams, BursterPolicy
from policies.cost import CostModel
from policies.standby import prewarm_opens
from providers.sim.signals import SimSignals
from providers.sim.world import SimWorld
from tests.sim.harness import IDLE_SPOT_T0 as T0

X8 = Offering("aws", "us-west-2", "usw2-az1", "p3.16xlarge", "V100", 8, Market.SPOT, 7.344)
OPENS = T0 + timedelta(hours=1)
SPRINT = Signal("SPRINT-7", 48.0, OPENS, OPENS + timedelta(hours=2), gpu_model="V100", team="vision")
JOBS = [Demand("hog", 8, T0, 10 * 3600.0, gpu_model="V100"),  # the reserved node, all day
        *(Demand(f"s{i}", 8, OPENS, 2 * 3600.0, gpu_model="V100", team="vision") for i in range(3))]


def simulate(announced: tuple[AnnouncedSignal, ...], *, skip: bool = True) -> tuple[SimWorld, list[str]]:
    clock = FakeClock(T0)
    signals = SimSignals(announced) if announced else None
    world = SimWorld(clock=clock, jobs=JOBS, offerings=[X8], providers=["aws"], pool_nodes=1, gpus_per_node=8,
                     gpu_model="V100", signals=signals)
    # nodes the pool gives any queued job: with exclusive ones (the default) the sprint job that
    # defers to its wait budget (it is first for the reserved node) lets its warm node go at its TTL
    policy = BursterPolicy(params=BursterParams(exclusive_nodes=False))
    rec = Reconciler(providers=world.clouds, pool=world.pool, policy=policy, clock=clock,
                     signals=[signals] if signals else ())
    decisions: list[str] = []

    def on_pass(report: PassReport) -> None:
        decisions.extend(f"{report.now:%H:%M:%S} {line}" for line in report.plan.explain())

    run(world, rec, clock, tick_s=10.0, end=T0 + timedelta(hours=12), on_pass=on_pass, skip=skip)
    return world, decisions


@pytest.mark.parametrize("announced_at", [None, T0 + timedelta(minutes=30)])
def test_a_signal_seen_ahead_gets_warm_nodes_before_its_window_opens(announced_at: object) -> None:
    world, decisions = simulate((AnnouncedSignal(SPRINT, announced_at),))  # type: ignore[arg-type]
    warm = [d for d in decisions if "pre-warm" in d]
    assert len(warm) == 1 and "pre-warm 3 x aws/usw2-az1/p3.16xlarge/spot for signal SPRINT-7" in warm[0]
    at = T0.replace(hour=int(warm[0][:2]), minute=int(warm[0][3:5]), second=int(warm[0][6:8]))
    assert prewarm_opens(SPRINT, CostModel()) <= at < OPENS
    sprint_waits = world.pool.metrics.waits_s[1:]
    cold, _ = simulate(())
    assert max(sprint_waits) < 60.0 < min(cold.pool.metrics.waits_s[1:])  # a boot saved
    assert world.pool.metrics.finished_jobs == cold.pool.metrics.finished_jobs == 4


def test_skipping_quiet_passes_decides_as_ticking_through_with_a_signal() -> None:
    announced = (AnnouncedSignal(SPRINT, T0 + timedelta(minutes=30)),)
    assert simulate(announced)[1] == simulate(announced, skip=False)[1]


def test_a_signal_announced_after_its_window_opened_warms_nothing() -> None:
    """Once the window is open its jobs are here: they burst as any job does."""
    late = (AnnouncedSignal(SPRINT, OPENS + timedelta(minutes=1)),)
    _, decisions = simulate(late)
    assert not [d for d in decisions if "pre-warm" in d]
