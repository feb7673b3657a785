"""Each arm held to a lower bound valid for what it did: list $ (AWS's free take-backs added back) and
as many split reserved runs as it preempted on-prem jobs."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest

from burster.app import build_simulation
from burster.catalog import load_catalog
from burster.config import parse_config
from burster.eval.bound import bracket, lower_bound
from burster.eval.compare import ArmResult, BoundResult, Setting, SuiteResult, Window, records
from burster.eval.instance import bracket_wait_budget_s, build_instance, with_budgets
from burster.eval.targets import BOUND, evaluate
from burster.model import Demand, JobClass, Market
from burster.sim.engine import run
from burster.traces import Trace
from providers.sim.spot import load_series_path
from tests.eval.helpers import START, instance, job, offering, write_catalog


def _world(folder: Path, spot_price: float, data: list[int]) -> tuple[Path, Path]:
    prices = write_catalog(folder / "prices", 3.06, spot_price)
    spot = folder / "spot.json"
    spot.write_text(json.dumps({"metadata": {"gap_seconds": 600}, "data": data}))
    return prices, spot


def _simulate(jobs: list[Demand], prices: Path, spot: Path, *, pool_nodes: int, gpus_per_node: int,
              policy: str = "burster", restart_s: float = 300.0) -> tuple[float, dict[str, float], object]:
    """Billed $ of one run, when each job finished (s from the start), and the pool's metrics;
    ``restart_s``: ``cost.restart_overhead_s`` (a restarted run reloads that long)."""
    config = parse_config({"pool": {"nodes": pool_nodes, "gpus_per_node": gpus_per_node, "gpu_model": "V100"},
                           "cost": {"restart_overhead_s": restart_s}})
    sim = build_simulation(config, Trace("t", "test", tuple(jobs)), policy=policy, seed=0, prices=prices,
                           spot_dir=spot, providers=("aws",))
    metrics = sim.world.pool.metrics  # type: ignore[attr-defined]
    finished: dict[str, float] = {}
    record = metrics.finished

    def spy(j: Demand, now: object, **kw: float) -> None:
        finished[j.job_id] = (now - START).total_seconds()  # type: ignore[operator]
        record(j, now, **kw)

    metrics.finished = spy
    run(sim.world, sim.reconciler, sim.clock, tick_s=10.0, end=sim.end)
    assert not sim.reconciler.state.live()
    return sum(float(e.usd) for e in sim.reconciler.state.ledger), finished, metrics


def test_an_arm_that_preempted_is_held_to_the_bound_with_that_many_split_runs(tmp_path: Path) -> None:
    """A 1-GPU pool: a 4 h job, a strict 20 min job at 30 min with 5 min of slack, a 1 h job at 255 min.
    Burster preempts the first for the second and pays $0 within every budget; the reserved-run bound
    (no job ever stopped on-prem) says $0.30, the bound with one split run says $0."""
    prices, spot = _world(tmp_path, 0.9, [1])
    u_at = START + timedelta(minutes=30)
    jobs = [job("a", 0, 1, 4 * 3600.0),
            Demand("u", 1, u_at, 1200.0, gpu_model="V100", job_class=JobClass.STRICT,
                   deadline=u_at + timedelta(minutes=25)),
            job("c", 255 * 60, 1, 3600.0)]  # the first ends at 266 min (its restart reloads 5 min): c waits 11
    usd, finished, metrics = _simulate(jobs, prices, spot, pool_nodes=1, gpus_per_node=1)
    assert usd == 0.0 and metrics.onprem_preemptions == 1  # type: ignore[attr-defined]
    waits = {d.job_id: finished[d.job_id] - (d.submitted_at - START).total_seconds() - d.est_runtime_s
             for d in jobs}
    inst = build_instance(jobs, start=START, pool_gpus=1, pool_model="V100",
                          offerings=load_catalog(prices, ("aws",)), series=load_series_path(spot),
                          wait_budget=lambda d: max(bracket_wait_budget_s(d), waits[d.job_id]))
    low = lower_bound(inst)
    assert "reserved-run" in low.status and low.usd == pytest.approx(0.30)  # above what Burster paid
    assert low.with_preemptions()[0] == low.usd and low.with_preemptions()[1] <= usd


def test_one_split_run_by_hand() -> None:
    """One reserved GPU, on-demand $2/GPU-h; A: 2 h from 0, budget 30 min; B: 1 h from 1 h, budget 10 min.
    Unsplit runs: $5/3 (test_bound.py). If A may pause while B runs, the fluid optimum $1 is a schedule,
    so the bound with one split can be no higher; with none it stays $5/3."""
    od = offering(Market.ON_DEMAND, 2.0)
    inst = with_budgets(instance([job("a", 0, 1, 7200), job("b", 3600, 1, 3600)], [od], pool_gpus=1),
                        {"a": 1800, "b": 600})
    by_p = lower_bound(inst).with_preemptions()
    assert by_p[0] == pytest.approx(5 / 3)
    assert 1.0 - 1e-9 <= by_p[1] <= 1.0 + 1e-9 and by_p[-1] == by_p[1]  # the fluid bound is the floor
    assert bracket(inst).lower_by_preemptions == by_p


def test_aws_spot_taken_back_in_its_first_hour_is_counted_at_list_price(tmp_path: Path) -> None:
    """Spot drops at 50 min: EC2 takes the node back at 52 min, unbilled. The simulator counts what
    it would have cost (price x run) as waived; billed plus waived is above the bound, billed alone not
    (the job's restart reloads in no time here: with 5 min of reload its second run alone is above it)."""
    prices, spot = _world(tmp_path, 0.9, [1, 1, 1, 1, 1, 0])
    jobs = [job("j", 0, 2, 50 * 60.0)]
    usd, finished, metrics = _simulate(jobs, prices, spot, pool_nodes=0, gpus_per_node=2, restart_s=0.0)
    waived = metrics.waived_usd  # type: ignore[attr-defined]
    assert waived == pytest.approx(2 * 0.9 * (3000 + 120) / 3600)  # two 1-GPU nodes from 0 to the take-back
    inst = instance(jobs, load_catalog(prices, ("aws",)), spot=load_series_path(spot),
                    budget_s=finished["j"] - 3000.0)
    low = lower_bound(inst).usd
    assert usd < low <= usd + waived


def _arm(setting: Setting, policy: str, usd: float, waived: float, preempted: int) -> ArmResult:
    summary = {"trace": "t", "pool_gpus": 8, "seed": 0, "policy": policy, "cloud_usd": usd,
               "cloud_usd_waived": waived, "onprem_preemptions": preempted, "hard_deadline_misses": 0,
               "wait_p50_s": 0.0, "wait_p95_s": 0.0, "wait_p99_s": 0.0, "deadline_misses": 0,
               "wait_share_within_budget": 1.0}
    summary |= {k: 0 for k in ("cloud_usd_spot", "cloud_usd_on_demand", "jobs_never_started", "preemptions",
                               "lost_gpu_hours", "cloud_gpu_hours", "requeued_wait_gpu_hours",
                               "stranded_gpu_hours", "launches", "onprem_utilization", "estimate_error",
                               "estimate_bias", "estimate_team_spread", "policy_settings", "pool_order",
                               "spot_source", "controller_warnings")}
    return ArmResult(setting, policy, summary, {}, {})


def test_records_and_targets_use_each_arms_bound_and_list_price() -> None:
    setting = Setting("t", Window("t.csv", None, 0.0, 1.0), 1, 0)
    bound = BoundResult(setting, 100.0, 150.0, "optimal (reserved-run bound, blocks of 1)",
                        lower_by_preemptions=(100.0, 70.0, 55.0))
    result = SuiteResult(arms=[_arm(setting, "burster", 80.0, 8.0, 5), _arm(setting, "greedy-spot", 120.0, 0.0, 0)],
                         bounds={setting: bound})
    burster, greedy = records(result)
    assert burster["lower_bound_usd"] == 55.0 and burster["ratio_to_lower_bound"] == pytest.approx(88 / 55, abs=1e-4)
    assert burster["lower_bound_split_runs"] == 5 and burster["cloud_usd_waived"] == 8.0
    assert burster["bracket_lower_usd"] == greedy["bracket_lower_usd"] == greedy["lower_bound_usd"] == 100.0
    assert greedy["lower_bound_split_runs"] == 0
    check = next(c for c in evaluate([burster, greedy]) if c["target"] == BOUND and c["setting"] != "overall")
    assert check["value"] == pytest.approx(88 / 55, abs=1e-4) and not check["met"]
