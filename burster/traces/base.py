"""Shared pieces of the trace loaders: the Trace value, row readers that name file/row/column."""

from __future__ import annotations

import csv
import logging
import math
from collections import Counter
from collections.abc import Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from burster import textfile
from burster.errors import InputError
from burster.model import Demand

_log = logging.getLogger("burster.traces")
# Traces with relative times (Philly-derived, Alibaba) start at this instant.
TRACE_EPOCH = datetime(2026, 1, 5, tzinfo=UTC)  # a Monday
GPUS_PER_NODE = 8  # a job above this many GPUs is a gang of ceil(gpus / 8) nodes
# Bounds every loader applies, so that no later date arithmetic can overflow.
MAX_SECONDS = 10 * 365 * 86_400  # the longest runtime or relative time (offset, expect time): 10 years
LATEST_EPOCH_S = datetime(9000, 1, 1, tzinfo=UTC).timestamp()  # times are from 1970 to before the year 9000


def out_of_range(seconds: float, *, epoch: bool = False) -> str:
    """Why a duration (with ``epoch``: a time, in seconds since 1970) is outside those bounds; "" if inside."""
    if epoch:
        return "" if 0 <= seconds < LATEST_EPOCH_S else "is out of range: times must be from 1970 to before 9000"
    return "" if 0 <= seconds <= MAX_SECONDS else \
        f"is out of range: runtimes and trace times must be from 0 to 10 years ({MAX_SECONDS} s)"


def gang_nodes(gpus: int) -> int:
    """Nodes a job of ``gpus`` GPUs spans when packed onto 8-GPU nodes (at least 1)."""
    return max(1, -(-gpus // GPUS_PER_NODE))


@dataclass(frozen=True)
class Trace:
    """A loaded trace: its jobs sorted by submission time, and where they came from. A job's
    ``est_runtime_s`` is how long it really ran; ``estimates`` holds, by job id, what a scheduler was
    told before it ran (a Slurm time limit) where the trace records that."""

    name: str
    source: str
    jobs: tuple[Demand, ...]
    estimates: Mapping[str, float] = field(default_factory=dict)

    @property
    def start(self) -> datetime:
        return self.jobs[0].submitted_at if self.jobs else TRACE_EPOCH

    @property
    def end(self) -> datetime:
        return max((j.submitted_at for j in self.jobs), default=TRACE_EPOCH)

    def day(self, n: float) -> datetime:
        """Where day ``n`` of the trace begins (``--start-day``): its first arrival's midnight, plus ``n`` days."""
        return self.start.replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(days=n)

    @property
    def last_day(self) -> int:
        """The day (``day``'s numbering) of the last arrival."""
        return math.floor((self.end - self.day(0)) / timedelta(days=1))

    def window(self, start_day: float, days: float | None) -> tuple[datetime, datetime]:
        """The replay window [start, end) from day ``start_day``, ``days`` long but cut at the end of the
        trace's last day (days without arrivals would only dilute on-prem utilization); with ``days``
        None, the whole rest of the trace, its last arrival included."""
        start = self.day(start_day)
        if days is None:
            return start, self.end + timedelta(microseconds=1)
        return start, max(start, min(start + timedelta(days=days), self.day(self.last_day + 1)))


TRACE_FILE = "trace file"


def reject_folder(path: Path) -> None:
    """A clear InputError where a trace file is expected but ``path`` is a folder."""
    textfile.reject_folder(path, TRACE_FILE)


def text_lines(path: Path) -> Generator[str, None, None]:
    """The lines of a (possibly gzip-compressed) UTF-8 trace file, without a leading BOM."""
    return textfile.text_lines(path, TRACE_FILE)


@dataclass(frozen=True)
class Row:
    """One CSV row that knows its file and line, for error messages."""

    path: Path
    line: int
    cells: dict[str, str]

    def fail(self, column: str, problem: str) -> InputError:
        return InputError(f"{self.path}: row {self.line}, column {column!r}: {problem}")

    def text(self, column: str) -> str:
        value = self.cells.get(column)
        if value is None:
            raise self.fail(column, "missing value")
        return value.strip()

    def number(self, column: str, *, minimum: float | None = 0.0) -> float:
        raw = self.text(column)
        try:
            value = float(raw)
        except ValueError:
            raise self.fail(column, f"{raw!r} is not a number") from None
        if value != value or value in (float("inf"), float("-inf")):
            raise self.fail(column, f"{raw!r} is not a finite number")
        if minimum is not None and value < minimum:
            raise self.fail(column, f"{value:g} is below the minimum {minimum:g}")
        return value

    def seconds(self, column: str, unit_s: float = 1.0) -> float:
        """A duration or trace offset given in units of ``unit_s`` seconds, in seconds (0 to 10 years)."""
        seconds = self.number(column) * unit_s
        if problem := out_of_range(seconds):
            given = self.text(column) if unit_s == 1 else f"{self.text(column)} x {unit_s:g} s"
            raise self.fail(column, f"{given} {problem}")
        return seconds

    def time(self, column: str) -> datetime:
        """An ISO-8601 timestamp, in UTC (naive ones are taken as UTC; an offset is converted)."""
        raw = self.text(column)
        try:
            when = datetime.fromisoformat(raw.replace("Z", "+00:00"))
        except ValueError:
            raise self.fail(column, f"{raw!r} is not an ISO-8601 time") from None
        try:
            when = when.astimezone(UTC) if when.tzinfo else when.replace(tzinfo=UTC)
            ts = when.timestamp()
        except OverflowError:  # an offset that takes it past year 1 or 9999
            ts = -math.inf
        if problem := out_of_range(ts, epoch=True):
            raise self.fail(column, f"{raw!r} {problem}")
        return when


def csv_rows(path: Path, required: Sequence[str], what: str = TRACE_FILE) -> Iterator[Row]:
    """Rows of a CSV file (a ``what``, for errors) whose header must hold ``required`` columns
    (names stripped of spaces; a name given twice is an error, unnamed columns may repeat).

    A row's number is its line in the file (the header is 1; blank lines count, as an editor shows
    them); a row with more or fewer cells than the header has columns, or a quoted cell running over
    lines (an unclosed quote), is an error, not cut short, padded or read as one long cell."""
    reader = csv.DictReader(textfile.text_lines(path, what))
    last = 0  # the line the last row read whole ended on; a CSV error is after it
    try:
        header = [h.strip() for h in reader.fieldnames or []]
        reader.fieldnames = header
        _refuse_duplicates(path, header)
        missing = [c for c in required if c not in header]
        if missing:
            raise InputError(
                f"{path}: row 1 (header): missing column(s) {', '.join(missing)}; "
                f"found {', '.join(header) or 'nothing'}"
            )
        last = reader.line_num
        for cells in reader:
            spans_lines = reader.line_num - last > 1  # (or blank lines came before it)
            last = reader.line_num
            if None in cells:
                extra = cells[None]
                raise InputError(f"{path}: row {last}: {len(header) + len(extra)} cells for {len(header)} "
                                 f"header columns; quote cells that hold a comma")
            texts = [v for v in cells.values() if isinstance(v, str)] if spans_lines else []
            breaks = sum(v.count("\n") for v in texts)
            if breaks:  # a quote left open at the end of the file keeps the last line's break too
                first = last - breaks + (1 if any(v.endswith("\n") for v in texts) else 0)
                raise InputError(f"{path}: rows {first}-{last}: a quoted cell runs over {last - first + 1} lines; "
                                 f"look for an unclosed quote on row {first}")
            _refuse_cut(path, last, cells)
            yield Row(path, last, cells)
    except csv.Error as exc:  # the DictReader's line_num stays at the last good row: ask its csv reader
        line = reader.reader.line_num
        where = f"row {last + 1}" if line <= last + 1 else f"rows {last + 1}-{line}"
        raise InputError(f"{path}: {where}: not readable as CSV ({exc}); look for an unclosed quote") from None


def _refuse_cut(path: Path, line: int, cells: dict[str, str | None]) -> None:
    """A row with fewer cells than the header (a file cut off mid-row) is an error: its last cells
    would read as values not given (a lost deadline made a strict job best effort)."""
    if lacking := [k for k, v in cells.items() if v is None]:
        raise InputError(f"{path}: row {line}, column {lacking[0]!r}: missing value ({len(cells) - len(lacking)} cells "
                         f"for {len(cells)} header columns); give one cell per column, empty for a value not given")


def _refuse_duplicates(path: Path, header: list[str]) -> None:
    """A column named twice is an error: a row's cells would keep only the last one's value."""
    for name, count in Counter(h for h in header if h).items():
        if count > 1:
            places = ", ".join(str(i) for i, h in enumerate(header, 1) if h == name)
            raise InputError(
                f"{path}: row 1 (header): column {name!r} appears {count} times (columns {places}); "
                "rename or remove all but one"
            )


def finish_trace(path: Path, jobs: list[Demand], tally: Counter[str], counts: Counter[str] | None,
                 estimates: Mapping[str, float] | None = None) -> Trace:
    """The loaded trace: the skip tally added to ``counts`` and logged in one line, the jobs sorted."""
    if counts is not None:
        counts.update(tally)
    skipped = ", ".join(f"{n} {why}" for why, n in sorted(tally.items()))
    _log.info("%s: %d jobs%s", path, len(jobs), f"; {skipped}" if skipped else "")
    return sorted_trace(path.name, path, jobs, estimates)


def sorted_trace(name: str, path: Path, jobs: list[Demand], estimates: Mapping[str, float] | None = None) -> Trace:
    if not jobs:
        raise InputError(f"{path}: the trace holds no jobs")
    jobs.sort(key=lambda j: (j.submitted_at, j.job_id))
    return Trace(name, str(path), tuple(jobs), dict(estimates or {}))
