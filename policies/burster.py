"""Burster's own policy: estimates corrected, then interruptions, deadline switches, short gangs given back,
burst, reclaim, guards."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import partial

from burster.model import Snapshot
from burster.plan import Action, Checkpoint, Drain, Hold, Launch, Plan
from policies.budget_stop import blind_stop, enforce_budget, enforce_team_budgets
from policies.burst import BurstParams, burst
from policies.consolidate import consolidate
from policies.cost import CostModel
from policies.deadline import handle_interruptions, launched_for_running, switch_behind_schedule
from policies.defrag import held_moves, hold_nodes
from policies.estimates import believe_overruns, corrected, runtime_corrections, with_reloads
from policies.guards import (
    GuardParams,
    NodeRoom,
    apply_guards,
    may_reshape,
    node_ends_s,
    one_per_node,
    wanted_until_all,
)
from policies.preempt import incoming, may_turn_urgent, preempt_for_urgent
from policies.queue import ReservedQueue
from policies.quiet import with_quiet_until
from policies.reclaim import ReclaimParams, give_back_short, idle_ttl, move_back, reserved_room, stopped_by
from policies.standby import StandbyParams, standby


@dataclass(frozen=True, slots=True)
class BursterParams:
    burst: BurstParams = field(default_factory=lambda: BurstParams(defer_to_budget=True, market_quantile=0.9,
                                                                                  price_late=True))
    reclaim: ReclaimParams = field(default_factory=ReclaimParams)
    guards: GuardParams = field(default_factory=GuardParams)
    preempt_onprem: bool = True  # requeue a reserved job for an urgent one when that is cheaper (policies/preempt.py)
    # correct every runtime estimate by what finished jobs showed of them (policies/estimates.py)
    correct_estimates: bool = True
    # launch exclusive nodes and hand idle ones to the jobs that burst (policies/standby.py)
    exclusive_nodes: bool = True
    # nodes launched ahead of the bursts, to be handed out (policies/standby.py; off by default)
    standby: StandbyParams = field(default_factory=lambda: StandbyParams(enabled=False))
    # move a deadline job off a spot node whose interruption risk costs more than on-demand (policies/deadline.py)
    risk_switch: bool = True


class BursterPolicy:
    """Cheapest effective capacity that meets each job's wait budget and deadline."""

    name = "burster"

    def __init__(self, cost: CostModel | None = None, params: BursterParams | None = None) -> None:
        self.cost = cost or CostModel()
        self.params = params or BursterParams()

    def budget_stop(self, snapshot: Snapshot) -> Plan:
        """The hard budgets' stop alone, for a pass whose pool could not be read (``blind_stop``)."""
        return blind_stop(snapshot, self.params.guards, self.params.reclaim.tick_s)

    def decide(self, snapshot: Snapshot) -> Plan:
        p = self.params
        if p.correct_estimates:
            snapshot = corrected(snapshot, runtime_corrections(snapshot.runtime_ratios, snapshot.team_runtime_ratios))
        snapshot, overrun_wake = believe_overruns(snapshot)
        snapshot = with_reloads(snapshot, self.cost.p.restart_overhead_s)
        actions: list[Action] = []
        queue = ReservedQueue(snapshot.now, snapshot.pool_nodes, snapshot.running)
        stopping = enforce_budget(snapshot, p.guards, p.reclaim.tick_s)
        actions += stopping + enforce_team_budgets(snapshot, p.guards, p.reclaim.tick_s, stopping)
        actions += handle_interruptions(snapshot)
        slots = NodeRoom(snapshot, p.guards.max_nodes)  # under the node cap: switches first, then bursts
        switches = switch_behind_schedule(snapshot, self.cost, p.burst.deadline_margin_s, price_risk=p.risk_switch,
                                          price_late=p.burst.price_late)
        actions += slots.keep(switches)
        # a short set goes back now, relaunched whole next pass
        short = give_back_short(snapshot, self.cost, stopped_by(actions), p.guards.protected_node_ids)
        actions += short
        wakes: list[datetime] = [overrun_wake] if overrun_wake is not None else []
        warm = standby(snapshot, self.cost, p.standby)
        if warm.next_change is not None:
            wakes.append(warm.next_change)
        swaps: list[Action] = []
        stays: dict[str, Callable[[], datetime | None]] = {}  # until when each burst stays wanted
        taken: set[str] = set()  # idle nodes counted on to take a pending job: not reclaimed
        if not stopping:  # no new launches while a hard budget is stopping the burn
            launches = burst(snapshot, self.cost, p.burst, queue, wakes, incoming(snapshot), warm, stays, taken)
            if p.preempt_onprem:  # a launch the cap holds back may still be replaced by reserved GPUs
                protected = p.guards.protected_node_ids
                ends = partial(node_ends_s, snapshot, p.reclaim.idle_ttl_s)
                launches, swaps = preempt_for_urgent(snapshot, self.cost, p.burst, launches, protected,
                                                     lambda: slots.slot_waits(launches, ends))
            actions += warm.holds + slots.keep(launches) + swaps
        kept_warm = warm.keep()
        handed = frozenset(taken) | {h.node_id for h in warm.holds}
        given = {i for a in short for i in a.node_ids}
        actions += idle_ttl(snapshot, p.reclaim, kept_warm | handed | given)
        if p.reclaim.move_back:
            busy = {a.node_id for a in actions if isinstance(a, Checkpoint | Drain)}
            back: list[Checkpoint | Hold] = []
            if any(queue.free_gpus(m) > 0 for m in queue.total):  # else nothing to hold or move onto
                room = reserved_room(snapshot, queue)  # free GPUs once the jobs leaving the cloud land
                for hold in swaps:
                    if isinstance(hold, Hold):
                        room.withhold(hold.node_id)
                if p.reclaim.hold_nodes:  # first: a move-back must not land on a node held for a job
                    actions += hold_nodes(snapshot, self.cost, queue, p.reclaim.requeue, p.burst.deadline_margin_s,
                                          wakes, room, p.guards.protected_node_ids)
                back = move_back(snapshot, self.cost, queue, p.reclaim.requeue, p.burst.deadline_margin_s, room,
                                 p.guards.protected_node_ids, wakes)
            back += held_moves(snapshot, self.cost, p.burst.deadline_margin_s, p.guards.protected_node_ids, wakes)
            actions = _settle_moves(actions, [a for a in back if a.node_id not in busy], snapshot)
        if p.reclaim.consolidate and not stopping:  # (a move's launch is a launch)
            # protected nodes can't be checkpointed: launching a job's new nodes would only idle them
            keep = frozenset(a.node_id for a in actions if isinstance(a, Checkpoint | Drain)) \
                | p.guards.protected_node_ids | {n.node_id for n in snapshot.cloud_nodes if n.protected}
            switched = frozenset(a.job_id for a in switches if isinstance(a, Launch | Checkpoint) and a.job_id)
            actions += consolidate(snapshot, self.cost, p.burst, keep, room=slots, skip_jobs=switched, wakes=wakes)
        if p.exclusive_nodes:
            actions = [replace(a, exclusive=True) if isinstance(a, Launch) else a for a in actions]
        plan = apply_guards(Plan(tuple(one_per_node(actions, snapshot.pool_nodes)), held_back=tuple(slots.held)),
                            snapshot, p.guards, p.reclaim.tick_s)
        until = wanted_until_all(slots.held, stays)
        if until is None:
            return plan  # a launch held back may stop being wanted as the clock runs: see wanted_until_all
        wakes += until
        if p.preempt_onprem and may_turn_urgent((a for a, _ in slots.held), snapshot):
            return plan  # a reserved job's GPUs may come to replace it as the clock runs: no quiet time
        if may_reshape((a for a, _ in slots.held), snapshot, slots.left):
            return plan  # its offering, and so its node count, may change as its deadline nears
        return with_quiet_until(plan, snapshot, wakes, idle_ttl_s=p.reclaim.idle_ttl_s, guards=p.guards,
                                join_timeout_s=p.reclaim.join_timeout_s,
                                prewarm=self.cost if p.burst.prewarm else None, keep=kept_warm)


def _settle_moves(actions: list[Action], back: list[Checkpoint | Hold], snapshot: Snapshot) -> list[Action]:
    """``actions`` with the moves back on-prem: a job that moves back is not also switched to
    on-demand in the same pass (a job already late may move, ``reclaim.too_tight``, and is also
    behind schedule: on-prem is cheaper and no slower); a move whose checkpoint another rule's
    displaced holds no node for a job leaving for cloud nodes launched for it (a switch whose nodes
    are up), though it does for one that is requeued (an interruption)."""
    going = {a.job_id for a in back if isinstance(a, Checkpoint)}
    if any(isinstance(a, Launch) and a.job_id in going for a in actions):
        actions = [a for a in actions if not (isinstance(a, Launch) and a.job_id in going)]
    if any(isinstance(a, Hold) and a.job_id not in going for a in back):  # its checkpoint was displaced
        leaving = launched_for_running(snapshot)
        back = [a for a in back if not (isinstance(a, Hold) and a.job_id not in going and a.job_id in leaving)]
    return actions + back
