"""KPIs of a simulation run: the ``--json`` object and the rows of the summary table."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from burster.reconciler import PassReport
from burster.state import LedgerEntry


class HeldBack:
    """Jobs the node cap held back at least once (``Plan.held_back``; a launch for no job counts by
    its request id): how often ``guards.max_nodes`` bound, as ``--explain`` lists them."""

    def __init__(self) -> None:
        self._seen: set[str] = set()

    def observe(self, report: PassReport) -> None:
        for launch, _ in report.plan.held_back:
            self._seen.add(f"job {launch.job_id}" if launch.job_id else launch.request_id)

    @property
    def count(self) -> int:
        return len(self._seen)


class NeverJoined:
    """Burst nodes terminated at the join timeout (``Terminate.never_joined``: launched for a job that
    had not started on them by ``policy.join_timeout_s``) and what the ledger billed them."""

    def __init__(self) -> None:
        self.node_ids: set[str] = set()

    def observe(self, report: PassReport) -> None:
        for t in report.plan.terminates:
            if t.never_joined:
                self.node_ids.update(t.node_ids)

    def usd(self, ledger: Sequence[LedgerEntry]) -> float:
        return round(sum((float(e.usd) for e in ledger if e.node_id in self.node_ids), 0.0), 2)


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100); 0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, min(len(ordered), math.ceil(q * len(ordered) / 100)))
    return float(ordered[rank - 1])


def summarize(*, metrics: Any, ledger: Sequence[LedgerEntry], launches: int, passes: int,
              policy: str, trace: str, pool_gpus: int, seed: int, wall_s: float) -> dict[str, Any]:
    by_market: dict[str, float] = defaultdict(float)
    by_provider: dict[str, float] = defaultdict(float)
    for e in ledger:
        by_market[e.market] += float(e.usd)
        by_provider[e.provider] += float(e.usd)
    unstarted = metrics.unstarted_waits_s()  # counted at what they had waited by the end of the run
    waits = [*metrics.waits_s, *unstarted]
    late, late_strict = metrics.overdue()
    return {
        "policy": policy,
        "trace": trace,
        "pool_gpus": pool_gpus,
        "seed": seed,
        "jobs": metrics.jobs,
        "jobs_finished": metrics.finished_jobs,
        "jobs_started_on_cloud": metrics.started_on_cloud,
        "jobs_never_started": len(unstarted),
        "cloud_usd": round(sum(by_market.values(), 0.0), 2),  # (a float with no spend too, as JSON shows it)
        "cloud_usd_spot": round(by_market.get("spot", 0.0), 2),
        "cloud_usd_on_demand": round(by_market.get("on_demand", 0.0), 2),
        "cloud_usd_by_provider": {k: round(v, 2) for k, v in sorted(by_provider.items())},
        "cloud_usd_waived": round(metrics.waived_usd, 2),
        "onprem_utilization": round(metrics.utilization, 4),
        "wait_p50_s": percentile(waits, 50),
        "wait_p95_s": percentile(waits, 95),
        "wait_p99_s": percentile(waits, 99),
        "deadline_misses": metrics.deadline_misses + late,
        "hard_deadline_misses": metrics.hard_deadline_misses + late_strict,
        "preemptions": metrics.preemptions,
        "reclaims": metrics.reclaims,
        "lost_gpu_hours": round(metrics.lost_gpu_hours, 2),
        "cloud_gpu_hours": round(metrics.cloud_gpu_hours, 2),
        "requeued_wait_gpu_hours": round(metrics.requeued_wait_gpu_hours, 2),
        "stranded_gpu_hours": round(metrics.stranded_gpu_hours, 2),
        "node_holds": metrics.node_holds,
        "node_holds_landed": metrics.node_holds_landed,
        "node_holds_expired": metrics.node_holds_expired,
        "onprem_preemptions": metrics.onprem_preemptions,
        "idle_nodes_handed": metrics.idle_nodes_handed,
        "launches": launches,
        "reconcile_passes": passes,
        "wall_s": round(wall_s, 3),
    }
