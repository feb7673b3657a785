"""Chronus' Philly-derived job lists with deadlines (semi-synthetic; see the data README).

Columns: job_id, user, num_gpu, submit_time, duration, expect_time_list, job_type (strict / soft /
best). Times are in the trace's unit (minutes). A strict or soft job's deadline is
submit_time + expect_time; best-effort jobs have none. MIX2-style soft jobs list several
"-"-separated expect times with falling values (a utility step: full value by the first time, less
by each later one): the deadline is the first, full-value time. Jobs with 0 GPUs (they never need a
GPU node) or a duration of 0 are skipped and counted; jobs above 8 GPUs are gangs of 8-GPU nodes.
Job ids must be unique and non-empty.
"""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from pathlib import Path

from burster.model import Demand, JobClass
from burster.traces.base import TRACE_EPOCH, Row, Trace, csv_rows, finish_trace, gang_nodes, out_of_range

COLUMNS = ("job_id", "user", "num_gpu", "submit_time", "duration", "expect_time_list", "job_type")
CLASSES = {"strict": JobClass.STRICT, "soft": JobClass.SOFT, "best": JobClass.BEST_EFFORT}


def load_philly(path: Path, *, unit_s: float = 60.0, checkpoint_interval_s: float = 1800.0,
                counts: Counter[str] | None = None) -> Trace:
    """Load a Chronus job list; ``counts`` (if given) receives the skipped rows by reason."""
    tally: Counter[str] = Counter()
    seen: dict[str, int] = {}
    jobs: list[Demand] = []
    for row in csv_rows(path, COLUMNS):
        job_id = row.text("job_id")
        if not job_id or job_id in seen:
            raise row.fail("job_id", f"duplicate of row {seen[job_id]}" if job_id else "empty job id")
        seen[job_id] = row.line
        gpus = row.number("num_gpu")
        if gpus != int(gpus):
            raise row.fail("num_gpu", f"{gpus:g} is not a whole number of GPUs")
        submitted = TRACE_EPOCH + timedelta(seconds=row.seconds("submit_time", unit_s))
        runtime_s = row.seconds("duration", unit_s)
        kind = row.text("job_type")
        if kind not in CLASSES:
            raise row.fail("job_type", f"{kind!r} is not one of {', '.join(CLASSES)}")
        deadline = submitted + timedelta(seconds=_first_expect_s(row, unit_s)) if kind != "best" else None
        if gpus == 0 or runtime_s == 0:
            tally["skipped: jobs with 0 GPUs" if gpus == 0 else "skipped: jobs with a duration of 0"] += 1
            continue
        jobs.append(Demand(
            job_id=f"philly-{job_id}",
            gpus=int(gpus),
            nodes=gang_nodes(int(gpus)),
            submitted_at=submitted,
            est_runtime_s=runtime_s,
            deadline=deadline,
            job_class=CLASSES[kind],
            priority=1 if kind == "strict" else 0,
            checkpoint_interval_s=checkpoint_interval_s,
            team=row.text("user"),
        ))
    return finish_trace(path, jobs, tally, counts)


def _first_expect_s(row: Row, unit_s: float) -> float:
    """The first of the (one or more, "-"-separated, increasing) expect times of a row, in seconds."""
    raw = row.text("expect_time_list")
    try:
        times = [float(part) * unit_s for part in raw.split("-")]
    except ValueError:
        raise row.fail("expect_time_list", f"{raw!r} is not a number or a '-'-separated list of them") from None
    if bad := [t for t in times if out_of_range(t)]:
        raise row.fail("expect_time_list", f"{raw!r} x {unit_s:g} s: {bad[0]:g} s {out_of_range(bad[0])}")
    if times != sorted(times):
        raise row.fail("expect_time_list", f"{raw!r} must be non-negative times in increasing order")
    return times[0]
