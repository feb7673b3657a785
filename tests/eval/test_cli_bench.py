"""`burster bench` through the real CLI on a tiny trace: JSON records, tables, report, --spot/--prices, bad input."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from burster.app import BUNDLED
from burster.cli import main
from burster.eval.compare import offered_load_gpus
from burster.traces import load_trace
from tests.eval.bench_trace import write_trace

ISSUE_KEYS = {"trace", "pool_gpus", "seed", "policy", "cloud_usd", "wait_p50_s", "wait_p95_s", "wait_p99_s",
              "deadline_misses", "lower_bound_usd", "upper_bound_usd"}
EXTRAS = {"cloud_usd_spot", "cloud_usd_on_demand", "wait_share_within_budget", "hard_deadline_misses", "preemptions",
          "lost_gpu_hours", "cloud_gpu_hours", "requeued_wait_gpu_hours", "stranded_gpu_hours",
          "upper_bound_cloud_gpu_hours", "launches", "onprem_utilization", "ratio_to_lower_bound", "captured_savings",
          "bound_status", "window", "estimate_error", "estimate_bias", "estimate_team_spread",
          "policy_settings", "pool_order", "spot_source", "controller_warnings",
          "jobs_never_started", "cloud_usd_waived", "onprem_preemptions", "bracket_lower_usd", "lower_bound_split_runs"}


def test_json_records_bounds_and_captured_savings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = write_trace(tmp_path)
    html = tmp_path / "out" / "report.html"
    assert main(["bench", "--trace", str(trace), "--policies", "burster,on-demand", "--pool-nodes", "1",
                 "--seeds", "0", "--json", "--html", str(html)]) == 0
    cap = capsys.readouterr()
    recs = json.loads(cap.out)
    assert [r["policy"] for r in recs] == ["burster", "on-demand"]
    od = recs[1]
    for r in recs:
        assert set(r) == ISSUE_KEYS | EXTRAS
        assert r["trace"] == trace.name and r["pool_gpus"] == 8 and r["seed"] == 0 and r["jobs_never_started"] == 0
        lower, upper = r["lower_bound_usd"], r["upper_bound_usd"]
        assert lower is not None and upper is not None, r["bound_status"]
        assert lower <= upper
        assert r["upper_bound_cloud_gpu_hours"] is not None and r["upper_bound_cloud_gpu_hours"] >= 0
        assert (r["upper_bound_cloud_gpu_hours"] > 0) == (upper > 0)  # the clairvoyant pays for its cloud time
        listed = r["cloud_usd"] + r["cloud_usd_waived"]  # list price: AWS's free take-backs added back
        if r["wait_share_within_budget"] == 1.0:  # every job within its wait budget: the bound applies
            assert lower <= listed + 0.01
        if lower > 0:
            assert r["ratio_to_lower_bound"] == pytest.approx(listed / lower, abs=1e-3)
        expected = (od["cloud_usd"] - listed) / (od["cloud_usd"] - lower)
        assert r["captured_savings"] == pytest.approx(expected, abs=1e-3)
    assert od["captured_savings"] == 0.0 and od["cloud_usd_spot"] == 0.0 and od["cloud_usd"] > 0
    assert "report written to" in cap.err and html.read_text().count("<svg") == 3


def test_json_stdout_of_the_installed_command_is_pure_json(tmp_path: Path) -> None:
    """A fresh process: the LP solver's first-use banner must not reach stdout ahead of the records."""
    trace = write_trace(tmp_path)
    burster = Path(sys.executable).with_name("burster")
    done = subprocess.run([str(burster), "bench", "--trace", str(trace), "--policies", "on-demand", "--pool-nodes",
                           "1", "--seeds", "0", "--workers", "1", "--json"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    (rec,) = json.loads(done.stdout)
    assert rec["policy"] == "on-demand" and rec["lower_bound_usd"] is not None


def test_table_output_has_a_table_per_setting_and_the_targets(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    trace = write_trace(tmp_path)
    assert main(["bench", "--trace", str(trace), "--policies", "burster,greedy-spot", "--pool-nodes", "1",
                 "--pool-nodes", "2", "--seeds", "0", "--workers", "1"]) == 0
    out = capsys.readouterr().out
    assert f"{trace.name}, day 0 + 5 h, 8 GPUs, seed 0" in out and f"{trace.name}, day 0 + 5 h, 16 GPUs" in out
    assert "Targets for Burster's policy" in out and ">=20% below greedy" in out and "overall" in out
    assert "target checks met" in out


def test_spot_and_prices_files_are_used(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = write_trace(tmp_path)
    spot = tmp_path / "aws_v100_zone.json"
    spot.write_text(json.dumps({"metadata": {"gap_seconds": 600}, "data": [1] * 30 + [0] * 6 + [1] * 100}))
    prices = tmp_path / "aws_v7_vms_gpu_subset.csv"
    shutil.copy(BUNDLED / "prices" / "aws_v7_vms_gpu_subset.csv", prices)
    html = tmp_path / "r.html"
    assert main(["bench", "--trace", str(trace), "--policies", "greedy-spot", "--pool-nodes", "1", "--seeds", "3",
                 "--spot", str(spot), "--prices", str(prices), "--json", "--html", str(html)]) == 0
    (rec,) = json.loads(capsys.readouterr().out)
    assert rec["spot_source"] == f"traces in {spot}" and rec["seed"] == 3 and rec["cloud_usd_spot"] > 0
    page = html.read_text()
    assert "aws spot" in page and "gcp" not in page and "azure" not in page  # only the clouds --prices prices


@pytest.mark.parametrize(("argv", "message"), [
    (["--policies", "burster,yolo"], "unknown policy 'yolo' in --policies; valid: burster, reserved-only, on-demand, "
                                     "greedy-spot, uniform-progress, compute-wait"),
    (["--pool-nodes", "0"], "--pool-nodes must be in [1, 100,000] (8-GPU nodes); got 0"),
    (["--pool-nodes", "100000000"], "--pool-nodes must be in [1, 100,000] (8-GPU nodes); got 100000000"),
    (["--seeds", "0,x"], "--seeds must be comma-separated whole numbers like 0,1,2; got '0,x'"),
    (["--spot", "/nonexistent/spot"], "--spot /nonexistent/spot does not exist"),
    (["--days", "0"], "--days must be in (0, 365]; got 0"),
    (["--estimate-error", "4"], "estimate error must be a lognormal sigma in [0, 3]"),
    (["--estimate-bias", "0"], "estimate bias must be a factor in [0.05, 20]"),
    (["--workers", "1000"], "--workers must be in [1, 64]"),
    (["--policies", ""], "unknown policy (none given) in --policies"),
    (["--start-day", "5000"], "--start-day must be in [0, 3650]"),
])
def test_bad_options_fail_with_a_clear_error(argv: list[str], message: str, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    trace = write_trace(tmp_path)
    assert main(["bench", "--trace", str(trace), *argv]) == 2
    cap = capsys.readouterr()
    assert cap.out == "" and f"burster: error: {message}" in cap.err


def test_missing_trace_file_and_bad_row_name_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--trace", str(tmp_path / "gone_philly.csv")]) == 2
    assert f"--trace {tmp_path / 'gone_philly.csv'} does not exist" in capsys.readouterr().err
    bad = write_trace(tmp_path, "trace_job_Philly_bad.csv")
    bad.write_text(bad.read_text().replace("\n3,vc,2,20,", "\n3,vc,two,20,"))
    assert main(["bench", "--trace", str(bad), "--pool-nodes", "1"]) == 2
    assert f"{bad}: row 5, column 'num_gpu'" in capsys.readouterr().err


def test_pool_sweep_sizes_from_the_offered_load(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = write_trace(tmp_path)
    jobs = load_trace(trace).jobs
    start = jobs[0].submitted_at
    load = offered_load_gpus(jobs, start, start + timedelta(hours=5))
    assert main(["bench", "--quick", "--trace", str(trace), "--policies", "reserved-only", "--json"]) == 0
    (quick,) = json.loads(capsys.readouterr().out)
    assert quick["seed"] == 0 and quick["pool_gpus"] == 8 * math.ceil(load / 0.9 / 8)
    assert main(["bench", "--trace", str(trace), "--policies", "reserved-only", "--seeds", "1", "--json"]) == 0
    sizes = [r["pool_gpus"] for r in json.loads(capsys.readouterr().out)]
    assert sizes == [8 * n for n in dict.fromkeys([math.ceil(load / 0.9 / 8), math.ceil(load / 0.75 / 8)])]


def one_setting(trace: Path, *extra: str) -> list[str]:
    """bench argv for Burster alone on ``trace``: one pool size, seed 0, JSON; ``extra`` appended."""
    return ["bench", "--trace", str(trace), "--policies", "burster", "--pool-nodes", "1", "--seeds", "0", "--json",
            *extra]


def records_of(capsys: pytest.CaptureFixture[str], argv: list[str]) -> list[dict[str, Any]]:
    assert main(argv) == 0
    out: list[dict[str, Any]] = json.loads(capsys.readouterr().out)
    return out


def test_wrong_runtime_estimates_reach_the_arms_but_not_the_bounds(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    trace = write_trace(tmp_path)
    (exact,) = records_of(capsys, one_setting(trace))
    (noisy,) = records_of(capsys, one_setting(trace, "--estimate-error", "1.0"))
    assert (exact["estimate_error"], noisy["estimate_error"]) == (0.0, 1.0)
    assert noisy["lower_bound_usd"] == exact["lower_bound_usd"]  # the bracket knows the true runtimes
    assert (noisy["cloud_usd"], noisy["wait_p95_s"]) != (exact["cloud_usd"], exact["wait_p95_s"])
    long = {r["policy"]: r for r in records_of(capsys, one_setting(trace, "--estimate-bias", "3", "--policies",
                                                                    "burster,uniform-progress"))}
    assert {r["estimate_bias"] for r in long.values()} == {3.0} and exact["estimate_bias"] == 1.0
    assert long["burster"]["lower_bound_usd"] == exact["lower_bound_usd"]


def test_policy_settings_reach_every_arm_and_bad_ones_stop_before_any(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    trace = write_trace(tmp_path)
    (default,) = records_of(capsys, one_setting(trace))
    (changed,) = records_of(capsys, one_setting(trace, "--set", "policy.defer_to_budget=false",
                                                "--set", "policy.standby_window_s=1800"))
    assert default["policy_settings"] == {}
    assert changed["policy_settings"] == {"defer_to_budget": False, "standby_window_s": 1800}
    assert (changed["cloud_usd"], changed["wait_p95_s"]) != (default["cloud_usd"], default["wait_p95_s"])
    assert changed["lower_bound_usd"] == default["lower_bound_usd"]
    for bad, says in (("policy.standby=maybe", "policy.standby: Input should be a valid boolean"),
                      ("policy.nope=1", "policy.nope: unknown key"),
                      ("standby=true", "--set takes policy.KEY=VALUE"),
                      ("policy.name=on-demand", "--policies"),
                      ("policy.standby_window_s=5", "greater than or equal to 60")):
        assert main(one_setting(trace, "--set", bad)) == 2
        cap = capsys.readouterr()
        assert says in cap.err and cap.out == ""


def test_a_job_no_pool_or_offering_can_run_fails_before_any_arm(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "jobs.csv"
    trace.write_text("job_id,submit_time,gpus,runtime_s,gpu_model\na,0,1,600,h100\nb,60,1,600,V100\n")
    assert main(["bench", "--trace", str(trace), "--pool-nodes", "1", "--json"]) == 2
    cap = capsys.readouterr()
    assert cap.out == "" and "1 job(s) need GPU model(s) h100 that neither the pool (V100) nor the catalog" in cap.err


def test_two_traces_of_the_same_file_name_stay_two_settings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Settings were keyed by file name: the second trace's arms overwrote the first's in the target
    checks, and the tables mixed both under one bracket. Each is now named by as much of its path
    as tells them apart, and a window given twice is one setting."""
    from burster.eval.suite import trace_labels

    assert trace_labels(["/x/a/jobs.csv", "/x/b/jobs.csv", "/y/other.csv"]) == {
        "/x/a/jobs.csv": "a/jobs.csv", "/x/b/jobs.csv": "b/jobs.csv", "/y/other.csv": "other.csv"}
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a, b = write_trace(tmp_path / "a"), write_trace(tmp_path / "b")
    assert a.name == b.name
    assert main(["bench", "--trace", str(a), "--trace", str(b), "--trace", str(b), "--policies", "burster",
                 "--pool-nodes", "1", "--seeds", "0", "--json"]) == 0
    recs = json.loads(capsys.readouterr().out)
    assert sorted(r["trace"] for r in recs) == [f"a/{a.name}", f"b/{b.name}"]


def test_a_missing_solver_is_a_clear_error_before_any_arm_runs(monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """On the core install `make demo` makes, HiGHS is absent: bench used to run its arms, then
    die in the bound worker with a traceback."""
    monkeypatch.setitem(sys.modules, "highspy", None)  # what an install without the eval extra gives
    assert main(["bench", "--quick", "--json"]) == 2
    captured = capsys.readouterr()
    assert "burster: error: burster bench computes the offline lower bound with HiGHS" in captured.err
    assert "pip install 'burster[eval]'" in captured.err and captured.out == ""


def test_a_window_past_the_trace_s_last_day_is_labelled_as_cut(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """``--days 30`` on a trace of one day runs (and says it runs) that day, as ``burster simulate`` cuts it."""
    trace = write_trace(tmp_path)
    (whole,) = records_of(capsys, one_setting(trace, "--days", "1"))
    (asked,) = records_of(capsys, one_setting(trace, "--days", "30"))
    assert whole["window"] == asked["window"] == "day 0 + 1 d"
    assert asked["cloud_usd"] == whole["cloud_usd"] and asked["onprem_utilization"] == whole["onprem_utilization"]
