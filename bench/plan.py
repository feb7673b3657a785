"""Benchmark of one policy decision (decide) on synthetic snapshots of growing size.

    python -m bench.plan [--quick] [--json]

Quick: 1k pending jobs x 100 offerings and 10k x 300. Full adds 100k x 1000. Each record:
{jobs, offerings, nodes, p50_ms, p99_ms, max_ms, peak_mib, decisions}. Offerings are replicated from
the bundled price catalog; every repetition gets a fresh offerings tuple, so no cache survives
between decisions. p99 is by nearest rank: of the 200 decisions at 1k x 100 the 198th fastest (two
slower ones left out); of 10 or 3 at the larger sizes, the slowest, as is ``max_ms`` always.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import time
import tracemalloc
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from burster.catalog import BUNDLED_DIR, load_catalog
from burster.lifecycle import NodeState
from burster.model import Demand, JobClass, Market, Node, Offering, Placement, PoolNode, Snapshot
from policies.burster import BursterPolicy

NOW = datetime(2026, 3, 2, 12, tzinfo=UTC)
SIZES_QUICK = [(1_000, 100), (10_000, 300)]
SIZES_FULL = [*SIZES_QUICK, (100_000, 1_000)]


def offerings(count: int, rng: random.Random) -> tuple[Offering, ...]:
    base = [o for o in load_catalog(BUNDLED_DIR) if o.gpu_model in ("V100", "A100", "H100", "T4")]
    out = []
    for i in range(count):
        o = base[i % len(base)]
        out.append(replace(o, zone=f"{o.zone}-{i // len(base)}", price_per_hour_usd=o.price_per_hour_usd
                           * rng.uniform(0.9, 1.1), available=rng.random() > 0.1))
    return tuple(out)


def snapshot(jobs: int, n_offerings: int, seed: int = 0) -> Snapshot:
    rng = random.Random(seed)
    offs = offerings(n_offerings, rng)
    pool_nodes = max(16, jobs // 20)
    pool = tuple(PoolNode(f"onprem-{i}", "V100", 8, rng.choice((0, 0, 0, 1, 2))) for i in range(pool_nodes))
    pending, running = [], []
    for i in range(jobs):
        nodes = 1 if rng.random() < 0.9 else rng.choice((2, 4))
        per = rng.choice((1, 1, 2, 4, 8)) if nodes == 1 else 8
        klass = rng.choice(list(JobClass))
        runtime = rng.uniform(600, 36_000)
        submitted = NOW - timedelta(seconds=rng.uniform(0, 7_200))
        pending.append(Demand(f"p{i}", per * nodes, submitted, runtime, nodes=nodes,
                              gpu_model=rng.choice(("V100", "V100", "A100", "")), job_class=klass,
                              deadline=None if klass is JobClass.BEST_EFFORT else submitted + timedelta(
                                  seconds=runtime * rng.uniform(1.2, 3)), team=f"t{i % 7}"))
    for i in range(pool_nodes):
        job = Demand(f"r{i}", 8, NOW - timedelta(hours=3), rng.uniform(3_600, 50_000), gpu_model="V100")
        running.append(Placement(job, (f"onprem-{i}",), NOW - timedelta(hours=1), False, Market.RESERVED))
    cloud = []
    for i in range(jobs // 10):
        o = offs[i % len(offs)]
        busy = i % 3 != 0
        job = Demand(f"c{i}", o.gpus_per_node, NOW - timedelta(hours=2), 20_000, gpu_model=o.gpu_model)
        cloud.append(Node(f"n{i}", o, NodeState.READY, NOW - timedelta(hours=1), "rq",
                          job_id=job.job_id if busy else None,
                          idle_since=None if busy else NOW - timedelta(seconds=rng.uniform(0, 900))))
        if busy:
            running.append(Placement(job, (f"n{i}",), NOW - timedelta(hours=1), True, o.market,
                                     o.price_per_hour_usd))
    return Snapshot(NOW, tuple(pending), tuple(running), pool, tuple(cloud), offs)


def measure(jobs: int, n_offerings: int, reps: int) -> dict[str, float | int]:
    snap = snapshot(jobs, n_offerings)
    policy = BursterPolicy()
    tracemalloc.start()  # memory from one untimed decision (tracing slows Python down)
    policy.decide(replace(snap, offerings=tuple(list(snap.offerings))))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    times = []
    for _ in range(reps):
        fresh = replace(snap, offerings=tuple(list(snap.offerings)))
        t0 = time.perf_counter()
        policy.decide(fresh)
        times.append((time.perf_counter() - t0) * 1000)
    times.sort()
    p99 = nearest_rank(times, 0.99)
    return {"jobs": jobs, "offerings": n_offerings, "nodes": len(snap.pool_nodes) + len(snap.cloud_nodes),
            "p50_ms": round(statistics.median(times), 2), "p99_ms": round(p99, 2), "max_ms": round(times[-1], 2),
            "peak_mib": round(peak / 2**20, 1), "decisions": reps}


def nearest_rank(ordered: list[float], q: float) -> float:
    """The ``q`` quantile of ascending ``ordered`` by nearest rank: the ceil(q x n)-th smallest."""
    return ordered[max(math.ceil(q * len(ordered)), 1) - 1]


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.plan", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="skip the 100k x 1000 size")
    ap.add_argument("--json", action="store_true", help="print a JSON list of records")
    args = ap.parse_args()
    sizes = SIZES_QUICK if args.quick else SIZES_FULL
    records = [measure(j, o, reps=200 if j <= 1_000 else 10 if j <= 10_000 else 3) for j, o in sizes]
    if args.json:
        print(json.dumps(records))
    else:
        for r in records:
            print(f"{r['jobs']:>7} jobs x {r['offerings']:>5} offerings: p50 {r['p50_ms']} ms, "
                  f"p99 {r['p99_ms']} ms, max {r['max_ms']} ms of {r['decisions']}, peak {r['peak_mib']} MiB")


if __name__ == "__main__":
    main()
