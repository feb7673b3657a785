"""What moving a cloud job to another offering costs and saves, as consolidation weighs it.

A move is made before the break: the new nodes boot while the job runs on its old ones, then it
checkpoints and restarts there. Staying costs its remaining run and rework on the nodes it has,
and the wait value of the relaunch pauses its interruptions cause; moving costs the new nodes'
boot and restart billed, the old nodes' checkpoint write, the wait value of the pause, and the new
pool's rework and interruption pauses. With ``price_late``, a move onto or off spot also weighs the
miss $ the spread of runtime estimates puts on a spot run. Read by ``policies.consolidate``; kept apart
so that a launch rule can ask what consolidation would do (BENCHMARKS.md, "A launch where consolidation
would move it": tried, not landed).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime

from burster.model import Demand, JobClass, Market, Offering
from policies.cost import CostModel
from policies.late import late_spot_risk_usd
from policies.slack import slack_s


def room_to_move(job: Demand, now: datetime, cost: CostModel, margin_s: float) -> bool:
    """Whether ``job``'s deadline slack keeps ``margin_s`` after a move's pause (no deadline: always);
    else the deadline rules own it."""
    slack = slack_s(job, now, cost)
    return slack == math.inf or slack - cost.pause_s >= margin_s


def move_saving_usd(job: Demand, current: Offering, current_usd_per_hour: float, target: Offering, cost: CostModel,
                    now: datetime, ratios: Sequence[float], price_late: bool) -> float:
    """Expected $ a move of ``job`` from ``current`` (its nodes billing ``current_usd_per_hour`` in all)
    to ``target`` saves (``ratios``: ``Snapshot.runtime_ratios``, read with ``price_late``)."""
    saved = stay_usd(job, current, cost) - move_usd(job, current_usd_per_hour, target, cost, now)
    if price_late and saved > 0:
        saved += spread_risk_usd(job, current, 0.0, cost, now, ratios) \
            - spread_risk_usd(job, target, cost.pause_s, cost, now, ratios)
    return saved


def stay_usd(job: Demand, current: Offering, cost: CostModel) -> float:
    """Expected $ to finish on the nodes it has (already booted), with its interruptions' pauses."""
    nodes = cost.nodes_for(job, current)
    run_s = job.remaining_s * (1 + cost.rework_fraction(current, job.checkpoint_interval_s, nodes))
    return nodes * current.price_per_hour_usd * run_s / 3600.0 + interruption_pauses_usd(job, current, cost)


def interruption_pauses_usd(job: Demand, offering: Offering, cost: CostModel, run_s: float | None = None) -> float:
    """Wait value of the pauses that interruptions on ``offering`` cause over the rest of the run:
    the rework rate prices a restart as run time, not the wait for a new node to boot, and a move
    trades one pool's interruptions for another's."""
    run_s = job.remaining_s if run_s is None else run_s
    interruptions = cost.nodes_for(job, offering) * cost.interruption_rate(offering) * run_s / 3600.0
    return (interruptions * job.gpus * cost.p.launch_latency_s / 3600.0
            * cost.p.wait_value_usd_per_gpu_hour * (1 + job.priority))


def move_usd(job: Demand, current_usd_per_hour: float, target: Offering, cost: CostModel, now: datetime,
             *, booted: bool = False) -> float:
    """Expected $ to finish on ``target``: its run with boot (``booted``: its nodes are up, the boot
    spent) and restart, the old nodes' checkpoint write, the wait cost of the pause (the boot
    overlaps the job's run on its old nodes), and its interruptions' pauses."""
    restart = job.with_done(job.done_s - cost.p.restart_overhead_s)  # the restart runs again
    write_usd = current_usd_per_hour * cost.p.checkpoint_write_s / 3600.0
    nodes = cost.nodes_for(job, target)
    rework = cost.rework_fraction(target, job.checkpoint_interval_s, nodes)
    run_usd = cost.run_cost_usd(target, nodes, restart.remaining_s, rework, booted=booted)  # (``job_cost_usd``)
    return run_usd + write_usd + cost.wait_cost_usd(job, cost.pause_s, now) + interruption_pauses_usd(job, target, cost)


def break_saving_usd(job: Demand, current: Offering, current_usd_per_hour: float, target: Offering, cost: CostModel,
                     now: datetime, ratios: Sequence[float], price_late: bool) -> float:
    """Expected $ moving ``job`` now onto ``target`` nodes already up saves (make before break, at the
    break): ``move_saving_usd`` with their boot spent and, with ``price_late``, the spread's miss $
    of either pool weighed whatever the price difference (a move off spot may pay by it alone)."""
    saved = stay_usd(job, current, cost) - move_usd(job, current_usd_per_hour, target, cost, now, booted=True)
    if price_late:
        saved += spread_risk_usd(job, current, 0.0, cost, now, ratios) \
            - spread_risk_usd(job, target, cost.pause_s, cost, now, ratios)
    return saved


def spread_risk_usd(job: Demand, offering: Offering, pause_s: float, cost: CostModel, now: datetime,
                    ratios: Sequence[float]) -> float:
    """Miss $ a deadline job's rest of run on spot ``offering`` (after a pause of ``pause_s``) risks
    from the spread of runtime estimates: P(an interruption) x the share of the finished jobs'
    runtime ratios within one interruption's loss below the ratio its deadline allows
    (``late_spot_risk_usd``). 0 on other markets, without a deadline, or with exact estimates and
    the slack consolidation requires."""
    if offering.market is not Market.SPOT or job.deadline is None or job.job_class is JobClass.BEST_EFFORT:
        return 0.0
    allowed = ((job.deadline - now).total_seconds() - pause_s + job.done_s) / job.est_runtime_s
    return late_spot_risk_usd(job, offering, allowed, ratios, cost)
