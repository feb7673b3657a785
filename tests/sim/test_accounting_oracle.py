"""Whole simulations checked by an independent accounting oracle (tests/sim/oracle_checks.py): the
ledger, cloud $, launches, job counts, waits, utilization, lost and cloud GPU-hours, preemptions and
deadline misses recomputed from what the clouds' APIs and the pool's runs did, and hard budgets
checked at every pass. The helpers run any window: scripts over more of them are cheap to write."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from burster.app import DEMO_TRACE
from burster.config import parse_config
from burster.eval.compare import Window, bench_config, cached_trace, offered_load_gpus, pool_sizes, window_jobs
from burster.model import Market, Offering
from burster.shared_data import shared_data_dir
from burster.traces import load_trace
from tests.sim.oracle_checks import all_checks, billed_s, budget_per_pass, node_usd
from tests.sim.oracle_observe import CloudNode, observe_simulation

DEMO = load_trace(DEMO_TRACE, "philly")
MIX1 = shared_data_dir() / "chronus_philly_deadline" / "trace_job_Philly_MIX1.csv.gz"


def test_the_oracles_billing_rules() -> None:
    """The rules as the clouds state them (burster/billing.py's docstring), pinned by example."""
    assert billed_s("azure", 6 * 60 + 45, taken_back=False, spot=False) == 360  # "billed for 6 minutes"
    assert billed_s("aws", 30.2, taken_back=False, spot=False) == 60
    assert billed_s("gcp", 61.2, taken_back=False, spot=True) == 62
    assert billed_s("aws", 3599, taken_back=True, spot=True) == 0
    assert billed_s("aws", 3601, taken_back=True, spot=True) == 3601
    assert billed_s("gcp", 600, taken_back=True, spot=True) == 600
    t0 = datetime(2026, 1, 5, tzinfo=UTC)
    o = Offering("aws", "us-east-1", "use1-az1", "p3.2xlarge", "V100", 1, Market.SPOT, 3.6)
    node = CloudNode("n", o, "", t0, end=t0 + timedelta(seconds=1800), taken_back=True)
    assert node_usd(node, t0 + timedelta(hours=2)) == 0  # taken back in its first hour
    assert node_usd(node, t0 + timedelta(seconds=600)) == pytest.approx(0.6)  # still up then: accruing


@pytest.mark.parametrize("sigma", [0.0, 0.5])
def test_demo_accounts_add_up(sigma: float) -> None:
    seen = observe_simulation(parse_config({"pool": {"nodes": 18}}), DEMO, seed=0, days=2.0, estimate_error=sigma)
    assert seen.summary["launches"] > 50 and seen.summary["preemptions"] > 0  # the oracle had work to do
    assert all_checks(seen) == []


@pytest.mark.parametrize(("policy", "hours", "sigma"), [("burster", 44.0, 0.0), ("greedy-spot", 41.3, 0.5),
                                                        ("on-demand", 44.0, 0.5)])
def test_a_run_cut_short_accounts_add_up(policy: str, hours: float, sigma: float) -> None:
    """Nodes up at the stop are paid to it by their clouds' plain rule, jobs unfinished or never
    started count as such. (An AWS spot node up at the stop with an interruption notice standing
    used to be charged nothing, as if its cloud had taken it back in its first hour: burster
    at 44 h left $2.75 of six nodes out of cloud $.)"""
    seen = observe_simulation(parse_config({"pool": {"nodes": 18}}), DEMO, seed=1, days=2.0, hours=hours,
                              estimate_error=sigma, policy=policy)
    assert any(n.end is None for n in seen.nodes.values())  # nodes were up at the stop
    assert seen.summary["jobs_finished"] < seen.summary["jobs"]
    assert all_checks(seen) == []


@pytest.mark.parametrize(("policy", "period", "budget_usd"), [("burster", "all", 40.0), ("greedy-spot", "day", 20.0)])
def test_hard_budgets_hold_at_every_pass(policy: str, period: str, budget_usd: float) -> None:
    """Neither the ledger nor what the clouds billed so far passes a global or a team's hard budget
    in its period at any pass (tests/sim/test_scenario.py checks only the final cloud $ against a
    global one)."""
    teams = {"vc_11cb48": 3.5, "vc_7f04ca": 2.5}
    raw = {"pool": {"nodes": 18}, "budget": {"total_usd": budget_usd, "team_usd": teams, "period": period}}
    seen = observe_simulation(parse_config(raw), DEMO, seed=0, days=2.0, estimate_error=0.5, policy=policy,
                              per_pass=budget_per_pass(budget_usd, teams, period))
    spent = {t: sum(float(e.usd) for e in seen.sim.reconciler.state.ledger if e.team == t) for t in teams}
    assert 0.75 * budget_usd < seen.summary["cloud_usd"] and all(spent.values())  # the budgets bound
    assert all_checks(seen) == []


@pytest.mark.skipif(not MIX1.exists(), reason="needs ../shared/data/chronus_philly_deadline")
def test_a_philly_window_accounts_add_up() -> None:
    """One day of Philly MIX1 with the pool `burster bench` sizes for it (90 % offered load)."""
    trace = cached_trace(str(MIX1), "philly")
    start, end, jobs = window_jobs(trace, Window(str(MIX1), "philly", 1.0, 1.0), "V100")
    nodes = pool_sizes(offered_load_gpus(jobs, start, end), (0.9,))[0]
    seen = observe_simulation(bench_config(nodes), trace, seed=0, days=1.0, start_day=1.0)
    assert seen.summary["jobs"] > 1000 and seen.summary["launches"] > 500
    assert all_checks(seen) == []
