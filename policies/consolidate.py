"""Consolidation: move a running cloud job to cheaper cloud capacity when that pays for the move.

Spot pools come and go: after an interruption a job may be relaunched on the only pool left, at
two or three times the price of the one it lost. When a cheaper offering is launchable again and
the move pays, the job's new nodes are launched first, while it keeps running (make before
break): once all of them are up, the job is checkpointed, its old nodes drained and terminated,
and the pool starts it on the nodes launched for it. A capacity error on the new offering costs
the job nothing (the offering is blocked and the job stays where it is); the job pauses only for
the checkpoint and the restart, not for a boot.

The move is made to where the burst rule would launch the job now, when it saves more than it costs
(``policies.moves``: staying against the boot, the restart, the pause and the new pool's rework; with
``price_late``, the miss $ the spread of runtime estimates puts on a spot run, as a job switched to
on-demand because its spot run risked its deadline was moved straight back to another spot pool for
cents, and missed when it ran longer than its estimate). A deadline job moves only if its slack keeps
the deadline margin after the changeover. The nodes a deadline switch launched are this rule's once
the switch lapses: a job ahead of schedule again moves onto them only if that pays (``_at_break``).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from datetime import datetime, timedelta

from burster.lifecycle import NodeState
from burster.model import Demand, InFlight, JobClass, Market, Node, Offering, Placement, Snapshot
from burster.plan import Action, Checkpoint, Launch, Terminate, request_id
from policies.burst import BurstParams, choose
from policies.cost import CostModel
from policies.deadline import holds_gang, launched_for_running
from policies.guards import NodeRoom, replays
from policies.moves import break_saving_usd, interruption_pauses_usd, move_saving_usd, room_to_move
from policies.offers import OfferBook, flights_by_job, kept_in_flight, offer_book
from policies.slack import spot_rework_limit


def consolidate(snapshot: Snapshot, cost: CostModel, params: BurstParams,
                skip: frozenset[str] = frozenset(), *, room: NodeRoom | None = None,
                skip_jobs: frozenset[str] = frozenset(), wakes: list[datetime] | None = None) -> list[Action]:
    """Launches of cheaper nodes for running cloud jobs (on none of the ``skip`` nodes, none of the
    ``skip_jobs``: e.g. switched to on-demand in this pass), and the
    checkpoints that move a job once the nodes launched for it are all up (or, where a lapsed
    switch's move no longer pays, their terminate). A move's launch that the
    node cap leaves no ``room`` for is held back there (with the cap full, or its slots kept for a
    launch held back before, none is worked out but a move in flight, asked again). ``wakes`` (if
    given) receives the instants a deadline job's choice may turn to a spot pool as its work gets
    done (``spot_qualifies_at``)."""
    ready = {n.node_id: n.offering for n in snapshot.cloud_nodes
             if n.state is NodeState.READY and n.offering.provider not in snapshot.degraded_providers}
    book = offer_book(snapshot, cost)
    launched = launched_for_running(snapshot)
    out: list[Action] = []
    candidates: list[tuple[Placement, Offering]] = []
    # with no room, only a move in flight (``Snapshot.in_flight``) is worked out: the same launch asked
    # again, it takes no slot (else it waits unasked until listed, or forgotten a listing grace later)
    opened = room is None or room.open
    flying = frozenset() if opened else frozenset(f.job_id for f in snapshot.in_flight)
    again = frozenset() if opened else replays(snapshot)
    flights = flights_by_job(snapshot)
    for p in snapshot.running:
        if not p.on_cloud or p.job.job_id in skip_jobs:
            continue
        current = ready.get(p.node_ids[0])
        if current is None or any(i in skip or (i not in ready or ready[i].key != current.key) for i in p.node_ids):
            continue  # not all up, being stopped already, or a gang split over offerings
        new = launched.get(p.job.job_id)
        if new is not None:  # its new nodes were launched: move once all are up and hold its gang
            if all(n.state is NodeState.READY for n in new) and holds_gang(p.job, new):
                out += _at_break(p, current, new, cost, params, snapshot, skip)
            continue  # (a short set, a node of it ended, is given back: reclaim.give_back_short)
        if (opened or p.job.job_id in flying) and _saving_bound(p, current, book, cost, snapshot) > 0:
            candidates.append((p, current))  # (else no offering could pay for a move, or none has room)
    for p, current in sorted(candidates, key=lambda c: (-c[0].price_per_hour_usd, c[0].job.job_id)):
        launch = _launch_if_it_pays(p, current, cost, params, book, snapshot, wakes, flights.get(p.job.job_id, ()))
        if launch is None or not (opened or launch.request_id in again):
            continue
        if room is None or room.take(launch):
            out.append(launch)
    return out


def _launch_if_it_pays(p: Placement, current: Offering, cost: CostModel, params: BurstParams, book: OfferBook,
                       snapshot: Snapshot, wakes: list[datetime] | None = None,
                       flights: Sequence[InFlight] = ()) -> Launch | None:
    """A move of ``p`` where it pays: to its move in flight (``flights``: the job's launches in flight)
    while that is launchable (``kept_in_flight``), else to the burst rule's choice."""
    key = (p.job.job_id, p.job.attempt, p.job.est_runtime_s, params)
    kept = kept_in_flight(flights, book, lambda o: _move_id(p.job, o, cost)) if flights else None
    target = kept or book.targets.get(key, current)
    if target is not None and target.key == current.key and key in book.targets:
        return None  # most passes: the job is already where it would be launched (no Demand built)
    job = p.job_now(snapshot.now)
    if not room_to_move(job, snapshot.now, cost, params.deadline_margin_s):
        return None
    if kept is None and key not in book.targets:  # (a move in flight stays while it stands: no wake)
        target = choose(job, snapshot.now, cost, params, book)
        if _target_holds(job, snapshot, cost, params):
            book.targets[key] = target
        elif wakes is not None and (at := spot_qualifies_at(job, snapshot.now, cost, params, book)) is not None:
            wakes.append(at)
    if target is None or target.key == current.key:
        return None
    saved = move_saving_usd(job, current, p.price_per_hour_usd, target, cost, snapshot.now, snapshot.runtime_ratios,
                            params.price_late)
    if saved <= 0:
        return None
    count = cost.nodes_for(job, target)
    return Launch(
        offering=target, count=count,
        reason=(f"cheaper capacity for running job {job.job_id}: {target.key} "
                f"(${target.price_per_hour_usd:.2f}/h) instead of {current.key} "
                f"(${current.price_per_hour_usd:.2f}/h) saves ${saved:.2f} over its remaining "
                f"{job.remaining_s / 3600.0:.1f} h; it moves once the new nodes are up"),
        request_id=_move_id(job, target, cost),
        job_id=job.job_id, team=job.team, project=job.project, sprint=job.sprint,
        est_hours=(job.remaining_s + cost.p.launch_latency_s) / 3600.0,
    )


def _move_id(job: Demand, target: Offering, cost: CostModel) -> str:
    return request_id("move", job.job_id, job.attempt, target.key, cost.nodes_for(job, target))


def spot_qualifies_at(job: Demand, now: datetime, cost: CostModel, params: BurstParams,
                      book: OfferBook) -> datetime | None:
    """When the next spot pool for a running deadline job comes within its rework limit: the limit,
    room over remaining work (``spot_rework_limit``), grows as the work gets done, so a pool whose
    rework fraction f is above it now qualifies once remaining = room / f. None: none ever will."""
    limit = spot_rework_limit(job, now, cost, params)
    if not 0.0 < limit < math.inf or params.market_order:
        return None
    fractions = book.spot_fractions(job)
    above = bisect.bisect_right(fractions, limit)  # the first pool above the limit
    if above == len(fractions):
        return None
    room = limit * job.remaining_s
    return now + timedelta(seconds=job.remaining_s - room / fractions[above])


def _target_holds(job: Demand, snapshot: Snapshot, cost: CostModel, params: BurstParams) -> bool:
    """Whether a running job's choice (``choose``) stays the same as it runs, while the offerings
    do: it depends on the job's shape alone unless a spot run's rework limit bounds it, and that
    limit (slack over remaining work) moves as the work gets done."""
    return bool(params.market_order) or spot_rework_limit(job, snapshot.now, cost, params) == math.inf


def _at_break(p: Placement, current: Offering, new: Sequence[Node], cost: CostModel, params: BurstParams,
              snapshot: Snapshot, skip: frozenset[str]) -> list[Action]:
    """Once the nodes launched for ``p``'s job are all up: the checkpoint that moves it there. A move
    off spot onto on-demand of a job ahead of schedule again (a deadline switch whose reason lapsed
    while they booted: its slack back over the changeover and the margin) is made only while it
    pays with their boot spent (``break_saving_usd``); else the nodes go back and the job stays. A
    switch launched on a belief of the job's runtime that the next finished job changed had moved
    it to on-demand, and straight back to spot for cents. (A move to cheaper capacity is made as
    launched: its saving moved only by the spread's noise; a job whose switch lapsed as its
    believed end neared moves too: an overrun job is believed to end soon, then runs on.)"""
    target = new[0].offering
    job = p.job_now(snapshot.now)
    off_spot = current.market is Market.SPOT and target.market is Market.ON_DEMAND
    if not off_spot or not _ahead(job, snapshot.now, cost, params):
        return _checkpoints(p, current, target, cost, snapshot)
    saved = break_saving_usd(job, current, p.price_per_hour_usd, target, cost, snapshot.now,
                             snapshot.runtime_ratios, params.price_late)
    ids = tuple(sorted(n.node_id for n in new))
    if saved > 0 or any(i in skip for i in ids):  # (protected nodes are not given back)
        return _checkpoints(p, current, target, cost, snapshot)
    return [Terminate(ids, request_id=request_id("drop-move", job.job_id, *ids),
                      reason=(f"the nodes launched to move job {job.job_id} to {target.key} are up, but the move "
                              f"no longer pays (${saved:.2f} over its remaining {job.remaining_s / 3600.0:.1f} h): "
                              f"they go back, it stays on {current.key}"))]


def _ahead(job: Demand, now: datetime, cost: CostModel, params: BurstParams) -> bool:
    """Whether a deadline job's slack (its estimate's) is at least a changeover and the margin: not
    behind schedule (``policies.slack.behind_schedule``)."""
    if job.deadline is None or job.job_class is JobClass.BEST_EFFORT:
        return False
    slack = (job.deadline - now).total_seconds() - job.remaining_s
    return slack >= cost.pause_s + params.deadline_margin_s


def _checkpoints(p: Placement, current: Offering, target: Offering, cost: CostModel,
                 snapshot: Snapshot) -> list[Action]:
    deadline = cost.checkpoint_deadline(snapshot.now)
    return [Checkpoint(node_id, p.job.job_id, deadline,
                       reason=(f"cheaper capacity: the nodes launched for job {p.job.job_id} on {target.key} "
                               f"are up: move it off {current.key}"))
            for node_id in p.node_ids]


def _saving_bound(p: Placement, current: Offering, book: OfferBook, cost: CostModel, snapshot: Snapshot) -> float:
    """An upper bound on what any move saves: to the cheapest launchable offering per useful hour,
    with only the restart and the wait value of the pause charged. Linear in the hours left, with
    coefficients memoized per job shape and offering for this book."""
    job = p.job
    key = (job.gpu_model, job.nodes, job.gpus, job.checkpoint_interval_s, job.priority, current.key)
    line = book.bounds.get(key)
    if line is None:
        cheapest = book.best(job)
        if cheapest is None:
            line = (0.0, 1.0)
        else:
            low = book.rate(job, cheapest)
            per_h = book.rate(job, current) - low + interruption_pauses_usd(job, current, cost, 3600.0)
            fixed = (low * cost.p.restart_overhead_s / 3600.0
                     + job.gpus * cost.pause_s / 3600.0 * cost.p.wait_value_usd_per_gpu_hour * (1 + job.priority))
            line = (per_h, fixed)
        book.bounds[key] = line
    per_h, fixed = line
    return per_h * p.remaining_s(snapshot.now) / 3600.0 - fixed
