"""Shared pieces of the trace loaders: the Trace value, row readers that name file/row/column."""

from __future__ import annotations

import csv
import gzip
import io
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from burster.errors import InputError
from burster.model import Demand

# Traces with relative times (Philly-derived, Alibaba) start at this instant.
TRACE_EPOCH = datetime(2026, 1, 5, tzinfo=UTC)  # a Monday
GPUS_PER_NODE = 8  # a job above this many GPUs is a gang of ceil(gpus / 8) nodes


def gang_nodes(gpus: int) -> int:
    """Nodes a job of ``gpus`` GPUs spans when packed onto 8-GPU nodes (at least 1)."""
    return max(1, -(-gpus // GPUS_PER_NODE))


@dataclass(frozen=True)
class Trace:
    """A loaded trace: its jobs sorted by submission time, and where they came from."""

    name: str
    source: str
    jobs: tuple[Demand, ...]

    @property
    def start(self) -> datetime:
        return self.jobs[0].submitted_at if self.jobs else TRACE_EPOCH

    @property
    def end(self) -> datetime:
        return max((j.submitted_at for j in self.jobs), default=TRACE_EPOCH)


def open_text(path: Path) -> io.TextIOBase:
    """Open a (possibly gzip-compressed) text file; a clear InputError if it is missing."""
    try:
        if path.suffix == ".gz":
            return io.TextIOWrapper(gzip.open(path, "rb"), newline="")
        return path.open(newline="")
    except FileNotFoundError:
        raise InputError(f"trace file {path} does not exist") from None


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

    def time(self, column: str) -> datetime:
        """An ISO-8601 timestamp (naive ones are taken as UTC)."""
        raw = self.text(column)
        try:
            when = datetime.fromisoformat(raw.replace("Z", "+00:00"))
        except ValueError:
            raise self.fail(column, f"{raw!r} is not an ISO-8601 time") from None
        return when if when.tzinfo else when.replace(tzinfo=UTC)


def csv_rows(path: Path, required: Sequence[str]) -> Iterator[Row]:
    """Rows of a CSV file whose header must hold ``required`` columns."""
    with open_text(path) as fh:
        reader = csv.DictReader(fh)
        header = reader.fieldnames or []
        missing = [c for c in required if c not in header]
        if missing:
            raise InputError(
                f"{path}: row 1 (header): missing column(s) {', '.join(missing)}; "
                f"found {', '.join(header) or 'nothing'}"
            )
        for i, cells in enumerate(reader):
            yield Row(path, i + 2, cells)


def sorted_trace(name: str, path: Path, jobs: list[Demand]) -> Trace:
    if not jobs:
        raise InputError(f"{path}: the trace holds no jobs")
    jobs.sort(key=lambda j: (j.submitted_at, j.job_id))
    return Trace(name, str(path), tuple(jobs))
