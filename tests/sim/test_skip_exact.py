"""Skipping passes that would decide nothing changes no result: same KPIs and the same decisions."""

from __future__ import annotations

from typing import Any

import pytest

from burster.app import DEMO_TRACE, build_simulation
from burster.config import parse_config
from burster.reconciler import PassReport
from burster.sim.engine import run
from burster.sim.summary import summarize
from burster.traces import load_trace

TRACE = load_trace(DEMO_TRACE, "philly")


def simulate(policy: str, *, skip: bool, estimate_error: float = 0.0, settings: dict[str, Any] | None = None,
             guards: dict[str, Any] | None = None, reports: list[PassReport] | None = None,
             start_day: float = 1.0, **estimates: float) -> tuple[dict[str, Any], list[str]]:
    """``estimates``: ``estimate_bias``, ``estimate_team_spread`` (``build_simulation``)."""
    config = parse_config({"pool": {"nodes": 12}, "policy": settings or {}, "guards": guards or {}})
    sim = build_simulation(config, TRACE, policy=policy, seed=3, days=1, start_day=start_day,
                           estimate_error=estimate_error, **estimates)
    decisions: list[str] = []

    def on_pass(report: PassReport) -> None:
        decisions.extend(f"{report.now:%H:%M:%S} {line}" for line in report.plan.explain())
        if reports is not None:
            reports.append(report)

    passes = run(sim.world, sim.reconciler, sim.clock, tick_s=10.0, end=sim.end, on_pass=on_pass, skip=skip)
    world: Any = sim.world
    kpis = summarize(metrics=world.pool.metrics, ledger=sim.reconciler.state.ledger,
                     launches=sum(c.launches for c in world.clouds.values()), passes=passes, policy=policy,
                     trace=TRACE.name, pool_gpus=sim.pool_gpus, seed=3, wall_s=0.0)
    return kpis, decisions


@pytest.mark.parametrize("policy", ["burster", "greedy-spot", "compute-wait"])
def test_skipping_quiet_passes_is_exact(policy: str) -> None:
    fast, fast_decisions = simulate(policy, skip=True)
    slow, slow_decisions = simulate(policy, skip=False)
    assert fast.pop("reconcile_passes") < slow.pop("reconcile_passes") / 2  # it does skip
    assert fast_decisions == slow_decisions
    assert fast == slow
    assert slow["launches"] > 0  # the window exercises bursts, so the comparison means something
    # and the waits the skip jumps over: nodes booting, checkpoints in flight, interruption notices
    # (compute-wait bursts to on-demand only, which no notice interrupts)
    assert any("notice" in d for d in slow_decisions) == (policy != "compute-wait")
    if policy == "burster":  # and the rules that act on running jobs: move-back and consolidation
        assert any("back on-prem" in d for d in slow_decisions)
        assert any("cheaper capacity" in d for d in slow_decisions)
        assert any("a boot and a margin short" in d for d in slow_decisions)  # deferred to its budget's end


def test_skipping_is_exact_with_exclusive_nodes_and_a_standby_stock() -> None:
    """Idle nodes wait for the policy, and the stock falls as starts age out of its window: wakes
    the skip must not jump over."""
    settings = {"exclusive_nodes": True, "standby": True}
    fast, fast_decisions = simulate("burster", skip=True, settings=settings)
    slow, slow_decisions = simulate("burster", skip=False, settings=settings)
    fast.pop("reconcile_passes"), slow.pop("reconcile_passes")
    assert any("launch: standby:" in d for d in slow_decisions)
    assert any("no boot" in d for d in slow_decisions)  # an idle exclusive node handed to a job
    assert fast_decisions == slow_decisions
    assert fast == slow


@pytest.mark.parametrize("policy", ["burster", "greedy-spot", "uniform-progress"])
def test_skipping_is_exact_when_runtime_estimates_are_wrong(policy: str) -> None:
    """Jobs outliving their estimates: the policy believes each runs on to the next step of its
    estimate (``believe_overruns``) and names the step's end; the skip must wake there."""
    fast, fast_decisions = simulate(policy, skip=True, estimate_error=0.5)
    slow, slow_decisions = simulate(policy, skip=False, estimate_error=0.5)
    assert fast.pop("reconcile_passes") < slow.pop("reconcile_passes") / 2  # it still skips
    assert fast_decisions == slow_decisions
    assert fast == slow


def test_skipping_is_exact_when_each_team_s_estimates_run_their_own_way() -> None:
    """Teams corrected by their own factors, learned anew as jobs finish (events): no wake to miss.
    Day 5 of the week: every team has 100 jobs of its own done before the window."""
    from policies.estimates import runtime_corrections

    noise = {"estimate_error": 0.3, "estimate_bias": 2.0, "estimate_team_spread": 1.0}
    sim = build_simulation(parse_config({"pool": {"nodes": 12}}), TRACE, policy="burster", seed=3, days=1,
                           start_day=5, **noise)
    first = sim.reconciler.observe()
    assert len(runtime_corrections(first.runtime_ratios, first.team_runtime_ratios)[1]) == 11
    fast, fast_decisions = simulate("burster", skip=True, start_day=5, **noise)
    slow, slow_decisions = simulate("burster", skip=False, start_day=5, **noise)
    assert fast.pop("reconcile_passes") < slow.pop("reconcile_passes") / 2
    assert fast_decisions == slow_decisions
    assert fast == slow


def test_skipping_is_exact_at_the_cloud_node_cap() -> None:
    """With the cap full, bursts are held back (not refused): room opens only when a node ends, an
    event, so such a plan may be quiet, unless a held-back launch is one reserved GPUs may come to
    replace (policies/preempt.py). The skip must still decide as ticking through does. A held-back
    launch is no decision: it is listed at every pass that runs, so only decisions are compared."""
    reports: list[PassReport] = []
    fast, fast_lines = simulate("burster", skip=True, guards={"max_nodes": 6}, reports=reports)
    slow, slow_lines = simulate("burster", skip=False, guards={"max_nodes": 6})
    assert fast.pop("reconcile_passes") < slow.pop("reconcile_passes")
    assert any(r.plan.held_back and r.quiet_until is not None for r in reports)  # skips from held-back plans
    assert any(r.plan.held_back and r.quiet_until is None for r in reports)  # and ticks where preempt may act
    assert any(" held back launch: " in d and "max nodes 6 reached" in d for d in fast_lines)
    assert not any("refused launch: max nodes" in d for d in slow_lines)  # the rules left the cap to the room
    fast_decisions, slow_decisions = ([d for d in lines if " held back " not in d]
                                      for lines in (fast_lines, slow_lines))
    assert any(d.split(" ", 1)[1].startswith("preempt: ") for d in slow_decisions)  # the rule that ripens acts
    assert fast_decisions == slow_decisions
    assert fast == slow


def test_skipping_is_exact_at_the_cloud_node_cap_where_estimates_run_long() -> None:
    """There a held-back launch is weighed at its wait for a slot, which shortens as the cloud nodes
    near their believed ends, with no event (policies/preempt.py): skipping still decides as ticking."""
    fast, fast_lines = simulate("burster", skip=True, guards={"max_nodes": 6}, estimate_error=0.5)
    slow, slow_lines = simulate("burster", skip=False, guards={"max_nodes": 6}, estimate_error=0.5)
    assert fast.pop("reconcile_passes") < slow.pop("reconcile_passes")
    fast_decisions, slow_decisions = ([d for d in lines if " held back " not in d]
                                      for lines in (fast_lines, slow_lines))
    assert sum(d.split(" ", 1)[1].startswith("preempt: ") for d in slow_decisions) > 10
    assert fast_decisions == slow_decisions
    assert fast == slow
