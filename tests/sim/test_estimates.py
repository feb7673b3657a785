"""Wrong runtime estimates: the controller sees them, the simulated pool runs the true runtimes."""

from __future__ import annotations

import json
import statistics
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from burster.errors import ConfigError
from burster.model import Demand, RuntimeHistory
from burster.sim.estimates import with_estimate_error
from providers.sim.events import EventQueue
from providers.sim.pool import SimPool

T0 = datetime(2026, 1, 1, tzinfo=UTC)
JOBS = [Demand(f"j{i}", 1, T0, 3600.0) for i in range(2000)]


def test_estimates_are_lognormal_around_the_truth_seeded_and_at_least_a_minute() -> None:
    noisy, true = with_estimate_error(JOBS, 0.5, seed=7)
    assert set(true.values()) == {3600.0} and len(true) == len(JOBS)
    ratios = [j.est_runtime_s / 3600.0 for j in noisy]
    assert 0.95 < statistics.median(ratios) < 1.05
    assert 0.4 < sum(r > 1.4 or r < 1 / 1.4 for r in ratios) / len(ratios) < 0.6  # |log r| > 0.34 ~ 0.68 sigma
    assert with_estimate_error(JOBS, 0.5, seed=7)[0] == noisy
    assert with_estimate_error(JOBS, 0.5, seed=8)[0] != noisy
    short, _ = with_estimate_error([Demand("s", 1, T0, 61.0)], 3.0, seed=1)
    assert short[0].est_runtime_s >= 60.0
    assert with_estimate_error(JOBS, 0.0, seed=7) == (JOBS, {})


@pytest.mark.parametrize("sigma", [-0.1, 3.5, float("nan")])
def test_a_sigma_out_of_range_says_which_range(sigma: float) -> None:
    with pytest.raises(ConfigError, match=r"lognormal sigma in \[0, 3\]"):
        with_estimate_error(JOBS, sigma, seed=0)


def test_the_pool_runs_a_job_for_its_true_runtime_not_its_estimate() -> None:
    """Estimated 1 h, really 2 h: it finishes 2 h in, not 1 h in; the controller still sees 1 h."""
    events = EventQueue()
    pool = SimPool(events, nodes=1, gpus_per_node=8, gpu_model="V100", runtimes={"a": 7200.0})
    a = Demand("a", 1, T0, 3600.0, gpu_model="V100", checkpoint_interval_s=600.0)
    pool.submit(a, T0)
    pool.schedule(T0)
    assert pool.running()[0].ends_at_ts == (T0 + timedelta(hours=1)).timestamp()  # what the controller sees
    events.run_until(T0 + timedelta(hours=1, minutes=59))
    assert pool.metrics.finished_jobs == 0
    events.run_until(T0 + timedelta(hours=2))
    assert pool.metrics.finished_jobs == 1


def test_the_pool_reports_true_over_estimated_runtime_of_its_last_finished_jobs() -> None:
    from providers.sim.runtimes import RATIO_HISTORY

    events = EventQueue()
    n = RATIO_HISTORY + 4
    runtimes = {f"j{i}": 1800.0 for i in range(n)}
    pool = SimPool(events, nodes=40, gpus_per_node=8, gpu_model="V100", runtimes=runtimes)
    assert pool.runtime_history() == RuntimeHistory()
    for i in range(n):
        pool.submit(Demand(f"j{i}", 1, T0, 3600.0 if i < 4 else 900.0, gpu_model="V100"), T0)
    pool.schedule(T0)
    events.run_until(T0 + timedelta(hours=1))
    history = pool.runtime_history()
    assert len(history.ratios) == RATIO_HISTORY and set(history.ratios) == {2.0}  # the first four (0.5) aged out
    assert pool.runtime_history() is history  # the same value until another job finishes


def test_work_saved_at_a_stop_counts_past_the_estimate() -> None:
    """Estimated 1 h, really 2 h, checkpointing every 10 min: stopped 95 min in, 90 min are saved."""
    from burster.model import Market, Offering

    node = Offering("aws", "us-east-1", "use1-az1", "p3.2xlarge", "V100", 1, Market.ON_DEMAND, 3.06)
    events = EventQueue()
    pool = SimPool(events, nodes=0, gpus_per_node=8, gpu_model="V100", runtimes={"a": 7200.0})
    pool.submit(Demand("a", 1, T0, 3600.0, gpu_model="V100", checkpoint_interval_s=600.0), T0)
    pool.expect("n1", node, "a")
    pool.join("n1")
    pool.schedule(T0)
    pool.metrics.advance(T0 + timedelta(minutes=95))
    pool.drain("n1")
    assert pool.pending()[0].done_s == 90 * 60


def test_a_traces_own_estimates_replace_the_truth_as_the_base() -> None:
    """Time limits from the trace: the controller sees them (with any noise on top); runtimes stay true."""
    jobs = [Demand("a", 1, T0, 3600.0), Demand("b", 1, T0, 1800.0)]
    seen, true = with_estimate_error(jobs, 0.0, seed=0, told={"a": 14400.0})
    assert [j.est_runtime_s for j in seen] == [14400.0, 1800.0]
    assert true == {"a": 3600.0} and seen[1] is jobs[1]
    noisy, true = with_estimate_error(jobs, 0.5, seed=3, told={"a": 14400.0})
    plain, _ = with_estimate_error(jobs, 0.5, seed=3)
    assert noisy[0].est_runtime_s / plain[0].est_runtime_s == pytest.approx(4.0)  # the same draw, on the limit
    assert true == {"a": 3600.0, "b": 1800.0}


def test_a_bias_makes_every_estimate_run_long_before_the_noise() -> None:
    jobs = [Demand("a", 1, T0, 3600.0), Demand("b", 1, T0, 1800.0)]
    seen, true = with_estimate_error(jobs, 0.0, seed=0, told={"a": 14400.0}, bias=2.0)
    assert [j.est_runtime_s for j in seen] == [28800.0, 3600.0] and true == {"a": 3600.0, "b": 1800.0}
    noisy, _ = with_estimate_error(jobs, 0.5, seed=3, bias=3.0)
    plain, _ = with_estimate_error(jobs, 0.5, seed=3)
    assert noisy[1].est_runtime_s / plain[1].est_runtime_s == pytest.approx(3.0)
    with pytest.raises(ConfigError, match=r"estimate bias must be a factor in \[0.05, 20\]"):
        with_estimate_error(jobs, 0.0, seed=0, bias=0.0)


def test_the_history_is_the_last_jobs_done_before_the_window_with_their_estimates() -> None:
    from burster.sim.estimates import ratios_before

    start = T0 + timedelta(days=1)
    jobs = [Demand(f"d{i}", 1, T0 + timedelta(minutes=i), 3600.0) for i in range(10)]
    jobs += [Demand("late", 1, start - timedelta(minutes=30), 3600.0)]  # still running at the start

    def ratios(*args: Any, **kw: Any) -> list[float]:
        return [r for r, _ in ratios_before(*args, **kw)]

    assert ratios(jobs, start, 0.0, seed=0) == [1.0] * 10
    assert ratios(jobs, start, 0.0, seed=0, bias=2.0, keep=4) == [0.5] * 4
    assert ratios(jobs, start, 0.0, seed=0, told={"d9": 7200.0}, keep=2) == [1.0, 0.5]  # d9 ended last
    noisy = ratios(jobs, start, 0.5, seed=0)
    assert len(set(noisy)) == 10 and noisy == ratios(jobs, start, 0.5, seed=0)
    assert ratios_before(jobs, T0, 0.0, seed=0) == []
    # a longer history draws the last 256 jobs' estimates as a short one does
    many = [Demand(f"m{i}", 1, T0 + timedelta(seconds=i), 3600.0) for i in range(600)]
    assert ratios(many, start, 0.5, seed=0)[-256:] == ratios(many, start, 0.5, seed=0, keep=256)


def test_each_team_s_estimates_are_off_by_a_factor_of_its_own_the_same_in_the_history() -> None:
    from burster.sim.estimates import ratios_before, team_factor

    jobs = [Demand(f"{t}{i}", 1, T0 + timedelta(minutes=i), 3600.0, team=t) for t in ("vc_a", "vc_b", "")
            for i in range(20)]
    seen, true = with_estimate_error(jobs, 0.0, seed=4, bias=2.0, team_spread=1.0)
    by_team: dict[str, set[float]] = {}
    for j in seen:
        by_team.setdefault(j.team, set()).add(round(j.est_runtime_s / true.get(j.job_id, 3600.0), 9))
    fa, fb = team_factor("vc_a", 1.0, 4), team_factor("vc_b", 1.0, 4)
    assert by_team == {"vc_a": {round(2 * fa, 9)}, "vc_b": {round(2 * fb, 9)}, "": {2.0}}  # no team: bias only
    assert fa != fb and team_factor("vc_a", 1.0, 5) != fa and team_factor("vc_a", 0.0, 4) == 1.0
    plain, _ = with_estimate_error(jobs, 0.5, seed=4)
    spread, _ = with_estimate_error(jobs, 0.5, seed=4, team_spread=1.0)  # the jobs' noise is drawn alike
    assert spread[0].est_runtime_s / plain[0].est_runtime_s == pytest.approx(fa)
    history = ratios_before(jobs, T0 + timedelta(days=1), 0.0, seed=4, team_spread=1.0)
    assert {(round(r, 9), t) for r, t in history} == {(round(1 / fa, 9), "vc_a"), (round(1 / fb, 9), "vc_b"),
                                                      (1.0, "")}
    with pytest.raises(ConfigError, match=r"team spread must be a lognormal sigma in \[0, 3\]"):
        with_estimate_error(jobs, 0.0, seed=0, team_spread=-1.0)


def test_the_pool_reports_the_team_of_each_finished_job_with_its_ratio() -> None:
    events = EventQueue()
    pool = SimPool(events, nodes=1, gpus_per_node=8, gpu_model="V100", runtimes={"a": 1800.0},
                   history=[(3.0, "old")])
    pool.submit(Demand("a", 1, T0, 3600.0, gpu_model="V100", team="vc_a"), T0)
    pool.submit(Demand("b", 1, T0, 3600.0, gpu_model="V100"), T0)
    pool.schedule(T0)
    events.run_until(T0 + timedelta(hours=1))
    history = pool.runtime_history()
    assert history.ratios == (3.0, 0.5, 1.0) and history.teams == ("old", "vc_a", "")
    assert history.by_team == (("old", (3.0,)), ("vc_a", (0.5,)))  # by name; no team: none
    assert pool.runtime_history() is history  # the same value until a job finishes


def test_each_team_keeps_its_own_longer_history() -> None:
    from providers.sim.runtimes import RATIO_HISTORY, TEAM_HISTORY, TrueRuntimes

    history = [(0.5, "a")] * (2 * TEAM_HISTORY) + [(2.0, "b")] * RATIO_HISTORY
    truth = TrueRuntimes(history=history)
    first = truth.history()
    assert first.ratios == (2.0,) * RATIO_HISTORY and set(first.teams) == {"b"}  # a's aged out here
    assert first.by_team == (("a", (0.5,) * TEAM_HISTORY), ("b", (2.0,) * TEAM_HISTORY))  # not there
    (_, a), _ = first.by_team
    truth.finished(Demand("b1", 1, T0, 100.0, team="b"))  # ran its estimate: 1.0
    (_, a2), (_, b2) = truth.history().by_team
    assert a2 is a and b2 == (2.0,) * (TEAM_HISTORY - 1) + (1.0,)  # only b's view is new


def test_a_window_opens_with_the_history_of_the_jobs_before_it() -> None:
    """A controller already running when the window opens has seen jobs finish: the policy corrects
    estimates that run long from the first pass."""
    from burster.app import build_simulation
    from burster.config import parse_config
    from burster.traces.base import Trace

    jobs = tuple(Demand(f"j{i}", 1, T0 + timedelta(hours=i), 3600.0, gpu_model="V100") for i in range(48))
    trace = Trace("hours", "memory", jobs)
    sim = build_simulation(parse_config({"pool": {"nodes": 1}}), trace, policy="burster", seed=0, days=1,
                           start_day=1, estimate_bias=2.0)
    assert sim.reconciler.observe().runtime_ratios == (0.5,) * 24  # day 0's jobs, all done by midnight
    cold = build_simulation(parse_config({"pool": {"nodes": 1}}), trace, policy="burster", seed=0, days=1)
    assert cold.reconciler.observe().runtime_ratios == ()


def test_a_sacct_backtest_shows_the_time_limit_and_runs_the_elapsed_time(tmp_path: Path) -> None:
    """End to end through `build_simulation`: a job with a 4 h limit that ran 1 h is seen as 4 h
    by the policy and the pool's backfill, and finishes 1 h in."""
    from burster.app import build_simulation
    from burster.config import parse_config
    from burster.sim.engine import run
    from burster.traces import load_trace

    t0 = int(T0.timestamp())
    entry = {"job_id": 7, "account": "ml", "partition": "gpu", "allocation_nodes": 1,
             "state": {"current": "COMPLETED"},
             "time": {"submission": t0, "start": t0 + 10, "end": t0 + 3610, "elapsed": 3600,
                      "limit": {"set": True, "infinite": False, "number": 240}},
             "tres": {"allocated": [{"type": "gres", "name": "gpu", "count": 8}]}}
    path = tmp_path / "history.json"
    path.write_text(json.dumps({"jobs": [entry]}))
    trace = load_trace(path)
    assert trace.estimates == {"slurm-7": 14400.0} and trace.jobs[0].est_runtime_s == 3600.0
    sim = build_simulation(parse_config({"pool": {"nodes": 1}}), trace, policy="burster", seed=0)
    sim.clock.set(T0 + timedelta(minutes=10))
    sim.world.advance_to(sim.clock.now())
    (placement,) = sim.reconciler.observe().running
    assert placement.job.est_runtime_s == 14400.0
    assert placement.ends_at_ts == (T0 + timedelta(hours=4)).timestamp()  # started on arrival, 4 h limit
    run(sim.world, sim.reconciler, sim.clock, tick_s=10.0, end=T0 + timedelta(minutes=61))
    assert sim.world.pool.metrics.finished_jobs == 1  # the run ended when it did (not at its 4 h limit)
    assert sim.reconciler.observe().runtime_ratios == (0.25,)  # what the policy learns of its time limits
