"""Every policy arm over traces x pool sizes x seeds through the real simulator, beside the cost bracket.

A *setting* is (trace window, pool size, seed); an *arm* is one policy in one setting. Arms and the
bracket of each setting run in a process pool. Records carry the issue's keys plus extras; the
timeline and the spend split go to the HTML report only.
"""

from __future__ import annotations

import functools
import math
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from burster.model import Demand
from burster.traces import Trace, load_trace

POLICY_NAMES = ("burster", "reserved-only", "on-demand", "greedy-spot", "uniform-progress", "compute-wait")
UTILIZATIONS = (0.9, 0.75)  # offered load / reserved GPUs targeted by the pool-size sweep
GPUS_PER_NODE = 8
MAX_BURST_NODES = 100_000  # the config's upper limit for guards.max_nodes


@dataclass(frozen=True)
class Window:
    """A trace file and the part of it to replay."""

    path: str
    fmt: str | None
    start_day: float
    days: float


@dataclass(frozen=True)
class Setting:
    """One cell of the suite: a trace window on a pool of ``nodes`` 8-GPU nodes with one seed."""

    trace: str
    window: Window
    nodes: int
    seed: int
    jobs: int = 0
    offered_gpus: float = 0.0

    @property
    def pool_gpus(self) -> int:
        return self.nodes * GPUS_PER_NODE

    @property
    def window_label(self) -> str:
        d = self.window.days
        return f"day {self.window.start_day:g} + " + (f"{d * 24:.3g} h" if d < 1 else f"{d:.3g} d")

    @property
    def label(self) -> str:
        return f"{self.trace}, {self.window_label}, {self.pool_gpus} GPUs, seed {self.seed}"


@dataclass(frozen=True)
class Sources:
    """The world besides the trace: where prices and spot availability come from (None: bundled /
    ../shared defaults), how the simulated pool orders its queue and requeues a stopped job
    (``pool.order``, ``pool.requeue``), and how
    wrong the runtime estimates the policies see are."""

    prices: Path | None = None
    spot: Path | None = None
    requeue: str = "submission"
    order: str = "start_by"  # the simulated pool's queue order (pool.order)
    estimate_error: float = 0.0  # lognormal sigma of the runtime estimates the arms see (burster.sim.estimates)
    estimate_bias: float = 1.0  # the arms' estimates are this factor times the runtimes, before the noise
    estimate_team_spread: float = 0.0  # lognormal sigma of each team's own factor on top of the bias
    policy: tuple[tuple[str, Any], ...] = ()  # [policy] settings for every arm (``burster bench --set``)


@dataclass
class ArmResult:
    setting: Setting
    policy: str
    summary: dict[str, Any]
    timeline: dict[str, Any]
    spend: dict[str, dict[str, float]]  # provider -> market -> USD


@dataclass
class BoundResult:
    setting: Setting
    lower_usd: float | None
    upper_usd: float | None
    status: str
    solve_s: float = 0.0
    upper_cloud_gpu_h: float | None = None  # GPU-hours the clairvoyant schedule runs on the cloud
    lower_by_preemptions: tuple[float, ...] = ()  # [p]: the bound for an arm that preempted p on-prem jobs

    def lower_for(self, summary: dict[str, Any]) -> float | None:
        """The lower bound valid for one arm: the reserved-run bound assumes no on-prem job is ever
        stopped; an arm that preempted p of them is held to the bound that lets p jobs split their run."""
        p = int(summary.get("onprem_preemptions", 0))
        if self.lower_usd is None or p == 0 or not self.lower_by_preemptions:
            return self.lower_usd
        return self.lower_by_preemptions[min(p, len(self.lower_by_preemptions) - 1)]


@dataclass
class SuiteResult:
    arms: list[ArmResult] = field(default_factory=list)
    bounds: dict[Setting, BoundResult] = field(default_factory=dict)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (trace, why)
    wall_s: float = 0.0


@functools.lru_cache(maxsize=4)
def cached_trace(path: str, fmt: str | None) -> Trace:
    return load_trace(Path(path), fmt)


def window_jobs(trace: Trace, w: Window, pool_model: str) -> tuple[datetime, datetime, list[Demand]]:
    """The window's start, end and jobs, filtered and defaulted exactly as ``build_simulation`` does."""
    start, end = trace.window(w.start_day, w.days)
    jobs = [j if j.gpu_model else replace(j, gpu_model=pool_model)
            for j in trace.jobs if start <= j.submitted_at < end]
    return start, end, jobs


def offered_load_gpus(jobs: Sequence[Demand], start: datetime, end: datetime) -> float:
    """Mean GPUs busy in the window if every job ran at submission: sum of gpus x (run clipped to window) / window."""
    window_s = (end - start).total_seconds()
    busy = 0.0
    for j in jobs:
        t0 = (j.submitted_at - start).total_seconds()
        busy += j.gpus * max(0.0, min(t0 + j.est_runtime_s, window_s) - t0)
    return busy / window_s if window_s > 0 else 0.0


def pool_sizes(load_gpus: float, utilizations: Sequence[float] = UTILIZATIONS) -> list[int]:
    """Whole nodes per target utilization u: ceil(load / u / 8), at least 1, duplicates dropped."""
    sizes: list[int] = []
    for u in utilizations:
        n = max(1, math.ceil(load_gpus / u / GPUS_PER_NODE))
        if n not in sizes:
            sizes.append(n)
    return sizes


def bench_config(nodes: int, requeue: str = "submission", order: str = "start_by",
                 policy: tuple[tuple[str, Any], ...] = ()) -> Any:
    """Config defaults, except the pool size, requeue and queue order, the ``policy`` settings given, and
    no cap on burst nodes (the bound has none: the comparison is of policies, not of the max_nodes
    guard, which would bind on big traces)."""
    from burster.config import parse_config

    return parse_config({"pool": {"nodes": nodes, "gpus_per_node": GPUS_PER_NODE, "requeue": requeue,
                                  "order": order},
                         "guards": {"max_nodes": MAX_BURST_NODES}, "policy": dict(policy)}, "burster bench --set")


def run_arm(setting: Setting, policy: str, sources: Sources) -> ArmResult:
    """Simulate one policy in one setting (runs in a worker process)."""
    from burster.app import build_simulation
    from burster.sim.controller_log import ControllerLog
    from burster.sim.engine import run
    from burster.sim.summary import summarize
    from burster.sim.timeline import Timeline

    w = setting.window
    trace = cached_trace(w.path, w.fmt)
    config = bench_config(setting.nodes, sources.requeue, sources.order, sources.policy)
    sim = build_simulation(config, trace, policy=policy, seed=setting.seed, prices=sources.prices,
                           spot_dir=sources.spot, days=w.days, start_day=w.start_day,
                           estimate_error=sources.estimate_error, estimate_bias=sources.estimate_bias,
                           estimate_team_spread=sources.estimate_team_spread)
    world: Any = sim.world
    start = sim.clock.now()
    step_s = max(300, round(w.days * 86400 / 288 / 300) * 300)
    timeline = Timeline(world, start, step_s=step_s, reserved_gpus=sim.pool_gpus)
    t0 = time.perf_counter()
    warnings = ControllerLog(sim.clock.now, echo=False)  # counted, not printed: arms run side by side
    with warnings.attached():
        passes = run(world, sim.reconciler, sim.clock, tick_s=10.0, end=sim.end, on_progress=timeline.observe)
    metrics = world.pool.metrics
    summary = summarize(metrics=metrics, ledger=sim.reconciler.state.ledger,
                        launches=sum(c.launches for c in world.clouds.values()), passes=passes, policy=policy,
                        trace=setting.trace, pool_gpus=sim.pool_gpus, seed=setting.seed,
                        wall_s=time.perf_counter() - t0)
    summary["wait_share_within_budget"] = round(metrics.within_budget / metrics.jobs, 4) if metrics.jobs else 1.0
    summary["spot_source"] = sim.spot_source
    summary["estimate_error"] = sources.estimate_error
    summary["estimate_bias"] = sources.estimate_bias
    summary["estimate_team_spread"] = sources.estimate_team_spread
    summary["policy_settings"] = dict(sources.policy)
    summary["pool_order"] = sources.order
    summary["controller_warnings"] = sum(warnings.counts.values())
    spend: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for e in sim.reconciler.state.ledger:
        spend[e.provider][e.market] += float(e.usd)
    keep = int((w.days + 1) * 86400 // step_s) + 1  # the window and one day of drain
    tl = {k: (v[:keep] if isinstance(v, list) else v) for k, v in timeline.as_dict().items()}
    return ArmResult(setting, policy, summary, tl, {p: dict(m) for p, m in spend.items()})


def run_bound(setting: Setting, sources: Sources) -> BoundResult:
    """The offline cost bracket of one setting, on the jobs, offerings and spot series the arms see."""
    from burster.app import spot_series
    from burster.catalog import load_catalog
    from burster.eval.bound import bracket
    from burster.eval.instance import build_instance

    config = bench_config(setting.nodes)
    start, _, jobs = window_jobs(cached_trace(setting.window.path, setting.window.fmt), setting.window,
                                 config.pool.gpu_model)
    offerings = load_catalog(sources.prices) if sources.prices else load_catalog()
    series, _ = spot_series(setting.seed, sources.spot)
    instance = build_instance(jobs, start=start, pool_gpus=setting.pool_gpus, pool_model=config.pool.gpu_model,
                              offerings=offerings, series=series, slot_s=300.0, pool_node_gpus=GPUS_PER_NODE)
    try:
        b = bracket(instance)
    except Exception as err:  # a failed bound is reported beside the arms, not fatal to the suite
        return BoundResult(setting, None, None, f"failed: {type(err).__name__}: {err}")
    return BoundResult(setting, b.lower_usd, b.upper_usd, b.status, b.solve_s, b.upper_cloud_gpu_h,
                       b.lower_by_preemptions)


def run_suite(settings: Sequence[Setting], policies: Sequence[str], sources: Sources, *, workers: int = 2,
              on_done: Callable[[int, int, str], None] | None = None) -> SuiteResult:
    """Run every arm and bracket; the biggest settings are submitted first to balance the workers."""
    out = SuiteResult()
    order = sorted(settings, key=lambda s: -s.jobs)
    t0 = time.perf_counter()
    tasks = len(settings) * (len(policies) + 1)  # no more processes than tasks (a fork pool starts them all)
    with ProcessPoolExecutor(max_workers=max(1, min(workers, tasks))) as pool:
        futures: dict[Future[Any], str] = {}
        for s in order:
            futures[pool.submit(run_bound, s, sources)] = f"bound {s.label}"
            for p in policies:
                futures[pool.submit(run_arm, s, p, sources)] = f"{p} {s.label}"
        for i, fut in enumerate(as_completed(futures), 1):
            result = fut.result()
            if isinstance(result, BoundResult):
                out.bounds[result.setting] = result
            else:
                out.arms.append(result)
            if on_done:
                on_done(i, len(futures), futures[fut])
    out.wall_s = time.perf_counter() - t0
    key = {s: i for i, s in enumerate(settings)}
    out.arms.sort(key=lambda a: (key[a.setting], policies.index(a.policy)))
    return out


RECORD_KEYS = ("trace", "pool_gpus", "seed", "policy", "cloud_usd", "wait_p50_s", "wait_p95_s", "wait_p99_s",
               "deadline_misses", "lower_bound_usd", "upper_bound_usd")
SUMMARY_EXTRAS = ("cloud_usd_spot", "cloud_usd_on_demand", "cloud_usd_waived", "wait_share_within_budget",
                  "hard_deadline_misses", "jobs_never_started", "preemptions", "onprem_preemptions",
                  "lost_gpu_hours", "cloud_gpu_hours", "requeued_wait_gpu_hours", "stranded_gpu_hours",
                  "launches", "onprem_utilization", "estimate_error", "estimate_bias", "estimate_team_spread",
                  "policy_settings", "pool_order", "controller_warnings", "spot_source")


def list_usd(summary: dict[str, Any]) -> float:
    """An arm's cloud $ at list price: what it was billed plus what its cloud waived (spot nodes AWS took
    back in their first hour). The lower bound bills every node for the time it ran, so it bounds this."""
    return float(summary["cloud_usd"]) + float(summary.get("cloud_usd_waived", 0.0))


def ratio_to_bound(cloud_usd: float, lower_usd: float | None) -> float | None:
    """cloud $ / lower bound; 1 when both are 0; None when there is no (positive) bound to divide by."""
    if lower_usd is None:
        return None
    if lower_usd <= 0:
        return 1.0 if cloud_usd <= 0 else None
    return round(cloud_usd / lower_usd, 4)


def captured_savings(cloud_usd: float, on_demand_usd: float | None, lower_usd: float | None) -> float | None:
    """(all-on-demand - policy) / (all-on-demand - lower bound): 1 at the bound, 0 at all-on-demand."""
    if on_demand_usd is None or lower_usd is None or on_demand_usd - lower_usd <= 0:
        return None
    return round((on_demand_usd - cloud_usd) / (on_demand_usd - lower_usd), 4)


def _round2(v: float | None) -> float | None:
    """A bound's figure rounded to 2 places; None when there is none or it is not finite (the clairvoyant
    schedule costs inf when some job fits nowhere, and JSON has no Infinity)."""
    return None if v is None or not math.isfinite(v) else round(v, 2)


def records(result: SuiteResult) -> list[dict[str, Any]]:
    """One JSON record per arm: the issue's keys, then the extras."""
    on_demand = {a.setting: float(a.summary["cloud_usd"]) for a in result.arms if a.policy == "on-demand"}
    out = []
    for a in result.arms:
        b = result.bounds.get(a.setting)
        lower = _round2(None if b is None else b.lower_for(a.summary))
        upper = _round2(None if b is None else b.upper_usd)
        cloud = list_usd(a.summary)
        rec: dict[str, Any] = {k: a.summary[k] for k in RECORD_KEYS if k in a.summary}
        rec.update(lower_bound_usd=lower, upper_bound_usd=upper)
        bracket_lower = _round2(None if b is None else b.lower_usd)
        rec.update({k: a.summary[k] for k in SUMMARY_EXTRAS})
        upper_gpu_h = _round2(None if b is None else b.upper_cloud_gpu_h)
        rec.update(upper_bound_cloud_gpu_hours=upper_gpu_h, ratio_to_lower_bound=ratio_to_bound(cloud, lower),
                   captured_savings=captured_savings(cloud, on_demand.get(a.setting), lower),
                   bound_status=b.status if b else "missing", window=a.setting.window_label,
                   bracket_lower_usd=bracket_lower, lower_bound_split_runs=int(a.summary.get("onprem_preemptions", 0)))
        out.append({k: rec[k] for k in (*RECORD_KEYS, *SUMMARY_EXTRAS[:-1], "upper_bound_cloud_gpu_hours",
                                         "ratio_to_lower_bound", "captured_savings", "bound_status", "window",
                                         "bracket_lower_usd", "lower_bound_split_runs", "spot_source")})
    return out
