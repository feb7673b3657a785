"""Demand signals from a CSV file, for the simulator: what a Jira sprint would announce, and when.

Required columns: source (a name: the sprint or epic), gpu_hours (> 0), window_start and window_end
(ISO-8601; naive times are UTC). Optional: gpu_model ("" = the pool's), team, project, sprint, and
announced_at (ISO-8601; when the controller first sees the signal; empty: from the start). A signal
is seen from its announcement until its window ends. Everything wrong stops the load with the file,
row and column, and nothing is half-loaded.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from burster import textfile
from burster.errors import InputError
from burster.model import Signal
from burster.traces.base import Row, csv_rows

REQUIRED = ("source", "gpu_hours", "window_start", "window_end")
OPTIONAL = ("gpu_model", "team", "project", "sprint", "announced_at")
SIGNALS_FILE = "signals file"
_log = logging.getLogger("burster.signals")


@dataclass(frozen=True)
class AnnouncedSignal:
    """A signal and when it is first seen (None: from the start)."""

    signal: Signal
    announced_at: datetime | None = None


def load_signals(path: Path) -> tuple[AnnouncedSignal, ...]:
    """The signals of a CSV (optionally .gz) file, by window start."""
    textfile.reject_folder(path, SIGNALS_FILE)
    out: list[AnnouncedSignal] = []
    seen: dict[tuple[str, datetime], int] = {}
    for row in csv_rows(path, REQUIRED, SIGNALS_FILE):
        if not out:
            _warn_unknown(path, list(row.cells))
        announced = _signal(row)
        key = (announced.signal.source, announced.signal.window_start)
        if key in seen:
            raise row.fail("source", f"{key[0]!r} with the same window_start as row {seen[key]}")
        seen[key] = row.line
        out.append(announced)
    if not out:
        raise InputError(f"{path}: the signals file holds no signals")
    return tuple(sorted(out, key=lambda a: (a.signal.window_start, a.signal.source)))


def _signal(row: Row) -> AnnouncedSignal:
    source = row.text("source")
    if not source:
        raise row.fail("source", "empty: name the sprint or epic the signal comes from")
    gpu_hours = row.number("gpu_hours")
    if gpu_hours <= 0:
        raise row.fail("gpu_hours", f"{gpu_hours:g} is not above 0")
    start, end = row.time("window_start"), row.time("window_end")
    if end <= start:
        raise row.fail("window_end", f"{end:%Y-%m-%d %H:%M:%S} is not after window_start {start:%Y-%m-%d %H:%M:%S}")
    announced = row.time("announced_at") if _given(row, "announced_at") else None
    if announced is not None and announced >= end:
        raise row.fail("announced_at", f"{announced:%Y-%m-%d %H:%M:%S} is not before window_end "
                                       f"{end:%Y-%m-%d %H:%M:%S}: the signal would never be seen")
    extra = {c: row.text(c) if _given(row, c) else "" for c in ("gpu_model", "team", "project", "sprint")}
    return AnnouncedSignal(Signal(source, gpu_hours, start, end, **extra), announced)


def _given(row: Row, column: str) -> bool:
    value = row.cells.get(column)
    return value is not None and value.strip() != ""


def _warn_unknown(path: Path, columns: list[str]) -> None:
    unknown = [c for c in columns if c not in (*REQUIRED, *OPTIONAL)]
    if unknown:
        _log.warning("%s: column(s) %s not read (known: %s)", path, ", ".join(unknown),
                     ", ".join((*REQUIRED, *OPTIONAL)))
