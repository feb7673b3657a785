"""Each job's cheapest clairvoyant cloud plan, with or without moving between offerings.

- ``hopping_plans``: the job follows its shape's timeline (``timeline.py``): spot while up, moving to
  another offering before each drop (never preempted); start = the cheapest of 17 evenly spaced
  candidates within its wait budget.
- ``single_run_plans``: one offering for the whole run; a spot offering only from the earliest start
  within the budget at which its series stays up for the whole run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from burster.billing import billing_rule
from burster.eval.fluid import nodes_for
from burster.eval.instance import EvalJob, Instance
from burster.eval.timeline import Timeline, build_timeline
from burster.model import Market, Offering

CANDIDATES = 17
Shape = tuple[str, int, int]


@dataclass(frozen=True)
class CloudPlan:
    start_s: float
    usd: float  # inf when the job's GPU model has no offering
    offering: str = ""  # the one offering of a single-run plan; "" when it follows its shape's timeline


def shape_of(job: EvalJob) -> Shape:
    return (job.gpu_model, job.gpus, job.nodes)


def billed_s(provider: str, run_s: float) -> float:
    """Seconds billed for a node that ran ``run_s``: its cloud's rule, but never less than ``run_s``.

    Azure rounds down to whole minutes; in the simulator that never bills less than the work a node ran
    (its >= 60 s boot and join are billed too), and a bracket model that let a schedule gain by cutting
    runs into sub-minute pieces would bound nothing real.
    """
    return max(run_s, billing_rule(provider).billed_s(run_s)) if run_s > 0 else 0.0


def run_usd(job: EvalJob, offering: Offering, run_s: float, boot_s: float = 0.0) -> float:
    """USD of ``run_s`` seconds of the job on whole nodes of ``offering`` (plus boot), billed by ``billed_s``."""
    billed = billed_s(offering.provider, run_s + boot_s) if run_s > 0 else 0.0
    return nodes_for(job, offering) * offering.price_per_hour_usd * billed / 3600.0


def hopping_plans(instance: Instance, boot_s: float) -> tuple[list[CloudPlan], dict[Shape, Timeline]]:
    by_shape: dict[Shape, list[int]] = {}
    for i, j in enumerate(instance.jobs):
        by_shape.setdefault(shape_of(j), []).append(i)
    plans = [CloudPlan(j.arrival_s, math.inf) for j in instance.jobs]
    timelines: dict[Shape, Timeline] = {}
    for key, idx in by_shape.items():
        tl = build_timeline(instance, instance.jobs[idx[0]], instance.horizon_s, boot_s)
        if tl is None:
            continue
        timelines[key] = tl
        a = np.array([instance.jobs[i].arrival_s for i in idx])
        b = np.array([instance.jobs[i].wait_budget_s for i in idx])
        r = np.array([instance.jobs[i].runtime_s for i in idx])
        starts = a[:, None] + b[:, None] * np.linspace(0.0, 1.0, CANDIDATES)[None, :]
        costs = tl.cost(starts.reshape(-1), (starts + r[:, None]).reshape(-1)).reshape(starts.shape)
        best = np.argmin(costs, axis=1)
        for n, i in enumerate(idx):
            plans[i] = CloudPlan(float(starts[n, best[n]]), float(costs[n, best[n]]))
    return plans, timelines


def single_run_plans(instance: Instance, boot_s: float) -> list[CloudPlan]:
    ranked: dict[tuple[str, int, int, float], list[tuple[float, Offering]]] = {}
    down: dict[str, np.ndarray] = {}
    plans = []
    for job in instance.jobs:
        key = (*shape_of(job), job.runtime_s)
        if key not in ranked:
            offers = [o for o in instance.offerings if o.gpu_model == job.gpu_model]
            ranked[key] = sorted(((run_usd(job, o, job.runtime_s, boot_s), o) for o in offers),
                                 key=lambda p: (p[0], p[1].key))
        plans.append(_single(instance, job, ranked[key], down))
    return plans


def _single(instance: Instance, job: EvalJob, ranked: list[tuple[float, Offering]],
            down: dict[str, np.ndarray]) -> CloudPlan:
    for usd, o in ranked:
        start = unbroken_start(instance, o, job, down)
        if start is not None:
            return CloudPlan(start, usd, o.key)
    return CloudPlan(job.arrival_s, math.inf)


def unbroken_start(instance: Instance, offering: Offering, job: EvalJob,
                   down: dict[str, np.ndarray] | None = None) -> float | None:
    """Earliest start within the budget from which ``offering`` stays up for the whole run (None: none).

    Candidates: the arrival, then every tick of the offering's series up to arrival + budget.
    """
    s = instance.spot_series.get(offering.key) if offering.market is Market.SPOT else None
    if s is None:
        return job.arrival_s
    cache = {} if down is None else down
    gap = s.gap_s
    latest = job.arrival_s + job.wait_budget_s
    need = math.ceil((latest + job.runtime_s) / gap) + 2
    cum = cache.get(s.name)
    if cum is None or len(cum) <= need:
        ticks = max(need, math.ceil(instance.horizon_s / gap) + 2)
        is_down = np.asarray(s.data)[np.arange(ticks) % len(s.data)] == 0
        cum = cache[s.name] = np.concatenate(([0], np.cumsum(is_down)))
    k0 = int(job.arrival_s // gap)
    starts = np.concatenate(([job.arrival_s], np.arange(k0 + 1, int(latest // gap) + 1) * gap))
    first = np.floor(starts / gap + 1e-9).astype(np.int64)
    last = np.maximum(np.ceil((starts + job.runtime_s) / gap - 1e-9).astype(np.int64), first + 1)
    ok = np.flatnonzero(cum[last] - cum[first] == 0)
    return float(starts[ok[0]]) if len(ok) else None
