"""The bench suite: window jobs, offered load, pool sizing, arms through the real simulator, records, targets."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from burster.app import DEMO_TRACE, build_simulation
from burster.config import parse_config
from burster.errors import InputError
from burster.eval.compare import (
    RECORD_KEYS,
    Setting,
    Sources,
    Window,
    cached_trace,
    captured_savings,
    offered_load_gpus,
    pool_sizes,
    ratio_to_bound,
    records,
    run_arm,
    run_suite,
    window_jobs,
)
from burster.eval.suite import default_windows, plan_settings
from burster.eval.targets import BOUND, HARD_MISSES, OVERALL, P50, VS_GREEDY, VS_ON_DEMAND, WITHIN_BUDGET, evaluate
from burster.model import Demand
from burster.sim.engine import run
from providers.sim.spot import synthesize
from tests.eval.bench_trace import write_trace

T0 = datetime(2026, 1, 5, tzinfo=UTC)


def _job(i: int, gpus: int, start_h: float, hours: float) -> Demand:
    return Demand(f"j{i}", gpus, T0 + timedelta(hours=start_h), hours * 3600)


def test_offered_load_clips_each_run_to_the_window() -> None:
    jobs = [_job(0, 2, 0, 12), _job(1, 4, 20, 10)]  # the second job runs 4 of its 10 hours inside the day
    assert offered_load_gpus(jobs, T0, T0 + timedelta(days=1)) == pytest.approx((2 * 12 + 4 * 4) / 24)


def test_pool_sizes_round_up_to_whole_nodes_per_target_utilization() -> None:
    assert pool_sizes(100.0) == [14, 17]  # ceil(100 / 0.9 / 8), ceil(100 / 0.75 / 8)
    assert pool_sizes(0.0) == [1]  # at least one node, duplicates dropped
    assert pool_sizes(7.0, (0.9,)) == [1]


def test_window_jobs_are_the_jobs_the_simulation_replays() -> None:
    trace = cached_trace(str(DEMO_TRACE), "philly")
    w = Window(str(DEMO_TRACE), "philly", 1.0, 0.5)
    start, end, jobs = window_jobs(trace, w, "V100")
    sim = build_simulation(parse_config({"pool": {"nodes": 4}}), trace, policy="reserved-only", seed=0,
                           days=0.5, start_day=1.0)
    assert sim.clock.now() == start and end - start == timedelta(hours=12)
    run(sim.world, sim.reconciler, sim.clock, tick_s=10.0, end=sim.end)  # type: ignore[arg-type]
    started = sim.world.pool.metrics.first_start  # type: ignore[attr-defined]
    assert len(jobs) > 50 and set(started) == {j.job_id for j in jobs}
    assert all(j.gpu_model == "V100" for j in jobs)


def test_ratio_and_captured_savings_formulas() -> None:
    assert ratio_to_bound(110.0, 100.0) == 1.1
    assert ratio_to_bound(0.0, 0.0) == 1.0 and ratio_to_bound(5.0, 0.0) is None and ratio_to_bound(5.0, None) is None
    assert captured_savings(40.0, 100.0, 20.0) == 0.75  # (100 - 40) / (100 - 20)
    assert captured_savings(40.0, None, 20.0) is None and captured_savings(40.0, 20.0, 20.0) is None


@pytest.fixture(scope="module")
def tiny_suite(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Setting], list[dict[str, object]]]:
    path = write_trace(tmp_path_factory.mktemp("bench"))
    plan = plan_settings([Window(str(path), "philly", 0.0, 0.25)], seeds=[0], nodes=[1])
    result = run_suite(plan.settings, ["burster", "on-demand", "greedy-spot"], Sources(), workers=2)
    return plan.settings, records(result)


def test_suite_runs_every_arm_with_the_bracket_attached(tiny_suite: tuple[list[Setting], list[dict[str, object]]],
                                                        ) -> None:
    settings, recs = tiny_suite
    assert [r["policy"] for r in recs] == ["burster", "on-demand", "greedy-spot"]
    assert settings[0].jobs == 14 and settings[0].pool_gpus == 8
    for r in recs:
        assert set(RECORD_KEYS) <= r.keys() and r["bound_status"].startswith("optimal")
        assert r["lower_bound_usd"] <= r["upper_bound_usd"]  # type: ignore[operator]
        assert r["window"] == "day 0 + 6 h"
    json.dumps(recs)  # plain JSON, no timeline in the records
    assert not any("timeline" in r or "t_h" in r for r in recs)


def test_same_arm_in_a_worker_and_here_gives_the_same_record(
        tiny_suite: tuple[list[Setting], list[dict[str, object]]]) -> None:
    settings, recs = tiny_suite
    here = run_arm(settings[0], "greedy-spot", Sources())
    assert here.summary["cloud_usd"] == recs[2]["cloud_usd"] and here.summary["launches"] == recs[2]["launches"]
    assert here.timeline["reserved_gpus"] == 8 and max(here.timeline["demand_gpus"]) > 8


def test_targets_per_setting_and_overall() -> None:
    base = {"trace": "t", "window": "w", "pool_gpus": 8, "seed": 0, "hard_deadline_misses": 0,
            "wait_p50_s": 0.0, "wait_share_within_budget": 1.0, "lower_bound_usd": 38.0}
    recs = [{**base, "policy": "burster", "cloud_usd": 40.0, "wait_p50_s": 61.0},
            {**base, "policy": "on-demand", "cloud_usd": 100.0}, {**base, "policy": "greedy-spot", "cloud_usd": 45.0},
            {**base, "seed": 1, "policy": "burster", "cloud_usd": 10.0, "hard_deadline_misses": 2,
             "wait_share_within_budget": 0.9}]
    checks = {(c["setting"], c["target"]): c for c in evaluate(recs)}
    s0, s1 = "t, w, 8 GPUs, seed 0", "t, w, 8 GPUs, seed 1"
    assert checks[s0, BOUND]["met"] and checks[s0, BOUND]["value"] == pytest.approx(40 / 38, abs=1e-4)
    assert checks[s0, VS_ON_DEMAND]["met"] and checks[s0, VS_ON_DEMAND]["value"] == 0.6
    assert not checks[s0, VS_GREEDY]["met"] and checks[s0, VS_GREEDY]["value"] == pytest.approx(1 / 9, abs=1e-4)
    assert not checks[s0, P50]["met"] and checks[s0, WITHIN_BUDGET]["met"]
    assert not checks[s1, HARD_MISSES]["met"] and not checks[s1, WITHIN_BUDGET]["met"]
    assert (s1, VS_ON_DEMAND) not in checks  # no on-demand arm there: not checked
    assert checks[OVERALL, BOUND]["value"] == pytest.approx(50 / 76, abs=1e-4)
    assert (OVERALL, VS_ON_DEMAND) not in checks  # one setting lacks the reference arm
    assert checks[OVERALL, HARD_MISSES]["value"] == 2 and checks[OVERALL, P50]["value"] == 61.0
    assert checks[OVERALL, WITHIN_BUDGET]["value"] == 0.95 and checks[OVERALL, WITHIN_BUDGET]["met"]


def test_a_zero_lower_bound_makes_the_ratio_target_missed_with_a_reason() -> None:
    rec = {"trace": "t", "window": "w", "pool_gpus": 8, "seed": 0, "policy": "burster", "cloud_usd": 5.0,
           "hard_deadline_misses": 0, "wait_p50_s": 0.0, "wait_share_within_budget": 1.0, "lower_bound_usd": 0.0}
    bound = next(c for c in evaluate([rec]) if c["target"] == BOUND)
    assert bound["met"] is False and bound["value"] is None and "$0" in bound["note"]


def test_default_suite_skips_a_format_without_a_loader_but_a_named_trace_must_load(tmp_path: Path) -> None:
    plan = plan_settings([Window(str(DEMO_TRACE), "philly", 1.0, 1.0), Window(str(tmp_path / "x.csv"), "nope", 0, 1)],
                         seeds=[0, 1], nodes=None, utilizations=(0.9, 0.75), strict=False)
    assert plan.skipped and "no loader for trace format 'nope'" in plan.skipped[0][1]
    assert len(plan.settings) == 4 and {s.seed for s in plan.settings} == {0, 1}
    with pytest.raises(InputError, match="does not exist"):
        plan_settings([Window(str(tmp_path / "gone_philly.csv"), "philly", 0, 1)], seeds=[0], nodes=None)


def test_quick_suite_without_shared_data_is_the_bundled_sample(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BURSTER_SHARED_DATA", str(tmp_path))
    assert default_windows(True) == [Window(str(DEMO_TRACE), "philly", 1.0, 3.0)]


def test_synthesized_spot_series_of_different_seeds_do_not_share_cached_drops() -> None:
    stats = [{"name": "x", "provider": "aws", "gpu_model": "V100", "gap_s": 60, "mean_up_s": 600,
              "mean_down_s": 300, "availability": 0.7, "ticks": 500}]
    a, b = synthesize(stats, 0)[0], synthesize(stats, 1)[0]
    assert a.data != b.data and a.name != b.name
    a.next_drop(0.0)  # fills the per-series cache
    assert b.next_drop(0.0) == min(d for d in b.drops())


def test_the_requeue_order_reaches_the_simulated_fifo_pool() -> None:
    """Same day of the bundled sample: in a FIFO pool, requeuing stopped jobs at the back changes what
    Burster does."""
    plan = plan_settings([Window(str(DEMO_TRACE), "philly", 1.0, 1.0)], seeds=[0], nodes=[12])
    by_requeue = {rq: run_arm(plan.settings[0], "burster", Sources(requeue=rq, order="submission")).summary
                  for rq in ("submission", "back")}
    what = ("launches", "reclaims", "cloud_gpu_hours", "requeued_wait_gpu_hours")
    assert [by_requeue["submission"][k] for k in what] != [by_requeue["back"][k] for k in what]
    assert by_requeue["submission"]["jobs"] == by_requeue["back"]["jobs"] > 0


def test_the_queue_order_reaches_the_simulated_pool() -> None:
    """Same day: a pool serving its queue by start-by runs other jobs on the cloud than a FIFO one (which
    is cheaper depends on the window since jobs defer to their budgets; docs/benchmarks-history.md)."""
    plan = plan_settings([Window(str(DEMO_TRACE), "philly", 1.0, 1.0)], seeds=[0], nodes=[9])
    by_order = {order: run_arm(plan.settings[0], "burster", Sources(order=order)).summary
                for order in ("start_by", "submission")}
    assert (by_order["start_by"]["pool_order"], by_order["submission"]["pool_order"]) == ("start_by", "submission")
    assert by_order["start_by"]["jobs"] == by_order["submission"]["jobs"] > 0
    assert by_order["start_by"]["cloud_gpu_hours"] != by_order["submission"]["cloud_gpu_hours"]
    assert by_order["start_by"]["wait_p95_s"] != by_order["submission"]["wait_p95_s"]


def test_an_arms_controller_warnings_are_counted_not_printed(capsys: pytest.CaptureFixture[str]) -> None:
    """A join timeout below the simulated boots blocks an offering at each cut-off node: the arm counts
    the warnings in its record (``controller_warnings``) instead of printing one per node."""
    plan = plan_settings([Window(str(DEMO_TRACE), "philly", 1.0, 1.0)], seeds=[0], nodes=[9])
    short = run_arm(plan.settings[0], "burster", Sources(policy=(("join_timeout_s", 200),))).summary
    assert short["controller_warnings"] > 0 and "never came up" not in capsys.readouterr().err
    assert run_arm(plan.settings[0], "burster", Sources()).summary["controller_warnings"] == 0
