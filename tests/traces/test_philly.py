"""The Philly loader: job ids must be unique and non-empty, and skipped rows are counted."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from burster.errors import InputError
from burster.traces.philly import load_philly

HEADER = "job_id,user,num_gpu,submit_time,duration,expect_time_list,job_type\n"


def write(tmp_path: Path, rows: str) -> Path:
    path = tmp_path / "trace_job_Philly_t.csv"
    path.write_text(HEADER + rows)
    return path


@pytest.mark.parametrize(("rows", "problem"), [
    ("7,vc,1,5,30,60,best\n7,vc,2,6,30,60,strict\n", "row 3, column 'job_id': duplicate of row 2"),
    ("7,vc,1,5,30,60,best\n ,vc,2,6,30,60,strict\n", "row 3, column 'job_id': empty job id"),
    ("7,vc,0,5,30,60,best\n7,vc,2,6,30,60,strict\n", "row 3, column 'job_id': duplicate of row 2"),  # skipped too
])
def test_duplicate_and_empty_job_ids_are_rejected(tmp_path: Path, rows: str, problem: str) -> None:
    path = write(tmp_path, rows)
    with pytest.raises(InputError, match=re.escape(f"{path}: {problem}")):
        load_philly(path)


def test_skipped_rows_are_counted(tmp_path: Path) -> None:
    path = write(tmp_path, "1,vc,1,5,30,60,best\n2,vc,0,5,30,60,best\n3,vc,0,6,0,60,soft\n4,vc,2,7,0,60,strict\n")
    counts: Counter[str] = Counter()
    trace = load_philly(path, counts=counts)
    assert [j.job_id for j in trace.jobs] == ["philly-1"]
    assert counts == {"skipped: jobs with 0 GPUs": 2, "skipped: jobs with a duration of 0": 1}
