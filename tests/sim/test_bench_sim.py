"""``python -m bench.sim``: the simulator benchmark's record, and its bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bench.sim", "--quick", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=300)


def test_the_quick_benchmark_replays_the_week_with_wrong_estimates() -> None:
    done = _bench("--json", "--estimate-error", "0.5")
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert record["estimate_error"] == 0.5 and record["jobs"] == 2023
    # jobs outrunning their estimates no longer make every 10 s tick a pass (29,909 passes before)
    assert 0 < record["passes"] < 10_000
    assert abs(record["jobs_per_s"] - record["jobs"] / record["wall_s"]) < 1.0
    parts = [record[k] for k in ("world_s", "decide_s", "observe_actuate_s", "loop_s")]
    assert all(p > 0 for p in parts)  # every phase ran: the pool's events, the policy, the passes, the loop
    assert abs(sum(parts) - record["wall_s"]) < 0.01  # the split accounts for the whole wall time


def test_the_text_report_names_the_split_of_the_wall_time() -> None:
    done = _bench()
    assert done.returncode == 0, done.stderr
    assert "2023 jobs in " in done.stdout and "passes; world " in done.stdout and ", decide " in done.stdout


def test_an_estimate_error_out_of_range_is_a_usage_error_naming_the_range() -> None:
    done = _bench("--estimate-error", "9")
    assert done.returncode == 2
    assert "--estimate-error: estimate error must be a lognormal sigma in [0, 3]" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_node_cap_is_the_dense_case_the_benchmark_can_time() -> None:
    done = _bench("--json", "--max-nodes", "4")
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert record["max_nodes"] == 4 and record["jobs"] == 2023
    # launches held back at the cap leave the policy no quiet time: 4,611 passes without a cap
    assert record["passes"] > 10_000


def test_a_node_cap_out_of_range_is_a_usage_error_naming_the_key_and_range() -> None:
    done = _bench("--max-nodes", "-1")
    assert done.returncode == 2
    assert "--max-nodes: invalid configuration" in done.stderr and "guards.max_nodes" in done.stderr
    assert "greater than or equal to 0" in done.stderr and "Traceback" not in done.stderr
