"""CSV layout mistakes in trace files: blank lines, padded or miscased column names, extra cells,
an upper-case .GZ suffix, nanosecond Parquet times. Each is read right or stops with the file,
row and column; none loses a value without a word."""

from __future__ import annotations

import gzip
import logging
from pathlib import Path

import pytest

from burster.errors import InputError
from burster.model import JobClass
from burster.traces import load_trace

PHILLY_HEADER = "job_id,user,num_gpu,submit_time,duration,expect_time_list,job_type\n"


def test_a_row_after_blank_lines_is_named_by_its_line(tmp_path: Path) -> None:
    path = tmp_path / "trace_job_Philly_t.csv"
    path.write_text(PHILLY_HEADER + "\n0,vc,1,10,30,60,strict\n\n1,vc,1,x,30,60,strict\n")
    with pytest.raises(InputError, match=r"row 5, column 'submit_time': 'x' is not a number"):
        load_trace(path, "philly")


def test_an_unclosed_quote_after_blank_lines_names_its_row(tmp_path: Path) -> None:
    path = tmp_path / "jobs.csv"
    path.write_text("job_id,submit_time,gpus,runtime_s\n\na,2026-03-02T09:00:00Z,2,600\n\n"
                    "b,\"2026-03-02T09:00:00Z,2,600\nc,2026-03-02T09:00:00Z,2,600\n")
    with pytest.raises(InputError, match=r"rows 5-6: a quoted cell runs over 2 lines; look for an unclosed quote on "
                                         r"row 5"):
        load_trace(path, "generic")


def test_padded_column_names_are_read(tmp_path: Path) -> None:
    """` deadline` used to be an unknown column: a strict job with a deadline became best effort."""
    path = tmp_path / "jobs.csv"
    path.write_text("job_id, submit_time, gpus, runtime_s, deadline, job_class, gpu_model\n"
                    "a,2026-01-01T00:00:00Z,16,7200,2026-01-01T03:00:00Z,strict,H100\n")
    (job,) = load_trace(path, "generic").jobs
    assert job.job_class is JobClass.STRICT and job.deadline is not None and job.gpu_model == "H100"


def test_a_known_column_in_another_case_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "jobs.csv"
    path.write_text("job_id,submit_time,gpus,runtime_s,Deadline\na,2026-01-01T00:00:00Z,16,7200,2026-01-01T03:00:00Z\n")
    with pytest.raises(InputError, match=r"row 1 \(header\): column 'Deadline'.*rename it 'deadline'") as info:
        load_trace(path, "generic")
    assert str(path) in str(info.value)


def test_columns_burster_does_not_read_are_named_in_a_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "jobs.csv"
    path.write_text("job_id,submit_time,gpus,runtime_s,user,notes\na,2026-01-01T00:00:00Z,16,7200,ann,x\n")
    with caplog.at_level(logging.WARNING, logger="burster.traces"):
        assert len(load_trace(path, "generic").jobs) == 1
    assert "'user', 'notes' are not Burster's" in caplog.text


@pytest.mark.parametrize(("name", "fmt", "text"), [
    ("trace_job_Philly_t.csv", "philly", PHILLY_HEADER + "0,vc,1,10,30,60,strict,EXTRA\n"),
    ("jobs.csv", "generic", "job_id,submit_time,gpus,runtime_s\na,2026-01-01T00:00:00Z,16,7200,9\n"),
])
def test_a_row_with_more_cells_than_columns_is_an_error(tmp_path: Path, name: str, fmt: str, text: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(InputError, match=r"row 2: \d+ cells for \d+ header columns; quote cells that hold a comma"):
        load_trace(path, fmt)


def test_an_upper_case_gz_suffix_is_read_as_gzip(tmp_path: Path) -> None:
    path = tmp_path / "trace_job_Philly_t.csv.GZ"
    path.write_bytes(gzip.compress((PHILLY_HEADER + "0,vc,1,10,30,60,strict\n").encode()))
    assert len(load_trace(path).jobs) == 1


def test_nanosecond_parquet_times_are_read_to_the_microsecond(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "jobs.parquet"
    ns = 1_767_225_600_000_000_001  # 2026-01-01T00:00:00.000000001Z
    pq.write_table(pa.table({"job_id": ["a"], "submit_time": pa.array([ns], pa.timestamp("ns", "UTC")),
                             "gpus": [8], "runtime_s": [600.0]}), path)
    (job,) = load_trace(path).jobs
    assert job.submitted_at.isoformat() == "2026-01-01T00:00:00+00:00"


def test_a_closed_quoted_cell_over_lines_names_its_rows(tmp_path: Path) -> None:
    path = tmp_path / "jobs.csv"
    path.write_text("job_id,submit_time,gpus,runtime_s,team\na,2026-03-02T09:00:00Z,2,600,\"vi\nsion\"\n")
    with pytest.raises(InputError, match=r"rows 2-3: a quoted cell runs over 2 lines; look for an unclosed quote on "
                                         r"row 2"):
        load_trace(path, "generic")
