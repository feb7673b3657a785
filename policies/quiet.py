"""When an empty plan can next change on its own, so a simulation may skip the passes in between.

The built-in policies decide nothing new while time passes and nothing happens, because every
time-dependent quantity they use moves in lockstep:
- a pending job's expected on-prem wait falls by exactly the time that its wait so far grows, so
  "waited + expected wait > budget" and "expected wait > spot slack" are constant (the slack of a
  queued job shrinks at the same rate as its expected wait); the wait cost only shrinks;
- a running job's deadline slack is constant (its remaining work shrinks as the clock moves);
  "almost done" and the savings of moving a job back on-prem or to cheaper cloud capacity only turn
  actions *off* as time passes; but its spot rework limit (slack over remaining work) grows, so a
  spot pool may come to qualify for a move: consolidation names that instant
  (``consolidate.spot_qualifies_at``); and a cloud job too near its deadline for a move back's
  pause may move once the deadline has passed: the move-back and hold rules name it
  (``reclaim.tight``);
- a booting node, a checkpoint in flight and a standing interruption notice (its node already
  checkpointing: an empty plan means every notice is handled) change only by events;
so an empty plan stays empty until an event (arrival, finish, node up or joined, checkpoint done,
notice, spot availability change, block expiry), until an idle node reaches its idle TTL or a node
launched for a job not started on it its join timeout (``join_timeout_s``), or until
a job the projection says starts now (but the pool has not started) ages past its wait budget or
spot slack, or until a job deferring to its budget nears the budget's end (the burst rule reports
those instants), or until holding reserved nodes for a cloud job starts to pay as their running
work nears its end (the hold rule reports that instant), or until pre-warm first weighs a signal
(two boots before its window opens: ``standby.prewarm_opens``). Budgets accrue with time, the
idle cost of a pre-warm falls as its signal's window nears, and an on-prem job past its expected
end breaks the lockstep: in those cases this returns None (decide every tick). The built-in policies first believe
such a job runs on to the next step of its estimate (``policies.estimates.believe_overruns``) and
name as a wake both the step's end and every running job's estimated end (where, if it has not
finished, the belief begins), so only a custom policy hands an overdue job in here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from burster.lifecycle import NodeState
from burster.model import Snapshot
from burster.plan import Plan
from policies.cost import CostModel
from policies.guards import GuardParams
from policies.reclaim import unjoined
from policies.standby import prewarm_opens

FOREVER = datetime.max.replace(tzinfo=UTC)
# node states that end only by an event: the cloud reports the node up, the pool sees it join, the
# job's checkpoint completes (its deadline is the controller's own wake), the node is interrupted
_WAITED_ON = frozenset({NodeState.REQUESTED, NodeState.LAUNCHING, NodeState.JOINING, NodeState.CHECKPOINTING})


def quiet_until(snapshot: Snapshot, *, idle_ttl_s: float, guards: GuardParams,
                prewarm: CostModel | None, keep: frozenset[str] = frozenset(),
                join_timeout_s: float = math.inf) -> datetime | None:
    """The earliest instant an empty plan could turn non-empty without an event; None if unknown.
    ``prewarm``: the cost model of a policy that pre-warms ahead of signals (None: it does not)."""
    if guards.total_budget_usd is not None or guards.team_budget_usd:
        return None
    now_ts = snapshot.now.timestamp()
    if any(not p.on_cloud and p.ends_at_ts < now_ts for p in snapshot.running):
        return None
    wake = FOREVER
    if prewarm is not None:
        for sig in snapshot.signals:
            opens = prewarm_opens(sig, prewarm)
            if opens <= snapshot.now < sig.window_start:
                return None  # the idle cost of being early falls as the window nears
            if snapshot.now < opens:
                wake = min(wake, opens)
    pending_for = {j.job_id for j in snapshot.pending} if join_timeout_s != math.inf else set()
    for node in snapshot.cloud_nodes:
        if not node.busy and unjoined(node, pending_for):  # its job may start on it (an event) or time out
            wake = min(wake, node.launched_at + timedelta(seconds=join_timeout_s))
        if node.state in _WAITED_ON:
            continue  # booting, or its checkpoint in flight: what comes next is an event
        if node.state is not NodeState.READY:
            return None
        if not node.busy and node.node_id not in keep:
            if node.idle_since is None:
                return None
            wake = min(wake, node.idle_since + timedelta(seconds=idle_ttl_s))
    return wake


def with_quiet_until(plan: Plan, snapshot: Snapshot, wakes: Sequence[datetime], *, idle_ttl_s: float,
                     guards: GuardParams, prewarm: CostModel | None, keep: frozenset[str] = frozenset(),
                     join_timeout_s: float = math.inf) -> Plan:
    """``plan``, and if it is empty, the instant it could next change (``wakes``: the burst rule's own)."""
    if plan.actions or plan.refused:
        return plan
    until = quiet_until(snapshot, idle_ttl_s=idle_ttl_s, guards=guards, prewarm=prewarm, keep=keep,
                        join_timeout_s=join_timeout_s)
    if until is None:
        return plan
    return replace(plan, quiet_until=min([until, *wakes]))
