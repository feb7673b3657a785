"""`burster bench` tables: every figure shows whole, on a wide pipe and on an 80-column terminal."""

from __future__ import annotations

import io
from typing import Any

import pytest
from rich.console import Console

from burster.eval.tables import print_tables
from burster.eval.targets import evaluate


def _record(policy: str, usd: float, **extra: Any) -> dict[str, Any]:
    r = dict(trace="trace_job_Philly_MIX2.csv.gz", pool_gpus=344, seed=0, policy=policy, cloud_usd=usd,
             cloud_usd_spot=usd * 0.9, cloud_usd_on_demand=usd * 0.1, ratio_to_lower_bound=usd / 175.3,
             captured_savings=0.947, onprem_utilization=0.807, wait_p50_s=9360.0, wait_p95_s=55260.0,
             wait_p99_s=85920.0, wait_share_within_budget=0.339, deadline_misses=258, hard_deadline_misses=257,
             preemptions=1234, lost_gpu_hours=220.5, requeued_wait_gpu_hours=1310.4, cloud_gpu_hours=3083.0,
             launches=3600, lower_bound_usd=175.3, bracket_lower_usd=175.3, upper_bound_usd=233.46,
             bound_status="optimal",
             upper_bound_cloud_gpu_hours=613.0, window="day 3 + 1 d", estimate_error=0.0, pool_order="start_by")
    r.update(extra)
    return r


RECORDS = [_record("burster", 12_462.34), _record("greedy-spot", 17_111.98), _record("on-demand", 54_258.82),
           _record("uniform-progress", 13_344.61)]


@pytest.mark.parametrize("width", [80, 120, 200])
def test_no_figure_is_cut_short(width: int) -> None:
    out = io.StringIO()
    print_tables(RECORDS, evaluate(RECORDS), 9.0, Console(file=out, width=width, color_system=None))
    text = out.getvalue()
    assert "…" not in text
    assert max(len(line) for line in text.splitlines()) <= width
    for figure in ("54,258.82", "12,462.34", "48,833 / 5,426", "9360/55260/85920", "258 (257)", "1,310.4",
                   "3,083", "80.7%", "309.52", "uniform-progress"):
        assert figure in text, figure
    for cell in ("71.09x MISSED", "9360 s MISSED", "33.9% MISSED", "27.2%"):  # the targets table's, whole too
        assert cell in text, cell


def test_a_wide_console_gets_one_table_per_setting_and_a_narrow_one_more() -> None:
    tables = {}
    for width in (80, 200):
        out = io.StringIO()
        print_tables(RECORDS, [], 1.0, Console(file=out, width=width, color_system=None))
        tables[width] = out.getvalue().count("┃ policy")
    assert tables[200] == 1 and tables[80] > 1
