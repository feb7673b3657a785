"""The wiring (burster/app.py), the command's plumbing (burster/cli/__init__.py, docs/cli.md) and the
bench scripts' records: what a mutation audit found untested."""

from __future__ import annotations

import argparse
import json
import re
import signal
import subprocess
import sys
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from burster.app import (
    DEMO_TRACE,
    build_policy,
    burst_params,
    cost_model,
    guard_params,
    interruption_rates,
    queue_ranker,
)
from burster.cli import build_parser, main
from burster.config import POLICY_NAMES, parse_config
from burster.model import Demand, Market, Offering
from policies.burster import BursterPolicy
from policies.cost import checkpoint_due_s
from providers.sim.spot import SpotSeries

ROOT = Path(__file__).resolve().parents[2]

# every value off its default (docs/config.md), so that a key wired to the wrong parameter shows
CONFIG = parse_config({
    "pool": {"requeue": "back", "order": "submission"},
    "cost": {"onprem_usd_per_gpu_hour": 0.7, "restart_overhead_s": 111.0, "wait_value_usd_per_gpu_hour": 3.3,
             "deadline_miss_usd": 444.0, "spot_interruptions_per_hour": 0.07, "launch_latency_s": 222.0,
             "launch_latency_sigma": 0.4, "checkpoint_write_s": 77.0,
             "interruption_notice_s": {"aws": 100.0, "gcp": 20.0, "azure": 10.0}},
    "policy": {"idle_ttl_s": 333.0, "join_timeout_s": 1500.0, "max_wait_s": 700.0, "deadline_margin_s": 800.0,
               "prewarm": False, "reclaim_to_onprem": False, "hold_nodes": False, "consolidate": False,
               "preempt_onprem": False, "defer_to_budget": False, "defer_margin_s": 130.0, "defer_quantile": 0.2,
               "market_quantile": 0.8, "price_late": False, "correct_estimates": False, "exclusive_nodes": True,
               "risk_switch": False, "standby": True, "standby_window_s": 1000.0},
    "budget": {"total_usd": 900.0, "team_usd": {"vision": 90.0}, "soft_fraction": 0.6},
    "guards": {"max_nodes": 12, "max_launches_per_minute": 7, "protected_node_ids": ["keep-me"]},
    "controller": {"tick_s": 20.0},
})


# --- burster/app.py: config -> cost model, policy ----------------------------------------------
def test_every_cost_key_reaches_the_cost_model() -> None:
    params = cost_model(CONFIG, {"aws/x/y/spot": 0.3}).p
    for key, value in CONFIG.cost.model_dump().items():
        assert getattr(params, key) == value, key
    assert params.interruption_rates == {"aws/x/y/spot": 0.3}
    assert cost_model(CONFIG).p.interruption_rates == {}


def test_every_policy_budget_guard_and_tick_key_reaches_burster_s_policy() -> None:
    policy = build_policy("burster", CONFIG, cost_model(CONFIG))
    assert isinstance(policy, BursterPolicy)
    p, c = policy.params, CONFIG.policy
    burst = p.burst
    assert (burst.max_wait_s, burst.deadline_margin_s, burst.prewarm, burst.defer_to_budget, burst.defer_margin_s,
            burst.defer_quantile, burst.market_quantile, burst.price_late) == \
        (700.0, 800.0, False, False, 130.0, 0.2, 0.8, False)
    assert burst == burst_params(CONFIG)
    r = p.reclaim
    assert (r.idle_ttl_s, r.tick_s, r.join_timeout_s, r.move_back, r.hold_nodes, r.consolidate, r.requeue.value) == \
        (333.0, 20.0, 1500.0, False, False, False, "back")
    assert (p.preempt_onprem, p.correct_estimates, p.exclusive_nodes, p.risk_switch) == (False, False, True, False)
    assert (p.standby.enabled, p.standby.window_s) == (c.standby, c.standby_window_s) == (True, 1000.0)
    g = p.guards
    assert (g.total_budget_usd, dict(g.team_budget_usd), g.soft_fraction, g.max_nodes, g.max_launches_per_minute,
            g.protected_node_ids, g.idle_ttl_s, g.boot_s, g.stop_grace_s) == \
        (900.0, {"vision": 90.0}, 0.6, 12, 7, frozenset({"keep-me"}), 333.0, 222.0, checkpoint_due_s(77.0))
    assert g == guard_params(CONFIG)


@pytest.mark.parametrize("name", POLICY_NAMES)
def test_every_policy_name_builds_and_a_baseline_keeps_the_guards(name: str) -> None:
    policy = build_policy(name, CONFIG, cost_model(CONFIG))
    guards = policy.params.guards if isinstance(policy, BursterPolicy) else policy.guards
    assert guards == guard_params(CONFIG)


def test_the_pool_queue_is_ranked_only_by_start_by() -> None:
    assert queue_ranker(CONFIG, cost_model(CONFIG)) is None  # pool.order = "submission": FIFO
    ranked = parse_config({"pool": {"order": "start_by"}})
    ranker = queue_ranker(ranked, cost_model(ranked))
    assert ranker is not None
    now = datetime(2026, 1, 1, tzinfo=UTC)
    assert ranker(Demand("a", 1, now, 600.0)) > now  # a job's start-by is after it is submitted


def _spot(provider: str, gpu: str = "V100", market: Market = Market.SPOT) -> Offering:
    return Offering(provider, "r", f"{provider}-z", "t", gpu, 1, market, 1.0)


def test_interruption_rates_are_drops_per_available_hour_of_spot_offerings_only() -> None:
    series = [SpotSeries("a", "aws", "V100", 3600.0, (1, 1, 0, 1, 0, 1)),  # 4 h up, 2 drops
              SpotSeries("g", "gcp", "V100", 1800.0, (0, 0))]  # never up
    offerings = [_spot("aws"), _spot("aws", market=Market.ON_DEMAND), _spot("gcp")]
    rates = interruption_rates(offerings, series)
    assert rates == {offerings[0].key: pytest.approx(0.5), offerings[2].key: 10.0}
    assert interruption_rates(offerings, []) == {}


def _trace(tmp_path: Path, *rows: str) -> Path:
    path = tmp_path / "jobs.csv"
    path.write_text("job_id,submit_time,gpus,runtime_s,gpu_model\n" + "".join(f"{r}\n" for r in rows))
    return path


def test_the_window_ends_before_its_last_instant_and_bounds_utilization(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """One 8-GPU node busy 12 h of a 1-day window: 50 % (not 12 h over the week the run drains for);
    a job submitted as the window ends is not in it."""
    trace = _trace(tmp_path, "a,2026-01-05T00:00:00Z,8,43200,V100", "b,2026-01-06T00:00:00Z,8,600,V100")
    assert main(["simulate", "--trace", str(trace), "--pool-nodes", "1", "--days", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["jobs"], out["jobs_finished"], out["onprem_utilization"]) == (1, 1, 0.5)


def test_the_pool_s_requeue_order_and_the_budget_period_reach_the_simulated_world(tmp_path: Path) -> None:
    from burster.app import build_simulation
    from burster.traces import load_trace

    config = parse_config({"pool": {"nodes": 1, "requeue": "back"}, "budget": {"period": "day"}})
    sim = build_simulation(config, load_trace(_trace(tmp_path, "a,2026-01-05T00:00:00Z,8,600,V100"), "generic"),
                           policy="burster", seed=0)
    world: Any = sim.world
    assert world.pool.queue.requeue.value == "back" and sim.reconciler.budget_period == "day"


def _no_pool_for(tmp_path: Path) -> Path:
    config = tmp_path / "burster.toml"
    config.write_text('[pool]\nnodes = 0\ngpu_model = "MI300"\n')
    return config


def test_a_model_only_an_empty_pool_has_is_refused_with_the_jobs_counted(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = _trace(tmp_path, "a,2026-01-05T00:00:00Z,1,600,MI300", "b,2026-01-05T00:01:00Z,1,600,MI300",
                   "c,2026-01-05T00:02:00Z,1,600,V100")
    assert main(["simulate", "--trace", str(trace), "--config", str(_no_pool_for(tmp_path)), "--json"]) == 2
    assert "burster: error: 2 job(s) need GPU model(s) MI300 that neither the pool (no nodes) nor the catalog" \
        in capsys.readouterr().err


def test_a_signal_for_a_model_only_an_empty_pool_has_is_refused(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    signals = tmp_path / "signals.csv"
    signals.write_text("source,gpu_hours,window_start,window_end,gpu_model\n"
                       "S-1,8,2026-01-05T01:00:00Z,2026-01-05T05:00:00Z,MI300\n")
    trace = _trace(tmp_path, "a,2026-01-05T00:00:00Z,1,600,V100")
    assert main(["simulate", "--trace", str(trace), "--config", str(_no_pool_for(tmp_path)), "--signals",
                 str(signals), "--json"]) == 2
    assert "burster: error: signal 'S-1' needs GPU model 'MI300', which neither the pool (no nodes)" in \
        capsys.readouterr().err


# --- burster offerings: float ties and typed values ----------------------------------------------
def _noisy_catalog(tmp_path: Path) -> Path:
    """Per-GPU prices equal in decimal but not as floats: 0.30 / 3 < 0.10 and 2.70 / 3 > 0.90."""
    (tmp_path / "aws_v7_vms_gpu_subset.csv").write_text(
        "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,SpotPrice,Region,AvailabilityZone\n"
        "g.three,L4,3,24,96,0.30,,us-east-1,use1-az1\n"
        "g.one,L4,1,8,32,0.10,,us-east-1,use1-az1\n"
        "h.three,L4,3,24,96,2.70,,us-east-1,use1-az1\n"
        "h.one,L4,1,8,32,0.90,,us-east-1,use1-az1\n")
    return tmp_path


def _offerings_json(capsys: pytest.CaptureFixture[str], *argv: str) -> list[dict[str, Any]]:
    assert main(["offerings", *argv, "--json"]) == 0
    records: list[dict[str, Any]] = json.loads(capsys.readouterr().out)
    return records


def test_equal_prices_that_differ_as_floats_tie_and_the_price_bound_keeps_them(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """GCP's catalog sums a VM's and its GPUs' prices: an 8-GPU node at 2.94582 $/GPU-h was listed
    before the 1-GPU node at the same price, and ``--max-price 2.94582`` left out half of them."""
    prices = ["--prices", str(_noisy_catalog(tmp_path))]
    got = _offerings_json(capsys, *prices)
    assert [r["instance_type"] for r in got] == ["g.one", "g.three", "h.one", "h.three"]  # then by node price
    assert [r["effective_usd_per_gpu_hour"] for r in got] == [0.1, 0.1, 0.9, 0.9]
    assert [r["instance_type"] for r in _offerings_json(capsys, *prices, "--max-price", "0.9")] == \
        ["g.one", "g.three", "h.one", "h.three"]
    assert [r["instance_type"] for r in _offerings_json(capsys, *prices, "--max-price", "0.1")] == \
        ["g.one", "g.three"]


def test_json_records_keep_their_documented_key_order(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    keys = ["provider", "region", "zone", "instance_type", "gpu_model", "gpus_per_node", "market",
            "price_per_hour_usd", "price_per_gpu_hour_usd", "effective_usd_per_gpu_hour"]
    got = _offerings_json(capsys, "--prices", str(_noisy_catalog(tmp_path)), "--limit", "1")
    assert [list(r) for r in got] == [keys]
    assert got[0]["price_per_hour_usd"] == 0.1 and got[0]["gpus_per_node"] == 1
    three = _offerings_json(capsys, "--prices", str(tmp_path), "--limit", "2")[1]
    assert (three["instance_type"], three["gpus_per_node"], three["price_per_hour_usd"],
            three["price_per_gpu_hour_usd"]) == ("g.three", 3, 0.3, pytest.approx(0.1))


def test_ties_of_price_and_provider_go_by_region_before_zone() -> None:
    from burster.offer_query import OfferFilter, query_offers

    # the zone names sort the other way round from their regions'
    offers = [Offering("aws", region, zone, "t", "V100", 1, Market.ON_DEMAND, 1.0)
              for region, zone in (("us-west-2", "a-zone"), ("us-east-1", "b-zone"))]
    ranked = query_offers(offers, OfferFilter(), lambda o: o.price_per_gpu_hour_usd)
    assert [r.offering.region for r in ranked] == ["us-east-1", "us-west-2"]


def test_a_piped_table_has_every_column(tmp_path: Path) -> None:
    """Not squeezed into the 80 columns rich assumes off a terminal (docs/cli.md)."""
    import os

    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    done = subprocess.run([sys.executable, "-m", "burster", "offerings", "--prices", str(_noisy_catalog(tmp_path))],
                          cwd=ROOT, capture_output=True, text=True, env=env, timeout=60, check=True)
    header = next(line for line in done.stdout.splitlines() if "provider" in line)
    assert "region" in header and "instance type" in header and "effective $/GPU-h" in header
    assert "narrow terminal" not in done.stdout


def test_loader_lines_are_printed_once_however_often_the_command_runs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "aws_v7_vms_gpu_subset.csv").write_text(
        "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,SpotPrice,Region,AvailabilityZone\n"
        "g.one,L4,1,8,32,1.00,,us-east-1,use1-az1\ng.half,L4,0.5,4,16,0.5,,us-east-1,use1-az1\n")
    for _ in range(2):
        assert main(["offerings", "--prices", str(tmp_path), "--json"]) == 0
        err = capsys.readouterr().err
        assert err.count("burster: ") == 1 and "1 row(s) with AcceleratorCount" in err


def test_an_unknown_market_is_quoted_as_typed(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["offerings", "--market", "On-Demandd"]) == 2
    assert "--market: unknown market 'On-Demandd'; did you mean on_demand? Valid: on_demand, spot." in \
        capsys.readouterr().err
    assert _offerings_json(capsys, "--market", " On Demand ", "--limit", "1")[0]["market"] == "on_demand"


def test_the_table_title_counts_what_the_limit_left_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["offerings", "--prices", str(_noisy_catalog(tmp_path)), "--limit", "2"]) == 0
    out = capsys.readouterr().out
    assert "2 of 4 matching offerings (4 in the catalog)" in out
    assert "g.one" in out and "g.three" in out and "h.one" not in out


# --- the command: docs/cli.md against the parsers, exit codes ---------------------------------
def _subparser(*names: str) -> argparse.ArgumentParser:
    parser = build_parser()
    for name in names:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[name]
    return parser


def _documented(doc: Path, heading: str) -> dict[str, str]:
    """Flag -> metavar ('' for none) of each row of the option table under ``heading``."""
    text = doc.read_text().replace("\\|", "/")  # (an escaped | inside a cell)
    section = text[text.index(heading) + len(heading):]
    section = section[:section.find("\n## ")] if "\n## " in section else section
    flags: dict[str, str] = {}
    for row in re.findall(r"^\| (`--[^|]*)\|", section, re.MULTILINE):
        for flag, metavar in re.findall(r"`(--[a-z-]+) ?([^`]*)`", row):
            flags[flag] = metavar
    return flags


@pytest.mark.parametrize(("doc", "heading", "command"), [
    ("docs/cli.md", "## `burster simulate`", ("simulate",)),
    ("docs/cli.md", "## `burster config from-terraform`", ("config", "from-terraform")),
    ("docs/cli.md", "## `burster agent`", ("agent",)),
    ("docs/cli.md", "## `burster offerings`", ("offerings",)),
    ("docs/evaluation.md", "## burster bench", ("bench",)),
])
def test_each_documented_option_is_the_parser_s_and_no_other(doc: str, heading: str, command: tuple[str, ...]) -> None:
    documented = _documented(ROOT / doc, heading)
    parser = _subparser(*command)
    flags = {o for a in parser._actions for o in a.option_strings if o.startswith("--") and o != "--help"}
    assert set(documented) == flags


@pytest.mark.parametrize("command", ["offerings", "simulate"])
def test_help_names_each_value_as_the_docs_do(command: str) -> None:
    documented = _documented(ROOT / "docs/cli.md", f"## `burster {command}`")
    usage = " ".join(_subparser(command).format_usage().split())  # (a usage line may wrap inside [...])
    for flag, metavar in documented.items():
        assert (f"[{flag} {metavar}]" if metavar else f"[{flag}]") in usage, flag


def test_each_command_s_help_line_is_its_row_in_the_docs() -> None:
    text = (ROOT / "docs/cli.md").read_text()
    rows = dict(re.findall(r"^\| \[`burster ([a-z -]+)`\]\(#[a-z-]+\) \| (.+) \|$", text, re.MULTILINE))
    def help_line(*names: str) -> str | None:
        parent = _subparser(*names[:-1])
        sub = next(a for a in parent._actions if isinstance(a, argparse._SubParsersAction))
        return next(c.help for c in sub._choices_actions if c.dest == names[-1])

    assert len(rows) == 5
    for name, line in rows.items():
        assert str(help_line(*name.split())).replace("`", "") == line.replace("`", ""), name


@pytest.mark.parametrize("argv", [[], ["config"]])
def test_no_command_prints_the_command_list_and_exits_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    assert "COMMAND" in capsys.readouterr().out


def _sigint_as_a_terminal_gives_it() -> None:
    """A shell starts a background job (``make test &``) with SIGINT ignored, and its children inherit
    that: the command under test gets SIGINT at its default, as from a terminal's Ctrl-C."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_exits_130_with_one_line_and_no_traceback() -> None:
    proc = subprocess.Popen([sys.executable, "-m", "burster", "simulate", "--demo", "--json"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_sigint_as_a_terminal_gives_it)
    assert proc.stderr is not None
    assert "2023 jobs" in proc.stderr.readline()  # the trace is loaded: the command is running
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and err == "burster: interrupted\n" and out == ""


# --- the bench scripts ----------------------------------------------------------------------------
def test_bench_plan_records_the_documented_keys() -> None:
    from bench.plan import measure, snapshot

    record = measure(200, 20, reps=3)
    assert list(record) == ["jobs", "offerings", "nodes", "p50_ms", "p99_ms", "max_ms", "peak_mib", "decisions"]
    snap = snapshot(200, 20)
    assert (record["jobs"], record["offerings"]) == (len(snap.pending), len(snap.offerings)) == (200, 20)
    assert record["nodes"] == len(snap.pool_nodes) + len(snap.cloud_nodes) == 16 + 20
    assert 0 < record["p50_ms"] <= record["p99_ms"] == record["max_ms"] and record["peak_mib"] > 0  # of 3: the slowest
    assert record["decisions"] == 3


def test_bench_plan_p99_leaves_out_the_slowest_one_percent() -> None:
    from bench.plan import nearest_rank

    times = [float(i) for i in range(1, 201)]
    assert (nearest_rank(times, 0.99), nearest_rank(times, 0.5)) == (198.0, 100.0)
    assert nearest_rank(times[:30], 0.99) == 30.0 and nearest_rank([7.0], 0.99) == 7.0  # of 30: the slowest


def test_bench_bound_repeats_the_trace_shifted_by_whole_spans() -> None:
    from bench.bound import pool_nodes, repeated_jobs

    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    jobs = (Demand("a", 8, t0, 3600.0), Demand("b", 8, t0 + timedelta(hours=1), 3600.0,
                                                 deadline=t0 + timedelta(hours=5)))
    out = repeated_jobs(jobs, 5)
    span = timedelta(hours=1, minutes=1)
    assert [j.job_id for j in out] == ["a#0", "b#0", "a#1", "b#1", "a#2"]
    assert [j.submitted_at - t0 for j in out] == [timedelta(0), timedelta(hours=1), span, span + timedelta(hours=1),
                                                  2 * span]
    assert out[3].deadline == t0 + timedelta(hours=5) + span and out[2].deadline is None
    # 2 x 8 GPUs x 1 h over a 1 h span: 16 GPUs on average, half of it on 8-GPU nodes (64 GPUs: 8 nodes)
    assert pool_nodes(list(jobs)) == 1 and pool_nodes([replace(j, gpus=64) for j in jobs]) == 8


def test_bench_bound_records_the_documented_keys() -> None:
    from bench.bound import measure

    record = measure(300)
    assert record.keys() == {"trace", "jobs", "slots", "block_slots", "reserved_gpus", "lower_usd", "upper_usd",
                             "width", "solve_s", "upper_s", "status"}
    assert record["jobs"] == 300 and record["lower_usd"] <= record["upper_usd"]


def test_bench_sim_replays_the_jobs_and_passes_of_the_same_simulate_run(capsys: pytest.CaptureFixture[str]) -> None:
    """The timing wrappers change nothing: the demo's first day, as ``burster simulate`` runs it."""
    from bench.sim import measure

    record = measure(DEMO_TRACE, "philly", 18, 1.0)
    assert main(["simulate", "--demo", "--days", "1", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert list(record) == ["trace", "estimate_error", "max_nodes", "jobs", "passes", "wall_s", "jobs_per_s",
                            "world_s", "decide_s", "observe_actuate_s", "loop_s"]  # the docstring's
    assert (record["jobs"], record["passes"]) == (summary["jobs"], summary["reconcile_passes"])
    assert record["jobs"] == summary["jobs_finished"] > 0
