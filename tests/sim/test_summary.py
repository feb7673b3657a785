"""The KPI helpers of a simulation's summary."""

from __future__ import annotations

from pathlib import Path

import pytest

from burster.sim.summary import percentile


@pytest.mark.parametrize(("n", "q", "rank"), [
    (1, 50, 1), (2, 50, 1), (10, 50, 5), (10, 51, 6), (100, 95, 95), (100, 99, 99), (100, 100, 100),
    (101, 99, 100), (3, 0, 1), (7, 95, 7),
])
def test_a_percentile_is_the_nearest_rank(n: int, q: float, rank: int) -> None:
    """The smallest value with at least q% of the values at or below it (so p99 of 100 waits is
    the 99th, not the largest)."""
    values = [10.0 * i for i in range(n, 0, -1)]  # unsorted on purpose
    assert percentile(values, q) == 10.0 * rank


def test_no_values_give_zero() -> None:
    assert percentile([], 95) == 0.0


def test_utilization_is_over_the_whole_window_when_the_work_ends_early() -> None:
    """One 8-GPU job of an hour on an 8-GPU pool over a day: the pool was busy 1/24 of the window,
    though the simulation has nothing left to do after the first hour. Over two days, with a minute's
    job on the second, (3600 + 60) s of 172,800; a third day, past the trace's last, is not counted."""
    from datetime import UTC, datetime, timedelta

    from burster.app import build_simulation
    from burster.config import parse_config
    from burster.model import Demand
    from burster.sim.engine import run
    from burster.traces.base import Trace

    t0 = datetime(2026, 1, 5, tzinfo=UTC)
    trace = Trace("two", "memory", (Demand("j", 8, t0 + timedelta(minutes=1), 3600.0, gpu_model="V100"),
                                    Demand("k", 8, t0 + timedelta(days=1, minutes=1), 60.0, gpu_model="V100")))
    for days, busy_s in ((1, 3600.0), (2, 3660.0), (3, 3660.0)):
        sim = build_simulation(parse_config({"pool": {"nodes": 1, "gpus_per_node": 8, "gpu_model": "V100"}}),
                               trace, policy="burster", seed=0, days=days)
        run(sim.world, sim.reconciler, sim.clock, tick_s=10.0, end=sim.end)
        assert sim.world.pool.metrics.utilization == pytest.approx(busy_s / (86400.0 * min(days, 2)))


def test_dollar_keys_are_floats_when_nothing_was_spent(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A run that never burst printed "cloud_usd": 0, an integer beside the other keys' 0.0."""
    import json

    from burster.cli import main

    trace = tmp_path / "jobs.csv"
    trace.write_text("job_id,submit_time,gpus,runtime_s\na,2026-03-02T09:00:00Z,1,600\n")
    assert main(["simulate", "--trace", str(trace), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    dollars = {k: v for k, v in result.items() if k.startswith("cloud_usd") and not isinstance(v, dict)}
    assert dollars and all(v == 0.0 and isinstance(v, float) for v in dollars.values()), dollars
