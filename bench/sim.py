"""Benchmark of the simulator: jobs replayed per wall-clock second through the live reconcile path.

    python -m bench.sim [--quick] [--json] [--estimate-error SIGMA]

Quick: the bundled week (about 2k jobs, 18-node pool). Full: the whole Philly MIX1 trace from
../shared/data (about 31k jobs over 14 days, 150-node pool) when present. Prints
{jobs, wall_s, jobs_per_s} (a list of them in full mode, quick first). ``--estimate-error``: the
controller sees runtimes off by exp(N(0, SIGMA)), as with users' estimates (jobs that outrun them
are what used to make every tick a pass).
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from burster.app import DEMO_TRACE, build_simulation
from burster.config import parse_config
from burster.errors import ConfigError
from burster.shared_data import shared_data_dir
from burster.sim.engine import run
from burster.sim.estimates import check_sigma
from burster.traces import load_trace


def measure(trace_path: Any, fmt: str, nodes: int, days: float | None, sigma: float = 0.0) -> dict[str, Any]:
    trace = load_trace(trace_path, fmt)
    sim = build_simulation(parse_config({"pool": {"nodes": nodes}}), trace, policy="burster", seed=0, days=days,
                           estimate_error=sigma)
    t0 = time.perf_counter()
    passes = run(sim.world, sim.reconciler, sim.clock, tick_s=10.0, end=sim.end)
    wall = time.perf_counter() - t0
    jobs: int = sim.world.pool.metrics.jobs  # type: ignore[attr-defined]
    return {"trace": trace.name, "estimate_error": sigma, "jobs": jobs, "passes": passes, "wall_s": round(wall, 3),
            "jobs_per_s": round(jobs / wall, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="only the bundled week")
    ap.add_argument("--json", action="store_true", help="print JSON")
    ap.add_argument("--estimate-error", type=float, default=0.0, metavar="SIGMA",
                    help="lognormal sigma of the runtime estimates the controller sees (default 0: exact)")
    args = ap.parse_args()
    try:
        check_sigma(args.estimate_error)
    except ConfigError as err:
        ap.error(f"--estimate-error: {err}")
    records = [measure(DEMO_TRACE, "philly", 18, 7.0, args.estimate_error)]
    full = shared_data_dir() / "chronus_philly_deadline" / "trace_job_Philly_MIX1.csv.gz"
    if not args.quick and full.exists():
        records.append(measure(full, "philly", 150, None, args.estimate_error))
    out: Any = records[0] if args.quick else records
    print(json.dumps(out) if args.json else "\n".join(
        f"{r['trace']}: {r['jobs']} jobs in {r['wall_s']} s = {r['jobs_per_s']} jobs/s" for r in records))


if __name__ == "__main__":
    main()
