"""Trace formats by name, and format detection from a file name."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from burster.errors import InputError
from burster.traces.base import Trace
from burster.traces.philly import load_philly

TRACE_FORMATS: dict[str, Callable[[Path], Trace]] = {
    "philly": load_philly,
}


def detect_format(path: Path) -> str:
    name = path.name.lower()
    if "philly" in name:
        return "philly"
    raise InputError(
        f"cannot tell the format of {path}; pass --trace-format, one of {', '.join(TRACE_FORMATS)}"
    )


def load_trace(path: Path, fmt: str | None = None) -> Trace:
    """Load a trace by format name (detected from the file name when ``fmt`` is None)."""
    fmt = fmt or detect_format(path)
    if fmt not in TRACE_FORMATS:
        raise InputError(f"unknown trace format {fmt!r}; valid: {', '.join(TRACE_FORMATS)}")
    return TRACE_FORMATS[fmt](path)
