"""``burster bench`` on a terminal: one Rich table per setting, then the target checks."""

from __future__ import annotations

import sys
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from burster.eval.targets import KINDS, SHORT, setting_key


def _pct(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.1%}"


def _usd(v: float | None) -> str:
    return "n/a" if v is None else f"${v:,.2f}"


def print_tables(records: Sequence[dict[str, Any]], checks: Sequence[dict[str, Any]], wall_s: float,
                 console: Any = None) -> None:
    """Print the tables to ``console`` (default: stdout, 160 columns wide when not a terminal)."""
    from rich.console import Console
    from rich.markup import escape

    from burster.eval.report import clairvoyant_gpu_h

    if console is None:
        console = Console(width=None if sys.stdout.isatty() else 200)  # a pipe or file: one table per setting
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        groups[setting_key(r)].append(r)
    for key, rows in groups.items():
        r0 = rows[0]
        bracket = (f"bound {_usd(r0['bracket_lower_usd'])} .. {_usd(r0['upper_bound_usd'])} ({r0['bound_status']})"
                   f"{clairvoyant_gpu_h(r0)}")
        key, bracket = escape(key), escape(bracket)  # a trace's name or a failed bound's message is not markup
        cells = [_cells(r) for r in rows]
        # as many tables as the console needs so that no figure is cut short (one on a wide console)
        for i, columns in enumerate(_split(_COLUMNS, cells, console.width)):
            console.print(_table(f"{key}\n{bracket}" if i == 0 else f"{key}, continued", ("policy", *columns), cells))
    if any(r["policy"] == "reserved-only" and not 0.70 <= r["onprem_utilization"] <= 0.95 for r in records):
        console.print("! reserved-only utilization outside the 70-95 % the pool sweep aims at")
    print_targets(console, checks)
    missed = sum(not c["met"] for c in checks)
    console.print(f"{len(checks) - missed} of {len(checks)} target checks met"
                  + (f"; MISSED {missed}" if missed else "") + f"; {wall_s:.0f} s wall")


_SETTING_MIN = 24  # the targets table's setting column (its text wraps between words)
_COLUMNS = ("cloud $", "spot / on-dem. $", "x bound", "captured", "wait p50/p95/p99 s", "in budget", "misses (hard)",
            "preempt", "lost GPU-h", "paused GPU-h", "cloud GPU-h", "launches", "reserved util")


def _cells(r: dict[str, Any]) -> dict[str, str]:
    """One arm's row, as text, by column."""
    u = r["onprem_utilization"]
    flag = " !" if r["policy"] == "reserved-only" and not 0.70 <= u <= 0.95 else ""
    return {
        "policy": r["policy"], "cloud $": f"{r['cloud_usd']:,.2f}",
        "spot / on-dem. $": f"{r['cloud_usd_spot']:,.0f} / {r['cloud_usd_on_demand']:,.0f}",
        "x bound": "n/a" if r["ratio_to_lower_bound"] is None else f"{r['ratio_to_lower_bound']:.2f}",
        "captured": _pct(r["captured_savings"]), "cloud GPU-h": f"{r['cloud_gpu_hours']:,.0f}",
        "launches": str(r["launches"]), "reserved util": f"{u:.1%}{flag}",
        "wait p50/p95/p99 s": f"{r['wait_p50_s']:.0f}/{r['wait_p95_s']:.0f}/{r['wait_p99_s']:.0f}",
        "in budget": _pct(r["wait_share_within_budget"]),
        "misses (hard)": f"{r['deadline_misses']} ({r['hard_deadline_misses']})",
        "preempt": str(r["preemptions"]), "lost GPU-h": f"{r['lost_gpu_hours']:.1f}",
        "paused GPU-h": f"{r['requeued_wait_gpu_hours']:,.1f}",
    }


def _column_width(name: str, cells: Sequence[dict[str, str]]) -> int:
    """A column's width: its header or its widest value, whichever is wider (neither wraps)."""
    return max(len(name), *(len(c[name]) for c in cells))


def _split(columns: Sequence[str], cells: Sequence[dict[str, str]], width: int) -> list[list[str]]:
    """``columns`` in order, in groups that each fit ``width`` beside the policy column (each
    column takes its width, its padding and its rule; at least one column per group)."""
    groups: list[list[str]] = [[]]
    used = 1 + _column_width("policy", cells) + 3
    for c in columns:
        need = _column_width(c, cells) + 3
        if groups[-1] and used + need > width:
            groups.append([])
            used = 1 + _column_width("policy", cells) + 3
        groups[-1].append(c)
        used += need
    return groups


def _table(title: str, columns: Sequence[str], cells: Sequence[dict[str, str]]) -> Any:
    from rich.table import Table

    t = Table(title=title, title_justify="left")
    for c in columns:
        t.add_column(c, justify="left" if c == "policy" else "right", no_wrap=True, min_width=_column_width(c, cells))
    for row in cells:
        t.add_row(*(row[c] for c in columns))
    return t


def print_targets(console: Any, checks: Sequence[dict[str, Any]]) -> None:
    """Settings as rows, targets as columns (on a narrow console, one small table per setting); a
    missed cell says MISSED in red."""
    from rich.markup import escape
    from rich.table import Table
    from rich.text import Text

    from burster.eval.report import value_text

    if not checks:
        console.print("Targets not evaluated: Burster's policy was not among the arms run")
        return
    cells: dict[str, dict[str, str]] = defaultdict(dict)
    for c in checks:
        text = value_text(KINDS[c["target"]], c["value"])
        cells[escape(c["setting"])][c["target"]] = text if c["met"] else f"[bold red]{text} MISSED[/]"
    title = "Targets for Burster's policy (thresholds in the column names)"
    longest = {target: max(len(short), *(len(Text.from_markup(row.get(target, "-"))) for row in cells.values()))
               for target, short in SHORT.items()}
    if 1 + _SETTING_MIN + 3 + sum(w + 3 for w in longest.values()) <= console.width:
        t = Table(title=title, title_justify="left")
        t.add_column("setting", min_width=_SETTING_MIN)
        for target, short in SHORT.items():  # a value is never cut: its column is at least as wide
            t.add_column(short, justify="right", no_wrap=True, min_width=longest[target])
        for setting, row in cells.items():
            t.add_row(setting, *(row.get(target, "-") for target in SHORT))
        console.print(t)
    else:
        for setting, row in cells.items():
            t = Table(title=f"Targets for Burster's policy: {setting}", title_justify="left")
            t.add_column("target")
            t.add_column("value", justify="right", no_wrap=True)
            for target, short in SHORT.items():
                t.add_row(short, row.get(target, "-"))
            console.print(t)
    for note in dict.fromkeys(f"{SHORT[c['target']]} n/a: {c['note']}" for c in checks if c.get("note")):
        console.print(note)
