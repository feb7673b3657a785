"""Benchmark of the offline bracket: LP lower bound and clairvoyant upper bound on Philly-derived traces.

    python -m bench.bound [--quick] [--json]

Jobs come from the Philly MIX1 trace in ../shared/data (the bundled one-week sample when absent),
repeated back to back (copy i shifted by i trace spans, ids suffixed) until there are enough jobs.
The reserved pool: 8-GPU V100 nodes for half the jobs' mean GPU demand (so bursting matters); spot
availability is the simulator's (real traces when staged, else the bundled calibrated model). Quick:
10k jobs; full adds 100k. Each record: {trace, jobs, slots, block_slots, reserved_gpus, lower_usd,
upper_usd, width, solve_s, upper_s, status}; solve_s is the lower bound's wall time (model build + LP + certification).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

from burster.app import DEMO_TRACE, spot_series
from burster.catalog import load_catalog
from burster.eval.bound import bracket
from burster.eval.instance import build_instance
from burster.model import Demand
from burster.shared_data import shared_data_dir
from burster.traces import load_trace

SIZES_QUICK = [10_000]
SIZES_FULL = [10_000, 100_000]


LOAD_SHARE = 0.5


def source_trace() -> Path:
    full = shared_data_dir() / "chronus_philly_deadline" / "trace_job_Philly_MIX1.csv.gz"
    return full if full.exists() else DEMO_TRACE


def pool_nodes(jobs: list[Demand]) -> int:
    """8-GPU nodes for ``LOAD_SHARE`` of the jobs' mean GPU demand over their arrival span."""
    span_h = max((jobs[-1].submitted_at - jobs[0].submitted_at).total_seconds() / 3600.0, 1.0)
    mean_gpus = sum(j.gpus * j.est_runtime_s for j in jobs) / 3600.0 / span_h
    return max(1, round(LOAD_SHARE * mean_gpus / 8))


def repeated_jobs(jobs: tuple[Demand, ...], count: int) -> list[Demand]:
    """``count`` jobs: the trace, then copies shifted by whole spans (a longer trace of the same load)."""
    start = jobs[0].submitted_at
    span = jobs[-1].submitted_at - start + timedelta(minutes=1)
    out: list[Demand] = []
    copy = 0
    while len(out) < count:
        shift = span * copy
        for j in jobs[:count - len(out)]:
            out.append(replace(j, job_id=f"{j.job_id}#{copy}", submitted_at=j.submitted_at + shift,
                               deadline=j.deadline + shift if j.deadline else None))
        copy += 1
    return out


def measure(count: int) -> dict[str, Any]:
    path = source_trace()
    trace = load_trace(path, "philly")
    jobs = repeated_jobs(trace.jobs, count)
    start = jobs[0].submitted_at.replace(hour=0, minute=0, second=0, microsecond=0)
    series, _ = spot_series(0)
    inst = build_instance(jobs, start=start, pool_gpus=pool_nodes(jobs) * 8, pool_model="V100",
                          offerings=load_catalog(), series=series, pool_node_gpus=8)
    b = bracket(inst)
    return {"trace": path.name, "jobs": len(jobs), "slots": b.slots, "block_slots": b.block_slots,
            "reserved_gpus": inst.reserved_gpus, "lower_usd": round(b.lower_usd, 2),
            "upper_usd": round(b.upper_usd, 2), "width": round(b.width, 4), "solve_s": round(b.solve_s, 3),
            "upper_s": round(b.upper_s, 3), "status": b.status}


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.bound", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="only the 10k-job case")
    ap.add_argument("--json", action="store_true", help="print a JSON list of records")
    args = ap.parse_args()
    records = [measure(n) for n in (SIZES_QUICK if args.quick else SIZES_FULL)]
    if args.json:
        print(json.dumps(records))
    else:
        for r in records:
            print(f"{r['jobs']:>7} jobs, {r['slots']} slots (blocks of {r['block_slots']}): "
                  f"lower ${r['lower_usd']:,.2f} in {r['solve_s']} s, "
                  f"upper ${r['upper_usd']:,.2f} in {r['upper_s']} s, width {r['width']:.1%}")


if __name__ == "__main__":
    main()
