"""Rules of billing, budget periods and quiet_until that a mutation audit found unpinned.

- billing: nothing for a zero run (forecast too), GCP's minimum, float noise is not another unit,
  the forecast's half increment, a taken-back spot node past the free hour billed by the rule;
- budget periods start at a whole second (no microseconds);
- quiet_until: team budgets, an overdue on-prem job (not a cloud one), pre-warm's weighing from its
  first instant to the window's, and a plan that cannot be quiet gets no wake from the burst rule's.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from burster.billing import billing_rule, interrupted_spot_billed_s
from burster.budget_period import period_start
from burster.model import Demand, Market, Placement, Signal, Snapshot
from burster.plan import Drain, Plan
from policies.cost import CostModel
from policies.guards import GuardParams
from policies.quiet import FOREVER, quiet_until, with_quiet_until
from tests.test_reconciler import CHEAP


@pytest.mark.parametrize("provider", ["aws", "gcp", "azure", "fake"])
def test_a_run_of_no_time_is_billed_and_forecast_nothing(provider: str) -> None:
    assert billing_rule(provider).billed_s(0.0) == 0.0 and billing_rule(provider).expected_billed_s(0.0) == 0.0


def test_gcp_bills_a_minute_at_least() -> None:
    assert billing_rule("gcp").billed_s(30) == 60 and billing_rule("gcp").billed_s(61.5) == 62


def test_float_noise_is_not_billed_as_another_unit() -> None:
    assert billing_rule("aws").billed_s(0.1 * 3 * 1000) == 300  # 300.00000000000006
    assert billing_rule("azure").billed_s(90 * 0.7 * 60) == 63 * 60  # 3779.9999999999995: 63 full minutes


def test_a_forecast_prices_the_last_increment_at_its_mean() -> None:
    assert billing_rule("aws").expected_billed_s(100) == 100.5  # rounded up: half a second more
    assert billing_rule("aws").expected_billed_s(30) == 60  # the minimum
    assert billing_rule("azure").expected_billed_s(400) == 370  # rounded down: half a minute less
    assert billing_rule("azure").expected_billed_s(10) == 0.0


def test_a_spot_node_taken_back_after_the_free_hour_is_billed_by_the_clouds_rule() -> None:
    assert interrupted_spot_billed_s("aws", 3600.5) == 3601
    assert interrupted_spot_billed_s("gcp", 30) == 60
    assert interrupted_spot_billed_s("azure", 6 * 60 + 45) == 6 * 60


# --- budget periods ------------------------------------------------------------------------------
@pytest.mark.parametrize("period", ["month", "week", "day"])
def test_a_period_starts_at_a_whole_second(period: str) -> None:
    assert period_start(period, datetime(2026, 3, 4, 15, 30, 12, 345678, tzinfo=UTC)) == \
        period_start(period, datetime(2026, 3, 4, 15, 30, tzinfo=UTC))
    start = period_start(period, datetime(2026, 3, 4, 15, 30, 12, 345678, tzinfo=UTC))
    assert start is not None and start.microsecond == 0


# --- quiet_until ---------------------------------------------------------------------------------
NOW = datetime(2026, 3, 2, 12, tzinfo=UTC)


def quiet(snapshot: Snapshot, guards: GuardParams | None = None) -> datetime | None:
    return quiet_until(snapshot, idle_ttl_s=300.0, guards=guards or GuardParams(), prewarm=CostModel())


def test_a_team_budget_turns_skipping_off() -> None:
    assert quiet(Snapshot(NOW, (), (), (), (), (CHEAP,))) == FOREVER
    assert quiet(Snapshot(NOW, (), (), (), (), (CHEAP,)), GuardParams(team_budget_usd={"vision": 100.0})) is None


@pytest.mark.parametrize(("on_cloud", "expected"), [(False, None), (True, FOREVER)])
def test_an_on_prem_job_a_second_past_its_expected_end_turns_skipping_off(on_cloud: bool,
                                                                           expected: datetime | None) -> None:
    job = Demand("j", 8, NOW - timedelta(hours=2), 3600.0)
    overdue = Placement(job, ("n1",), NOW - timedelta(seconds=3601), on_cloud, Market.ON_DEMAND)
    assert quiet(Snapshot(NOW, (), (overdue,), (), (), (CHEAP,))) is expected


@pytest.mark.parametrize("before_window_s", [360.0, 1.0])  # pre-warm's first look (two boots), the last second
def test_pre_warm_weighs_a_signal_at_every_tick_from_its_first_look_to_the_window(before_window_s: float) -> None:
    opens = NOW + timedelta(seconds=before_window_s)
    sprint = Signal("SPRINT-7", 48.0, opens, opens + timedelta(hours=2), gpu_model="V100")
    assert quiet(Snapshot(NOW, (), (), (), (), (CHEAP,), signals=(sprint,))) is None


def test_only_an_empty_plan_that_can_be_quiet_gets_a_wake() -> None:
    wake = NOW + timedelta(hours=1)

    def woken(plan: Plan, guards: GuardParams) -> datetime | None:
        snapshot = Snapshot(NOW, (), (), (), (), (CHEAP,))
        return with_quiet_until(plan, snapshot, [wake], idle_ttl_s=300.0, guards=guards, prewarm=None).quiet_until

    assert woken(Plan(), GuardParams()) == wake
    assert woken(Plan(refused=((Drain("n1", "drain"), "no"),)), GuardParams()) is None
    assert woken(Plan(), GuardParams(total_budget_usd=100.0)) is None  # decides every tick: no wake at all
