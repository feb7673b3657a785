"""``burster bench``: every policy arm over traces x pool sizes x seeds, beside the offline cost bracket."""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from burster.cli import finite_float
from burster.config import MAX_POOL_NODES
from burster.errors import ConfigError

MAX_WORKERS = 64  # each worker is a whole Python process with the simulator loaded


def register(sub: Any) -> None:
    p = sub.add_parser(
        "bench", help="compare all policies over traces, pool sizes and seeds against the cost bracket",
        description="Run every policy arm through the simulator over traces x pool sizes x seeds, compare "
                    "cloud $, waits and misses with the offline lower/upper cost bound, and check the targets. "
                    "See docs/evaluation.md.",
    )
    p.add_argument("--quick", action="store_true", help="small fixed subset: 1 pool size, seed 0 (minutes)")
    p.add_argument("--json", action="store_true", help="print a list of JSON records instead of tables")
    p.add_argument("--html", type=Path, metavar="PATH", help="also write the HTML report with plots here")
    p.add_argument("--trace", type=Path, action="append", metavar="PATH",
                   help="job trace file (repeatable; default: the built-in suite)")
    p.add_argument("--trace-format", help="format of every --trace (default: detected from the file name)")
    p.add_argument("--spot", type=Path, metavar="PATH", help="spot availability trace file or folder")
    p.add_argument("--prices", type=Path, metavar="PATH", help="price catalog file or folder")
    p.add_argument("--pool-nodes", type=int, action="append", metavar="N",
                   help="on-prem 8-GPU nodes (repeatable; overrides the utilization sweep)")
    p.add_argument("--seeds", help="comma-separated seeds (default: 0 quick, 0,1,2 full)")
    p.add_argument("--days", type=finite_float, help="window length in days (default: the suite's; whole --trace)")
    p.add_argument("--start-day", type=finite_float, help="window start in days from the trace start")
    p.add_argument("--policies", help="comma-separated policy names (default: all six)")
    p.add_argument("--requeue", choices=("submission", "back"), default="submission",
                   help="where the simulated pool puts a stopped job back in its queue (pool.requeue; "
                        "default submission: its place by submission time; back: like Slurm's default)")
    p.add_argument("--pool-order", choices=("start_by", "submission"), default="start_by",
                   help="how the simulated pool serves its queue (pool.order; default start_by: by priority, "
                        "then each job's start-by time; submission: FIFO)")
    p.add_argument("--estimate-error", type=finite_float, default=0.0, metavar="SIGMA",
                   help="runtime estimates the arms see are off by exp(N(0, SIGMA)) (default 0: exact); "
                        "jobs run their true runtimes and the bounds use those")
    p.add_argument("--estimate-bias", type=finite_float, default=1.0, metavar="FACTOR",
                   help="runtime estimates the arms see are FACTOR x the runtime, before --estimate-error's noise "
                        "(default 1; 2 to 4 is typical of Slurm time limits); jobs run their true runtimes")
    p.add_argument("--estimate-team-spread", type=finite_float, default=0.0, metavar="SIGMA",
                   help="each team's runtime estimates are off by a factor of its own, exp(N(0, SIGMA)), on top "
                        "of --estimate-bias (default 0: every team alike)")
    p.add_argument("--set", action="append", default=[], metavar="policy.KEY=VALUE",
                   help="a [policy] setting for every arm, e.g. policy.standby=true (repeatable; "
                        "docs/config.md lists the keys)")
    p.add_argument("--workers", type=int, default=2, help="worker processes (default 2)")
    p.set_defaults(func=main)


def parse_policies(text: str | None) -> list[str]:
    from burster.eval.compare import POLICY_NAMES

    names = [n.strip() for n in (",".join(POLICY_NAMES) if text is None else text).split(",") if n.strip()]
    bad = [n for n in names if n not in POLICY_NAMES]
    if bad or not names:
        raise ConfigError(f"unknown policy {', '.join(map(repr, bad)) or '(none given)'} in --policies; "
                          f"valid: {', '.join(POLICY_NAMES)}")
    return list(dict.fromkeys(names))


def parse_seeds(text: str | None, quick: bool) -> list[int]:
    if text is None:
        return [0] if quick else [0, 1, 2]
    try:
        seeds = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise ConfigError(f"--seeds must be comma-separated whole numbers like 0,1,2; got {text!r}") from None
    if not seeds or min(seeds) < 0:
        raise ConfigError(f"--seeds must be whole numbers >= 0 like 0,1,2; got {text!r}")
    return list(dict.fromkeys(seeds))


def _check_numbers(args: argparse.Namespace) -> None:
    for n in args.pool_nodes or ():
        if not 1 <= n <= MAX_POOL_NODES:
            raise ConfigError(f"--pool-nodes must be in [1, {MAX_POOL_NODES:,}] (8-GPU nodes); got {n}")
    if not 1 <= args.workers <= MAX_WORKERS:
        raise ConfigError(f"--workers must be in [1, {MAX_WORKERS}] (this machine has {os.cpu_count()} CPUs); "
                          f"got {args.workers}")
    from burster.app import check_window

    check_window(args.days, args.start_day or 0.0)
    from burster.sim.estimates import check_bias, check_sigma, check_team_spread

    check_sigma(args.estimate_error)
    check_bias(args.estimate_bias)
    check_team_spread(args.estimate_team_spread)


def policy_settings(items: list[str]) -> tuple[tuple[str, Any], ...]:
    """``--set policy.KEY=VALUE`` items as (key, value) pairs, values read as TOML (true, 0.5, "x"; a
    bare word is a string), checked against the config schema before any arm runs."""
    import tomllib

    from burster.eval.compare import bench_config

    out: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key.startswith("policy.") or "." in key[len("policy."):] or not key[len("policy."):]:
            raise ConfigError(f"--set takes policy.KEY=VALUE (a key of the [policy] section, docs/config.md); "
                              f"got {item!r}")
        if key == "policy.name":
            raise ConfigError("--set policy.name: the arms are chosen with --policies")
        try:
            value = tomllib.loads(f"v = {raw.strip()}")["v"]
        except tomllib.TOMLDecodeError:
            value = raw.strip()
        out[key[len("policy."):]] = value
    settings = tuple(out.items())
    bench_config(1, policy=settings)  # an unknown key or a value out of range fails here, naming it
    return settings


def windows(args: argparse.Namespace) -> list[Any]:
    """The user's traces (whole, or --start-day/--days of each), else the default suite with overrides."""
    from burster.eval.compare import Window, cached_trace
    from burster.eval.suite import default_windows

    if not args.trace:
        out = default_windows(args.quick)
        return [replace(w, start_day=args.start_day if args.start_day is not None else w.start_day,
                        days=args.days or w.days) for w in out]
    result = []
    for path in args.trace:
        if not path.exists():
            raise ConfigError(f"--trace {path} does not exist")
        start_day = args.start_day or 0.0
        days = args.days
        if days is None:
            trace = cached_trace(str(path), args.trace_format)
            day0 = trace.day(start_day)
            days = max(math.ceil(((trace.end - day0).total_seconds() + 1) / 3600) / 24, 1 / 24)
        result.append(Window(str(path), args.trace_format, start_day, days))
    return result


def check_html_path(path: Path | None) -> None:
    """Fail before the suite runs on an --html path the report could not be written to."""
    if path is None:
        return
    if path.is_dir():
        raise ConfigError(f"--html {path} is a directory; give a file name such as {path / 'report.html'}")
    parent = path.parent
    while not parent.exists():
        parent = parent.parent  # the report creates missing folders
    if not parent.is_dir() or not os.access(parent, os.W_OK):
        raise ConfigError(f"--html {path}: cannot write there ({parent} is not a writable folder)")


def _check_sources(args: argparse.Namespace) -> None:
    """Fail here, before any worker starts, on a --spot or --prices the loaders reject."""
    from burster.app import spot_series
    from burster.catalog import load_catalog

    for flag, path in (("--spot", args.spot), ("--prices", args.prices)):
        if path is not None and not path.exists():
            raise ConfigError(f"{flag} {path} does not exist")
    if args.spot is not None:
        spot_series(0, args.spot)
    if args.prices is not None:
        load_catalog(args.prices)


def _check_models(settings: list[Any], prices: Path | None) -> None:
    """Fail before any worker starts on a job whose GPU model neither the pool nor the catalog has."""
    from burster.app import check_models
    from burster.catalog import load_catalog
    from burster.config import PROVIDERS
    from burster.eval.compare import bench_config, cached_trace, window_jobs

    model = bench_config(1).pool.gpu_model
    offerings = load_catalog(prices, PROVIDERS) if prices else load_catalog(providers=PROVIDERS)
    for window in dict.fromkeys(s.window for s in settings):
        _, _, jobs = window_jobs(cached_trace(window.path, window.fmt), window, model)
        check_models(jobs, offerings, model, PROVIDERS)


def _check_solver() -> None:
    """The offline bound's LP needs HiGHS (the ``eval`` extra): say so before any arm runs."""
    try:
        importlib.import_module("highspy")
    except ImportError:
        raise ConfigError("burster bench computes the offline lower bound with HiGHS, which is not installed: "
                          "run `.venv/bin/pip install 'burster[eval]'` (`make test` installs it too)") from None


def main(args: argparse.Namespace) -> int:
    _check_solver()
    from burster.eval.compare import Sources, records, run_suite
    from burster.eval.report import render
    from burster.eval.suite import plan_settings
    from burster.eval.targets import evaluate

    policies = parse_policies(args.policies)
    settings = policy_settings(args.set)
    seeds = parse_seeds(args.seeds, args.quick)
    _check_numbers(args)
    check_html_path(args.html)
    _check_sources(args)
    plan = plan_settings(windows(args), seeds=seeds, nodes=args.pool_nodes,
                         utilizations=(0.9,) if args.quick else (0.9, 0.75), strict=bool(args.trace))
    for trace, why in plan.skipped:
        print(f"burster bench: skipped {trace}: {why}", file=sys.stderr)
    if not plan.settings:
        raise ConfigError("nothing to run: every trace of the suite was skipped (see above)")
    _check_models(plan.settings, args.prices)
    sources = Sources(args.prices, args.spot, args.requeue, args.pool_order, args.estimate_error, args.estimate_bias,
                      args.estimate_team_spread, settings)
    if args.json:
        result = run_suite(plan.settings, policies, sources, workers=args.workers)
    else:
        result = _run_with_progress(plan.settings, policies, sources, args.workers)
    result.skipped = plan.skipped
    for b in result.bounds.values():
        if b.lower_usd is None:
            print(f"burster bench: no cost bracket for {b.setting.label}: {b.status}", file=sys.stderr)
    recs = records(result)
    checks = evaluate(recs)
    if args.json:
        print(json.dumps(recs, indent=2))
    else:
        from burster.eval.tables import print_tables

        print_tables(recs, checks, result.wall_s)
    if args.html:
        write_report(args.html, render(result, recs, checks, policies=policies))
    return 0


def write_report(path: Path, page: str) -> None:
    """Write the HTML report; a failure (a read-only disk, a folder made after the check) names --html."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(page, encoding="utf-8")
    except OSError as err:
        raise ConfigError(f"--html {path}: cannot write the report: {err.strerror or err}") from None
    print(f"burster bench: report written to {path}", file=sys.stderr)


def _run_with_progress(settings: Any, policies: list[str], sources: Any, workers: int) -> Any:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from burster.eval.compare import run_suite

    label = TextColumn("{task.fields[last]}", markup=False)  # a trace's name is not markup: [v2] must show
    with Progress(TextColumn("bench"), BarColumn(), MofNCompleteColumn(), label, TimeElapsedColumn(),
                  console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("bench", total=len(settings) * (len(policies) + 1), last="")

        def on_done(done: int, total: int, label: str) -> None:
            bar.update(task, completed=done, last=label)

        return run_suite(settings, policies, sources, workers=workers, on_done=on_done)
