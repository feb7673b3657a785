"""Tiny inline-SVG charts for the bench report: line/scatter charts and stacked bars, no JavaScript.

Colors are the Okabe-Ito palette (readable with the common color-vision deficiencies); every series
also differs by marker or dash where it matters, and each chart carries a legend and a <title>.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

PALETTE = ("#D55E00", "#0072B2", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#999999")
W, H = 720, 380
LEFT, RIGHT, TOP, BOTTOM = 70, 170, 36, 50  # plot margins; the legend sits in the right one


@dataclass(frozen=True)
class Series:
    name: str
    xs: Sequence[float]
    ys: Sequence[float]
    color: str = ""
    dashed: bool = False
    markers: bool = False


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """About ``count`` round ticks (1, 2, 5 x 10^k steps) covering [lo, hi]."""
    if hi <= lo:
        hi = lo + 1.0
    raw = (hi - lo) / count
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    first = math.floor(lo / step) * step
    return [round(first + i * step, 10) for i in range(math.ceil((hi - first) / step) + 1)]


def fmt_num(v: float) -> str:
    a = abs(v)
    if a >= 1e6:
        return f"{v / 1e6:g}M"
    if a >= 1e4:
        return f"{v / 1e3:g}k"
    return f"{v:g}"


class Axis:
    """Maps data values to pixels, linear or log10 (values below ``floor`` are drawn at ``floor``)."""

    def __init__(self, values: Sequence[float], p0: float, p1: float, *, log: bool = False,
                 floor: float = 1.0) -> None:
        self.log, self.floor, self.p0, self.p1 = log, floor, p0, p1
        vals = [self._t(v) for v in values] or [0.0, 1.0]
        if log:
            self.ticks = [10.0 ** e for e in range(math.floor(min(vals)), math.ceil(max(vals)) + 1)]
            if len(self.ticks) < 2:
                self.ticks.append(self.ticks[-1] * 10)
        else:
            self.ticks = nice_ticks(min(0.0, min(vals)), max(vals))
        self.lo, self.hi = self._t(self.ticks[0]), self._t(self.ticks[-1])

    def _t(self, v: float) -> float:
        return math.log10(max(v, self.floor)) if self.log else v

    def px(self, v: float) -> float:
        span = (self.hi - self.lo) or 1.0
        return round(self.p0 + (self._t(v) - self.lo) / span * (self.p1 - self.p0), 1)


def _frame(title: str, x_label: str, y_label: str, body: list[str], subtitle: str = "") -> str:
    full = f"{title}: {subtitle}" if subtitle else title
    head = (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" width="{W}" height="{H}" '
            f'role="img" font-family="sans-serif" font-size="12"><title>{escape(full)}</title>'
            f'<text x="{LEFT}" y="14" font-size="14" font-weight="bold">{escape(title)}</text>'
            f'<text x="{LEFT}" y="29" font-size="11" fill="#444">{escape(subtitle)}</text>')
    labels = (f'<text x="{(LEFT + W - RIGHT) / 2}" y="{H - 10}" text-anchor="middle">{escape(x_label)}</text>'
              f'<text transform="translate(16 {(TOP + H - BOTTOM) / 2}) rotate(-90)" '
              f'text-anchor="middle">{escape(y_label)}</text>')
    return head + labels + "".join(body) + "</svg>"


BOX = f'<rect x="{LEFT}" y="{TOP}" width="{W - LEFT - RIGHT}" height="{H - TOP - BOTTOM}" fill="none" stroke="#888"/>'


def _y_grid(y: Axis) -> list[str]:
    return [f'<line x1="{LEFT}" x2="{W - RIGHT}" y1="{y.px(t)}" y2="{y.px(t)}" stroke="#ddd"/>'
            f'<text x="{LEFT - 6}" y="{y.px(t) + 4}" text-anchor="end">{fmt_num(t)}</text>' for t in y.ticks]


def _x_grid(x: Axis) -> list[str]:
    return [f'<line x1="{x.px(t)}" x2="{x.px(t)}" y1="{TOP}" y2="{H - BOTTOM}" stroke="#eee"/>'
            f'<text x="{x.px(t)}" y="{H - BOTTOM + 16}" text-anchor="middle">{fmt_num(t)}</text>' for t in x.ticks]


def _legend(items: Sequence[tuple[str, str, bool]], *, boxes: bool = False) -> list[str]:
    """One entry per (name, color, dashed): a line sample, or a filled square for bar segments."""
    out = []
    for i, (name, color, dashed) in enumerate(items):
        y = TOP + 10 + 18 * i
        dash = ' stroke-dasharray="6 3"' if dashed else ""
        sample = (f'<rect x="{W - RIGHT + 18}" y="{y - 6}" width="12" height="12" fill="{color}"/>' if boxes else
                  f'<line x1="{W - RIGHT + 12}" x2="{W - RIGHT + 36}" y1="{y}" y2="{y}" stroke="{color}" '
                  f'stroke-width="2.5"{dash}/>')
        out.append(f'{sample}<text x="{W - RIGHT + 42}" y="{y + 4}">{escape(name)}</text>')
    return out


def line_chart(series: Sequence[Series], *, title: str, x_label: str, y_label: str, log_x: bool = False,
               x_floor: float = 1.0, subtitle: str = "") -> str:
    """Polylines (with point markers where asked) over shared axes; a log x axis clamps at ``x_floor``."""
    xs = [v for s in series for v in s.xs]
    ys = [v for s in series for v in s.ys]
    x = Axis(xs, LEFT, W - RIGHT, log=log_x, floor=x_floor)
    y = Axis(ys, H - BOTTOM, TOP)
    body = [*_y_grid(y), *_x_grid(x), BOX]
    items = []
    for i, s in enumerate(series):
        color = s.color or PALETTE[i % len(PALETTE)]
        pts = " ".join(f"{x.px(a)},{y.px(b)}" for a, b in zip(s.xs, s.ys, strict=True))
        dash = ' stroke-dasharray="6 3"' if s.dashed else ""
        body.append(f'<polyline points="{pts}" fill="none" stroke="{color}" stroke-width="2"{dash}>'
                    f'<title>{escape(s.name)}</title></polyline>')
        if s.markers:
            body += [f'<circle cx="{x.px(a)}" cy="{y.px(b)}" r="4" fill="{color}"><title>{escape(s.name)}: '
                     f'{fmt_num(round(a, 1))}, {fmt_num(round(b, 2))}</title></circle>'
                     for a, b in zip(s.xs, s.ys, strict=True)]
        items.append((s.name, color, s.dashed))
    return _frame(title, x_label, y_label, body + _legend(items), subtitle)


def stacked_bars(categories: Sequence[str], stacks: Sequence[tuple[str, Sequence[float]]], *, title: str,
                 y_label: str, subtitle: str = "") -> str:
    """One bar per category, segments stacked in ``stacks`` order (name, one value per category)."""
    totals = [sum(vals[i] for _, vals in stacks) for i in range(len(categories))]
    y = Axis([*totals, 0.0], H - BOTTOM, TOP)
    body = _y_grid(y)
    slot = (W - LEFT - RIGHT) / max(len(categories), 1)
    items = []
    for k, (name, vals) in enumerate(stacks):
        color = PALETTE[k % len(PALETTE)]
        items.append((name, color, False))
        for i, v in enumerate(vals):
            below = sum(stacks[j][1][i] for j in range(k))
            top, bottom = y.px(below + v), y.px(below)
            if v > 0:
                body.append(f'<rect x="{LEFT + slot * i + slot * 0.2:.1f}" y="{top}" width="{slot * 0.6:.1f}" '
                            f'height="{bottom - top:.1f}" fill="{color}"><title>{escape(categories[i])} '
                            f'{escape(name)}: {v:,.2f}</title></rect>')
    for i, c in enumerate(categories):
        body.append(f'<text x="{LEFT + slot * (i + 0.5):.1f}" y="{H - BOTTOM + 16}" '
                    f'text-anchor="middle" font-size="10">{escape(c)}</text>')
    body.append(BOX)
    return _frame(title, "", y_label, body + _legend(items[::-1], boxes=True), subtitle)  # legend top = bar top
