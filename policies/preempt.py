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
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from burster.model import Demand, Market, Offering, Placement, PoolNode, Snapshot
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
    nodes = {n.node_id: n for n in snapshot.pool_nodes}
    movable = [p for p in snapshot.running if not p.on_cloud and p.stopping_at is None and p.job.nodes == 1
               and len(p.node_ids) == 1 and p.node_ids[0] not in protected]
    away = _Away(cost, params, offer_book(snapshot, cost), now)
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
            if left_s <= wait_limit_s:
                usd = 0.0
            else:
                floor = away.floor_usd(p, job, rate)
                if launch_usd - floor <= 0 or (best is not None and launch_usd - floor < best[0]):
                    continue  # it cannot beat the launch, or the best so far
                usd = away.usd(p, job)
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


@dataclass(frozen=True, slots=True)
class _Target:
    """Where a reserved job would go if sent away now, and what of its price does not depend on how long."""

    job: Demand  # as it stands now (work done counted)
    offering: Offering
    hourly_usd: float  # its gang's expected $ per hour of run there (rework included)
    per_gpu_usd: float  # the same per GPU
    slack_s: float  # its deadline slack after the pause
    pause_usd: float  # wait value of the pause: checkpoint write, boot, restart


class _Away:
    """The price of sending reserved jobs to the cloud, per job worked out once per pass.

    ``usd``: expected $ of sending a job away for as long as an urgent job runs: its cloud run, a
    restart and a boot billed, its deadline risk there, its pause's wait value and, when it has work
    left after that, one more pause for the move back. Inf when it has no offering, its deadline
    would not keep the margin, or its GPU-hours cost no less on the cloud than the urgent job's
    (a swap moves work to a cheaper market, it does not merely shorten the cloud run)."""

    def __init__(self, cost: CostModel, params: BurstParams, book: OfferBook, now: datetime) -> None:
        self.cost, self.params, self.book, self.now = cost, params, book, now
        self._targets: dict[str, _Target | None] = {}

    def target(self, p: Placement) -> _Target | None:
        key = p.job.job_id
        if key not in self._targets:
            self._targets[key] = self._target(p)
        return self._targets[key]

    def _target(self, p: Placement) -> _Target | None:
        cost = self.cost
        pause_s = cost.p.checkpoint_write_s + cost.p.launch_latency_s + cost.p.restart_overhead_s
        job = p.job_now(self.now)
        later = self.now + timedelta(seconds=pause_s)
        slack = slack_s(job, later, cost)
        if slack < self.params.deadline_margin_s + cost.p.restart_overhead_s:
            return None
        offering = choose(job, later, cost, self.params, self.book)
        if offering is None:
            return None
        hourly = cost.run_rate_usd_per_hour(job, offering)
        return _Target(job, offering, hourly, hourly / job.gpus, slack,
                       cost.wait_cost_usd(job, pause_s, self.now, deadline=False))

    def floor_usd(self, p: Placement, urgent: Demand, urgent_rate: float) -> float:
        """A lower bound of ``usd`` (inf where ``usd`` is), cheap: no billing rules, no risk."""
        t = self.target(p)
        if t is None or t.per_gpu_usd >= urgent_rate:
            return math.inf
        away_s = min(t.job.remaining_s, urgent.remaining_s)
        # billed >= run - half an increment (Azure rounds down) >= run - 60 s
        return t.pause_usd + t.hourly_usd * max(away_s - 60.0, 0.0) / 3600.0

    def usd(self, p: Placement, urgent: Demand) -> float:
        t = self.target(p)
        assert t is not None
        cost = self.cost
        away_s = min(t.job.remaining_s, urgent.remaining_s)
        run = replace(t.job, est_runtime_s=away_s + cost.p.restart_overhead_s, done_s=0.0)
        usd = cost.job_cost_usd(run, t.offering) + cost.deadline_risk_usd(run, t.offering, t.slack_s) + t.pause_usd
        if t.job.remaining_s > away_s:  # it comes back: one more pause
            usd += cost.wait_cost_usd(t.job, cost.p.checkpoint_write_s + cost.p.restart_overhead_s, self.now,
                                      deadline=False)
        return usd
