"""Baseline policies for comparison, run through the same harness and guards as Burster's own.

- reserved-only: never bursts (the cost floor and the wait ceiling).
- on-demand (cluster-autoscaler): any job that cannot start now bursts to the cheapest on-demand
  offering; idle nodes go after 10 min.
- greedy-spot (SkyPilot managed jobs): cheapest listed spot price across clouds (no rework
  estimate), relaunched in the next cheapest place on preemption; on-demand only when no spot
  exists; idle 10 min.
- uniform-progress (Can't Be Late, NSDI'24, per job): burst what cannot start now; spot while the
  deadline slack covers a changeover, else on-demand; idle 5 min.
- compute-wait (Starburst-like): wait up to 900 s per GPU-hour of the job's compute, then burst to
  the cheapest on-demand offering; idle 5 min.

Each also gives a short set back at once (``reclaim.give_back_short``), as SkyPilot relaunches a
whole managed job when one of its nodes goes. "Cannot start now" is read off the same projection
of reserved capacity as Burster's, with the same belief about a job running past its estimate
(``policies.estimates.believe_overruns``): its GPUs are busy, as the pool sees them, not free at
every instant.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime

from burster.model import Snapshot
from burster.plan import Action, Plan
from policies.budget_stop import blind_stop, enforce_budget, enforce_team_budgets
from policies.burst import BurstParams, burst
from policies.cost import CostModel
from policies.deadline import handle_interruptions, switch_behind_schedule
from policies.estimates import believe_overruns
from policies.guards import (
    GuardParams,
    NodeRoom,
    apply_guards,
    may_reshape,
    one_per_node,
    wanted_until_all,
)
from policies.offers import ON_DEMAND_ONLY, SPOT_ONLY
from policies.quiet import FOREVER, with_quiet_until
from policies.reclaim import ReclaimParams, give_back_short, idle_ttl, stopped_by


class ReservedOnlyPolicy:
    """Never bursts: the cost floor and the wait ceiling."""

    name = "reserved-only"

    def __init__(self, cost: CostModel | None = None, guards: GuardParams | None = None) -> None:
        self.guards = guards or GuardParams()

    def decide(self, snapshot: Snapshot) -> Plan:
        return Plan(quiet_until=FOREVER)

    def budget_stop(self, snapshot: Snapshot) -> Plan:
        """Nothing: this policy stops no node (its decide enforces no budget either)."""
        return Plan()


class BaselinePolicy:
    """A burst rule + market rule + idle reclaim, with the interruption handshake, the short-set
    give-back (``reclaim.give_back_short``) and the guards."""

    name = "baseline"
    burst_params = BurstParams()
    reclaim_params = ReclaimParams(idle_ttl_s=300.0, move_back=False)

    def __init__(self, cost: CostModel | None = None, guards: GuardParams | None = None,
                 tick_s: float | None = None) -> None:
        """``tick_s``: the controller's tick, which its idle reclaim and budget stop reckon with (the
        class's reclaim rule's, 10 s, if None)."""
        self.cost = cost or CostModel()
        self.guards = guards or GuardParams()
        if tick_s is not None:
            self.reclaim_params = replace(type(self).reclaim_params, tick_s=tick_s)

    def budget_stop(self, snapshot: Snapshot) -> Plan:
        """The hard budgets' stop alone, for a pass whose pool could not be read (``blind_stop``)."""
        return blind_stop(snapshot, self.guards, self.reclaim_params.tick_s)

    def decide(self, snapshot: Snapshot) -> Plan:
        snapshot, overrun_wake = believe_overruns(snapshot)  # a job past its estimate is not ending now
        wakes: list[datetime] = [overrun_wake] if overrun_wake is not None else []
        room = NodeRoom(snapshot, self.guards.max_nodes)
        tick_s = self.reclaim_params.tick_s
        stopping = enforce_budget(snapshot, self.guards, tick_s)  # hard budgets stop the burn, as for Burster
        actions: list[Action] = stopping + enforce_team_budgets(snapshot, self.guards, tick_s, stopping)
        actions += room.keep(self.own_actions(snapshot))
        actions += handle_interruptions(snapshot)
        short = give_back_short(snapshot, self.cost, stopped_by(actions), self.guards.protected_node_ids)
        actions += short  # a set left short is relaunched whole, as Burster does (the harness's part)
        stays: dict[str, Callable[[], datetime | None]] = {}
        if not stopping:  # no new launches while a hard budget is stopping the burn
            actions += room.keep(burst(snapshot, self.cost, self.burst_params, wakes=wakes, stays=stays))
        actions += idle_ttl(snapshot, self.reclaim_params, frozenset(i for a in short for i in a.node_ids))
        plan = apply_guards(Plan(tuple(one_per_node(actions, snapshot.pool_nodes)), held_back=tuple(room.held)),
                            snapshot, self.guards, tick_s)
        # as the clock runs, a launch held back may stop being wanted, or change its offering to one
        # of fewer nodes that fit: quiet only until the first could happen
        until = wanted_until_all(room.held, stays)
        if until is None or may_reshape((a for a, _ in room.held), snapshot, room.left):
            return plan
        wakes += until
        return with_quiet_until(plan, snapshot, wakes, idle_ttl_s=self.reclaim_params.idle_ttl_s,
                                join_timeout_s=self.reclaim_params.join_timeout_s,
                                guards=self.guards, prewarm=self.cost if self.burst_params.prewarm else None)

    def own_actions(self, snapshot: Snapshot) -> list[Action]:
        """A baseline's own rule, ahead of the shared ones, on the same believed snapshot (none here)."""
        return []


_NOW = {"max_wait_s": 0.0, "wait_fraction": 0.0, "prewarm": False, "cost_trigger": False}


class OnDemandPolicy(BaselinePolicy):
    """Like cluster-autoscaler: burst what cannot start now, cheapest on-demand, 10 min scale-down."""

    name = "on-demand"
    burst_params = BurstParams(markets=ON_DEMAND_ONLY, **_NOW)  # type: ignore[arg-type]
    reclaim_params = ReclaimParams(idle_ttl_s=600.0, move_back=False)


class GreedySpotPolicy(BaselinePolicy):
    """Like SkyPilot managed jobs: cheapest spot anywhere, on-demand only when no spot exists."""

    name = "greedy-spot"
    burst_params = BurstParams(market_order=(SPOT_ONLY, ON_DEMAND_ONLY), by_price=True,
                               **_NOW)  # type: ignore[arg-type]
    reclaim_params = ReclaimParams(idle_ttl_s=600.0, move_back=False)


class UniformProgressPolicy(BaselinePolicy):
    """Can't Be Late's Uniform Progress per job: spot while ahead of schedule, else on-demand."""

    name = "uniform-progress"
    burst_params = BurstParams(rework_aware=False, **_NOW)  # type: ignore[arg-type]

    def own_actions(self, snapshot: Snapshot) -> list[Action]:
        return switch_behind_schedule(snapshot, self.cost, self.burst_params.deadline_margin_s)


class ComputeWaitPolicy(BaselinePolicy):
    """Starburst-like: wait up to 900 s per GPU-hour of the job's compute, then burst on-demand."""

    name = "compute-wait"
    burst_params = BurstParams(max_wait_s=0.0, wait_fraction=0.0, prewarm=False, cost_trigger=False,
                               wait_s_per_gpu_hour=900.0, markets=ON_DEMAND_ONLY, deadline_trigger=False)
