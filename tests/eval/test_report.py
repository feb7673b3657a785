"""The HTML report: parses, one <svg> per plot, the targets section with met / MISSED, nothing external."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

import pytest

from burster.eval.compare import Sources, SuiteResult, Window, records, run_suite
from burster.eval.report import render
from burster.eval.suite import plan_settings
from burster.eval.svg import Axis, Series, line_chart, nice_ticks, stacked_bars
from burster.eval.targets import evaluate
from tests.eval.bench_trace import write_trace

POLICIES = ["burster", "on-demand"]


class Tags(HTMLParser):
    """Counts start tags, collects ids and text, and fails on a tag closed out of order."""

    def __init__(self) -> None:
        super().__init__()
        self.count: dict[str, int] = {}
        self.ids: set[str] = set()
        self.text: list[str] = []
        self.stack: list[str] = []
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.count[tag] = self.count.get(tag, 0) + 1
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(str(a["id"]))
        self.urls += [str(v) for k, v in attrs if k in ("src", "href")]
        if tag not in ("meta", "br", "line", "circle", "rect", "polyline", "link", "img"):
            self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.count[tag] = self.count.get(tag, 0) + 1

    def handle_endtag(self, tag: str) -> None:
        if tag in ("line", "circle", "rect", "polyline"):
            return
        assert self.stack and self.stack[-1] == tag, f"</{tag}> closes <{self.stack[-1:]}>"
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> tuple[SuiteResult, list[dict[str, object]]]:
    path = write_trace(tmp_path_factory.mktemp("report"))
    plan = plan_settings([Window(str(path), "philly", 0.0, 0.25)], seeds=[0, 1], nodes=[1])
    result = run_suite(plan.settings, POLICIES, Sources(), workers=2)
    return result, records(result)


def test_report_parses_with_one_svg_per_plot_and_the_targets(
        suite: tuple[SuiteResult, list[dict[str, object]]]) -> None:
    result, recs = suite
    checks = evaluate(recs)
    page = render(result, recs, checks, policies=POLICIES)
    tags = Tags()
    tags.feed(page)
    tags.close()
    assert not tags.stack, f"unclosed tags {tags.stack}"
    # 1 trace -> 1 Pareto plot, 2 settings -> 2 capacity plots (Burster's arm), 1 spend plot
    assert tags.count["svg"] == tags.count["figure"] == 4
    assert {"targets", "settings", "plots"} <= tags.ids
    text = " ".join(tags.text)
    assert "Targets" in text and ("MISSED" in text or "All" in text)
    for c in checks:
        assert c["target"] in text
    # each setting sets the clairvoyant's cloud GPU-hours beside the arms' column, and the pauses
    # the first-wait percentiles miss
    assert "cloud GPU-h" in text and "paused GPU-h" in text
    for r in recs:
        assert f"the clairvoyant runs {r['upper_bound_cloud_gpu_hours']:,.0f} GPU-h on the cloud" in text
    assert tags.count.get("script", 0) == 0 and tags.urls == []  # self-contained: nothing fetched


def test_a_missed_target_is_said_with_its_number(suite: tuple[SuiteResult, list[dict[str, object]]]) -> None:
    result, recs = suite
    strict = [dict(r, wait_p50_s=600.0) if r["policy"] == "burster" else r for r in recs]
    page = render(result, strict, evaluate(strict), policies=POLICIES)
    assert "MISSED" in page and "600 s" in page


def test_report_without_burster_says_targets_were_not_evaluated(
        suite: tuple[SuiteResult, list[dict[str, object]]]) -> None:
    result, recs = suite
    only = SuiteResult([a for a in result.arms if a.policy == "on-demand"], result.bounds)
    recs_od = [r for r in recs if r["policy"] == "on-demand"]
    page = render(only, recs_od, evaluate(recs_od), policies=["on-demand"])
    assert "Not evaluated: Burster's policy was not among the arms run" in page
    assert page.count("<svg") == 1 + 2 + 1  # capacity plots fall back to the first policy's arm


def test_nice_ticks_and_log_axis() -> None:
    assert nice_ticks(0, 97) == [0, 20, 40, 60, 80, 100]
    assert nice_ticks(0, 0) == [0, 0.2, 0.4, 0.6, 0.8, 1.0]
    axis = Axis([0.0, 50.0, 3000.0], 0, 300, log=True)  # 0 is drawn at the floor (1)
    assert axis.ticks == [1.0, 10.0, 100.0, 1000.0, 10000.0]
    assert axis.px(0.0) == axis.px(1.0) == 0 and axis.px(10000.0) == 300


def test_charts_escape_names_and_draw_each_series(tmp_path: Path) -> None:
    svg = line_chart([Series("a<b", [0, 1, 2], [1, 3, 2], markers=True), Series("c", [0, 2], [0, 5], dashed=True)],
                     title="T & U", x_label="x", y_label="y")
    assert svg.count("<polyline") == 2 and svg.count("<circle") == 3 and "a&lt;b" in svg and "T &amp; U" in svg
    bars = stacked_bars(["p", "q"], [("aws spot", [1.0, 0.0]), ("gcp on-demand", [2.0, 4.0])], title="S", y_label="$")
    assert bars.count("<rect") == 3 + 2 + 1  # 3 non-zero segments, 2 legend squares, 1 frame
