"""The hard budgets' stop: when spend plus the burn until nodes can be stopped would pass a budget
(global, or a team's on its own spend and nodes), busy nodes are checkpointed and idle ones
terminated, most expensive first, until it fits.

A run that began on its node less than a checkpoint write (``GuardParams.checkpoint_write_s``) or a
tick ago is stopped without one (its checkpoint is due now: the reconciler drains it in the same
pass): its unsaved work is less than the write would bill, or than a pass's gap. That is the run
the pool itself starts on another team's idle node for a team at its budget (the node's bill is the
job's team's from then, ``burster.node_bills``): given the grace, each such start cost the team a
checkpoint write and more past its budget, and a requeued job was given the next node that fell
idle; a run begun since the last pass was started by the pool, not by a launch this stop allowed.

A pass whose pool cannot be read decides nothing else, but the stop still holds (``blind_stop``): the
nodes it stops are terminated at once, as no checkpoint can be asked of a pool that does not answer
(their jobs lose the work since their last checkpoint; a hard budget is the user's word that this is
better than running past it).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from datetime import timedelta
from typing import TYPE_CHECKING

from burster.lifecycle import LIVE_STATES, NodeState
from burster.model import Node, Snapshot
from burster.plan import Action, Checkpoint, Plan, Terminate, request_id
from policies.budget_room import in_flight_burn, per_period

if TYPE_CHECKING:
    from policies.guards import GuardParams

_LEAVING = frozenset({NodeState.CHECKPOINTING, NodeState.DRAINING, NodeState.TERMINATING})


def enforce_budget(snapshot: Snapshot, params: GuardParams, tick_s: float) -> list[Action]:
    """When spend plus the burn until nodes can be stopped (a tick, plus ``stop_grace_s`` for a
    checkpoint) would pass the hard budget, stop the burn: checkpoint busy nodes (deadline: the
    grace) and terminate idle ones, most expensive first, until it fits."""
    if params.total_budget_usd is None:
        return []
    return _stop_burn(snapshot, params, tick_s, "hard budget", params.total_budget_usd,
                      snapshot.spend.total_usd, _live_by_price(snapshot), in_flight_burn(snapshot))


def enforce_team_budgets(snapshot: Snapshot, params: GuardParams, tick_s: float,
                         stopping: Iterable[Action] = ()) -> list[Action]:
    """``enforce_budget`` for each team's hard budget: its own spend and its own nodes (those
    ``stopping`` stops already are left out, their burn not counted)."""
    if not params.team_budget_usd:
        return []
    stopped = {i for a in stopping for i in (a.node_ids if isinstance(a, Terminate) else
                                             (a.node_id,) if isinstance(a, Checkpoint) else ())}
    live = [n for n in _live_by_price(snapshot) if n.node_id not in stopped]
    spent = dict(snapshot.spend.by_team_usd)
    out: list[Action] = []
    for team, budget in sorted(params.team_budget_usd.items()):
        out += _stop_burn(snapshot, params, tick_s, f"team {team}'s hard budget", budget, spent.get(team, 0.0),
                          [n for n in live if n.team == team], in_flight_burn(snapshot, team))
    return out


def blind_stop(snapshot: Snapshot, params: GuardParams, tick_s: float) -> Plan:
    """The hard budgets' stop alone, for a pass whose pool could not be read (``snapshot`` has no
    pending, running or pool nodes; what runs on each cloud node is unknown): each node the stop
    would checkpoint is terminated now instead."""
    stopping = enforce_budget(snapshot, params, tick_s)
    stopping += enforce_team_budgets(snapshot, params, tick_s, stopping)
    unread = "; the pool could not be read: terminated without a checkpoint"
    return Plan(tuple(replace(a, reason=a.reason + unread) if isinstance(a, Terminate) else
                      Terminate((a.node_id,), reason=a.reason + unread, request_id=request_id("budget", a.node_id))
                      for a in stopping if isinstance(a, Terminate | Checkpoint)))


def _live_by_price(snapshot: Snapshot) -> list[Node]:
    return sorted((n for n in snapshot.cloud_nodes if n.state in LIVE_STATES),
                  key=lambda n: (-n.offering.price_per_hour_usd, n.node_id))


def _stop_burn(snapshot: Snapshot, params: GuardParams, tick_s: float, what: str, budget: float, spent: float,
               live: list[Node], unstoppable_per_h: float) -> list[Action]:
    """Stop ``live`` nodes, dearest first, until the burn over the stop's horizon fits ``budget``;
    ``unstoppable_per_h``: the burn of launches in flight, which no action reaches until listed."""
    horizon_s = tick_s + 2 * params.stop_grace_s
    burn_per_h = sum(n.offering.price_per_hour_usd for n in live) + unstoppable_per_h
    over = spent + burn_per_h * horizon_s / 3600.0 - budget
    out: list[Action] = []
    started: dict[str, float] | None = None
    for n in live:
        if over <= 0:
            break
        if n.node_id in params.protected_node_ids or n.protected or n.state in _LEAVING:
            continue
        reason = f"{what} ${budget:,.2f}{per_period(snapshot.spend.period)} reached: stop {n.node_id}"
        if n.busy and n.job_id:
            if started is None:
                started = _run_ages_s(snapshot)
            age_s = started.get(n.node_id)
            grace_s = params.stop_grace_s
            if age_s is not None and age_s < max(params.checkpoint_write_s, tick_s):
                grace_s = 0.0
                within = "a checkpoint write" if age_s < params.checkpoint_write_s else "a tick"
                reason += f" (job {n.job_id} began there {age_s:.0f}s ago, less than {within}: drained without one)"
            out.append(Checkpoint(n.node_id, n.job_id, snapshot.now + timedelta(seconds=grace_s), reason, cordon=True))
        else:
            out.append(Terminate((n.node_id,), reason=reason, request_id=request_id("budget", n.node_id)))
        over -= n.offering.price_per_hour_usd * horizon_s / 3600.0
    return out


def _run_ages_s(snapshot: Snapshot) -> dict[str, float]:
    """Seconds since the run on each cloud node began."""
    now = snapshot.now
    return {i: (now - p.started_at).total_seconds() for p in snapshot.running if p.on_cloud for i in p.node_ids}
