"""Chronus' Philly-derived job lists with deadlines (semi-synthetic; see the data README).

Columns: job_id, user, num_gpu, submit_time, duration, expect_time_list, job_type (strict / soft /
best). Times are in the trace's unit (minutes). A strict or soft job's deadline is
submit_time + expect_time; best-effort jobs have none. MIX2-style soft jobs list several
"-"-separated expect times with falling values (a utility step: full value by the first time, less
by each later one): the deadline is the first, full-value time. Jobs with 0 GPUs are skipped (they never
need a GPU node); jobs above 8 GPUs are gangs of 8-GPU nodes.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from burster.model import Demand, JobClass
from burster.traces.base import TRACE_EPOCH, Row, Trace, csv_rows, sorted_trace

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
        expect = _first_expect_time(row) if kind != "best" else 0.0
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


def _first_expect_time(row: Row) -> float:
    """The first of the (one or more, "-"-separated, increasing) expect times of a row."""
    raw = row.text("expect_time_list")
    times = []
    for part in raw.split("-"):
        try:
            times.append(float(part))
        except ValueError:
            raise row.fail("expect_time_list", f"{raw!r} is not a number or a '-'-separated list of them") from None
    if any(t < 0 for t in times) or times != sorted(times):
        raise row.fail("expect_time_list", f"{raw!r} must be non-negative times in increasing order")
    return times[0]
