"""Benchmark of the simulator: jobs replayed per wall-clock second through the live reconcile path.

    python -m bench.sim [--quick] [--json] [--estimate-error SIGMA] [--max-nodes N]

Quick: the bundled week (about 2k jobs, 18-node pool). Full: the whole Philly MIX1 trace from
../shared/data (about 31k jobs over 14 days, 150-node pool) when present. Prints
{trace, estimate_error, max_nodes, jobs, passes, wall_s, jobs_per_s, ...} (a list of them in full mode,
quick first; ``jobs``: those submitted in the window, ``passes``: reconcile passes). ``--estimate-error``: the
controller sees runtimes off by exp(N(0, SIGMA)), as with users' estimates (jobs that outrun them
are what used to make every tick a pass). ``--max-nodes``: at most N cloud nodes
(``guards.max_nodes``, 256 by default); launches held back at the cap keep the preempt rule
weighing reserved jobs every tick, the slowest case the simulator meets.

Each record also splits the wall time: ``world_s`` the simulated pool and clouds (events, spot
replay), ``decide_s`` the policy, ``observe_actuate_s`` the rest of the reconcile passes, and
``loop_s`` the simulation loop itself.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from typing import Any

from burster.app import DEMO_TRACE, build_simulation
from burster.config import parse_config
from burster.errors import ConfigError
from burster.shared_data import shared_data_dir
from burster.sim.engine import run
from burster.sim.estimates import check_sigma
from burster.traces import load_trace


class _Stopwatch:
    """Seconds spent inside the wrapped callables, by name (the calls go through unchanged)."""

    def __init__(self) -> None:
        self.spent: dict[str, float] = {}

    def wrap(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        self.spent[name] = 0.0

        def timed(*args: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(*args)
            finally:
                self.spent[name] += time.perf_counter() - t0
        return timed


class _TimedPolicy:
    """The policy, its decide() timed."""

    def __init__(self, policy: Any, watch: _Stopwatch) -> None:
        self.name = policy.name
        self.decide = watch.wrap("decide", policy.decide)


def measure(trace_path: Any, fmt: str, nodes: int, days: float | None, sigma: float = 0.0,
            max_nodes: int | None = None) -> dict[str, Any]:
    trace = load_trace(trace_path, fmt)
    raw: dict[str, Any] = {"pool": {"nodes": nodes}}
    if max_nodes is not None:
        raw["guards"] = {"max_nodes": max_nodes}
    sim = build_simulation(parse_config(raw), trace, policy="burster", seed=0, days=days,
                           estimate_error=sigma)
    watch = _Stopwatch()
    world: Any = sim.world
    world.advance_to = watch.wrap("world", world.advance_to)
    sim.reconciler.run_once = watch.wrap("pass", sim.reconciler.run_once)  # type: ignore[method-assign]
    sim.reconciler.policy = _TimedPolicy(sim.reconciler.policy, watch)
    t0 = time.perf_counter()
    passes = run(world, sim.reconciler, sim.clock, tick_s=10.0, end=sim.end)
    wall = time.perf_counter() - t0
    jobs: int = world.pool.metrics.jobs
    spent = watch.spent
    return {"trace": trace.name, "estimate_error": sigma, "max_nodes": max_nodes, "jobs": jobs, "passes": passes,
            "wall_s": round(wall, 3), "jobs_per_s": round(jobs / wall, 1), "world_s": round(spent["world"], 3),
            "decide_s": round(spent["decide"], 3), "observe_actuate_s": round(spent["pass"] - spent["decide"], 3),
            "loop_s": round(wall - spent["world"] - spent["pass"], 3)}


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.sim", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="only the bundled week")
    ap.add_argument("--json", action="store_true", help="print JSON")
    ap.add_argument("--estimate-error", type=float, default=0.0, metavar="SIGMA",
                    help="lognormal sigma of the runtime estimates the controller sees (default 0: exact)")
    ap.add_argument("--max-nodes", type=int, default=None, metavar="N",
                    help="cap the cloud nodes at N (guards.max_nodes; default: the config's default)")
    args = ap.parse_args()
    if args.max_nodes is not None:
        try:
            parse_config({"guards": {"max_nodes": args.max_nodes}})
        except ConfigError as err:
            ap.error(f"--max-nodes: {err}")
    try:
        check_sigma(args.estimate_error)
    except ConfigError as err:
        ap.error(f"--estimate-error: {err}")
    records = [measure(DEMO_TRACE, "philly", 18, 7.0, args.estimate_error, args.max_nodes)]
    full = shared_data_dir() / "chronus_philly_deadline" / "trace_job_Philly_MIX1.csv.gz"
    if not args.quick and full.exists():
        records.append(measure(full, "philly", 150, None, args.estimate_error, args.max_nodes))
    out: Any = records[0] if args.quick else records
    print(json.dumps(out) if args.json else "\n".join(
        f"{r['trace']}: {r['jobs']} jobs in {r['wall_s']} s = {r['jobs_per_s']} jobs/s ({r['passes']} passes; "
        f"world {r['world_s']} s, decide {r['decide_s']} s, observe+actuate {r['observe_actuate_s']} s, "
        f"loop {r['loop_s']} s)" for r in records))


if __name__ == "__main__":
    main()
