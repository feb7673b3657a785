"""Random controller configs run through the accounting oracle: each seed draws a pool, the policy's
switches, guards, budgets (global and per team, by period), a window of the trace (the demo's), an
estimate error, notice lengths, spot rates, wait budgets, the tick, boot and restart times, the
estimate and deadline rules, (from seed 1200 on) the pool's node size and GPU model, the prices of
waiting, of a miss and of on-prem, zero limits, (from seed 1700 on) protected nodes, (from seed 2200
on) demand signals as Jira sprints announce them, (from seed 2600 on) outages of the pool, faults of the
clouds' APIs (a third of the time: tests/sim/oracle_faults.py), and Burster's policy or (a quarter of
the time) a baseline; it simulates that and runs every oracle check (``all_checks``, the hard budgets
at every pass; bills held to what the controller could know where calls failed:
tests/sim/oracle_fault_view.py; protected nodes never stopped). It found the budget stop's gaps
(policies/budget_stop.py), a join timeout shorter than the boot (burster/config.py), a terminate
whose lost reply was billed a listing grace late (burster/reconcile_nodes.py) and a booting node
that a refused terminate left to take a job (burster/reconciler.py).

    python -m tests.sim.fuzz_oracle --seeds 0:50 [--hours 24] [--json] [--trace PATH] [--from-day D]
        [--pool-nodes N] [--restarts K [--store postgres]]

``--from-day D`` moves every drawn window D days into the trace (Alibaba's openb pods, for one, are
sparse until about day 115); ``--pool-nodes N`` gives every seed a pool of N nodes (a trace lighter
than the demo's fits on most drawn pools, and a run that never bursts checks little).

``--restarts K`` also runs each seed kept in SQLite (``--store postgres``: a new PostgreSQL database
per seed) with the controller restarted K times and checks it plans as the uninterrupted run
(tests/sim/oracle_restarts.py).

``--seed-timeout S`` stops a seed that runs past S seconds (a draw can take twenty minutes: seed 3713,
2,727 launches in a day) and goes on to the next; it is said so (``timed out``) and found nothing.

One line per seed: ``ok`` or the config, then the first findings (``--json``: one object, with the
run's jobs, cloud dollars, launches and passes, to tell seeds that burst); exit status 1 if any seed
found one.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import logging
import random
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from burster.app import DEMO_TRACE, POLICIES
from burster.config import parse_config
from burster.errors import InputError
from burster.reconciler import PassReport
from burster.traces import Trace, load_trace
from tests.sim.oracle_actions import check_protected
from tests.sim.oracle_checks import all_checks, budget_per_pass
from tests.sim.oracle_fault_view import as_knowable
from tests.sim.oracle_faults import Faults
from tests.sim.oracle_observe import Observed, observe_simulation
from tests.sim.oracle_restarts import PassLog, restart_findings
from tests.store.pg import NoServer, fresh_database

EXTRA_FROM_SEED = 1200  # seeds below draw no ``_draw_extra`` keys: their recorded findings replay as they were
PROTECT_FROM_SEED = 1700  # nor, below this, protected nodes (``_draw_protected``)
SIGNALS_FROM_SEED = 2200  # nor, below this, demand signals (``_draw_signals``)
OUTAGES_FROM_SEED = 2600  # nor, below this, pool outages (``_draw_outages``)


@dataclass(frozen=True)
class Draw:
    """One seed's config (``burster.toml``'s keys), estimate error, window start (days into the trace) and
    policy (Burster's most often, else a baseline: they share the guards and the budget stop)."""

    seed: int
    raw: dict[str, Any]
    sigma: float
    start_day: float
    policy: str = "burster"
    faults: Faults | None = None  # the clouds' API fails so (a third of the seeds), else never
    signals: tuple[dict[str, Any], ...] = ()  # demand signals, their times in hours from the window's start
    pool_outages: tuple[tuple[float, float], ...] = ()  # (start, end) hours from the window's start


def draw(seed: int, teams: list[str]) -> Draw:
    r = random.Random(seed)
    exclusive = r.random() < 0.4
    raw: dict[str, Any] = {
        "pool": {"nodes": r.choice([4, 8, 12, 18, 24]), "order": r.choice(["start_by", "submission"]),
                 "requeue": r.choice(["submission", "back"])},
        "policy": {"exclusive_nodes": exclusive, "standby": exclusive and r.random() < 0.5,
                   "prewarm": r.random() < 0.5, "hold_nodes": r.random() < 0.7, "preempt_onprem": r.random() < 0.7,
                   "consolidate": r.random() < 0.7, "defer_to_budget": r.random() < 0.7,
                   "idle_ttl_s": r.choice([0, 60, 300, 1800])},
        "guards": {"max_nodes": r.choice([4, 16, 256]), "max_launches_per_minute": r.choice([2, 60])},
        "cost": {"launch_latency_sigma": r.choice([0.0, 0.25]), "checkpoint_write_s": r.choice([30, 60, 300])},
    }
    budget: dict[str, Any] = {"period": r.choice(["all", "day", "week"])}
    if r.random() < 0.5:
        budget["total_usd"] = r.choice([20.0, 60.0, 150.0])
    budget["team_usd"] = ({t: r.choice([2.0, 5.0, 10.0]) for t in r.sample(teams, min(3, len(teams)))}
                          if r.random() < 0.5 else {})  # a trace of fewer teams (Alibaba's: none) budgets them all
    raw["budget"] = budget
    sigma, start_day = r.choice([0.0, 0.0, 0.5]), r.choice([0.0, 1.0, 2.0, 3.0, 4.0])
    baselines = [p for p in POLICIES if p != "burster"]
    policy = "burster" if r.random() < 0.75 else r.choice(baselines)
    raw["cost"] |= {"interruption_notice_s": {"aws": r.choice([0, 30, 120])},
                    "spot_interruptions_per_hour": r.choice([0.0, 0.05, 0.5])}
    raw["policy"] |= {"max_wait_s": r.choice([0, 600, 3600]), "deadline_margin_s": r.choice([0, 900])}
    budget["soft_fraction"] = r.choice([0.5, 0.8, 1.0])
    _draw_more(random.Random(f"more-{seed}"), raw)
    if seed >= EXTRA_FROM_SEED:
        _draw_extra(random.Random(f"extra-{seed}"), raw)
    if seed >= PROTECT_FROM_SEED:
        _draw_protected(random.Random(f"protect-{seed}"), raw)
    signals = _draw_signals(random.Random(f"signals-{seed}"), raw, teams) if seed >= SIGNALS_FROM_SEED else ()
    outages = _draw_outages(random.Random(f"outages-{seed}"), raw) if seed >= OUTAGES_FROM_SEED else ()
    return Draw(seed, raw, sigma, start_day, policy, _draw_faults(random.Random(f"faults-draw-{seed}")), signals,
                outages)


def _draw_outages(r: random.Random, raw: dict[str, Any]) -> tuple[tuple[float, float], ...]:
    """Outages of the pool (its queue unreadable: slurmctld down), a seed in three, for seeds without team
    budgets (a node's team during an outage is the last the controller saw: docs/policy.md)."""
    if raw["budget"]["team_usd"] or r.random() >= 1 / 3:
        return ()
    out = []
    for _ in range(r.choice([1, 2])):
        at = round(r.uniform(0.5, 20.0), 2)
        out.append((at, round(at + r.choice([0.05, 0.25, 1.0, 3.0]), 2)))
    return tuple(sorted(out))


def _draw_faults(r: random.Random) -> Faults | None:
    if r.random() >= 1 / 3:
        return None
    return Faults(launch_refused=r.choice([0.0, 0.05, 0.2]), launch_reply_lost=r.choice([0.0, 0.03, 0.1]),
                  listing_failed=r.choice([0.0, 0.02, 0.1]), terminate_failed=r.choice([0.0, 0.05, 0.2]),
                  terminate_reply_lost=r.choice([0.0, 0.02, 0.1]))


def _draw_more(r: random.Random, raw: dict[str, Any]) -> None:
    """The keys drawn since the first version (a stream of their own, so that a seed's first draws
    stay what they were): the tick, boot and restart times, the estimate rules, the deadline rules,
    move-back, the join timeout and the standby window."""
    reclaim = r.random() < 0.8
    raw["controller"] = {"tick_s": r.choice([5, 10, 10, 30, 60])}
    boot_s = r.choice([60, 180, 600])
    raw["cost"] |= {"launch_latency_s": boot_s, "restart_overhead_s": r.choice([0, 300, 1200])}
    raw["policy"] |= {"reclaim_to_onprem": reclaim, "hold_nodes": raw["policy"]["hold_nodes"] and reclaim,
                      "correct_estimates": r.random() < 0.7, "price_late": r.random() < 0.7,
                      "risk_switch": r.random() < 0.7, "join_timeout_s": r.choice([boot_s + 60, 1200]),
                      "defer_margin_s": r.choice([0, 120, 900]), "market_quantile": r.choice([0.0, 0.9]),
                      "defer_quantile": r.choice([0.05, 0.5]), "standby_window_s": r.choice([60, 900])}


def _draw_extra(r: random.Random, raw: dict[str, Any]) -> None:
    """The fortieth session's keys (their own stream too; seeds from ``EXTRA_FROM_SEED`` on): the pool's
    node size and GPU model, the other clouds' notices, the prices of waiting, of a miss and of
    on-prem, and the zero limits (a budget of $0, no nodes, no launches)."""
    raw["pool"] |= {"gpus_per_node": r.choice([8, 8, 4]), "gpu_model": r.choice(["V100", "V100", "A100-80GB"])}
    raw["cost"]["interruption_notice_s"] |= {"gcp": r.choice([0, 30]), "azure": r.choice([0, 30])}
    raw["cost"] |= {"wait_value_usd_per_gpu_hour": r.choice([0.5, 2.5, 20.0]),
                    "deadline_miss_usd": r.choice([0.0, 500.0, 5000.0]),
                    "onprem_usd_per_gpu_hour": r.choice([0.5, 1.2, 4.0])}
    budget = raw["budget"]
    if r.random() < 0.1:
        budget["total_usd"] = 0.0
    if budget["team_usd"] and r.random() < 0.2:
        budget["team_usd"][min(budget["team_usd"])] = 0.0
    if r.random() < 0.1:
        budget["period"] = "month"
    if r.random() < 0.05:
        raw["guards"]["max_nodes"] = 0
    if r.random() < 0.05:
        raw["guards"]["max_launches_per_minute"] = 0


def _draw_protected(r: random.Random, raw: dict[str, Any]) -> None:
    """Protected nodes (a quarter of the seeds without budgets: a protected node is never stopped, so it
    may run past any budget), by the simulated clouds' ids: the first few each cloud launches."""
    b = raw["budget"]
    if b.get("total_usd") is None and not b["team_usd"] and r.random() < 0.25:
        ids = [f"{cloud}-{k:06d}" for cloud in ("aws", "gcp", "azure") for k in range(1, 6)]
        raw["guards"]["protected_node_ids"] = sorted(r.sample(ids, r.choice([1, 3, 6])))


def _draw_signals(r: random.Random, raw: dict[str, Any], teams: list[str]) -> tuple[dict[str, Any], ...]:
    """Demand signals, as Jira sprints announce them (two seeds in five): each some GPU-hours over a
    window within the day, announced ahead of it or not at all (seen from the start), for the pool's GPU
    model or another, a team's or none; pre-warm (``policy.prewarm``, drawn anew: on four times in five)
    launches ahead of them."""
    if r.random() >= 0.4:
        return ()
    raw["policy"]["prewarm"] = r.random() < 0.8
    pool_model = raw["pool"].get("gpu_model", "V100")
    other = "A100-80GB" if pool_model == "V100" else "V100"
    out = []
    for k in range(r.choice([1, 1, 2, 3])):
        start_h = r.uniform(0.5, 20.0)
        out.append({"source": f"SPRINT-{k + 1}", "gpu_hours": r.choice([64, 256, 1024, 4096]),
                    "start_h": round(start_h, 2), "hours": r.choice([1, 4, 12]),
                    "announced_h": r.choice([None, round(max(0.0, start_h - r.choice([0.25, 1.0, 4.0])), 2)]),
                    "gpu_model": r.choice(["", pool_model, other]), "team": r.choice(["", *teams[:4]])})
    return tuple(out)


def write_signals(path: Path, signals: Sequence[dict[str, Any]], start: datetime) -> Path:
    """A signals file (burster/signalfile.py) of drawn signals, the window opening at ``start``."""
    def at(h: float) -> str:
        return (start + timedelta(hours=h)).isoformat()
    lines = ["source,gpu_hours,window_start,window_end,gpu_model,team,announced_at"]
    lines += [f"{s['source']},{s['gpu_hours']},{at(s['start_h'])},{at(s['start_h'] + s['hours'])},"
              f"{s['gpu_model']},{s['team']},{'' if s['announced_h'] is None else at(s['announced_h'])}"
              for s in signals]
    path.write_text("\n".join(lines) + "\n")
    return path


RUN_KEYS = ("jobs", "jobs_started_on_cloud", "cloud_usd", "launches", "reconcile_passes")  # what --json reports


def no_jobs_in(trace: Trace, start_day: float) -> bool:
    """Whether the draw's day holds no arrival (a gap in the trace): the simulator refuses such a
    window, and the seed is skipped, saying so."""
    start = trace.day(start_day)
    return not any(start <= j.submitted_at < start + timedelta(days=1) for j in trace.jobs)


def findings(d: Draw, trace: Trace, hours: float | None, restarts: int = 0,
             ran: dict[str, Any] | None = None, store: str = "sqlite") -> list[str]:
    """Every oracle check's findings for one draw (an exception is one); ``restarts``: then run it again
    kept in ``store`` (SQLite, or "postgres"), the controller restarted so many times, and compare
    (tests/sim/oracle_restarts.py); ``ran`` (if given) receives the run's ``RUN_KEYS`` from its summary,
    to tell a seed that burst."""
    if not d.signals:
        return _findings(d, trace, hours, restarts, store, None, ran)
    with tempfile.TemporaryDirectory(prefix="burster-fuzz-") as tmp:
        signals = write_signals(Path(tmp) / "signals.csv", d.signals, trace.day(d.start_day))
        return _findings(d, trace, hours, restarts, store, signals, ran)


def _findings(d: Draw, trace: Trace, hours: float | None, restarts: int, store: str, signals: Path | None,
              ran: dict[str, Any] | None) -> list[str]:
    b = d.raw["budget"]
    protected = frozenset(d.raw["guards"].get("protected_node_ids", ()))
    observe = functools.partial(observe_simulation, trace=trace, seed=d.seed, days=1.0, start_day=d.start_day,
                                estimate_error=d.sigma, policy=d.policy, hours=hours, faults=d.faults,
                                signals=signals, pool_outages=d.pool_outages)

    def checks(seen: Observed) -> list[str]:
        return [*all_checks(seen, billed_as=as_knowable(seen)), *check_protected(seen, protected)]

    def budgets() -> Callable[[Observed, PassReport], list[str]]:
        return budget_per_pass(b.get("total_usd"), b["team_usd"], b["period"])  # type: ignore[no-any-return]

    log = PassLog(budgets())
    try:
        observe = functools.partial(observe, parse_config(d.raw))  # a config it refuses is a finding too
        seen = observe(per_pass=log)
        if ran is not None:
            ran.update({k: seen.summary[k] for k in RUN_KEYS})
        found = checks(seen)
        if restarts and not found:
            found = restart_findings(observe, seen, log, count=restarts, seed=d.seed, checks=checks,
                                     per_pass=budgets(), store=store)
    except Exception:  # a crash is a finding, reported with its traceback
        return [traceback.format_exc()]
    return found


class SeedTimeout(BaseException):
    """A seed ran past ``--seed-timeout`` (not an Exception: a crash is a finding, this is not)."""


@contextlib.contextmanager
def time_limit(seconds: float | None) -> Iterator[None]:
    """Raise ``SeedTimeout`` in the block once it has run ``seconds`` (None: no limit; SIGALRM, so the
    main thread of a Unix process)."""
    if seconds is None:
        yield
        return

    def expire(signum: int, frame: object) -> None:
        raise SeedTimeout

    old = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.sim.fuzz_oracle", description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", default="0:20", help="FIRST:END (END excluded), default 0:20")
    ap.add_argument("--hours", type=float, default=None, help="stop this long after the window opens "
                    "(default: once the window's jobs are done)")
    ap.add_argument("--json", action="store_true", help="one JSON object per seed")
    ap.add_argument("--restarts", type=int, default=0, metavar="K", help="also run each seed kept in SQLite, "
                    "the controller restarted K times, and check it plans as the uninterrupted run (default 0)")
    ap.add_argument("--store", choices=("sqlite", "postgres"), default="sqlite", help="where --restarts keeps the "
                    "controller's state: a SQLite file, or a new PostgreSQL database per seed on "
                    "$BURSTER_TEST_POSTGRES's server (default sqlite)")
    ap.add_argument("--trace", default=str(DEMO_TRACE), help="a job trace (default: the bundled demo week; "
                    "its first five days are drawn from)")
    ap.add_argument("--from-day", type=float, default=0.0, metavar="D", help="draw the windows from D days "
                    "into the trace on (default 0)")
    ap.add_argument("--pool-nodes", type=int, default=None, metavar="N", help="every seed's pool has N nodes "
                    "(default: drawn, 4 to 24)")
    ap.add_argument("--seed-timeout", type=float, default=None, metavar="S", help="stop a seed that runs past S "
                    "seconds, say so, and go on to the next (default: no limit)")
    a = ap.parse_args(argv)
    if a.seed_timeout is not None and not a.seed_timeout > 0:
        ap.error(f"--seed-timeout {a.seed_timeout:g}: give seconds, more than 0")
    if a.from_day < 0:
        ap.error(f"--from-day {a.from_day:g}: give days into the trace, 0 or more")
    if a.pool_nodes is not None and a.pool_nodes < 1:
        ap.error(f"--pool-nodes {a.pool_nodes}: give how many on-prem nodes, 1 or more")
    if a.restarts < 0:
        ap.error(f"--restarts {a.restarts}: give how many times to restart each seed's controller, 0 or more")
    if a.store == "postgres" and a.restarts:
        try:
            with fresh_database():
                pass
        except NoServer as err:
            ap.error(f"--store postgres: {err}")
    first, _, end = a.seeds.partition(":")
    if not (first.isdigit() and end.isdigit() and int(first) < int(end)):
        ap.error(f"--seeds {a.seeds!r}: give FIRST:END, two whole numbers, FIRST below END (e.g. 0:20)")
    try:
        trace = load_trace(a.trace, "philly" if a.trace == str(DEMO_TRACE) else None)
    except InputError as err:
        ap.error(f"--trace: {err}")
    teams = sorted({j.team for j in trace.jobs if j.team})
    failed = 0
    for seed in range(int(first), int(end)):
        d, t0 = draw(seed, teams), time.monotonic()
        d = replace(d, start_day=d.start_day + a.from_day)
        if a.pool_nodes is not None:
            d.raw["pool"]["nodes"] = a.pool_nodes
        if no_jobs_in(trace, d.start_day):
            print(json.dumps({"seed": seed, "ok": True, "skipped": f"no jobs in day {d.start_day:g}"}) if a.json
                  else f"seed {seed}: skipped, no jobs in day {d.start_day:g} of the trace", flush=True)
            continue
        ran: dict[str, Any] = {}
        try:
            with time_limit(a.seed_timeout):
                found = findings(d, trace, a.hours, a.restarts, ran, a.store)
        except SeedTimeout:
            print(json.dumps({"seed": seed, "ok": True, "timed_out": a.seed_timeout, "policy": d.policy,
                              "config": d.raw}) if a.json
                  else f"seed {seed}: timed out after {a.seed_timeout:g} s (found nothing by then)", flush=True)
            continue
        failed += bool(found)
        if a.json:
            wall_s = round(time.monotonic() - t0, 1)
            print(json.dumps({"seed": seed, "ok": not found, "policy": d.policy, "config": d.raw,
                              "estimate_error": d.sigma, "start_day": d.start_day,
                              "faults": d.faults and d.faults.as_dict(), "signals": d.signals,
                              "pool_outages": d.pool_outages,
                              "findings": found[:8], **ran,
                              "wall_s": wall_s}))
        else:
            print(f"seed {seed}: " + ("ok" if not found else f"{len(found)} finding(s) with policy {d.policy}, "
                                      f"{json.dumps(d.raw)}, estimate error {d.sigma}, start day {d.start_day}, "
                                      f"faults {d.faults}, signals {json.dumps(d.signals)}, "
                                      f"pool outages {d.pool_outages}"),
                  flush=True)
            for f in found[:8]:
                print(f"  {f}")
    return 1 if failed else 0


if __name__ == "__main__":
    logging.disable(logging.WARNING)  # the controller's warnings (offerings blocked, ...): the findings say what broke
    sys.exit(main())
