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


def print_tables(records: Sequence[dict[str, Any]], checks: Sequence[dict[str, Any]], wall_s: float) -> None:
    from rich.console import Console
    from rich.table import Table

    from burster.eval.report import clairvoyant_gpu_h

    console = Console(width=None if sys.stdout.isatty() else 160)  # a pipe or file gets whole columns
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        groups[setting_key(r)].append(r)
    for key, rows in groups.items():
        r0 = rows[0]
        bracket = (f"bound {_usd(r0['lower_bound_usd'])} .. {_usd(r0['upper_bound_usd'])} ({r0['bound_status']})"
                   f"{clairvoyant_gpu_h(r0)}")
        t = Table(title=f"{key}\n{bracket}", title_justify="left")
        for c in ("policy", "cloud $", "spot / on-dem. $", "x bound", "captured", "wait p50/p95/p99 s",
                  "in budget", "misses (hard)", "preempt", "lost GPU-h", "paused GPU-h", "cloud GPU-h", "launches",
                  "reserved util"):
            t.add_column(c, justify="left" if c == "policy" else "right", no_wrap=c in ("policy", "wait p50/p95/p99 s"))
        for r in rows:
            u = r["onprem_utilization"]
            flag = " !" if r["policy"] == "reserved-only" and not 0.70 <= u <= 0.95 else ""
            ratio = "n/a" if r["ratio_to_lower_bound"] is None else f"{r['ratio_to_lower_bound']:.2f}"
            t.add_row(r["policy"], f"{r['cloud_usd']:,.2f}",
                      f"{r['cloud_usd_spot']:,.0f} / {r['cloud_usd_on_demand']:,.0f}", ratio,
                      _pct(r["captured_savings"]),
                      f"{r['wait_p50_s']:.0f}/{r['wait_p95_s']:.0f}/{r['wait_p99_s']:.0f}",
                      _pct(r["wait_share_within_budget"]), f"{r['deadline_misses']} ({r['hard_deadline_misses']})",
                      str(r["preemptions"]), f"{r['lost_gpu_hours']:.1f}", f"{r['requeued_wait_gpu_hours']:,.1f}",
                      f"{r['cloud_gpu_hours']:,.0f}", str(r["launches"]), f"{u:.1%}{flag}")
        console.print(t)
    if any(r["policy"] == "reserved-only" and not 0.70 <= r["onprem_utilization"] <= 0.95 for r in records):
        console.print("! reserved-only utilization outside the 70-95 % the pool sweep aims at")
    print_targets(console, checks)
    missed = sum(not c["met"] for c in checks)
    console.print(f"{len(checks) - missed} of {len(checks)} target checks met"
                  + (f"; MISSED {missed}" if missed else "") + f"; {wall_s:.0f} s wall")


def print_targets(console: Any, checks: Sequence[dict[str, Any]]) -> None:
    """Settings as rows, targets as columns; a missed cell says MISSED in red."""
    from rich.table import Table

    from burster.eval.report import value_text

    if not checks:
        console.print("Targets not evaluated: Burster's policy was not among the arms run")
        return
    cells: dict[str, dict[str, str]] = defaultdict(dict)
    for c in checks:
        text = value_text(KINDS[c["target"]], c["value"])
        cells[c["setting"]][c["target"]] = text if c["met"] else f"[bold red]{text} MISSED[/]"
    t = Table(title="Targets for Burster's policy (thresholds in the column names)", title_justify="left")
    t.add_column("setting")
    for short in SHORT.values():
        t.add_column(short, justify="right")
    for setting, row in cells.items():
        t.add_row(setting, *(row.get(target, "-") for target in SHORT))
    console.print(t)
    for note in dict.fromkeys(f"{SHORT[c['target']]} n/a: {c['note']}" for c in checks if c.get("note")):
        console.print(note)
