"""Deadline slack and wait budgets: the per-job arithmetic of when a job must burst, and to what.

``slack_s``: how long a deadline job can still wait and make its deadline; ``spot_rework_limit``
and ``spot_slack_s``: Uniform Progress with rework (how much spot risk that slack absorbs, and
until when it can still run on spot); ``wait_budget_s``, ``defers`` and ``defer_left_s``: how
long a job may wait for reserved GPUs (``BurstParams.defer_to_budget``).
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import TYPE_CHECKING

from burster.model import Demand, JobClass, Market, Offering
from policies.cost import CostModel

if TYPE_CHECKING:  # (burst imports this module)
    from policies.burst import BurstParams


def slack_s(job: Demand, now: datetime, cost: CostModel) -> float:
    """Deadline slack if started now: time left minus remaining work minus launch latency."""
    if job.deadline is None or job.job_class is JobClass.BEST_EFFORT:
        return math.inf
    return (job.deadline - now).total_seconds() - job.remaining_s - cost.p.launch_latency_s


def spot_rework_limit(job: Demand, now: datetime, cost: CostModel, params: BurstParams) -> float:
    """Uniform Progress with rework: the largest expected rework (a fraction of the remaining run) a
    spot run of ``job`` started now can absorb and still keep a changeover (restart + relaunch) plus
    the margin for a final move to on-demand. Negative: no spot run qualifies; inf: no deadline."""
    slack = slack_s(job, now, cost)
    if slack == math.inf:
        return math.inf
    room = slack - cost.p.restart_overhead_s - cost.p.launch_latency_s - params.deadline_margin_s
    if job.remaining_s <= 0 or not params.rework_aware:
        return math.inf if room >= 0 else -1.0
    return room / job.remaining_s


def spot_slack_s(job: Demand, now: datetime, cost: CostModel, params: BurstParams, offering: Offering) -> float:
    """How long a deadline job can still wait and then run on spot (Uniform Progress's switch point).

    Past this, the job could only make its deadline on on-demand: waiting for on-prem would turn a
    cheap spot burst into an expensive one. Infinite for jobs without a deadline or off spot.
    """
    slack = slack_s(job, now, cost)
    if offering.market is not Market.SPOT or slack == math.inf:
        return math.inf
    rework_s = job.remaining_s * cost.rework_fraction(offering, job.checkpoint_interval_s,
                                                      cost.nodes_for(job, offering))
    changeover = cost.p.restart_overhead_s + cost.p.launch_latency_s
    return slack - rework_s - changeover - params.deadline_margin_s


def behind_schedule(left_s: float, slack_s: float, changeover_s: float, margin_s: float) -> bool:
    """Whether a deadline job on spot with ``left_s`` of work and ``slack_s`` of slack is due the Uniform
    Progress switch to on-demand (``deadline.switch_behind_schedule``): its slack under a changeover and
    the margin, more than a changeover of work left, and not so little slack that the move itself would
    make it late (0 <= slack < changeover: it stays). A negative slack (late by its estimate) counts."""
    return left_s > changeover_s and slack_s < changeover_s + margin_s and not 0 <= slack_s < changeover_s


def wait_budget_s(job: Demand, params: BurstParams) -> float:
    compute = params.wait_s_per_gpu_hour * job.gpus * job.est_runtime_s / 3600.0
    return max(params.max_wait_s, params.wait_fraction * job.est_runtime_s, compute)


def defers(job: Demand, waited_s: float, now: datetime, cost: CostModel, params: BurstParams,
           offering: Offering, scale: float = 1.0) -> bool:
    """Whether ``job`` waits out its wait budget (``scale`` of it) before bursting to ``offering``
    (``defer_to_budget``): only before its first start (a stopped job's pause is priced as waiting),
    only a budget longer than the ``max_wait_s`` floor (short jobs still burst at once), and, for a
    deadline job, only while its slack would still let it run there (spot slack) and keep the margin
    after the wait."""
    if not (params.defer_to_budget and job.attempt == 0 and scale * wait_budget_s(job, params) > params.max_wait_s):
        return False
    left_s = defer_left_s(job, waited_s, cost, params, scale)
    return min(spot_slack_s(job, now, cost, params, offering),
               slack_s(job, now, cost) - params.deadline_margin_s) >= left_s


def defer_left_s(job: Demand, waited_s: float, cost: CostModel, params: BurstParams, scale: float = 1.0) -> float:
    """How much longer a deferring job may wait and still start on the cloud within ``scale`` of its budget."""
    return scale * wait_budget_s(job, params) - waited_s - cost.p.launch_latency_s - params.defer_margin_s
