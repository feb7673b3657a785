"""The bench report: one self-contained HTML page (inline CSS and SVG, no scripts, nothing fetched).

Sections: targets (met / MISSED with numbers), one table per setting, then the plots: cost vs p95
wait per trace (one polyline per policy across pool sizes, seeds and windows), capacity vs demand
over time for Burster's arm of each setting, and spend by cloud and market per policy.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from html import escape
from typing import Any

from burster.eval.compare import SuiteResult
from burster.eval.suite import SIZING_RULE
from burster.eval.svg import PALETTE, Series, line_chart, stacked_bars
from burster.eval.targets import KINDS, setting_key

CSS = """body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em;font-size:13px}td,th{border:1px solid #ccc;padding:3px 7px}
td.n{text-align:right}.met{color:#006d2c;font-weight:bold}.missed{color:#b30000;font-weight:bold}
.flag{color:#b30000}figure{margin:1em 0}h2{border-bottom:1px solid #ccc}"""
COLUMNS = ("policy", "cloud $", "spot $ / on-demand $", "x lower bound", "captured savings", "wait p50 / p95 / p99 s",
           "within wait budget", "misses (hard)", "preemptions", "lost GPU-h", "paused GPU-h", "cloud GPU-h",
           "launches", "reserved util.")


def value_text(kind: str, v: float | None) -> str:
    if v is None:
        return "n/a"
    return {"ratio": f"{v:.2f}x", "share": f"{v:.1%}", "count": f"{v:.0f}", "seconds": f"{v:.0f} s"}[kind]


def _pct(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.1%}"


def targets_section(checks: Sequence[dict[str, Any]], burster_ran: bool) -> str:
    if not checks:
        why = "no setting finished" if burster_ran else "Burster's policy was not among the arms run"
        return f'<section id="targets"><h2>Targets</h2><p class="missed">Not evaluated: {why}.</p></section>'
    missed = [c for c in checks if not c["met"]]
    kinds = Counter(c["target"] for c in missed)
    which = "; ".join(f"{escape(t)} ({n}x)" for t, n in kinds.items())
    lead = (f'<p class="missed">MISSED {len(missed)} of {len(checks)} target checks ({which}), listed first.</p>'
            if missed else f'<p class="met">All {len(checks)} target checks met.</p>')
    rows = []
    for c in sorted(checks, key=lambda c: c["met"]):
        kind = KINDS[c["target"]]
        verdict = '<span class="met">met</span>' if c["met"] else '<span class="missed">MISSED</span>'
        rows.append(f"<tr><td>{escape(c['setting'])}</td><td>{escape(c['target'])}</td>"
                    f"<td class=n>{value_text(kind, c['value'])}{_note(c)}</td>"
                    f"<td class=n>{value_text(kind, c['threshold'])}</td><td>{verdict}</td></tr>")
    return (f'<section id="targets"><h2>Targets</h2>{lead}<table><tr><th>setting</th><th>target</th><th>value</th>'
            f'<th>threshold</th><th>verdict</th></tr>{"".join(rows)}</table></section>')


def _note(check: dict[str, Any]) -> str:
    return f" ({escape(check['note'])})" if check.get("note") else ""


def _row(r: dict[str, Any]) -> str:
    ratio = "n/a" if r["ratio_to_lower_bound"] is None else f"{r['ratio_to_lower_bound']:.2f}"
    cells = (r["policy"], f"{r['cloud_usd']:,.2f}", f"{r['cloud_usd_spot']:,.2f} / {r['cloud_usd_on_demand']:,.2f}",
             ratio, _pct(r["captured_savings"]),
             f"{r['wait_p50_s']:.0f} / {r['wait_p95_s']:.0f} / {r['wait_p99_s']:.0f}",
             _pct(r["wait_share_within_budget"]), f"{r['deadline_misses']} ({r['hard_deadline_misses']})",
             str(r["preemptions"]), f"{r['lost_gpu_hours']:.1f}", f"{r['requeued_wait_gpu_hours']:,.1f}",
             f"{r['cloud_gpu_hours']:,.0f}", str(r["launches"]),
             _pct(r["onprem_utilization"]))
    tds = "".join(f"<td{'' if i == 0 else ' class=n'}>{escape(c)}</td>" for i, c in enumerate(cells))
    return f"<tr>{tds}</tr>"


def clairvoyant_gpu_h(r: dict[str, Any]) -> str:
    """The upper bound's cloud GPU-hours, to set beside each arm's (empty when unknown)."""
    v = r.get("upper_bound_cloud_gpu_hours")
    return "" if v is None else f"; the clairvoyant runs {v:,.0f} GPU-h on the cloud"


def utilization_flag(rows: Sequence[dict[str, Any]]) -> str:
    """Reserved-only's measured utilization, flagged outside the 70-95 % the sweep aims at."""
    ro = next((r for r in rows if r["policy"] == "reserved-only"), None)
    if ro is None:
        return "reserved-only not run"
    u = ro["onprem_utilization"]
    ok = 0.70 <= u <= 0.95
    return f"reserved-only utilization {u:.1%}" + ("" if ok else ' <span class="flag">(outside 70-95 %)</span>')


def tables_section(result: SuiteResult, records: Sequence[dict[str, Any]]) -> str:
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        groups[setting_key(r)].append(r)
    settings = {setting_key(r): a.setting for r, a in zip(records, result.arms, strict=True)}
    parts = ['<section id="settings"><h2>Settings</h2>']
    for key, rows in groups.items():
        s = settings[key]
        r0 = rows[0]
        parts.append(f"<h3>{escape(key)}</h3><p>{s.jobs} jobs, offered load {s.offered_gpus:g} GPUs; bracket "
                     f"{_usd(r0['bracket_lower_usd'])} .. {_usd(r0['upper_bound_usd'])} ({escape(r0['bound_status'])})"
                     f"{clairvoyant_gpu_h(r0)}; {utilization_flag(rows)}</p>"
                     f"<table><tr>{''.join(f'<th>{c}</th>' for c in COLUMNS)}</tr>"
                     f"{''.join(_row(r) for r in rows)}</table>")
    return "".join(parts) + "</section>"


def _usd(v: float | None) -> str:
    return "n/a" if v is None else f"${v:,.2f}"


def pareto_plots(records: Sequence[dict[str, Any]], policies: Sequence[str]) -> list[str]:
    by_trace: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        by_trace[r["trace"]].append(r)
    out = []
    for trace, rows in by_trace.items():
        series = []
        for i, p in enumerate(policies):
            pts = sorted((r["wait_p95_s"], r["cloud_usd"]) for r in rows if r["policy"] == p)
            if pts:
                series.append(Series(p, [x for x, _ in pts], [y for _, y in pts], PALETTE[i % len(PALETTE)],
                                     markers=True))
        chart = line_chart(series, title="Cloud $ vs p95 wait (lower left is better)", subtitle=trace,
                           x_label="p95 wait, seconds (log scale; 0 drawn at 1)", y_label="cloud $", log_x=True)
        out.append(_figure(chart, f"{trace}: one point per setting (pool size, seed, window), joined per policy "
                                  "in order of p95 wait."))
    return out


def _figure(svg: str, caption: str) -> str:
    return f"<figure>{svg}<figcaption>{escape(caption)}</figcaption></figure>"


def capacity_plot(label: str, tl: dict[str, Any]) -> str:
    t = tl["t_h"]
    series = [Series("demand", t, tl["demand_gpus"], PALETTE[6]),
              Series("reserved capacity", t, [tl["reserved_gpus"]] * len(t), PALETTE[7], dashed=True),
              Series("reserved used", t, tl["reserved_used_gpus"], PALETTE[1]),
              Series("cloud GPUs", t, tl["cloud_gpus"], PALETTE[0])]
    chart = line_chart(series, title="Capacity vs demand", subtitle=label, x_label="hours from window start",
                       y_label="GPUs")
    return _figure(chart, f"{label}: demand = GPUs of queued + running jobs; reserved used = busy on-prem GPUs; "
                          "cloud GPUs = GPUs of jobs running on burst nodes. The window plus one day of drain.")


def spend_plot(result: SuiteResult, policies: Sequence[str]) -> str:
    keys = sorted({(prov, m) for a in result.arms for prov, ms in a.spend.items() for m in ms})
    stacks = [(f"{prov} {m.replace('_', '-')}", [sum(a.spend.get(prov, {}).get(m, 0.0) for a in result.arms
                                                     if a.policy == p) for p in policies]) for prov, m in keys]
    chart = stacked_bars(list(policies), stacks, title="Cloud spend by cloud and market",
                         subtitle="all settings summed", y_label="USD")
    return _figure(chart, "Ledger spend per policy, stacked by cloud and market (spot / on-demand).")


def render(result: SuiteResult, records: Sequence[dict[str, Any]], checks: Sequence[dict[str, Any]], *,
           policies: Sequence[str], title: str = "Burster bench report") -> str:
    """The whole page; every plot is one <svg> inside a <figure>."""
    arms = [a for a in result.arms if a.policy == "burster"] or [a for a in result.arms if a.policy == policies[0]]
    plots = ("<h3>Cost vs p95 wait</h3>" + "".join(pareto_plots(records, policies))
             + "<h3>Capacity vs demand</h3>"
             + "".join(capacity_plot(f"{a.policy}, {a.setting.label}", a.timeline) for a in arms)
             + "<h3>Spend by cloud and market</h3>" + spend_plot(result, policies))
    skipped = "".join(f"<li>{escape(t)}: {escape(why)}</li>" for t, why in result.skipped)
    sources = sorted({r["spot_source"] for r in records})
    return (f"<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>{escape(title)}</title>"
            f"<style>{CSS}</style></head><body><h1>{escape(title)}</h1>"
            f"<p>{len({setting_key(r) for r in records})} settings, {len(records)} arms, {result.wall_s:.0f} s wall. "
            f"Spot availability: {escape('; '.join(sources)) or 'n/a'}. {escape(SIZING_RULE)}</p>"
            + (f'<p class="flag">Skipped:</p><ul>{skipped}</ul>' if skipped else "")
            + targets_section(checks, any(a.policy == "burster" for a in result.arms))
            + tables_section(result, records)
            + '<section id="plots"><h2>Plots</h2>' + plots
            + "</section></body></html>")
