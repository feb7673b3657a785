"""The start-by rule a ranked pool (``pool.order = "start_by"``) serves its queue by.

A pending job's *start-by* is the latest on-prem start at which waiting is still the right call:
its submission plus its wait budget, or, for a deadline job, earlier if its deadline less its
remaining work, a launch latency and the deadline margin comes first. Past it the job bursts (burst
rules (b) and (e) in docs/policy.md). A FIFO pool runs jobs in arrival order, so a short job queued
behind long ones that could wait for hours passes its small budget and goes to the cloud, and a
tight deadline job behind them goes to on-demand. Served by priority, then earliest start-by, the
long jobs give way and still start within their budgets.

The pool applies the rule when a job enters its queue (Slurm: a job_submit plugin setting the job's
priority; docs/policy.md), so a job is in its place the moment the pool first schedules it.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from burster.model import Demand, JobClass
from policies.burst import BurstParams
from policies.cost import CostModel
from policies.slack import wait_budget_s


def start_by(job: Demand, cost: CostModel, params: BurstParams) -> datetime:
    """The job's start-by time (see the module docstring)."""
    by = job.submitted_at + timedelta(seconds=wait_budget_s(job, params))
    if job.deadline is not None and job.job_class is not JobClass.BEST_EFFORT:
        lead_s = job.remaining_s + cost.p.launch_latency_s + params.deadline_margin_s
        return min(by, job.deadline - timedelta(seconds=lead_s))
    return by
