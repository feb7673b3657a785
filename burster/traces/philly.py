"""Chronus' Philly-derived job lists with deadlines (semi-synthetic; see the data README).

Columns: job_id, user, num_gpu, submit_time, duration, expect_time_list, job_type (strict / soft /
best). Times are in the trace's unit (minutes). A strict or soft job's deadline is
submit_time + expect_time; best-effort jobs have none. Jobs with 0 GPUs are skipped (they never
need a GPU node); jobs above 8 GPUs are gangs of 8-GPU nodes.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from burster.model import Demand, JobClass
from burster.traces.base import TRACE_EPOCH, Trace, csv_rows, sorted_trace

COLUMNS = ("job_id", "user", "num_gpu", "submit_time", "duration", "expect_time_list", "job_type")
GPUS_PER_NODE = 8
CLASSES = {"strict": JobClass.STRICT, "soft": JobClass.SOFT, "best": JobClass.BEST_EFFORT}


def load_philly(path: Path, *, unit_s: float = 60.0, checkpoint_interval_s: float = 1800.0) -> Trace:
    jobs: list[Demand] = []
    for row in csv_rows(path, COLUMNS):
        gpus = row.number("num_gpu")
        if gpus != int(gpus):
            raise row.fail("num_gpu", f"{gpus:g} is not a whole number of GPUs")
        submit = row.number("submit_time")
        duration = row.number("duration")
        kind = row.text("job_type")
        if kind not in CLASSES:
            raise row.fail("job_type", f"{kind!r} is not one of {', '.join(CLASSES)}")
        expect = row.number("expect_time_list") if kind != "best" else 0.0
        if gpus == 0 or duration == 0:
            continue
        submitted = TRACE_EPOCH + timedelta(seconds=submit * unit_s)
        deadline = submitted + timedelta(seconds=expect * unit_s) if kind != "best" else None
        jobs.append(Demand(
            job_id=f"philly-{row.text('job_id')}",
            gpus=int(gpus),
            nodes=max(1, -(-int(gpus) // GPUS_PER_NODE)),
            submitted_at=submitted,
            est_runtime_s=duration * unit_s,
            deadline=deadline,
            job_class=CLASSES[kind],
            priority=1 if kind == "strict" else 0,
            checkpoint_interval_s=checkpoint_interval_s,
            team=row.text("user"),
        ))
    return sorted_trace(path.name, path, jobs)
