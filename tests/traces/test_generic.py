"""The generic CSV / Parquet job format: every column, defaults, skip rules and every error."""

from __future__ import annotations

import gzip
import sys
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from burster.errors import InputError
from burster.model import JobClass
from burster.traces import load_trace
from burster.traces.generic import load_generic
from burster.traces.registry import detect_format

HEADER = "job_id,submit_time,gpus,runtime_s,nodes,gpu_model,priority,deadline,job_class,checkpoint_interval_s," \
         "team,project,sprint\n"
GOOD = "a,2026-03-02T09:00:00Z,16,7200,,A100,2,2026-03-02T15:00:00+00:00,strict,600,vision,detector,S12\n"


def write(tmp_path: Path, rows: str, header: str = HEADER, name: str = "jobs.csv") -> Path:
    path = tmp_path / name
    path.write_text(header + rows)
    return path


def test_a_str_path_loads_like_a_path_object(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD)
    assert load_trace(str(path)).jobs == load_trace(path).jobs
    with pytest.raises(InputError, match="cannot tell the format"):
        load_trace(str(tmp_path / "jobs.txt"))


def test_every_column_and_the_defaults(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD + "b,1772442000,1,60,,,,,,,,,\n" + "c,2026-03-02 08:00,4,30.5,4,,,1772445600,,,,,\n")
    assert detect_format(path) == "generic"
    trace = load_trace(path)
    assert [j.job_id for j in trace.jobs] == ["c", "a", "b"]
    c, a, b = trace.jobs
    assert a.gpus == 16 and a.nodes == 2 and a.gpu_model == "A100" and a.priority == 2
    assert a.submitted_at == datetime(2026, 3, 2, 9, tzinfo=UTC) and a.est_runtime_s == 7200
    assert a.deadline == datetime(2026, 3, 2, 15, tzinfo=UTC) and a.job_class is JobClass.STRICT
    assert (a.checkpoint_interval_s, a.team, a.project, a.sprint) == (600, "vision", "detector", "S12")
    # epoch seconds, and every optional column left empty
    assert b.submitted_at == datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
    assert (b.nodes, b.gpu_model, b.priority, b.deadline, b.job_class, b.checkpoint_interval_s, b.team) == \
        (1, "", 0, None, JobClass.BEST_EFFORT, 1800.0, "")
    # a naive ISO time is UTC; a deadline without job_class makes a soft job; explicit nodes are kept
    assert c.submitted_at == datetime(2026, 3, 2, 8, tzinfo=UTC) and c.nodes == 4 and c.gpus_per_node == 1
    assert c.deadline == datetime(2026, 3, 2, 10, tzinfo=UTC) and c.job_class is JobClass.SOFT


def test_required_columns_only_gzip_and_skips(tmp_path: Path) -> None:
    path = tmp_path / "history.csv.gz"
    path.write_bytes(gzip.compress(b"job_id,submit_time,gpus,runtime_s\nx,0,2,10\ncpu,5,0,10\nnil,6,1,0\n"))
    assert detect_format(path) == "generic"
    counts: Counter[str] = Counter()
    trace = load_generic(path, counts=counts)
    assert [j.job_id for j in trace.jobs] == ["x"] and trace.jobs[0].submitted_at == datetime(1970, 1, 1, tzinfo=UTC)
    assert counts == Counter({"skipped: jobs with 0 GPUs": 1, "skipped: jobs that ran 0 s": 1})


@pytest.mark.parametrize(("row", "column", "problem"), [
    (",0,1,10,,,,,,,,,", "job_id", "empty job id"),
    ("a,0,1,10,,,,,,,,,", "job_id", "duplicate of row 2"),
    ("x,0,-1,10,,,,,,,,,", "gpus", "below the minimum"),
    ("x,0,1.5,10,,,,,,,,,", "gpus", "not a whole number"),
    ("x,0,lots,10,,,,,,,,,", "gpus", "not a number"),
    ("x,0,1,-10,,,,,,,,,", "runtime_s", "below the minimum"),
    ("x,0,1,inf,,,,,,,,,", "runtime_s", "not a finite number"),
    ("x,,1,10,,,,,,,,,", "submit_time", "not an ISO-8601 time"),
    ("x,monday,1,10,,,,,,,,,", "submit_time", "not an ISO-8601 time"),
    ("x,1e12,1,10,,,,,,,,,", "submit_time", "epoch seconds must be from 0 to 1e11"),
    ("x,0,2,10,3,,,,,,,,", "nodes", "3 nodes for 2 GPUs"),
    ("x,0,2,10,0,,,,,,,,", "nodes", "below the minimum 1"),
    ("x,0,2,10,1.5,,,,,,,,", "nodes", "not a whole number"),
    ("x,0,1,10,,,0.5,,,,,,", "priority", "not a whole number"),
    ("x,100,1,10,,,,50,,,,,", "deadline", "is not after submit_time"),
    ("x,100,1,10,,,,later,,,,,", "deadline", "not an ISO-8601 time"),
    ("x,100,1,10,,,,,urgent,,,,", "job_class", "'urgent' is not one of strict, soft, best"),
    ("x,100,1,10,,,,500,best,,,,", "deadline", "a best-effort job has no deadline"),
    ("x,100,1,10,,,,,strict,,,,", "deadline", "a 'strict' job needs a deadline"),
    ("x,100,1,10,,,,,,0,,,", "checkpoint_interval_s", "is not above 0"),
    ("x,100,1", "runtime_s", "missing value"),
])
def test_bad_rows_name_file_row_and_column(tmp_path: Path, row: str, column: str, problem: str) -> None:
    path = write(tmp_path, GOOD + row + "\n")
    with pytest.raises(InputError) as info:
        load_trace(path, "generic")
    msg = str(info.value)
    assert f"{path}: row 3, column '{column}'" in msg and problem in msg


def test_header_and_detection_errors(tmp_path: Path) -> None:
    path = write(tmp_path, "a,0,1,10\n", header="job_id,submit,gpus,runtime_s\n")
    with pytest.raises(InputError, match=r"row 1 \(header\): missing column\(s\) submit_time; found job_id, submit"):
        load_trace(path)
    other = write(tmp_path, "a,1\n", header="id,gpus\n", name="other.csv")
    with pytest.raises(InputError, match="one of philly, alibaba, helios, generic, sacct"):
        load_trace(other)
    with pytest.raises(InputError, match="unknown trace format 'slurm'; valid: philly, alibaba, helios, generic"):
        load_trace(other, "slurm")
    with pytest.raises(InputError, match="does not exist"):
        load_trace(tmp_path / "gone.csv")
    with pytest.raises(InputError, match="holds no jobs"):
        load_trace(write(tmp_path, "", name="empty.csv"))


def test_parquet_round_trip(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    submit = datetime(2026, 3, 2, 9, tzinfo=UTC)
    table = pa.table({
        "job_id": ["p1", "p2"], "submit_time": [submit, submit + timedelta(minutes=5)], "gpus": [8, 24],
        "runtime_s": [3600.0, 60.0], "deadline": [None, submit + timedelta(hours=2)],
        "job_class": [None, "strict"], "team": ["nlp", None], "priority": [None, 1],
    })
    path = tmp_path / "jobs.parquet"
    pq.write_table(table, path)
    assert detect_format(path) == "generic"
    first, second = load_trace(path).jobs
    assert (first.job_id, first.gpus, first.nodes, first.submitted_at, first.est_runtime_s) == \
        ("p1", 8, 1, submit, 3600.0)
    assert first.deadline is None and first.job_class is JobClass.BEST_EFFORT and first.team == "nlp"
    assert second.nodes == 3 and second.priority == 1 and second.job_class is JobClass.STRICT
    assert second.deadline == submit + timedelta(hours=2)

    pq.write_table(pa.table({"job_id": ["q"], "submit_time": [0], "gpus": [-4], "runtime_s": [1.0]}), path)
    with pytest.raises(InputError, match=rf"{path}: row 1, column 'gpus': -4 is below the minimum"):
        load_trace(path)
    pq.write_table(pa.table({"job_id": ["q"], "gpus": [1]}), path)
    with pytest.raises(InputError, match="missing column\\(s\\) submit_time, runtime_s"):
        load_trace(path)
    path.write_bytes(b"PAR1 this is not really parquet")
    with pytest.raises(InputError, match="not a readable Parquet file"):
        load_trace(path)


def test_parquet_without_pyarrow_says_how_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)  # makes `import pyarrow.parquet` fail
    path = tmp_path / "jobs.parquet"
    path.write_bytes(b"")
    with pytest.raises(InputError, match="reading Parquet needs pyarrow; run `pip install pyarrow`"):
        load_trace(path)


def test_a_runtime_s_header_is_generic_whatever_the_file_is_called(tmp_path: Path) -> None:
    path = tmp_path / "philly_jobs_exported.csv"  # the name alone would say philly
    path.write_text("job_id,submit_time,gpus,runtime_s\nx,0,2,10\n")
    assert detect_format(path) == "generic"
    assert [j.job_id for j in load_trace(path).jobs] == ["x"]


def test_times_with_an_offset_are_taken_to_utc(tmp_path: Path) -> None:
    """The same instants written with an offset or in UTC are the same jobs at the same times: a
    window's days (and a day's budget) are UTC days."""
    offset = write(tmp_path, "a,2026-01-01T23:00:00-05:00,1,60,,,,,,,,,\nb,2026-01-02T10:00:00+02:00,1,60,,,,,,,,,\n",
                   name="offset.csv")
    utc = write(tmp_path, "a,2026-01-02T04:00:00Z,1,60,,,,,,,,,\nb,2026-01-02T08:00:00Z,1,60,,,,,,,,,\n",
                name="utc.csv")
    jobs = load_trace(offset).jobs
    assert [j.submitted_at for j in jobs] == [j.submitted_at for j in load_trace(utc).jobs]
    assert all(j.submitted_at.tzinfo is UTC for j in jobs)
    assert load_trace(offset).start == datetime(2026, 1, 2, 4, tzinfo=UTC)
