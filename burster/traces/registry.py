"""Trace formats by name, and format detection from a file name (and, for CSV, its header)."""

from __future__ import annotations

import csv
import os
from collections.abc import Callable
from pathlib import Path

from burster.errors import InputError
from burster.traces.alibaba import load_alibaba
from burster.traces.base import Trace, reject_folder, text_lines
from burster.traces.generic import load_generic
from burster.traces.helios import load_helios
from burster.traces.philly import load_philly
from burster.traces.sacct import load_sacct

TRACE_FORMATS: dict[str, Callable[[Path], Trace]] = {
    "philly": load_philly,
    "alibaba": load_alibaba,
    "helios": load_helios,
    "generic": load_generic,
    "sacct": load_sacct,
}


def detect_format(path: Path) -> str:
    """The format of ``path``: a .csv[.gz] with a runtime_s column is "generic" (Burster's own, whatever
    its name); otherwise from the name."""
    reject_folder(path)
    name = path.name.lower()
    is_csv = name.endswith((".csv", ".csv.gz"))
    if is_csv and "runtime_s" in _header(path):
        return "generic"
    for marker, fmt in (("philly", "philly"), ("openb_pod_list", "alibaba"), ("cluster_sequence", "helios")):
        if marker in name:
            return fmt
    if name.endswith((".json", ".json.gz")):
        return "sacct"
    if name.endswith(".parquet"):
        return "generic"
    raise InputError(
        f"cannot tell the format of {path}; pass --trace-format, one of {', '.join(TRACE_FORMATS)} "
        "(docs/traces.md describes each)"
    )


def _header(path: Path) -> list[str]:
    """The first CSV row ([] when it is not CSV); a missing, damaged or non-UTF-8 file raises InputError."""
    lines = text_lines(path)
    try:
        return [cell.strip() for cell in next(csv.reader(lines), [])]
    except csv.Error:
        return []
    finally:
        lines.close()


def load_trace(path: str | os.PathLike[str], fmt: str | None = None) -> Trace:
    """Load a trace by format name (detected from the file name when ``fmt`` is None); ``path`` is a
    str or a path object."""
    path = Path(path)
    fmt = fmt or detect_format(path)
    if fmt not in TRACE_FORMATS:
        raise InputError(f"unknown trace format {fmt!r}; valid: {', '.join(TRACE_FORMATS)}")
    return TRACE_FORMATS[fmt](path)
