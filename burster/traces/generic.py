"""Burster's own job format: a CSV (optionally .gz) or Parquet file with one job per row.

Required columns: job_id, submit_time (ISO-8601, or seconds since the Unix epoch), gpus, runtime_s.
Optional: nodes (default ceil(gpus / 8)), gpu_model ("" = any), priority (whole number, default 0),
deadline (ISO-8601 or epoch seconds), job_class (strict | soft | best; default soft with a deadline,
best without), checkpoint_interval_s (default 1800), team, project, sprint. An empty optional cell
takes the default. Rows with 0 GPUs or a runtime of 0 s are skipped and counted; everything else
that is wrong stops the load with the file, row and column. Parquet needs pyarrow; its row numbers
count data rows from 1 (CSV rows count the header as row 1, as a spreadsheet shows them).
"""

from __future__ import annotations

import importlib
import logging
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from burster.errors import InputError
from burster.model import Demand, JobClass
from burster.traces.base import Row, Trace, csv_rows, finish_trace, gang_nodes

REQUIRED = ("job_id", "submit_time", "gpus", "runtime_s")
OPTIONAL = ("nodes", "gpu_model", "priority", "deadline", "job_class", "checkpoint_interval_s", "team", "project",
            "sprint")
CLASS_NAMES = {c.value: c for c in JobClass} | {"best_effort": JobClass.BEST_EFFORT}
_log = logging.getLogger("burster.traces")


def load_generic(path: Path, *, counts: Counter[str] | None = None) -> Trace:
    """Load a generic CSV / Parquet job list; ``counts`` (if given) receives the skipped rows by reason."""
    rows = _parquet_rows(path) if path.suffix.lower() == ".parquet" else csv_rows(path, REQUIRED)
    tally: Counter[str] = Counter()
    seen: dict[str, int] = {}
    jobs: list[Demand] = []
    for row in rows:
        if not seen:
            _check_columns(path, list(row.cells))
        job_id = row.text("job_id")
        if not job_id or job_id in seen:
            raise row.fail("job_id", f"duplicate of row {seen[job_id]}" if job_id else "empty job id")
        seen[job_id] = row.line
        job = _job(row, job_id)
        if job.gpus == 0 or job.est_runtime_s == 0:
            tally["skipped: jobs with 0 GPUs" if job.gpus == 0 else "skipped: jobs that ran 0 s"] += 1
            continue
        jobs.append(job)
    return finish_trace(path, jobs, tally, counts)


def _check_columns(path: Path, columns: list[str]) -> None:
    """A known column spelled in another case is an error (its values would be lost); any other
    column Burster does not read is named in a warning."""
    known = {c.lower(): c for c in (*REQUIRED, *OPTIONAL)}
    for column in columns:
        if column not in known.values() and column.lower() in known:
            raise InputError(f"{path}: row 1 (header): column {column!r}: Burster's column names are lower "
                             f"case; rename it {known[column.lower()]!r}")
    unread = [c for c in columns if c not in known.values()]
    if unread:
        _log.warning("%s: column(s) %s are not Burster's (docs/traces.md lists them); ignored",
                     path, ", ".join(repr(c) for c in unread))


def _job(row: Row, job_id: str) -> Demand:
    gpus = _whole(row, "gpus")
    runtime_s = row.seconds("runtime_s")
    submitted = _when(row, "submit_time")
    nodes = _whole(row, "nodes", minimum=1) if _given(row, "nodes") else gang_nodes(gpus)
    if gpus and nodes > gpus:
        raise row.fail("nodes", f"{nodes} nodes for {gpus} GPU{'s' if gpus != 1 else ''}; every node of a job "
                       "needs at least one GPU")
    deadline = _when(row, "deadline") if _given(row, "deadline") else None
    if deadline is not None and deadline <= submitted:
        raise row.fail("deadline", f"{deadline.isoformat()} is not after submit_time {submitted.isoformat()}")
    kind = row.text("job_class").lower() if _given(row, "job_class") else ("soft" if deadline else "best")
    if kind not in CLASS_NAMES:
        raise row.fail("job_class", f"{kind!r} is not one of {', '.join(c.value for c in JobClass)}")
    job_class = CLASS_NAMES[kind]
    if job_class is JobClass.BEST_EFFORT and deadline is not None:
        raise row.fail("deadline", "a best-effort job has no deadline; drop it or set job_class to soft or strict")
    if job_class is not JobClass.BEST_EFFORT and deadline is None:
        raise row.fail("deadline", f"a {job_class.value!r} job needs a deadline (or set job_class to best)")
    checkpoint_s = row.seconds("checkpoint_interval_s") if _given(row, "checkpoint_interval_s") else 1800.0
    if checkpoint_s <= 0:
        raise row.fail("checkpoint_interval_s", f"{checkpoint_s:g} is not above 0")
    return Demand(
        job_id=job_id, gpus=gpus, nodes=nodes, submitted_at=submitted, est_runtime_s=runtime_s,
        gpu_model=_optional_text(row, "gpu_model"),
        priority=_whole(row, "priority", minimum=None) if _given(row, "priority") else 0,
        deadline=deadline, job_class=job_class, checkpoint_interval_s=checkpoint_s,
        team=_optional_text(row, "team"), project=_optional_text(row, "project"),
        sprint=_optional_text(row, "sprint"),
    )


def _given(row: Row, column: str) -> bool:
    return bool((row.cells.get(column) or "").strip())


def _optional_text(row: Row, column: str) -> str:
    return (row.cells.get(column) or "").strip()


def _whole(row: Row, column: str, *, minimum: float | None = 0.0) -> int:
    value = row.number(column, minimum=minimum)
    if value != int(value):
        raise row.fail(column, f"{value:g} is not a whole number")
    return int(value)


def _when(row: Row, column: str) -> datetime:
    """A time given as epoch seconds (a plain number) or ISO-8601 (naive = UTC)."""
    raw = row.text(column)
    try:
        seconds = float(raw)
    except ValueError:
        return row.time(column)
    if not 0 <= seconds < 1e11:
        raise row.fail(column, f"{raw!r} is not a time: epoch seconds must be from 0 to 1e11")
    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(seconds=seconds)


def _parquet_rows(path: Path) -> Iterator[Row]:
    try:
        pq: Any = importlib.import_module("pyarrow.parquet")
    except ImportError:
        raise InputError(f"{path}: reading Parquet needs pyarrow; run `pip install pyarrow` "
                         "(or `pip install burster[parquet]`), or save the jobs as CSV") from None
    if not path.exists():
        raise InputError(f"trace file {path} does not exist")
    try:
        table = pq.read_table(path)
    except Exception as exc:  # pyarrow raises several types for a damaged file
        raise InputError(f"{path}: not a readable Parquet file: {exc}") from None
    missing = [c for c in REQUIRED if c not in table.column_names]
    if missing:
        raise InputError(f"{path}: missing column(s) {', '.join(missing)}; found {', '.join(table.column_names)}")
    try:
        records = _microsecond_times(table).to_pylist()
    except (ValueError, OverflowError) as exc:
        raise InputError(f"{path}: a value cannot be read as Python data ({exc})") from None
    for i, record in enumerate(records):
        yield Row(path, i + 1, {k: _cell(v) for k, v in record.items()})


def _microsecond_times(table: Any) -> Any:
    """Nanosecond timestamp columns cut to microseconds (Python's datetime holds no finer)."""
    pa: Any = importlib.import_module("pyarrow")
    for i, field in enumerate(table.schema):
        if pa.types.is_timestamp(field.type) and field.type.unit == "ns":
            table = table.set_column(i, field.name, table.column(i).cast(pa.timestamp("us", field.type.tz),
                                                                         safe=False))
    return table


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, datetime):
        return (value if value.tzinfo else value.replace(tzinfo=UTC)).isoformat()
    return str(value)
