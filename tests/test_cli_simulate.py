"""`burster simulate` end to end: the demo, --json keys, --explain, and bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from burster.cli import main

KEYS = {"jobs", "cloud_usd", "cloud_usd_spot", "cloud_usd_on_demand", "onprem_utilization", "wait_p50_s",
        "wait_p95_s", "wait_p99_s", "deadline_misses", "preemptions", "lost_gpu_hours", "launches",
        "requeued_wait_gpu_hours", "stranded_gpu_hours"}


def test_demo_json_has_the_documented_keys(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--demo", "--days", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out.keys() >= KEYS
    assert out["jobs"] > 100 and out["cloud_usd"] >= out["cloud_usd_spot"]


def test_demo_table_and_explain_run_as_a_process(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "burster", "simulate", "--demo", "--days", "0.5"],
                          capture_output=True, text=True, check=True)
    assert "cloud $ total" in done.stdout and "wait p50 / p95 / p99" in done.stdout
    explained = subprocess.run([sys.executable, "-m", "burster", "simulate", "--demo", "--days", "2",
                                "--explain"], capture_output=True, text=True, check=True)
    assert "launch: job philly-" in explained.stdout and "cheapest effective is" in explained.stdout


def test_unknown_policy_lists_the_valid_ones(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--demo", "--days", "0.1", "--policy", "yolo"]) == 2
    err = capsys.readouterr().err
    assert "unknown policy 'yolo'" in err and "burster, reserved-only, on-demand" in err


def test_unknown_provider_lists_the_valid_ones(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--demo", "--days", "0.1", "--providers", "aws,ibm"]) == 2
    assert "unknown provider(s) ibm; valid: aws, gcp, azure" in capsys.readouterr().err


def test_bad_trace_row_fails_cleanly_and_prints_no_summary(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "trace_job_Philly_bad.csv"
    trace.write_text("job_id,user,num_gpu,submit_time,iterations,model_name,duration,interval,"
                     "expect_time_list,expect_value_list,best_effort,job_type\n"
                     "0,vc,1,5,5,vgg,30,1,60,10,0,strict\n1,vc,2,2026-13-01,5,vgg,30,1,60,10,0,strict\n")
    assert main(["simulate", "--trace", str(trace), "--json"]) == 2
    cap = capsys.readouterr()
    assert cap.out == ""
    assert f"{trace}: row 3, column 'submit_time'" in cap.err


def test_out_of_range_option_names_the_key(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--demo", "--pool-nodes", "-3"]) == 2
    assert "pool.nodes" in capsys.readouterr().err


def test_wrong_runtime_estimates_run_and_a_bad_sigma_names_its_range(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--demo", "--days", "1", "--pool-nodes", "6", "--json", "--estimate-error", "0.5"]) == 0
    noisy = json.loads(capsys.readouterr().out)
    assert main(["simulate", "--demo", "--days", "1", "--pool-nodes", "6", "--json"]) == 0
    exact = json.loads(capsys.readouterr().out)
    assert noisy["jobs"] == exact["jobs"] and exact["cloud_usd"] > 0 and noisy["cloud_usd"] != exact["cloud_usd"]
    assert (noisy["estimate_error"], exact["estimate_error"]) == (0.5, 0.0)
    assert main(["simulate", "--demo", "--days", "0.1", "--estimate-error", "-1"]) == 2
    assert "lognormal sigma in [0, 3]" in capsys.readouterr().err


def test_a_whole_trace_replay_includes_its_last_arrival(tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "trace_job_Philly_two.csv"
    trace.write_text("job_id,user,num_gpu,submit_time,iterations,model_name,duration,interval,"
                     "expect_time_list,expect_value_list,best_effort,job_type\n"
                     "0,vc,1,5,5,vgg,30,1,60,10,1,best\n1,vc,2,5,5,vgg,30,1,60,10,1,best\n")
    assert main(["simulate", "--trace", str(trace), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["jobs"] == out["jobs_finished"] == 2
