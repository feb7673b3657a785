"""Deadline jobs their estimate says are late already: spot or on-demand, priced by the spread.

A job whose (corrected) estimate puts its end past its deadline even on on-demand started now
misses whichever market it runs on, unless it runs shorter than its estimate. On-demand then buys
its deadline only where spot's interruptions would lose it: for the runs that would just make it
on on-demand but not after an interruption's loss. The finished jobs' true / estimated runtimes
(``Snapshot.runtime_ratios``, the spread left after the correction) say how likely such a run is:
the share of them within one loss of the ratio the deadline allows. Spot's deadline risk is that
share times the chance of an interruption during the run, times the miss $; a long job's band is
narrow, so it goes to spot, and a short one near the line stays on on-demand. With exact
estimates (every ratio 1) a late job is late: no run makes it, and it takes the cheapest market.
The Uniform Progress switch weighs the same way whether a late job on spot should move: the move's
own changeover delays it surely, an interruption only maybe; so does a move back on-prem, late or
not, whose pause (checkpoint write and restart) must save more cloud $ than the misses it adds.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from datetime import datetime

from burster.model import Demand, JobClass, Market, Offering, Placement
from policies.cost import CostModel
from policies.estimates import MIN_RATIOS, sorted_ratios
from policies.offers import OfferBook


def late_by_estimate(job: Demand, now: datetime, cost: CostModel) -> bool:
    """Whether ``job`` has a deadline its estimate says it misses even started now on a launch."""
    if job.deadline is None or job.job_class is JobClass.BEST_EFFORT:
        return False
    return (job.deadline - now).total_seconds() - job.remaining_s - cost.p.launch_latency_s < 0


def share_within(ratios: Sequence[float], low: float, high: float) -> float:
    """The share of ``ratios`` (true / estimated runtimes of finished jobs) in (``low``, ``high``];
    with fewer than ``MIN_RATIOS``, estimates are trusted: 1 if 1 is in it, else 0."""
    if len(ratios) < MIN_RATIOS:
        return 1.0 if low < 1.0 <= high else 0.0
    ordered = sorted_ratios(ratios)
    return (bisect.bisect_right(ordered, high) - bisect.bisect_right(ordered, low)) / len(ordered)


def late_spot_risk_usd(job: Demand, offering: Offering, allowed: float, ratios: Sequence[float],
                       cost: CostModel, run_s: float | None = None) -> float:
    """Expected miss $ spot ``offering`` adds for ``job``, whose deadline allows a whole run of at most
    ``allowed`` times its estimate: P(an interruption during ``run_s``, by default its remaining run)
    x the share of ``ratios`` within one interruption's loss below ``allowed``, x the miss $."""
    run_s = job.remaining_s if run_s is None else run_s
    rate = cost.nodes_for(job, offering) * cost.interruption_rate(offering)
    p_interrupted = 1.0 - math.exp(-rate * run_s / 3600.0)
    band = cost.interruption_loss_s(offering, job.checkpoint_interval_s) / job.est_runtime_s
    return p_interrupted * share_within(ratios, allowed - band, allowed) * cost.miss_usd(job)


def choose_late(job: Demand, now: datetime, cost: CostModel, book: OfferBook, markets: frozenset[Market],
                ratios: Sequence[float]) -> Offering | None:
    """The offering for a ``job`` late by its estimate (``late_by_estimate``): on-demand's job cost
    against each spot offering's plus its ``late_spot_risk_usd``."""
    allowed = ((job.deadline - now).total_seconds() - cost.p.launch_latency_s + job.done_s) / job.est_runtime_s \
        if job.deadline is not None else math.inf
    return book.best_for_deadline(job, markets, math.inf, 0.0,
                                  risk=lambda o: late_spot_risk_usd(job, o, allowed, ratios, cost))


def late_stays_on_spot(p: Placement, spot: Offering, target: Offering, changeover_s: float,
                       ratios: Sequence[float], cost: CostModel) -> bool:
    """Whether a job on spot that its estimate says is late already stays there rather than move to
    on-demand ``target``: the miss $ its spot run adds (``late_spot_risk_usd``) does not exceed what
    the move's own changeover adds (the share of ``ratios`` within it below the ratio its deadline
    allows), plus the move's extra $. Priced on the placement's whole run, so the answer holds while
    it runs."""
    job = p.job
    if job.deadline is None:
        return True
    allowed = _allowed(p)
    stay = late_spot_risk_usd(job, spot, allowed, ratios, cost)
    move = _pause_miss_usd(job, allowed, changeover_s, ratios, cost)
    extra = cost.job_cost_usd(job, target, work_s=job.remaining_s + changeover_s) - cost.job_cost_usd(job, spot)
    return stay <= move + extra


def move_miss_usd(p: Placement, pause_s: float, ratios: Sequence[float], cost: CostModel) -> float:
    """Expected miss $ a move's ``pause_s`` adds to running deadline job ``p``, late by its estimate or
    not: the share of ``ratios`` within the pause below the ratio its deadline allows its whole run,
    x the miss $ (0 without a deadline). Priced on the placement's whole run, so the answer holds
    while it runs. With exact estimates (every ratio 1) a late job is late whatever the pause, and one
    the margin rule lets move (``reclaim.too_tight``) meets its deadline after it: 0 either way."""
    job = p.job
    if job.deadline is None or job.job_class is JobClass.BEST_EFFORT or job.est_runtime_s <= 0:
        return 0.0
    return _pause_miss_usd(job, _allowed(p), pause_s, ratios, cost)


def _allowed(p: Placement) -> float:
    """The most times its estimate running job ``p``'s whole run may take and meet its deadline."""
    assert p.job.deadline is not None
    return (p.job.deadline.timestamp() - p.working_since_ts + p.job.done_s) / p.job.est_runtime_s


def _pause_miss_usd(job: Demand, allowed: float, pause_s: float, ratios: Sequence[float], cost: CostModel) -> float:
    """Miss $ a pause of ``pause_s`` adds to a run allowed ``allowed`` times its estimate: the share of
    ``ratios`` it pushes past the deadline, x the miss $."""
    return share_within(ratios, allowed - pause_s / job.est_runtime_s, allowed) * cost.miss_usd(job)
