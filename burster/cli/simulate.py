"""``burster simulate``: replay a job trace through the live reconcile path and summarize it."""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from burster.cli import finite_float
from burster.config import load_config, parse_config
from burster.errors import ConfigError, StoreError
from burster.plan import DecisionLog
from burster.reconciler import PassReport
from policies.estimates import runtime_corrections


def register(sub: Any) -> None:
    p = sub.add_parser(
        "simulate", help="replay a job trace against a policy and report cost, waits and misses",
        description="Replay a job trace through the same reconcile code the controller runs, with a "
                    "fake clock, simulated clouds (prices from the catalog, spot availability from "
                    "traces) and a simulated on-prem pool.",
    )
    p.add_argument("--demo", action="store_true",
                   help="a week of the bundled Philly-derived trace on an 18-node pool unless --config sets "
                        "pool.nodes (no setup needed)")
    p.add_argument("--trace", type=Path, metavar="PATH", help="job trace file (see docs/traces.md for formats)")
    p.add_argument("--trace-format", metavar="NAME",
                   help="trace format name (default: detected from the file name)")
    p.add_argument("--config", type=Path, metavar="PATH",
                   help="burster TOML config (pool, cost, policy, budget, guards)")
    p.add_argument("--policy", metavar="NAME", help="policy name (default: the config's, 'burster')")
    p.add_argument("--pool-nodes", type=int, metavar="N", help="on-prem nodes (overrides pool.nodes)")
    p.add_argument("--gpus-per-node", type=int, metavar="N",
                   help="GPUs per on-prem node (overrides pool.gpus_per_node)")
    p.add_argument("--max-nodes", type=int, metavar="N",
                   help="most cloud nodes live at once (overrides guards.max_nodes)")
    p.add_argument("--prices", type=Path, metavar="PATH",
                   help="price catalog folder or file (default: ../shared/data's catalog when present, else the "
                        "bundled sample)")
    p.add_argument("--spot", type=Path, metavar="PATH",
                   help="spot availability trace file or folder (default: ../shared/data's traces when present, "
                        "else the bundled model)")
    p.add_argument("--providers", metavar="LIST", default="aws,gcp,azure",
                   help="clouds to burst to (comma-separated)")
    p.add_argument("--days", type=finite_float, metavar="D",
                   help="length of the window to replay, in (0, 365] days (default: whole trace); cut, "
                        "saying so, at the end of the trace's last day")
    p.add_argument("--start-day", type=finite_float, metavar="D", default=0.0,
                   help="window start, in days from trace start (default 0)")
    p.add_argument("--seed", type=int, metavar="N", default=0, help="seed for launch latency and the spot model")
    p.add_argument("--estimate-error", type=finite_float, default=0.0, metavar="SIGMA",
                   help="runtime estimates the controller sees are off by exp(N(0, SIGMA)) (default 0: exact; "
                        "0.5 is typical of user time limits); jobs run their true runtimes")
    p.add_argument("--estimate-bias", type=finite_float, default=1.0, metavar="FACTOR",
                   help="runtime estimates the controller sees are FACTOR x the runtime, before "
                        "--estimate-error's noise (default 1; 2 to 4 is typical of Slurm time limits); "
                        "jobs run their true runtimes")
    p.add_argument("--estimate-team-spread", type=finite_float, default=0.0, metavar="SIGMA",
                   help="each team's runtime estimates are off by a factor of its own, exp(N(0, SIGMA)), on top "
                        "of --estimate-bias (default 0: every team alike; 1: from about 0.4x to 2.7x)")
    p.add_argument("--signals", type=Path, metavar="FILE",
                   help="demand signals the controller sees, as from Jira sprints: a CSV of source, gpu_hours, "
                        "window_start, window_end (optional gpu_model, team, project, sprint, announced_at); "
                        "docs/simulation.md")
    p.add_argument("--store", metavar="URL",
                   help="keep the simulated controller's state and ledger in this database (an SQLAlchemy URL, "
                        "e.g. sqlite:///sim.db), as the live controller keeps its own; it must hold no state for "
                        "controller.cluster yet (default: in memory)")
    p.add_argument("--explain", action="store_true", help="print every decision with its reason")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    p.set_defaults(func=main)


def _config(args: argparse.Namespace) -> Any:
    base = load_config(args.config)
    data = base.model_dump()
    if args.demo and args.pool_nodes is None and "nodes" not in base.pool.model_fields_set:
        data["pool"]["nodes"] = 18  # the demo's pool, unless --config sets pool.nodes
    if args.pool_nodes is not None:
        data["pool"]["nodes"] = args.pool_nodes
    if args.gpus_per_node is not None:
        data["pool"]["gpus_per_node"] = args.gpus_per_node
    if args.max_nodes is not None:
        data["guards"]["max_nodes"] = args.max_nodes
    if args.policy:
        data["policy"]["name"] = args.policy
    return parse_config(data, "command-line options")


def main(args: argparse.Namespace) -> int:
    from burster.app import DEMO_TRACE, build_simulation
    from burster.sim.controller_log import ControllerLog
    from burster.sim.engine import run
    from burster.sim.summary import HeldBack, NeverJoined, summarize
    from burster.traces import load_trace

    if not args.demo and args.trace is None:
        raise ConfigError("give a trace with --trace PATH, or use --demo for the bundled sample")
    config = _config(args)
    trace_path = DEMO_TRACE if args.demo and args.trace is None else args.trace
    trace = load_trace(trace_path, args.trace_format or ("philly" if trace_path == DEMO_TRACE else None))
    days = args.days if args.days is not None else (7.0 if args.demo else None)
    providers = [p.strip() for p in args.providers.split(",") if p.strip()]
    if not providers:
        raise ConfigError("--providers needs at least one of aws, gcp, azure (comma-separated)")
    state = functools.partial(_store, args.store, config.controller.cluster) if args.store else None
    sim = build_simulation(config, trace, policy=config.policy.name, seed=args.seed, prices=args.prices,
                           spot_dir=args.spot, providers=providers,
                           days=days, start_day=args.start_day, estimate_error=args.estimate_error,
                           estimate_bias=args.estimate_bias, estimate_team_spread=args.estimate_team_spread,
                           signals=args.signals, state=state)
    held, unjoined = HeldBack(), NeverJoined()
    warnings = ControllerLog(sim.clock.now, echo=args.explain)
    explain = _explainer() if args.explain else None

    def on_pass(report: PassReport) -> None:
        held.observe(report)
        unjoined.observe(report)
        if explain is not None:
            explain(report)
            for line in warnings.take():  # what the pass logged as it carried them out
                print(line)
    started = time.perf_counter()
    try:
        with warnings.attached():
            passes = _run_with_progress(sim, run, on_pass, quiet=args.json or args.explain,
                                        tick_s=config.controller.tick_s)
        for line in warnings.take():  # logged as the books closed
            print(line)
    finally:
        sim.reconciler.state.close()  # a --store gives its cluster back, even if interrupted
    wall = time.perf_counter() - started
    world: Any = sim.world
    result = summarize(metrics=world.pool.metrics, ledger=sim.reconciler.state.ledger,
                       launches=sum(c.launches for c in world.clouds.values()), passes=passes,
                       policy=config.policy.name, trace=trace.name, pool_gpus=sim.pool_gpus, seed=args.seed,
                       wall_s=wall)
    result["jobs_held_back"] = held.count
    result["never_joined_nodes"] = len(unjoined.node_ids)
    result["never_joined_usd"] = unjoined.usd(sim.reconciler.state.ledger)
    result["max_nodes"] = config.guards.max_nodes
    result["spot_source"] = sim.spot_source
    result["estimate_error"] = args.estimate_error
    result["estimate_bias"] = args.estimate_bias
    result["estimate_team_spread"] = args.estimate_team_spread
    history = world.pool.runtime_history()  # what the policy learned of the estimates (policies/estimates.py)
    ratios = history.ratios
    result["runtime_ratio_median"] = round(statistics.median(ratios), 4) if ratios else None
    corrects = config.policy.name == "burster" and config.policy.correct_estimates
    factor, by_team = runtime_corrections(ratios, history.by_team)
    result["estimate_correction"] = factor if corrects else None
    result["estimate_correction_by_team"] = dict(sorted(by_team.items())) if corrects else None
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        _print_table(result)
    if held.count:
        print(f"note: the cloud node cap (guards.max_nodes = {config.guards.max_nodes}) held back the bursts of "
              f"{held.count} job(s): the costs and waits above are a capped controller's; raise it with "
              "--max-nodes to see what the policy does without it", file=sys.stderr)
    if (logged := warnings.summary()) is not None:
        print(logged, file=sys.stderr)
    if unjoined.node_ids:
        print(_never_joined_note(result, config.policy.join_timeout_s, providers), file=sys.stderr)
    return 0


def _never_joined_note(r: dict[str, Any], timeout_s: float, providers: list[str]) -> str:
    """Why nodes were terminated unjoined in a simulation: its clouds never fail a boot, so the join
    timeout cut slow boots off."""
    from providers.sim.cloud import median_boot_s

    medians = ", ".join(f"{p} {median_boot_s(p):.0f} s" for p in providers)
    return (f"note: {r['never_joined_nodes']} burst node(s) had not joined the pool by policy.join_timeout_s "
            f"({timeout_s:g} s) and were terminated, billed ${r['never_joined_usd']:,.2f}: a simulated node "
            f"takes a median of {medians} to boot and join, and up to about 1.8x that, so the timeout cut "
            "slow boots off; raise it above the slowest boot you expect")


def _store(url: str, cluster: str) -> Any:
    """A new cluster's state in the database at ``url``: a simulation starts from nothing, and what a
    controller (or an earlier simulation) kept there would be taken for its own live nodes."""
    from burster.redact import redact_url
    from burster.sqlstate import SqlState

    try:
        state = SqlState.open(url, cluster)
    except (ConfigError, StoreError) as err:  # the flag the user gave, not the config key's name alone
        raise type(err)(f"--store: {err}") from err
    if not state.empty:
        state.close()
        raise ConfigError(f"--store: {redact_url(url)!r} already holds state for cluster {cluster!r}: give a new "
                          "database, or a new cluster name with --config ([controller] cluster = \"...\")")
    return state


def _explainer() -> Any:
    log = DecisionLog()

    def on_pass(report: PassReport) -> None:
        for line in log.lines(report.plan):
            print(f"{report.now:%Y-%m-%d %H:%M:%S}  {line}")
        for note in report.notes:
            print(f"{report.now:%Y-%m-%d %H:%M:%S}  note: {note}")
        for err in report.errors:
            print(f"{report.now:%Y-%m-%d %H:%M:%S}  error: {err}")
    return on_pass


def _run_with_progress(sim: Any, run: Any, on_pass: Any, *, quiet: bool, tick_s: float) -> int:
    if quiet or not sys.stderr.isatty():
        return int(run(sim.world, sim.reconciler, sim.clock, tick_s=tick_s, end=sim.end, on_pass=on_pass))
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    start = sim.clock.now()
    total_s = (sim.end - start).total_seconds()
    with Progress(TextColumn("simulating"), BarColumn(), TextColumn("{task.fields[day]}"),
                  TimeElapsedColumn(), transient=True) as bar:
        task = bar.add_task("sim", total=total_s, day="")

        def on_progress(t: Any) -> None:
            done = (t - start).total_seconds()
            bar.update(task, completed=done, day=f"{t:%Y-%m-%d %H:%M}")

        return int(run(sim.world, sim.reconciler, sim.clock, tick_s=tick_s, end=sim.end, on_pass=on_pass,
                       on_progress=on_progress))


def _team_factors(by_team: dict[str, float]) -> str:
    """'11 (0.41x to 1.00x)': how many teams' estimates are corrected apart, and how far."""
    low, high = min(by_team.values()), max(by_team.values())
    return f"{len(by_team)} ({low:.2f}x to {high:.2f}x)"


def _print_table(r: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    noise = f", runtime estimates off by exp(N(0, {r['estimate_error']:g}))" if r.get("estimate_error") else ""
    if r.get("estimate_bias", 1.0) != 1.0:
        noise += f", estimates {r['estimate_bias']:g}x the runtimes"
    if r.get("estimate_team_spread"):
        noise += f", each team's off by exp(N(0, {r['estimate_team_spread']:g}))"
    t = Table(title=f"burster simulate: {r['policy']} on {r['trace']} ({r['pool_gpus']} reserved GPUs{noise})")
    t.add_column("metric")
    t.add_column("value", justify="right")
    rows = [
        ("jobs (finished / started on cloud)", f"{r['jobs']} ({r['jobs_finished']} / {r['jobs_started_on_cloud']})"),
        *([("jobs never started (waits counted to the end)", str(r["jobs_never_started"]))]
          if r["jobs_never_started"] else []),
        ("cloud $ total", f"{r['cloud_usd']:,.2f}"),
        ("cloud $ spot / on-demand", f"{r['cloud_usd_spot']:,.2f} / {r['cloud_usd_on_demand']:,.2f}"),
        *[(f"cloud $ {k}", f"{v:,.2f}") for k, v in r["cloud_usd_by_provider"].items()],
        *([("AWS spot taken back free, at list $", f"{r['cloud_usd_waived']:,.2f}")]
          if r["cloud_usd_waived"] else []),
        ("on-prem utilization", f"{r['onprem_utilization']:.1%}"),
        ("wait p50 / p95 / p99", f"{r['wait_p50_s']:.0f}s / {r['wait_p95_s']:.0f}s / {r['wait_p99_s']:.0f}s"),
        ("deadline misses (strict)", f"{r['deadline_misses']} ({r['hard_deadline_misses']})"),
        ("preemptions / reclaims", f"{r['preemptions']} / {r['reclaims']}"),
        ("lost GPU-hours", f"{r['lost_gpu_hours']:.1f}"),
        ("GPU-hours run on burst nodes", f"{r['cloud_gpu_hours']:,.1f}"),
        ("GPU-hours queued again after a stop", f"{r['requeued_wait_gpu_hours']:,.1f}"),
        ("reserved GPU-hours idle beside cloud runs", f"{r['stranded_gpu_hours']:,.1f}"),
        ("reserved nodes held (job came / expired)",
         f"{r['node_holds']} ({r['node_holds_landed']} / {r['node_holds_expired']})"),
        ("on-prem jobs preempted for urgent ones", str(r["onprem_preemptions"])),
        ("idle burst nodes handed to a job", str(r["idle_nodes_handed"])),
        ("nodes launched", str(r["launches"])),
        *([("nodes terminated unjoined at the join timeout ($)",
            f"{r['never_joined_nodes']} ({r['never_joined_usd']:,.2f})")] if r.get("never_joined_nodes") else []),
        *([(f"jobs held back at the node cap ({r['max_nodes']} nodes)", str(r["jobs_held_back"]))]
          if r.get("jobs_held_back") else []),
        ("reconcile passes / wall time", f"{r['reconcile_passes']} / {r['wall_s']:.1f}s"),
        ("spot availability from", r["spot_source"]),
        *([("runtime / estimate, median of the last jobs", f"{r['runtime_ratio_median']:.2f}")]
          if r.get("runtime_ratio_median") is not None else []),
        *([("estimates multiplied by (learned, at the end)", f"{r['estimate_correction']:.2f}")]
          if r.get("estimate_correction") is not None else []),
        *([("teams corrected by their own jobs (factors)", _team_factors(r["estimate_correction_by_team"]))]
          if r.get("estimate_correction_by_team") else []),
    ]
    for k, v in rows:
        t.add_row(k, v)
    Console().print(t)
