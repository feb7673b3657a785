"""`burster bench` edges: targets at their thresholds and with $0 references, records of infinite bounds,
arm order, names that are HTML or Rich markup, chart scaling with few or equal values, CLI argument checks."""

from __future__ import annotations

import argparse
import gzip
import io
import json
import re
from dataclasses import replace
from datetime import timedelta
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from burster.cli import main
from burster.cli.bench import _check_numbers, parse_policies, parse_seeds, windows, write_report
from burster.errors import ConfigError, InputError
from burster.eval.compare import (
    RECORD_KEYS,
    SUMMARY_EXTRAS,
    ArmResult,
    BoundResult,
    Setting,
    Sources,
    SuiteResult,
    Window,
    records,
    run_suite,
    window_jobs,
)
from burster.eval.report import pareto_plots, render, spend_plot, utilization_flag
from burster.eval.suite import plan_settings
from burster.eval.svg import Axis, Series, fmt_num, line_chart, stacked_bars
from burster.eval.tables import print_tables
from burster.eval.targets import BOUND, HARD_MISSES, OVERALL, P50, VS_GREEDY, VS_ON_DEMAND, WITHIN_BUDGET, evaluate
from burster.model import Demand
from burster.traces import TRACE_EPOCH, Trace
from tests.eval.bench_trace import write_trace
from tests.eval.test_tables import _record

NAME = "t<b>&lt;\"'.csv"  # a trace file name that is HTML: a tag, an entity, quotes
MARKUP = "<i>&lt;"  # text for a chart's every label


def _rec(policy: str, usd: float, seed: int = 0, **extra: Any) -> dict[str, Any]:
    base = dict(trace="t", window="w", pool_gpus=8, seed=seed, policy=policy, cloud_usd=usd, lower_bound_usd=100.0)
    return base | dict(hard_deadline_misses=0, wait_p50_s=0.0, wait_share_within_budget=1.0) | extra


def _by_target(recs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {c["target"]: c for c in evaluate(recs) if c["setting"] == "t, w, 8 GPUs, seed 0"}


def test_a_value_at_its_threshold_meets_the_target_and_a_met_check_has_no_note() -> None:
    recs = [
        _rec("burster", 110.0, wait_p50_s=60.0, wait_share_within_budget=0.95),
        _rec("on-demand", 220.0),
        _rec("greedy-spot", 137.5),
    ]
    checks = _by_target(recs)
    assert {t: c["value"] for t, c in checks.items()} == {
        BOUND: 1.1,
        VS_ON_DEMAND: 0.5,
        VS_GREEDY: 0.2,
        HARD_MISSES: 0.0,
        P50: 60.0,
        WITHIN_BUDGET: 0.95,
    }
    assert all(c["met"] and "note" not in c for c in checks.values())


def test_a_reference_arm_that_spent_nothing_is_missed_with_a_reason_not_a_crash() -> None:
    checks = _by_target([_rec("burster", 5.0), _rec("on-demand", 0.0), _rec("greedy-spot", 0.0)])
    for target, arm in ((VS_ON_DEMAND, "on-demand"), (VS_GREEDY, "greedy-spot")):
        assert checks[target]["value"] is None and not checks[target]["met"]
        assert checks[target]["note"] == f"{arm} spent $0"
    both_zero = _by_target([_rec("burster", 0.0), _rec("on-demand", 0.0)])[VS_ON_DEMAND]
    assert both_zero["value"] == 0.0 and "note" not in both_zero  # no savings on nothing (documented)


def test_the_overall_bound_needs_every_settings_bound() -> None:
    recs = [_rec("burster", 50.0), _rec("burster", 50.0, seed=1, lower_bound_usd=None)]
    overall = next(c for c in evaluate(recs) if c["setting"] == OVERALL and c["target"] == BOUND)
    assert overall["value"] is None and not overall["met"] and "no lower bound" in overall["note"]


def _arm(setting: Setting, policy: str, usd: float, preempted: int = 0) -> ArmResult:
    summary: dict[str, Any] = {k: 0 for k in (*RECORD_KEYS, *SUMMARY_EXTRAS)}
    summary |= {
        "policy": policy,
        "cloud_usd": usd,
        "cloud_usd_waived": 0.0,
        "onprem_preemptions": preempted,
        "spot_source": "s",
    }
    return ArmResult(setting, policy, summary, {}, {})


def test_records_keep_the_brackets_bound_beside_the_arms_and_an_infinite_upper_bound_is_null() -> None:
    """A clairvoyant schedule with a job that fits nowhere costs inf (a spot-only --prices whose spot is
    down the whole window): --json printed `Infinity`, which is not JSON (jq and most parsers reject it)."""
    setting = Setting("t", Window("t.csv", None, 0.0, 1.0), 1, 0)
    bound = BoundResult(setting, 100.0, float("inf"), "optimal", 0.0, float("inf"), (100.0, 70.0))
    rec = records(SuiteResult([_arm(setting, "burster", 80.0, preempted=1)], {setting: bound}))[0]
    assert (rec["lower_bound_usd"], rec["bracket_lower_usd"], rec["lower_bound_split_runs"]) == (70.0, 100.0, 1)
    assert rec["upper_bound_usd"] is None and rec["upper_bound_cloud_gpu_hours"] is None
    assert json.loads(json.dumps(rec, allow_nan=False)) == rec


def test_the_window_end_is_exclusive_as_in_the_simulation() -> None:
    trace = Trace(
        "x", "test", (Demand("a", 1, TRACE_EPOCH, 60.0), Demand("b", 1, TRACE_EPOCH + timedelta(days=1), 60.0))
    )
    _, _, jobs = window_jobs(trace, Window("x", None, 0.0, 1.0), "V100")
    assert [j.job_id for j in jobs] == ["a"] and jobs[0].gpu_model == "V100"


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> tuple[SuiteResult, list[dict[str, Any]]]:
    """Two windows of a trace whose file name is HTML, the smaller first; run_suite starts the bigger first."""
    path = str(write_trace(tmp_path_factory.mktemp("audit"), NAME))
    plan = plan_settings([Window(path, "philly", 0.0, 0.1), Window(path, "philly", 0.0, 0.25)], seeds=[0], nodes=[1])
    assert plan.settings[0].jobs < plan.settings[1].jobs
    result = run_suite(plan.settings, ["on-demand", "burster"], Sources(), workers=1)
    return result, records(result)


def test_arms_come_back_in_setting_then_policy_order(suite: tuple[SuiteResult, list[dict[str, Any]]]) -> None:
    _, recs = suite
    assert [(r["window"], r["policy"]) for r in recs] == [
        ("day 0 + 2.4 h", "on-demand"),
        ("day 0 + 2.4 h", "burster"),
        ("day 0 + 6 h", "on-demand"),
        ("day 0 + 6 h", "burster"),
    ]


class Texts(HTMLParser):
    """Start tags seen, and each piece of text under the tag that holds it."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: set[str] = set()
        self.stack: list[str] = []
        self.under: dict[str, list[str]] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        if tag not in ("meta", "line", "circle", "rect", "polyline"):
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if self.stack and self.stack[-1] == tag:
            self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.under.setdefault(self.stack[-1] if self.stack else "", []).append(data)

    def holds(self, tag: str, text: str) -> bool:
        return any(text in d for d in self.under.get(tag, []))


def _parse(page: str) -> Texts:
    t = Texts()
    t.feed(page)
    t.close()
    return t


def test_names_that_are_html_show_as_written_in_the_report(suite: tuple[SuiteResult, list[dict[str, Any]]]) -> None:
    result, recs = suite
    result = replace(result, skipped=[(NAME, "no loader for <b>")])
    recs = [dict(r, bound_status="failed: ValueError: <b>&lt;") for r in recs]
    page = _parse(render(result, recs, evaluate(recs), policies=["on-demand", "burster"]))
    assert "b" not in page.tags  # no name became a tag
    for tag in ("h3", "td", "figcaption", "title", "text", "li"):  # settings, targets, plots, SVG, skipped
        assert page.holds(tag, NAME), tag
    assert page.holds("p", "(failed: ValueError: <b>&lt;)") and page.holds("li", "no loader for <b>")


def test_missed_targets_are_listed_first(suite: tuple[SuiteResult, list[dict[str, Any]]]) -> None:
    result, recs = suite
    page = render(result, recs, evaluate(recs), policies=["on-demand", "burster"])
    rows = re.findall(r'<span class="(met|missed)">', page.split('id="targets"')[1].split("</section>")[0])
    assert "met" in rows and "missed" in rows and rows == sorted(rows, key=lambda v: v == "met")


def test_capacity_plots_fall_back_to_the_first_policy_only(suite: tuple[SuiteResult, list[dict[str, Any]]]) -> None:
    result, recs = suite
    greedy = [replace(a, policy="greedy-spot") if a.policy == "burster" else a for a in result.arms]
    recs = [dict(r, policy="greedy-spot") if r["policy"] == "burster" else r for r in recs]
    page = render(replace(result, arms=greedy), recs, [], policies=["on-demand", "greedy-spot"])
    plots = page.split("<h3>Capacity vs demand</h3>")[1].split("<h3>Spend")[0]
    assert plots.count("<svg") == 2 and plots.count("<figcaption>on-demand, ") == 2


def test_pareto_points_run_in_p95_order_and_absent_policies_get_no_series() -> None:
    rows = [
        {"trace": "t", "policy": "a", "wait_p95_s": w, "cloud_usd": c} for w, c in ((300, 5.0), (10, 9.0), (100, 7.0))
    ]
    (fig,) = pareto_plots(rows, ["a", "absent"])
    xs = [float(p.split(",")[0]) for p in re.search(r'<polyline points="([^"]*)"', fig)[1].split()]  # type: ignore[index]
    assert xs == sorted(xs) and len(xs) == 3
    assert fig.count("<polyline") == 1 and ">absent<" not in fig


def test_spend_bars_sum_each_policys_arms_only() -> None:
    s = Setting("t", Window("t.csv", None, 0.0, 1.0), 1, 0)
    arms = [
        ArmResult(s, "p", {}, {}, {"aws": {"spot": 2.0}}),
        ArmResult(s, "p", {}, {}, {"aws": {"spot": 3.0}}),
        ArmResult(s, "q", {}, {}, {"aws": {"spot": 7.0}}),
    ]
    svg = spend_plot(SuiteResult(arms), ["p", "q"])
    assert "p aws spot: 5.00<" in svg and "q aws spot: 7.00<" in svg


def test_utilization_flag_bounds_are_inclusive() -> None:
    def flag(u: float) -> str:
        return utilization_flag([{"policy": "reserved-only", "onprem_utilization": u}])

    assert "outside" not in flag(0.70) + flag(0.95) and "outside" in flag(0.69) and "outside" in flag(0.951)
    assert utilization_flag([{"policy": "burster", "onprem_utilization": 0.1}]) == "reserved-only not run"


def test_axes_with_no_one_or_equal_values_still_span_a_range() -> None:
    assert Axis([], 0, 100).ticks == [0, 0.2, 0.4, 0.6, 0.8, 1.0]
    one_log = Axis([1.0, 1.0], 0, 100, log=True)  # one decade tick would leave a zero span
    assert one_log.ticks == [1.0, 10.0] and one_log.px(1.0) == 0 and one_log.px(10.0) == 100
    assert Axis([50.0, 100.0], 0, 100).ticks[0] == 0  # a linear axis starts at 0: costs are not zoomed in
    log = Axis([0.0, 1000.0], 0, 300, log=True)
    assert log.px(0.5) == log.px(0.0) == log.px(1.0) == 0  # below the floor: drawn at the floor
    svg = line_chart(
        [Series("s", [5.0], [3.0], markers=True), Series("e", [5.0, 5.0], [3.0, 3.0])],
        title="T",
        x_label="x",
        y_label="y",
        log_x=True,
    )
    assert "nan" not in svg and "inf" not in svg and svg.count("<circle") == 1


def test_fmt_num_switches_units_at_the_boundary() -> None:
    assert [fmt_num(v) for v in (9999, 10_000, 999_999, 1_000_000)] == ["9999", "10k", "999.999k", "1M"]


def test_stacked_segments_sit_on_the_ones_below() -> None:
    svg = stacked_bars(["p"], [("a", [2.0]), ("b", [3.0])], title="S", y_label="$")
    rects = {
        m[3]: (float(m[1]), float(m[2]))
        for m in re.finditer(r'<rect x="[^"]*" y="([^"]*)" width="[^"]*" height="([^"]*)"[^>]*><title>p (\w)', svg)
    }
    assert rects["b"][0] + rects["b"][1] == pytest.approx(rects["a"][0], abs=0.2)


def test_every_chart_label_is_escaped() -> None:
    charts = (
        line_chart(
            [Series(MARKUP, [1, 2], [1, 2], markers=True)],
            title=MARKUP,
            subtitle=MARKUP,
            x_label=MARKUP,
            y_label=MARKUP,
        ),
        stacked_bars([MARKUP], [(MARKUP, [1.0])], title=MARKUP, subtitle=MARKUP, y_label=MARKUP),
    )
    for svg in charts:
        page = _parse(svg)
        assert "i" not in page.tags
        assert sum(d.count(MARKUP) for ds in page.under.values() for d in ds) >= 5


@pytest.mark.parametrize("name", ["jobs[v2].csv", "jobs[/x].csv", "runs[/].csv"])
def test_a_trace_name_with_brackets_prints_as_written(name: str) -> None:
    """Rich read the name as markup: `[v2]` vanished from the tables, `[/x]` raised MarkupError after the
    whole suite had run."""
    recs = [_record("burster", 10.0, trace=name), _record("on-demand", 30.0, trace=name)]
    for width in (200, 80):  # one targets table, or one per setting
        out = io.StringIO()
        print_tables(recs, evaluate(recs), 1.0, Console(file=out, width=width, color_system=None))
        assert out.getvalue().count(name) >= 2, out.getvalue()


def test_tables_flag_utilization_and_count_missed_checks_and_say_why_a_value_is_missing() -> None:
    recs = [_record("reserved-only", 0.0, onprem_utilization=0.5), _record("burster", 10.0, lower_bound_usd=0.0)]
    checks = evaluate(recs)
    out = io.StringIO()
    print_tables(recs, checks, 1.0, Console(file=out, width=200, color_system=None))
    text = out.getvalue()
    assert "50.0% !" in text and "reserved-only utilization outside the 70-95 %" in text
    missed = sum(not c["met"] for c in checks)
    assert f"{len(checks) - missed} of {len(checks)} target checks met; MISSED {missed}" in text
    assert "<=1.10x bound n/a: the lower bound is $0, so any spend is above it" in text


def test_policies_and_seeds_are_checked_and_deduplicated() -> None:
    assert parse_policies(" burster,on-demand,burster ") == ["burster", "on-demand"]
    assert parse_seeds("2, 0,2", quick=False) == [2, 0] and parse_seeds(None, quick=True) == [0]
    for bad in ("-1", ",", "1.5"):
        with pytest.raises(ConfigError, match="--seeds must be"):
            parse_seeds(bad, quick=False)


def _args(**kw: Any) -> argparse.Namespace:
    base = dict(pool_nodes=None, workers=2, days=None, start_day=None, trace=None, trace_format=None, quick=False)
    estimates = dict(estimate_error=0.0, estimate_bias=1.0, estimate_team_spread=0.0)
    return argparse.Namespace(**(base | estimates | kw))
    return argparse.Namespace(**(base | kw))


def test_number_limits_are_inclusive_and_name_the_flag() -> None:
    _check_numbers(_args(pool_nodes=[1, 100_000], workers=64))
    _check_numbers(_args(workers=1))
    with pytest.raises(ConfigError, match=r"--workers must be in \[1, 64\].*got 0"):
        _check_numbers(_args(workers=0))


def test_start_day_0_moves_the_default_suite_to_day_0() -> None:
    assert {w.start_day for w in windows(_args(start_day=0.0))} == {0.0}


def test_a_whole_trace_window_keeps_a_last_job_on_the_hour(tmp_path: Path) -> None:
    path = write_trace(tmp_path)
    path.write_text(path.read_text() + "99,vc,1,300,1,vgg,10,1,20,10,0,soft\n")  # submitted at 5 h sharp
    (w,) = windows(_args(trace=[path], trace_format="philly"))
    setting = plan_settings([w], seeds=[0], nodes=[1]).settings[0]
    assert w.days == 6 / 24 and setting.jobs == 15


def test_a_window_without_jobs_names_the_flags_to_change(tmp_path: Path) -> None:
    path = str(write_trace(tmp_path))
    with pytest.raises(InputError, match=r"no jobs submitted in day 3 \+ 1 d of .*pick another --start-day / --days"):
        plan_settings([Window(path, "philly", 3.0, 1.0)], seeds=[0], nodes=[1])


def test_an_html_path_under_a_file_fails_before_or_after_the_suite(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before the run, check_html_path says so; a file made there during the run (minutes) gave a
    traceback from write_report instead of an error naming --html."""
    trace = write_trace(tmp_path)
    blocker = tmp_path / "taken"
    blocker.write_text("")
    assert main(["bench", "--trace", str(trace), "--json", "--html", str(blocker / "r.html")]) == 2
    assert f"--html {blocker / 'r.html'}: cannot write there" in capsys.readouterr().err
    with pytest.raises(ConfigError, match=re.escape(f"--html {blocker / 'r.html'}: cannot write the report")):
        write_report(blocker / "r.html", "<html></html>")


def test_the_progress_bar_shows_a_trace_name_with_brackets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """On a terminal the progress bar read each arm's label as markup: `[v2]` vanished from it."""
    monkeypatch.setenv("TTY_COMPATIBLE", "1")
    monkeypatch.setenv("TTY_INTERACTIVE", "1")
    trace = write_trace(tmp_path, "jobs[v2].csv")
    argv = ["--trace-format", "philly", "--policies", "on-demand", "--pool-nodes", "1", "--seeds", "0"]
    assert main(["bench", "--trace", str(trace), *argv]) == 0
    cap = capsys.readouterr()
    assert "jobs[v2].csv" in cap.out and "jobs[v2].csv, day 0 + 5 h" in cap.err  # the tables, the bar's label


def test_a_pool_size_given_twice_is_one_setting(tmp_path: Path) -> None:
    """`--pool-nodes 1 --pool-nodes 1` ran every arm twice: duplicate records and rows, and the spend
    plot summed that setting's dollars twice."""
    path = str(write_trace(tmp_path))
    plan = plan_settings([Window(path, "philly", 0.0, 0.25)], seeds=[0], nodes=[1, 2, 1])
    assert [s.nodes for s in plan.settings] == [1, 2]


def test_a_default_suite_trace_that_fails_to_load_is_skipped_with_its_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """On stderr and in the report; the rest of the suite runs."""
    broken = tmp_path / "chronus_philly_deadline" / "trace_job_Philly_MIX1.csv.gz"
    broken.parent.mkdir()
    broken.write_bytes(gzip.compress(b"garbage\n"))
    monkeypatch.setenv("BURSTER_SHARED_DATA", str(tmp_path))
    html = tmp_path / "r.html"
    argv = ["bench", "--quick", "--policies", "on-demand", "--days", "0.05", "--workers", "1", "--json", "--html"]
    assert main([*argv, str(html)]) == 0
    cap = capsys.readouterr()
    assert len(json.loads(cap.out)) == 1
    why = f"{broken}: row 1 (header): missing column(s)"
    assert f"burster bench: skipped {broken.name}: {why}" in cap.err
    assert f"<li>{broken.name}: {why}" in html.read_text()
