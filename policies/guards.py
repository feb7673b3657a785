"""Guards, applied last to every policy's plan: they only ever remove actions, with a reason.

- protected or busy nodes are never terminated (busy ones leave only through a Checkpoint);
  protected nodes are never checkpointed, drained or preempted either;
- hard dollar budgets (global and per team): committed spend (spent + what live nodes are expected
  to cost) plus a launch's expected cost must stay within the budget, whole gangs or nothing (an
  idle cloud node handed to a job, a ``Hold``, is charged its hours there as a launch would be), and
  a launch the budget stop would stop at the next pass is refused (``policies/budget_room.py``);
- a soft threshold (``soft_fraction`` of a budget) restricts new launches (and handed nodes) to spot;
- max live nodes, and a launch rate limit (nodes per minute).

``NodeRoom`` shows the rules the node cap ahead of the guards: a burst it leaves no room for is held
back (listed in the plan, not refused), and keeps the slots left from later ones, so a plan at a
full cap can still be empty and quiet.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TypeVar

from burster.lifecycle import LIVE_STATES, PENDING_STATES, NodeState
from burster.model import JobClass, PoolNode, Snapshot
from burster.plan import Action, Checkpoint, Drain, Hold, Launch, Plan, Preempt, Terminate
from policies.budget_room import BudgetRoom

A = TypeVar("A", bound=Action)


@dataclass(frozen=True, slots=True)
class GuardParams:
    total_budget_usd: float | None = None
    team_budget_usd: Mapping[str, float] = field(default_factory=dict)
    soft_fraction: float = 0.8
    max_nodes: int = 256
    max_launches_per_minute: int = 60
    protected_node_ids: frozenset[str] = frozenset()
    idle_ttl_s: float = 300.0
    stop_grace_s: float = 120.0  # how long a budget stop waits for a checkpoint (app: cost.checkpoint_due_s)
    checkpoint_write_s: float = 60.0  # a checkpoint's write (``CostParams.checkpoint_write_s``)
    boot_s: float = 180.0  # a launch's expected boot and join (``CostParams.launch_latency_s``)


def committed_usd(snapshot: Snapshot, params: GuardParams) -> tuple[float, dict[str, float]]:
    """Spent so far plus the expected remaining cost of live nodes (total, and by team): a node's
    job's remaining run (its idle TTL if none), and for a node still booting the rest of its boot,
    as its launch was counted (``Launch.est_hours``). A launch in flight (``Snapshot.in_flight``)
    counts as its nodes booting since it was sent, their time since then too (not in the spend)."""
    remaining = {p.job.job_id: p.remaining_s(snapshot.now) for p in snapshot.running}
    pending = {j.job_id: j.remaining_s for j in snapshot.pending}
    total = snapshot.spend.total_usd
    by_team = dict(snapshot.spend.by_team_usd)
    idle_ttl_s = params.idle_ttl_s

    def add(team: str, price_per_hour: float, job: str | None, extra_s: float) -> None:
        nonlocal total
        left_s = (remaining.get(job, pending.get(job, idle_ttl_s)) if job else idle_ttl_s) + extra_s
        usd = price_per_hour * left_s / 3600.0
        total += usd
        by_team[team] = by_team.get(team, 0.0) + usd

    for n in snapshot.cloud_nodes:
        if n.state in LIVE_STATES:
            booted_s = (snapshot.now - n.launched_at).total_seconds()
            add(n.team, n.offering.price_per_hour_usd, n.job_id or n.for_job,
                max(params.boot_s - booted_s, 0.0) if n.state in PENDING_STATES else 0.0)
    for f in snapshot.in_flight:  # its time since it was sent, or the rest of its boot, whichever is longer
        sent_s = (snapshot.now - f.asked_at).total_seconds()
        add(f.team, f.count * f.offering.price_per_hour_usd, f.job_id, max(params.boot_s, sent_s))
    return total, by_team


def live_nodes(snapshot: Snapshot) -> int:
    """Cloud nodes that count towards ``max_nodes``: every one not yet terminated or failed, and
    those of launches in flight."""
    return sum(1 for n in snapshot.cloud_nodes if n.state in LIVE_STATES) + sum(f.count for f in snapshot.in_flight)


def replays(snapshot: Snapshot) -> frozenset[str]:
    """Request ids of launches in flight: a launch planned under one is asked again, not new, and
    its nodes are counted already (``committed_usd``, ``live_nodes``)."""
    return frozenset(f.request_id for f in snapshot.in_flight)


class NodeRoom:
    """The cloud node slots ``max_nodes`` leaves this pass, taken as a plan makes launches, in the
    guards' order: a launch that does not fit is held back (``held``, with why), and so is every
    later one while it waits: the slots left are kept for it (``waiting``), so a stream of single
    nodes cannot starve a gang, nor later bursts an earlier one (a launch larger than the cap itself
    keeps nothing). The guards check every launch again; room opens only when a node ends (an
    event), so a held-back launch does not keep the simulator deciding every tick, except while it
    may stop being wanted (``wanted_until_all``) or come to need fewer nodes (``may_reshape``)."""

    __slots__ = ("held", "left", "live", "max_nodes", "replays", "waiting")

    def __init__(self, snapshot: Snapshot, max_nodes: int) -> None:
        self.max_nodes = max_nodes
        self.live = live_nodes(snapshot)
        self.replays = replays(snapshot)  # launches in flight asked again: their nodes are counted in ``live``
        self.left = max_nodes - self.live
        self.held: list[tuple[Launch, str]] = []
        self.waiting: Launch | None = None  # the first launch held back, which the slots left are kept for

    @property
    def open(self) -> bool:
        """Whether a launch of one node would fit now."""
        return self.waiting is None and self.left > 0

    def take(self, launch: Launch) -> bool:
        """Whether ``launch`` fits (its nodes are then taken); if not, it is held back."""
        if launch.request_id in self.replays:
            return True
        if self.waiting is None and launch.count <= self.left:
            self.left -= launch.count
            return True
        self.held.append((launch, self._why(launch)))
        if self.waiting is None and launch.count <= self.max_nodes:
            self.waiting = launch
        return False

    def _why(self, launch: Launch) -> str:
        left = max(self.left, 0)
        if self.waiting is None or left == 0:
            return (f"max nodes {self.max_nodes} reached ({self.live} live, {left} slot(s) left this pass, "
                    f"{launch.count} asked); it waits for a node to end")
        first = self.waiting
        return (f"max nodes {self.max_nodes} reached ({self.live} live): the {left} slot(s) left are kept for "
                f"{'job ' + first.job_id if first.job_id else 'a launch'} ({first.count} asked), held back "
                "first; it waits for a node to end")

    def slot_waits(self, launches: Iterable[Launch], ends_s: Callable[[], list[float]]) -> dict[str, float]:
        """Seconds until the launches this room would hold back get their slots (by request id), were
        all of ``launches`` taken in turn: the first held back gets the slots left and then the
        earliest node ends (``ends_s()``, seconds from now, ascending), each later one the ends after
        those and those of launches it holds back already (inf: more than ever end, or larger than the
        cap). The room is not changed."""
        left, waiting = self.left, self.waiting is not None
        queued = sum(a.count for a, _ in self.held if a.count <= self.max_nodes)  # held back already
        out: dict[str, float] = {}
        ends: list[float] | None = None  # worked out at the first launch held back
        for a in launches:
            if a.request_id in self.replays:
                continue
            if not waiting and a.count <= left:
                left -= a.count
                continue
            waiting = True
            ends = ends_s() if ends is None else ends
            if a.count > self.max_nodes:
                out[a.request_id] = math.inf
                continue
            queued += a.count
            # ends it waits for, counting those of launches ahead of it (and of live nodes past the cap)
            k = queued - left
            out[a.request_id] = 0.0 if k <= 0 else ends[k - 1] if k <= len(ends) else math.inf
        return out

    def keep(self, actions: Iterable[A]) -> list[A]:
        """``actions`` less the launches that do not fit (taken in turn; those are held back)."""
        return [a for a in actions if not isinstance(a, Launch) or self.take(a)]


def may_reshape(held: Iterable[Launch], snapshot: Snapshot, left: int) -> bool:
    """Whether a launch held back at the node cap may come to fit the ``left`` slots with no event:
    one of several nodes for a job with a deadline to meet that fewer nodes could run. The burst
    rule chooses such a job's offering by its deadline slack, which the clock runs down, and
    another offering may need fewer nodes (a 16-GPU gang on 8-GPU nodes instead of 4-GPU ones)."""
    if left < 1:
        return False
    fewest = {j.job_id: j.nodes for j in snapshot.pending
              if j.deadline is not None and j.job_class is not JobClass.BEST_EFFORT}
    return any(a.count > 1 and fewest.get(a.job_id or "", left + 1) <= left for a in held)


def wanted_until_all(held: Iterable[tuple[Launch, str]],
                     stays: Mapping[str, Callable[[], datetime | None]]) -> list[datetime] | None:
    """Until when each launch held back stays wanted (``burst.wanted_until``, as the burst rule
    left them in ``stays``), or None if one may stop being wanted at an instant no rule names (a
    deadline job's, a switch's). One that stops being wanted frees the slots it kept for a later
    launch, and its job joins the reserved queue's projection ahead of later jobs, whose waits then
    grow: either changes the plan."""
    out: list[datetime] = []
    for launch, _ in held:
        stay = stays.get(launch.request_id)
        until = stay() if stay is not None else None
        if until is None:
            return None
        out.append(until)
    return out


def node_ends_s(snapshot: Snapshot, idle_ttl_s: float) -> list[float]:
    """Seconds from now until each live cloud node is expected to end, ascending: a busy node with
    its job (as the policy believes it; a stopping one at its stop), one draining or terminating with
    no job now, a booting one, or one up for a job still queued, after that job's run (a booting one
    for a job not known: inf), another idle one at its idle TTL. The nodes of a launch in flight
    (``live_nodes`` counts them) end as booting ones do."""
    left = {p.job.job_id: p.remaining_s(snapshot.now) for p in snapshot.running}
    pending = {j.job_id: j.remaining_s for j in snapshot.pending}
    ends: list[float] = []
    for n in snapshot.cloud_nodes:
        if n.state not in LIVE_STATES:
            continue
        if n.job_id is not None:
            ends.append(left.get(n.job_id, math.inf))
        elif n.state in (NodeState.DRAINING, NodeState.TERMINATING):
            ends.append(0.0)
        elif n.for_job is not None and n.state in PENDING_STATES:
            ends.append(pending.get(n.for_job, math.inf))
        elif n.for_job in pending and n.state is NodeState.READY:  # up for a job not started there yet:
            ends.append(pending[n.for_job])  # the idle TTL does not take it (``reclaim.unjoined``)
        elif n.idle_since is not None:
            ends.append(max(idle_ttl_s - (snapshot.now - n.idle_since).total_seconds(), 0.0))
        else:
            ends.append(math.inf)
    for f in snapshot.in_flight:
        ends += [pending.get(f.job_id, math.inf) if f.job_id is not None else math.inf] * f.count
    return sorted(ends)


def launch_usd(a: Launch) -> float:
    return a.count * a.offering.price_per_hour_usd * a.est_hours


def apply_guards(plan: Plan, snapshot: Snapshot, params: GuardParams, tick_s: float = 10.0) -> Plan:
    """``plan`` less the actions a guard refuses (with why); ``tick_s``: the controller's tick, over
    which the budget stop looks ahead (``BudgetRoom``)."""
    nodes = {n.node_id: n for n in snapshot.cloud_nodes}
    protected = params.protected_node_ids | {n.node_id for n in snapshot.cloud_nodes if n.protected}
    kept: list[Action] = []
    refused = list(plan.refused)
    budgeted = params.total_budget_usd is not None or bool(params.team_budget_usd)
    total, by_team = committed_usd(snapshot, params) if budgeted else (0.0, {})
    budgets = BudgetRoom(snapshot, total, by_team, params.total_budget_usd, dict(params.team_budget_usd),
                         params.soft_fraction, 2 * tick_s + 2 * params.stop_grace_s)
    live = live_nodes(snapshot)
    launched = snapshot.spend.launches_last_minute
    asked_again = replays(snapshot)  # launches in flight: counted already, and asked again whatever the guards say

    def take(a: Launch) -> None:
        """Count a launch the guards keep."""
        nonlocal live, launched
        budgets.take(launch_usd(a), a.count * a.offering.price_per_hour_usd, a.team)
        live += a.count
        launched += a.count

    for a in plan.actions:
        why = _refuse_node_action(a, nodes, protected)
        if why is None and isinstance(a, Launch) and a.request_id not in asked_again:
            why = _refuse_launch(a, params, budgets, live, launched)
            if why is None:
                take(a)
        elif why is None and isinstance(a, Hold) and a.node_id in nodes:  # an idle cloud node runs a job
            node = nodes[a.node_id]
            usd = node.offering.price_per_hour_usd * a.est_hours
            # it burns already, but another team's node burns for the job's team from its start
            moved = 0.0 if node.team == a.team else node.offering.price_per_hour_usd
            why = budgets.refuse(usd, 0.0, node.offering.market, a.team, moved)
            if why is None:
                budgets.take(usd, 0.0, a.team, moved)
        if why is None:
            kept.append(a)
        else:
            refused.append((a, why))
    # Room a refused launch left under the cap goes to the launches held back for it, in their order
    # (the first that still does not fit keeps the rest waiting, as NodeRoom does); one a budget
    # refuses is refused, not held: it would not launch were there room.
    held: list[tuple[Launch, str]] = []
    for a, why_held in plan.held_back:
        if a.request_id in asked_again:
            kept.append(a)
            continue
        spend = budgets.refuse(launch_usd(a), a.count * a.offering.price_per_hour_usd, a.offering.market, a.team)
        if spend is not None:
            refused.append((a, spend))
        elif held or _refuse_launch(a, params, budgets, live, launched) is not None:
            held.append((a, why_held))
        else:
            kept.append(a)
            take(a)
    return replace(plan, actions=tuple(kept), refused=tuple(refused), held_back=tuple(held))


def _refuse_node_action(a: Action, nodes: Mapping[str, object], protected: frozenset[str]) -> str | None:
    if isinstance(a, Terminate):
        hit = sorted(set(a.node_ids) & protected)
        if hit:
            return f"node(s) {', '.join(hit)} are protected"
        busy = sorted(i for i in a.node_ids if getattr(nodes.get(i), "busy", False))
        if busy:
            return f"node(s) {', '.join(busy)} are busy: reclaim them through a checkpoint"
    if isinstance(a, Checkpoint | Drain) and a.node_id in protected:
        return f"node {a.node_id} is protected"
    if isinstance(a, Preempt) and protected.intersection(a.node_ids):
        return f"node(s) {', '.join(sorted(protected.intersection(a.node_ids)))} are protected"
    return None


def _refuse_launch(a: Launch, p: GuardParams, budgets: BudgetRoom, live: int, launched: int) -> str | None:
    if live + a.count > p.max_nodes:
        return f"max nodes {p.max_nodes} reached ({live} live, {a.count} asked)"
    if launched + a.count > p.max_launches_per_minute:
        return f"launch rate limit {p.max_launches_per_minute}/min reached"
    return budgets.refuse(launch_usd(a), a.count * a.offering.price_per_hour_usd, a.offering.market, a.team)


def one_per_node(actions: list[Action], reserved: Iterable[PoolNode] = ()) -> list[Action]:
    """One checkpoint, drain or hold per node: the first reason wins (interruptions and budget
    stops come before reclaim); but a reserved node (in ``reserved``) may be held for several jobs,
    one Hold each (jobs moving back that fit on it together)."""
    seen: set[str | tuple[str, str]] = set()
    shared: set[str] | None = None
    out: list[Action] = []
    for a in actions:
        node = getattr(a, "node_id", None)
        if node is not None:
            key: str | tuple[str, str] = node
            if isinstance(a, Hold):
                if shared is None:
                    shared = {n.node_id for n in reserved}
                if node in shared:
                    key = (node, a.job_id)
            if key in seen:
                continue
            seen.add(key)
        out.append(a)
    return out
