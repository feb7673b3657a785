"""Consolidation: move a running cloud job to cheaper cloud capacity when that pays for the move.

Spot pools come and go: after an interruption a job may be relaunched on the only pool left, at
two or three times the price of the one it lost. When a cheaper offering is launchable again, the
job is checkpointed (then its nodes drained and terminated) and requeued; the burst rule relaunches
it on the offering it would pick for a fresh launch (or the pool starts it, if reserved GPUs free
up). The move happens only when the requeued job is sure to relaunch at once on that offering (its
wait budget, counted from submission, is spent, and no idle burst node would take it first), and
when the expected cost of staying exceeds the expected cost of moving:
the new nodes' boot, the restart, the old nodes' checkpoint write, the wait cost of the changeover,
and the new offering's own expected rework. A deadline job moves only if its slack still keeps the
margin after the changeover.
"""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import datetime, timedelta

from burster.lifecycle import NodeState
from burster.model import Demand, Offering, Placement, Snapshot
from burster.plan import Checkpoint
from policies.burst import BurstParams, choose, slack_s, wait_budget_s
from policies.cost import CostModel
from policies.offers import OfferBook, offer_book


def consolidate(snapshot: Snapshot, cost: CostModel, params: BurstParams,
                skip: frozenset[str] = frozenset(), wakes: list[datetime] | None = None) -> list[Checkpoint]:
    """Checkpoints that move cloud jobs (on none of the ``skip`` nodes) to cheaper offerings.

    ``wakes`` (if given) receives the instants at which a job held back only by its wait budget
    could move, with nothing else happening (for the simulator's skipping of quiet passes).
    """
    ready = {n.node_id: n.offering for n in snapshot.cloud_nodes
             if n.state is NodeState.READY and n.offering.provider not in snapshot.degraded_providers}
    book = offer_book(snapshot, cost)
    idle = _idle_gpus(snapshot)
    candidates: list[tuple[Placement, Offering]] = []
    for p in snapshot.running:
        if not p.on_cloud:
            continue
        if _lands_on_idle(p.job, idle):
            continue  # requeued, it would land on an idle burst node, not on the cheaper offering
        current = ready.get(p.node_ids[0])
        if current is None or any(i in skip or (i not in ready or ready[i].key != current.key) for i in p.node_ids):
            continue  # not all up, being stopped already, or a gang split over offerings
        if _saving_bound(p, current, book, cost, snapshot) <= 0:
            continue  # no launchable offering could pay for the move (the common case)
        budget_ends = p.job.submitted_at + timedelta(seconds=wait_budget_s(p.job, params))
        if snapshot.now <= budget_ends:  # requeued, it might wait for reserved GPUs instead of relaunching
            if wakes is not None:
                wakes.append(budget_ends + timedelta(microseconds=1))  # the guard lifts just after
            continue
        candidates.append((p, current))
    out: list[Checkpoint] = []
    for p, current in sorted(candidates, key=lambda c: (-c[0].price_per_hour_usd, c[0].job.job_id)):
        job = _now(p, snapshot)
        changeover_s = cost.p.checkpoint_write_s + cost.p.restart_overhead_s + cost.p.launch_latency_s
        slack = slack_s(job, snapshot.now, cost)
        if slack != math.inf and slack - changeover_s + cost.p.launch_latency_s < params.deadline_margin_s:
            continue  # no room for a changeover: the deadline rules own this job
        target = choose(job, snapshot.now, cost, params, book)
        if target is None or target.key == current.key:
            continue
        saved = _stay_usd(job, current, cost) - _move_usd(job, p, target, cost, snapshot)
        if saved <= 0:
            continue
        deadline = snapshot.now + timedelta(seconds=max(cost.p.checkpoint_write_s, 60.0))
        for node_id in p.node_ids:
            out.append(Checkpoint(
                node_id, p.job.job_id, deadline,
                reason=(f"cheaper capacity: move job {p.job.job_id} from {current.key} "
                        f"(${current.price_per_hour_usd:.2f}/h) to {target.key} "
                        f"(${target.price_per_hour_usd:.2f}/h), saving ${saved:.2f} over its "
                        f"remaining {job.remaining_s / 3600.0:.1f} h"),
            ))
    return out


def _idle_gpus(snapshot: Snapshot) -> dict[str, int]:
    """The largest idle burst node (GPUs) per GPU model: the pool gives a queued single-node job
    that fits to such a node before any new launch is up, so a job moved off its node would land
    there. A node launched for a job still pending is that job's."""
    pending = {j.job_id for j in snapshot.pending}
    out: dict[str, int] = {}
    for n in snapshot.cloud_nodes:
        if n.busy or n.state not in _UP or (n.for_job is not None and n.for_job in pending):
            continue
        model = n.offering.gpu_model
        out[model] = max(out.get(model, 0), n.offering.gpus_per_node)
    return out


def _lands_on_idle(job: Demand, idle: dict[str, int]) -> bool:
    if job.nodes > 1:
        return False  # gangs get fresh, co-located nodes
    sizes = [idle.get(job.gpu_model, 0)] if job.gpu_model else list(idle.values())
    return max(sizes, default=0) >= job.gpus


_UP = frozenset({NodeState.LAUNCHING, NodeState.JOINING, NodeState.READY})


def _saving_bound(p: Placement, current: Offering, book: OfferBook, cost: CostModel, snapshot: Snapshot) -> float:
    """An upper bound on what any move saves: to the cheapest launchable offering per useful hour,
    with only the restart and the wait value of the changeover charged."""
    cheapest = book.best(p.job)
    if cheapest is None:
        return 0.0
    low = book.rate(p.job, cheapest)
    left_h = p.remaining_s(snapshot.now) / 3600.0
    changeover_h = (cost.p.checkpoint_write_s + cost.p.restart_overhead_s + cost.p.launch_latency_s) / 3600.0
    wait_usd = p.job.gpus * changeover_h * cost.p.wait_value_usd_per_gpu_hour * (1 + p.job.priority)
    return (book.rate(p.job, current) - low) * left_h - low * cost.p.restart_overhead_s / 3600.0 - wait_usd


def _now(p: Placement, snapshot: Snapshot) -> Demand:
    """The running job as it stands now: its work done so far counted as saved."""
    return replace(p.job, done_s=min(p.done_s(snapshot.now), p.job.est_runtime_s))


def _stay_usd(job: Demand, current: Offering, cost: CostModel) -> float:
    """Expected $ to finish on the nodes it has (already booted)."""
    nodes = cost.nodes_for(job, current)
    run_s = job.remaining_s * (1 + cost.rework_fraction(current, job.checkpoint_interval_s, nodes))
    return nodes * current.price_per_hour_usd * run_s / 3600.0


def _move_usd(job: Demand, p: Placement, target: Offering, cost: CostModel, snapshot: Snapshot) -> float:
    """Expected $ to finish on ``target``: its run with boot and restart, the old nodes' checkpoint
    write, and the wait cost of the changeover."""
    restart = replace(job, done_s=job.done_s - cost.p.restart_overhead_s)  # the restart runs again
    write_usd = p.price_per_hour_usd * cost.p.checkpoint_write_s / 3600.0
    changeover_s = cost.p.checkpoint_write_s + cost.p.restart_overhead_s + cost.p.launch_latency_s
    return (cost.job_cost_usd(restart, target) + write_usd
            + cost.wait_cost_usd(job, changeover_s, snapshot.now))
