"""Preempt for an urgent job: give it a reserved job's GPUs when that job is cheaper on the cloud.

The burst rule sends a job that cannot wait to the cloud, at whatever its cheapest offering costs:
on-demand, when its deadline leaves no slack for spot rework. A job already running on a reserved
node may end before a cloud node could boot: then its node is held for the urgent job from its
end (``Hold``), and nothing is launched. Or it may be far cheaper to run on the cloud (no deadline
or ample slack, so spot): then it checkpoints and requeues (``Preempt``), its node is held for the
urgent job from now, and the requeued job bursts or waits by the usual rules.

A preemption is priced as a swap of cloud hours, made only when the reserved job's GPU-hours are
cheaper on the cloud than the urgent job's: the urgent job's launch is saved; the reserved job runs
on its own cheapest offering for as long as the urgent job would have run (then its GPUs free up
again and move-back may bring it home), pays a relaunch (boot and restart billed) and, when it
has work left after that, a move back; and its pauses cost their wait value. Single-node jobs only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timedelta

from burster.model import Demand, Market, Placement, PoolNode, Snapshot
from burster.plan import Action, Hold, Launch, Preempt
from policies.burst import BurstParams, choose, slack_s
from policies.cost import CostModel
from policies.offers import OfferBook, offer_book


def preempt_for_urgent(snapshot: Snapshot, cost: CostModel, params: BurstParams, launches: Sequence[Launch],
                       protected: frozenset[str]) -> tuple[list[Launch], list[Action]]:
    """The launches kept, and for each on-demand launch a reserved job's GPUs replace more cheaply, a
    Hold (the job ends soon) or a Preempt plus a Hold; dearest launches first, each reserved job and
    node at most once."""
    pending = {j.job_id: j for j in snapshot.pending}
    urgent = [(a, pending[a.job_id]) for a in launches
              if a.job_id in pending and pending[a.job_id].nodes == 1 and a.offering.market is Market.ON_DEMAND]
    if not urgent:
        return list(launches), []
    now = snapshot.now
    book = offer_book(snapshot, cost)
    nodes = {n.node_id: n for n in snapshot.pool_nodes}
    movable = [p for p in snapshot.running if not p.on_cloud and p.stopping_at is None and p.job.nodes == 1
               and len(p.node_ids) == 1 and p.node_ids[0] not in protected]
    replaced: set[str] = set()
    taken: set[str] = set()
    actions: list[Action] = []
    for launch, job in sorted(urgent, key=lambda aj: (-cost.job_cost_usd(aj[1], aj[0].offering), aj[1].job_id)):
        if slack_s(job, now, cost) + cost.p.launch_latency_s < cost.p.checkpoint_write_s:
            continue  # it could not wait for the checkpoint
        launch_usd = cost.job_cost_usd(job, launch.offering)
        rate = cost.run_rate_usd_per_hour(job, launch.offering) / job.gpus
        # a reserved job ending before a cloud node could boot, in time for the deadline, is waited for
        wait_limit_s = min(cost.p.launch_latency_s, slack_s(job, now, cost) + cost.p.launch_latency_s)
        best: tuple[float, float, Placement, str] | None = None
        for p in movable:
            node = nodes.get(p.node_ids[0])
            left_s = p.remaining_s(now)
            if node is None or node.node_id in taken or node.held_for or left_s <= 0 or not _fits(job, p, node):
                continue  # (an overdue job may end any moment, or run on: neither waited for nor sent away)
            usd = 0.0 if left_s <= wait_limit_s else _displace_usd(p, job, rate, cost, params, book, now)
            if usd < launch_usd and (best is None or (launch_usd - usd, -left_s) > best[:2]):
                best = (launch_usd - usd, -left_s, p, node.node_id)
        if best is None:
            continue
        saving, minus_left_s, p, node_id = best
        taken.add(node_id)
        movable.remove(p)
        replaced.add(launch.request_id)
        instead = f"instead of {launch.offering.key} (${launch_usd:.2f})"
        if -minus_left_s <= wait_limit_s:
            ends = now + timedelta(seconds=-minus_left_s)
            actions.append(Hold(node_id, job.job_id, ends, ends + timedelta(seconds=cost.p.launch_latency_s), reason=(
                f"hold {node_id} for job {job.job_id}: reserved job {p.job.job_id} ends there in "
                f"{-minus_left_s:.0f}s, before a cloud node could boot; it runs there {instead}")))
            continue
        deadline = now + timedelta(seconds=2 * cost.p.checkpoint_write_s)
        actions.append(Preempt(p.job.job_id, p.node_ids, deadline, reason=(
            f"requeue reserved job {p.job.job_id} ({p.job.gpus} GPUs, {-minus_left_s / 3600.0:.1f} h left) so that "
            f"job {job.job_id} runs on {node_id} {instead}: saves ${saving:.2f}")))
        actions.append(Hold(node_id, job.job_id, now, deadline + timedelta(seconds=cost.p.launch_latency_s), reason=(
            f"hold {node_id} for job {job.job_id} while {p.job.job_id} checkpoints")))
    return [a for a in launches if a.request_id not in replaced], actions


def incoming(snapshot: Snapshot) -> frozenset[str]:
    """Jobs a preempted reserved job's node is held for: their GPUs are on the way."""
    stopping = {n for p in snapshot.running if p.stopping_at is not None and not p.on_cloud for n in p.node_ids}
    return frozenset(n.held_for for n in snapshot.pool_nodes if n.held_for and n.node_id in stopping)


def _fits(job: Demand, p: Placement, node: PoolNode) -> bool:
    return (not job.gpu_model or job.gpu_model == node.gpu_model) and node.free_gpus < job.gpus \
        <= node.free_gpus + p.job.gpus


def _displace_usd(p: Placement, urgent: Demand, urgent_rate: float, cost: CostModel, params: BurstParams,
                  book: OfferBook, now: datetime) -> float:
    """Expected $ of sending reserved job ``p`` to the cloud for as long as ``urgent`` runs: inf when
    it has no offering, its deadline would not keep the margin, or its GPU-hours cost no less there
    than the urgent job's (``urgent_rate``, $ per GPU-hour; a swap moves work to a cheaper market,
    it does not merely shorten the cloud run)."""
    pause_s = cost.p.checkpoint_write_s + cost.p.launch_latency_s + cost.p.restart_overhead_s
    job = p.job_now(now)
    later = now + timedelta(seconds=pause_s)
    if slack_s(job, later, cost) < params.deadline_margin_s + cost.p.restart_overhead_s:
        return math.inf
    offering = choose(job, later, cost, params, book)
    if offering is None or cost.run_rate_usd_per_hour(job, offering) / job.gpus >= urgent_rate:
        return math.inf
    away_s = min(job.remaining_s, urgent.remaining_s)
    away = replace(job, est_runtime_s=away_s + cost.p.restart_overhead_s, done_s=0.0)
    usd = cost.job_cost_usd(away, offering) + cost.deadline_risk_usd(away, offering, slack_s(job, later, cost))
    usd += cost.wait_cost_usd(job, pause_s, now, deadline=False)
    if job.remaining_s > away_s:  # it comes back: one more pause
        usd += cost.wait_cost_usd(job, cost.p.checkpoint_write_s + cost.p.restart_overhead_s, now, deadline=False)
    return usd
