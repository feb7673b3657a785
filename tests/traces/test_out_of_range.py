"""Times and durations outside the shared bounds (0 to 10 years; times from 1970 to before 9000) stop at the row."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from burster.errors import InputError
from burster.traces import load_trace
from burster.traces.base import MAX_SECONDS

TEN_YEARS = "from 0 to 10 years"
BEFORE_9000 = "times must be from 1970 to before 9000"


def load_error(path: Path) -> str:
    with pytest.raises(InputError) as info:
        load_trace(path)
    return str(info.value)


@pytest.mark.parametrize(("cells", "column", "problem"), [
    ("2026-03-02T09:00:00Z,1,1e12,", "runtime_s", TEN_YEARS),
    ("2026-03-02T09:00:00Z,1,1e300,", "runtime_s", TEN_YEARS),
    ("9999-12-31T23:00:00Z,1,60,", "submit_time", BEFORE_9000),
    ("0001-01-01T00:00:00+05:00,1,60,", "submit_time", BEFORE_9000),
    ("2026-03-02T09:00:00Z,1,60,9999-12-31T23:59:59Z", "deadline", BEFORE_9000),
])
def test_generic(tmp_path: Path, cells: str, column: str, problem: str) -> None:
    path = tmp_path / "jobs.csv"
    path.write_text(f"job_id,submit_time,gpus,runtime_s,deadline\nok,2026-03-02T09:00:00Z,1,60,\nbad,{cells}\n")
    msg = load_error(path)
    assert msg.startswith(f"{path}: row 3, column '{column}': ") and problem in msg


def test_generic_at_the_bounds_loads(tmp_path: Path) -> None:
    path = tmp_path / "jobs.csv"
    path.write_text(f"job_id,submit_time,gpus,runtime_s\nlast,8999-12-31T23:00:00Z,8,{MAX_SECONDS}\n")
    (job,) = load_trace(path).jobs
    assert job.est_runtime_s == MAX_SECONDS and job.submitted_at == datetime(8999, 12, 31, 23, tzinfo=UTC)


def test_a_parquet_timestamp_in_year_9999(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "jobs.parquet"
    pq.write_table(pa.table({"job_id": ["late"], "submit_time": [datetime(9999, 12, 31, 23, 59, 59)],
                             "gpus": [1], "runtime_s": [600.0]}), path)
    msg = load_error(path)
    assert msg.startswith(f"{path}: row 1, column 'submit_time': ") and BEFORE_9000 in msg


@pytest.mark.parametrize(("cells", "column"), [
    ("1e300,30,60", "submit_time"),
    ("5,1e300,60", "duration"),
    ("5,30,1e300", "expect_time_list"),
    ("5,30,nan", "expect_time_list"),
    ("5,30,inf", "expect_time_list"),
    ("5,30,60-1e300", "expect_time_list"),
])
def test_philly(tmp_path: Path, cells: str, column: str) -> None:
    path = tmp_path / "trace_job_Philly_t.csv"
    path.write_text("job_id,user,num_gpu,submit_time,duration,expect_time_list,job_type\n"
                    f"1,vc,2,5,30,60,strict\n2,vc,2,{cells},soft\n")
    msg = load_error(path)
    assert msg.startswith(f"{path}: row 3, column '{column}': ") and TEN_YEARS in msg and "x 60 s" in msg


@pytest.mark.parametrize(("times", "column"), [
    ("0,1e300,0", "deletion_time"),
    ("1e12,1e12,1e12", "creation_time"),
    ("0,100,1e300", "scheduled_time"),
])
def test_alibaba(tmp_path: Path, times: str, column: str) -> None:
    path = tmp_path / "openb_pod_list_t.csv"
    path.write_text("name,num_gpu,gpu_milli,creation_time,deletion_time,scheduled_time\n"
                    f"ok,1,1000,0,100,0\nbad,1,1000,{times}\n")
    msg = load_error(path)
    assert msg.startswith(f"{path}: row 3, column '{column}': ") and TEN_YEARS in msg


T0 = 1772442000  # 2026-03-02 09:00 UTC


@pytest.mark.parametrize(("times", "field", "problem"), [
    ({"submission": 10**12, "start": 10**12, "end": 10**12 + 100}, "time.submission", BEFORE_9000),
    ({"submission": 10**20, "start": T0, "end": T0 + 100}, "time.submission", BEFORE_9000),
    ({"submission": T0, "start": T0, "end": 10**20}, "time.end", BEFORE_9000),
    ({"submission": T0, "start": T0, "end": T0 + 100, "elapsed": 10**15}, "time.elapsed", TEN_YEARS),
    ({"submission": T0, "start": T0, "end": T0 + 400_000_000}, "time.end", TEN_YEARS),
    ({"submission": float("inf"), "start": T0, "end": T0 + 100}, "time.submission", "not a whole number"),
])
def test_sacct(tmp_path: Path, times: dict[str, float], field: str, problem: str) -> None:
    path = tmp_path / "history.json"
    gpus = {"allocated": [{"type": "gres", "name": "gpu", "count": 4}]}
    path.write_text(json.dumps({"jobs": [{"job_id": 7, "time": times, "tres": gpus}]}))  # inf -> Infinity
    msg = load_error(path)
    assert msg.startswith(f"{path}: jobs[0] (job_id 7), field '{field}': ") and problem in msg
