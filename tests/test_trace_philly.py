"""The Chronus/Philly trace loader: good rows load, bad rows fail naming file, row and column."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from burster.app import DEMO_TRACE
from burster.errors import InputError
from burster.model import JobClass
from burster.traces import load_trace

HEADER = "job_id,user,num_gpu,submit_time,iterations,model_name,duration,interval,expect_time_list," \
         "expect_value_list,best_effort,job_type\n"


def write(tmp_path: Path, rows: str) -> Path:
    path = tmp_path / "trace_job_Philly_test.csv"
    path.write_text(HEADER + rows)
    return path


def test_rows_become_demands_with_deadlines_and_gangs(tmp_path: Path) -> None:
    path = write(tmp_path, "1,vc_a,16,10,5,vgg,100,1,250,10,0,strict\n0,vc_b,1,5,5,vgg,30,1,5,10,1,best\n"
                           "2,vc_c,0,7,5,vgg,30,1,5,10,1,best\n")
    trace = load_trace(path)
    assert [j.job_id for j in trace.jobs] == ["philly-0", "philly-1"]  # sorted; 0-GPU job skipped
    best, strict = trace.jobs
    assert best.deadline is None and best.job_class is JobClass.BEST_EFFORT
    assert strict.nodes == 2 and strict.gpus_per_node == 8 and strict.est_runtime_s == 6000
    assert (strict.deadline - strict.submitted_at).total_seconds() == 250 * 60


@pytest.mark.parametrize(("row", "column", "problem"), [
    ("1,vc,-2,10,5,vgg,100,1,250,10,0,strict", "num_gpu", "below the minimum"),
    ("1,vc,2,ten,5,vgg,100,1,250,10,0,strict", "submit_time", "not a number"),
    ("1,vc,2,10,5,vgg,100,1,250,10,0,urgent", "job_type", "not one of"),
    ("1,vc,1.5,10,5,vgg,100,1,250,10,0,strict", "num_gpu", "whole number"),
    ("1,vc,1,10,5,vgg,100,1,250-x,10-8,0,soft", "expect_time_list", "not a number"),
    ("1,vc,1,10,5,vgg,100,1,250-200,10-8,0,soft", "expect_time_list", "increasing order"),
])
def test_bad_rows_are_rejected_with_file_row_and_column(tmp_path: Path, row: str, column: str,
                                                        problem: str) -> None:
    path = write(tmp_path, "0,vc,1,5,5,vgg,30,1,60,10,0,strict\n" + row + "\n")
    with pytest.raises(InputError) as info:
        load_trace(path)
    msg = str(info.value)
    assert f"{path}: row 3, column '{column}'" in msg and problem in msg


def test_missing_columns_are_named(tmp_path: Path) -> None:
    path = tmp_path / "trace_job_Philly_x.csv"
    path.write_text("job_id,num_gpu\n1,2\n")
    with pytest.raises(InputError, match=r"row 1 \(header\): missing column\(s\) user, submit_time"):
        load_trace(path)


def test_gzip_and_bundled_demo_trace() -> None:
    trace = load_trace(DEMO_TRACE, "philly")
    assert 1500 < len(trace.jobs) < 2500
    with gzip.open(DEMO_TRACE, "rt") as fh:
        assert fh.readline() == HEADER


def test_a_soft_job_with_a_utility_step_gets_its_first_full_value_time_as_deadline(tmp_path: Path) -> None:
    path = write(tmp_path, "0,vc,1,5601,5530,mobilenet_v2,96,5,159-189-229-289,10-8-5-2,0,soft\n")
    (job,) = load_trace(path).jobs
    assert job.job_class is JobClass.SOFT
    assert (job.deadline - job.submitted_at).total_seconds() == 159 * 60
