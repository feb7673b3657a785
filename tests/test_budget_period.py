"""Budget periods: a hard budget counts the spend of its UTC month (week, day), not all time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal

import pytest

from burster.budget_period import period_start, share_since
from burster.clock import FakeClock
from burster.errors import ConfigError
from burster.lifecycle import NodeState
from burster.model import Demand, Market, Offering
from burster.reconciler import Reconciler
from burster.state import LedgerEntry, MemoryState, NodeRecord
from policies.burster import BursterParams, BursterPolicy
from policies.cost import CostModel, CostParams
from policies.guards import GuardParams
from policies.reclaim import ReclaimParams
from providers.fake import FakeCloudProvider
from providers.sim.events import EventQueue
from providers.sim.pool import SimPool

CHEAP = Offering("fake", "r1", "r1a", "gpu.8x", "V100", 8, Market.ON_DEMAND, 10.0)
JAN_31_22H = datetime(2026, 1, 31, 22, tzinfo=UTC)
FEB_1 = datetime(2026, 2, 1, tzinfo=UTC)


@pytest.mark.parametrize(("period", "start"), [
    ("month", datetime(2026, 3, 1, tzinfo=UTC)),
    ("week", datetime(2026, 3, 2, tzinfo=UTC)),  # the Monday before Wednesday the 4th
    ("day", datetime(2026, 3, 4, tzinfo=UTC)),
    ("all", None),
])
def test_a_period_starts_at_its_utc_boundary(period: str, start: datetime | None) -> None:
    assert period_start(period, datetime(2026, 3, 4, 15, 30, tzinfo=UTC)) == start


def test_a_period_is_counted_in_utc_whatever_the_clock_zone() -> None:
    tokyo_morning = datetime(2026, 3, 1, 5, tzinfo=timezone(timedelta(hours=9)))  # 20:00 UTC on Feb 28
    assert period_start("month", tokyo_morning) == datetime(2026, 2, 1, tzinfo=UTC)
    with pytest.raises(ValueError, match="month, week, day, all"):
        period_start("year", tokyo_morning)


def test_a_share_since_is_pro_rata_by_time() -> None:
    assert share_since(30.0, JAN_31_22H, FEB_1 + timedelta(hours=1), FEB_1) == pytest.approx(10.0)
    assert share_since(30.0, JAN_31_22H, FEB_1, FEB_1) == 0.0
    assert share_since(30.0, FEB_1, FEB_1 + timedelta(hours=1), FEB_1) == 30.0
    assert share_since(30.0, JAN_31_22H, FEB_1, None) == 30.0


def ledger_entry(team: str, usd: str, start: datetime, hours: float) -> LedgerEntry:
    end = start + timedelta(hours=hours)
    return LedgerEntry("n", "fake", "on_demand", "gpu.8x", "r1", team, "", "", "", start, end, hours * 3600,
                       Decimal(usd))


def test_spent_since_counts_the_period_share_of_each_entry_and_follows_new_charges() -> None:
    state = MemoryState()
    state.charge(ledger_entry("vision", "20", JAN_31_22H - timedelta(hours=5), 2))  # all in January
    state.charge(ledger_entry("vision", "40", JAN_31_22H, 4))  # half in each month
    state.charge(ledger_entry("nlp", "7", FEB_1, 1))
    assert state.spent_since(None) == (67.0, {"vision": 60.0, "nlp": 7.0})
    assert state.spent_since(FEB_1) == (27.0, {"vision": 20.0, "nlp": 7.0})
    state.charge(ledger_entry("nlp", "3", FEB_1 + timedelta(hours=1), 1))  # added to the period's sums as charged
    assert state.spent_since(FEB_1) == (30.0, {"vision": 20.0, "nlp": 10.0})
    assert state.spent_since(FEB_1 - timedelta(days=31)) == (70.0, {"vision": 60.0, "nlp": 10.0})


class World:
    def __init__(self, start: datetime, period: str, state: MemoryState | None = None) -> None:
        self.clock = FakeClock(start)
        self.pool = SimPool(EventQueue(), nodes=1, gpus_per_node=8, gpu_model="V100")
        self.cloud = FakeCloudProvider("fake", [CHEAP], now=self.clock.now)
        guards = GuardParams(total_budget_usd=100.0, soft_fraction=1.0)
        policy = BursterPolicy(CostModel(CostParams(launch_latency_s=60)),
                               BursterParams(reclaim=ReclaimParams(idle_ttl_s=120, move_back=False), guards=guards))
        self.rec = Reconciler(providers={"fake": self.cloud}, pool=self.pool, policy=policy, clock=self.clock,
                              budget_period=period, state=state)

    def job(self, job_id: str) -> None:
        now = self.clock.now()
        self.pool.submit(Demand(job_id, 8, now - timedelta(hours=1), 2 * 3600, gpu_model="V100"), now)
        self.pool.schedule(now)


@pytest.mark.parametrize("period", ["month", "all"])
def test_a_burst_refused_at_the_monthly_budget_goes_ahead_once_the_month_turns(period: str) -> None:
    w = World(JAN_31_22H, period)
    w.rec.state.charge(ledger_entry("", "95", JAN_31_22H - timedelta(days=3), 9.5))  # earlier this month
    w.job("a")  # takes the reserved node
    w.job("b")  # must burst: 2 h on $10/h nodes would pass $100
    report = w.rec.run_once()
    assert report.plan.launches == ()
    ((_, why),) = report.plan.refused
    per = "/month" if period == "month" else ""
    assert why.startswith(f"global budget $100.00{per} would be exceeded: $95.00 committed")
    w.clock.advance((FEB_1 - JAN_31_22H).total_seconds() + 10)
    report = w.rec.run_once()
    if period == "month":  # a new month: January's $95 no longer counts
        assert [a.job_id for a in report.plan.launches] == ["b"] and report.plan.refused == ()
    else:
        assert report.plan.launches == () and report.plan.refused


def test_a_node_running_across_the_boundary_counts_its_share_in_each_month() -> None:
    for period, usd in (("month", 10.0), ("all", 20.0)):
        w = World(FEB_1 + timedelta(hours=1), period)
        w.rec.state.add_node(NodeRecord("fake-9", "fake", CHEAP, "prewarm", FEB_1 - timedelta(hours=1),
                                        NodeState.READY, team="vision"))
        spend = w.rec.nodes.spend(w.clock.now(), w.rec.budget_period)
        assert spend.total_usd == pytest.approx(usd) and spend.team_usd("vision") == pytest.approx(usd)
        assert spend.period == period


def test_an_unknown_budget_period_is_refused_naming_the_choices() -> None:
    with pytest.raises(ConfigError, match="unknown budget period 'year': use one of month, week, day, all"):
        World(FEB_1, "year")
