"""Running jobs under notice or falling behind: interruption handshakes and spot -> on-demand switches.

- A spot interruption notice on a busy node asks the job to checkpoint before the node goes; the
  job requeues with its saved work and is relaunched on the next pass. An idle node under notice
  is simply terminated.
- Uniform Progress (Can't Be Late, NSDI'24): a deadline job on spot stays there while its slack
  covers a changeover plus a margin; once it does not, it moves to on-demand,
  where it cannot be preempted again: on-demand nodes are launched for it first, and it is
  checkpointed onto them once they are up (requeued at once only when no on-demand is launchable).
  As the job runs while they boot, the changeover is the checkpoint write and the restart.
- With ``price_risk`` (``policy.risk_switch``) a job that is not behind moves the same way when its
  spot run risks more deadline-miss $ than the move costs (the pool may start a deadline job on an
  idle spot node the burst rule would never have launched for it).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

from burster.lifecycle import NodeState
from burster.model import Demand, InFlight, JobClass, Market, Node, Offering, Placement, Snapshot
from burster.plan import Action, Checkpoint, Launch, Terminate, request_id
from policies.cost import CostModel
from policies.late import late_stays_on_spot
from policies.offers import ON_DEMAND_ONLY, OfferBook, flights_by_job, kept_in_flight, offer_book
from policies.slack import behind_schedule


def handle_interruptions(snapshot: Snapshot) -> list[Action]:
    nodes = {n.node_id: n for n in snapshot.cloud_nodes}
    out: list[Action] = []
    for notice in sorted(snapshot.interruptions, key=lambda i: (i.terminate_at, i.node_id)):
        node = nodes.get(notice.node_id)
        if node is None or node.state is not NodeState.READY:
            continue  # gone, or already being checkpointed / drained
        if node.busy and node.job_id is not None:
            out.append(Checkpoint(
                node.node_id, node.job_id, notice.terminate_at,
                reason=(f"{notice.kind} notice for {node.node_id} ({node.offering.key}): checkpoint job "
                        f"{node.job_id} before {notice.terminate_at:%H:%M:%S}, then requeue it"),
                cordon=True,  # the node goes: a job started there as this one leaves would be cut short
            ))
        else:
            out.append(Terminate((node.node_id,), request_id=request_id("interrupted", node.node_id),
                                 reason=f"{notice.kind} notice for idle node {node.node_id}"))
    return out


def switch_behind_schedule(snapshot: Snapshot, cost: CostModel, margin_s: float, *,
                           price_risk: bool = False, price_late: bool = False) -> list[Action]:
    """Uniform Progress switches, made before the break: on-demand nodes are launched for a deadline
    job on spot that fell behind while it keeps running; once all of them are up, the job is
    checkpointed and the pool restarts it on them (a node launched for a job is that job's). With
    no on-demand offering launchable, the job is checkpointed at once and requeued.

    ``price_risk``: also switch a job that is not behind but whose spot run risks its deadline more
    than moving costs: its expected miss $ there (``CostModel.deadline_risk_usd``: an interruption
    that loses more unsaved work than its slack, or several whose average losses add up to more)
    above the extra $ of running on on-demand after a changeover, both priced on the placement's
    whole run (so the answer does not change while it runs). The burst rule never launches such a
    run, but the pool may start a deadline job on an idle spot node by itself; such a switch needs
    an on-demand offering (no requeue)."""
    noticed = {i.node_id for i in snapshot.interruptions}
    noticed |= {n.node_id for n in snapshot.cloud_nodes if n.state is not NodeState.READY}
    changeover = cost.pause_s  # the job runs while its nodes boot
    out: list[Action] = []
    launched: dict[str, list[Node]] | None = None
    book: OfferBook | None = None
    flights = flights_by_job(snapshot)
    offering_of = {n.node_id: n.offering for n in snapshot.cloud_nodes} if price_risk else {}
    on_spot = [p for p in snapshot.running if p.on_cloud and p.market is Market.SPOT]
    for p in sorted(on_spot, key=lambda p: p.job.job_id):
        job = p.job
        if job.deadline is None:
            continue
        if job.job_class is JobClass.BEST_EFFORT or any(n in noticed for n in p.node_ids):
            continue
        left_s = p.remaining_s(snapshot.now)
        slack = (job.deadline - snapshot.now).total_seconds() - left_s
        if left_s <= changeover or 0 <= slack < changeover:  # the move would make it late: it stays
            continue
        target = None
        if not behind_schedule(left_s, slack, changeover, margin_s):
            if not price_risk or (spot := offering_of.get(p.node_ids[0])) is None:
                continue
            book = book or offer_book(snapshot, cost)
            target = _on_demand(job, book, flights, cost)
            # priced on the placement's whole run and its slack, both fixed while it runs: the same answer
            # at every pass (memoized), and no float drift from the clock
            run_slack = job.deadline.timestamp() - p.ends_at_ts
            why = None if target is None else _risk_reason(job, spot, target, run_slack, changeover, cost)
            if why is None:
                continue
        else:
            why = (f"job {job.job_id} on spot has {slack:.0f}s slack < changeover {changeover:.0f}s "
                   f"+ margin {margin_s:.0f}s")
        if launched is None:
            launched = launched_for_running(snapshot)
        mine = launched.get(job.job_id, [])
        if price_late and not any(n.offering.market is Market.ON_DEMAND for n in mine) \
                and job.deadline.timestamp() < p.ends_at_ts and (spot := _spot_of(snapshot, p)) is not None:
            book = book or offer_book(snapshot, cost)
            target = target or _on_demand(job, book, flights, cost)
            if target is None or late_stays_on_spot(p, spot, target, changeover, snapshot.runtime_ratios, cost):
                continue  # late by its estimate either way: on-demand would buy no more than it costs
        to_spot = tuple(sorted(n.node_id for n in mine if n.offering.market is not Market.ON_DEMAND))
        if to_spot:  # a move to cheaper spot under way would leave it behind on spot again: dropped
            out.append(Terminate(to_spot, request_id=request_id("drop-move", job.job_id, *to_spot),
                                 reason=f"{why}: drop its move to spot ({', '.join(to_spot)}) for on-demand"))
        demand = [n for n in mine if n.offering.market is Market.ON_DEMAND]
        if demand:  # a short set (a node ended before the move) is given back: reclaim.give_back_short
            if all(n.state is NodeState.READY for n in demand) and holds_gang(job, demand):
                out += _checkpoints(p, snapshot, cost, f"{why}: its on-demand nodes are up, move it there")
            continue  # its nodes are booting (or being moved onto): wait for them
        book = book or offer_book(snapshot, cost)
        target = target or _on_demand(job, book, flights, cost)
        if target is None:
            out += _checkpoints(p, snapshot, cost, f"{why}: no on-demand offering launchable, checkpoint and requeue")
            continue
        count = cost.nodes_for(job, target)
        out.append(Launch(
            offering=target, count=count,
            reason=f"{why}: launch {count} x {target.key} for it; it moves once they are up",
            request_id=_switch_id(job, target, cost),
            job_id=job.job_id, team=job.team, project=job.project, sprint=job.sprint,
            est_hours=(p.remaining_s(snapshot.now) + cost.p.launch_latency_s) / 3600.0,
        ))
    return out


def _switch_id(job: Demand, target: Offering, cost: CostModel) -> str:
    return request_id("switch", job.job_id, job.attempt, target.key, cost.nodes_for(job, target))


def _on_demand(job: Demand, book: OfferBook, flights: dict[str, list[InFlight]], cost: CostModel) -> Offering | None:
    """Where to switch ``job``: its switch in flight while launchable (``kept_in_flight``), else the
    cheapest on-demand offering."""
    kept = kept_in_flight(flights.get(job.job_id, ()), book, lambda o: _switch_id(job, o, cost)) if flights else None
    return kept or book.best(job, ON_DEMAND_ONLY)


@functools.lru_cache(maxsize=4096)
def _risk_reason(job: Demand, spot: Offering, target: Offering, slack_s: float, changeover_s: float,
                 cost: CostModel) -> str | None:
    """Why ``job`` (its placement's run, ``slack_s`` ahead) should leave ``spot`` for on-demand ``target``
    although it is not behind, or None: staying risks more deadline-miss $ than the move costs."""
    risk = cost.deadline_risk_usd(job, spot, slack_s)
    if risk <= 0.0 or slack_s < changeover_s:
        return None
    extra = cost.job_cost_usd(job, target, work_s=job.remaining_s + changeover_s) - cost.job_cost_usd(job, spot)
    if risk <= extra:
        return None
    return (f"job {job.job_id} on spot {spot.key} risks its deadline: interruptions there could cost more "
            f"than its {slack_s:.0f}s slack (expected miss ${risk:.2f} > ${extra:.2f} to move to on-demand)")


def _spot_of(snapshot: Snapshot, p: Placement) -> Offering | None:
    """The spot offering ``p`` runs on (None if its first node is not listed)."""
    node_id = p.node_ids[0]
    return next((n.offering for n in snapshot.cloud_nodes if n.node_id == node_id), None)


def _checkpoints(p: Placement, snapshot: Snapshot, cost: CostModel, reason: str) -> list[Action]:
    deadline = cost.checkpoint_deadline(snapshot.now)
    return [Checkpoint(node_id, p.job.job_id, deadline, reason=reason) for node_id in p.node_ids]


def launched_for_running(snapshot: Snapshot) -> dict[str, list[Node]]:
    """Nodes launched for a running job that it does not run on yet (a move in progress), by job id."""
    waiting = [n for n in snapshot.cloud_nodes if n.for_job is not None and not n.busy and n.state in UP]
    if not waiting:
        return {}
    running = {p.job.job_id for p in snapshot.running}
    out: dict[str, list[Node]] = {}
    for n in waiting:
        if n.for_job in running:
            out.setdefault(n.for_job, []).append(n)
    return out


def holds_gang(job: Demand, nodes: Iterable[Node]) -> bool:
    """Whether ``nodes`` (launched for ``job``) hold all its gang (``Demand.held_by``)."""
    return job.held_by(n.offering for n in nodes)


UP = frozenset({NodeState.REQUESTED, NodeState.LAUNCHING, NodeState.JOINING, NodeState.READY})
