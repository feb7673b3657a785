"""Checkpoints that take long to write are waited for: with ``cost.checkpoint_write_s`` at 10
minutes, every voluntary checkpoint the Burster policy asks for over the demo trace (moves back
on-prem, consolidations, deadline switches) finishes before its deadline. The move back's used to be
due after the restart overhead (300 s): on this run 146 of them timed out and their nodes were
drained without the checkpoint, losing the work since the job's last one."""

from __future__ import annotations

from burster.app import DEMO_TRACE, build_simulation
from burster.config import parse_config
from burster.plan import Checkpoint
from burster.reconciler import PassReport
from burster.sim.engine import run
from burster.traces import load_trace


def test_ten_minute_checkpoint_writes_never_time_out() -> None:
    config = parse_config({"pool": {"nodes": 18}, "cost": {"checkpoint_write_s": 600}})
    sim = build_simulation(config, load_trace(DEMO_TRACE, "philly"), policy="burster", seed=0, days=7.0)
    checkpoints: list[str] = []
    timed_out: list[str] = []

    def on_pass(report: PassReport) -> None:
        checkpoints.extend(a.reason for a in report.plan.actions if isinstance(a, Checkpoint))
        timed_out.extend(n for n in report.notes if "timed out" in n)

    run(sim.world, sim.reconciler, sim.clock, tick_s=10.0, end=sim.end, on_pass=on_pass)
    assert len([r for r in checkpoints if "move job" in r]) > 50  # the run does exercise moves back (71)
    assert timed_out == []


def test_a_budget_stop_waits_for_a_ten_minute_write_and_still_keeps_the_budget() -> None:
    """The budget guard's stop used to give a checkpoint 60 s whatever the write took. (At $15 the
    run reaches its budget with nodes exclusive or not; at $25 exclusive nodes spent $22.68.)"""
    config = parse_config({"pool": {"nodes": 18}, "cost": {"checkpoint_write_s": 600},
                           "budget": {"total_usd": 15.0}})
    sim = build_simulation(config, load_trace(DEMO_TRACE, "philly"), policy="burster", seed=0, days=2.0)
    stops: list[str] = []
    timed_out: list[str] = []

    def on_pass(report: PassReport) -> None:
        stops.extend(a.reason for a in report.plan.actions if isinstance(a, Checkpoint) and "reached" in a.reason)
        timed_out.extend(n for n in report.notes if "timed out" in n)

    run(sim.world, sim.reconciler, sim.clock, tick_s=10.0, end=sim.end, on_pass=on_pass)
    assert stops and timed_out == []
    assert 0 < sum(float(e.usd) for e in sim.reconciler.state.ledger) <= 15.0
