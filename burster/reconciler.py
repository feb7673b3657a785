"""One reconcile pass: observe -> decide -> actuate -> record. Used unchanged by the simulator.

- observe never raises: a provider whose reads fail is marked degraded (nothing there is reclaimed);
  a pool that cannot be read makes a pass that decides only the hard budgets' stop (terminates, no
  checkpoint: ``Policy.budget_stop``) and says why.
  Interruption notices stand until their node ends; a failed checkpoint poll or drain is retried
  until the checkpoint's deadline, past which the node is terminated unpolled and undrained.
  A node a listing leaves out ends only once older than ``listing_grace_s`` (clouds list new
  instances late); one recorded as ended that a listing still shows alive a grace later (at once
  if listings had left it out), or one whose terminate call failed, is terminated again, its time
  past the recorded end charged. A launch intent no node answers within that grace is forgotten.
- decide is the policy's pure function of the Snapshot (guards included).
- actuate writes intents before calling out, uses the plan's request ids, and reports a failing
  action instead of stopping the pass; capacity errors block the offering for ``block_s``.
- record keeps the state (``MemoryState.commit``: a SQL store writes the pass back) and emits one
  decision event per action; the ledger is charged for every node as it ends. The state is also
  kept after observe and after each launch, so a crash later in the pass loses no end, charge or
  launched node (a restart would end a node again at its own time, or not know a node it made).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from burster.blocks import OfferingBlocks
from burster.budget_period import PERIODS
from burster.clock import Clock
from burster.errors import ConfigError, ProviderError
from burster.interfaces import CloudProvider, Policy, Pool, SignalSource
from burster.launches import Launches
from burster.lifecycle import NodeState
from burster.model import Interruption, Node, Offering, Placement, Signal, Snapshot
from burster.plan import Checkpoint, DecisionLog, Drain, Hold, Launch, Plan, Preempt, Terminate
from burster.reconcile_nodes import LISTING_GRACE_S, NodeBook, Providers
from burster.state import MemoryState

log = logging.getLogger("burster.reconcile")


@dataclass
class PassReport:
    """What one pass saw and did; the simulator and the service both read it."""

    now: datetime
    plan: Plan
    errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # where actuation did other than the plan said, and why
    launched_nodes: int = 0
    # for an empty plan, when the policy says it could next change without an event (None: unknown)
    quiet_until: datetime | None = None


class _PoolUnread(Exception):
    """The pool could not be read this pass (observe's one way out: the pass decides only what the
    hard budgets demand, on ``blind``: the cloud nodes and spend, no jobs)."""

    def __init__(self, now: datetime, err: ProviderError, blind: Snapshot) -> None:
        super().__init__(str(err))
        self.now, self.err, self.blind = now, err, blind


class Reconciler:
    def __init__(
        self,
        *,
        providers: Mapping[str, CloudProvider],
        pool: Pool,
        policy: Policy,
        clock: Clock,
        state: MemoryState | None = None,
        signals: Sequence[SignalSource] = (),
        block_s: float = 600.0,
        on_event: Callable[[str], None] | None = None,
        listing_grace_s: float = LISTING_GRACE_S,
        budget_period: str = "month",
    ) -> None:
        self.providers = Providers(sorted(providers.items()))
        self.pool, self.policy, self.clock = pool, policy, clock
        self.state = state or MemoryState()
        self.signal_sources, self.block_s = tuple(signals), block_s
        self.blocks = OfferingBlocks(self.state, block_s)
        self.on_event = on_event
        if budget_period not in PERIODS:
            raise ConfigError(f"unknown budget period {budget_period!r}: use one of {', '.join(PERIODS)}")
        self.budget_period = budget_period
        self._decisions = DecisionLog()  # decision events: a held-back launch once, not every pass
        self.nodes = NodeBook(self.state, listing_grace_s)
        self.launches = Launches(providers=self.providers, state=self.state, nodes=self.nodes, blocks=self.blocks,
                                 give_back=self._drain_and_terminate, charge=self._charge)
        self._offerings: dict[str, Sequence[Offering]] = {}
        self._parts: tuple[Sequence[Offering], ...] = ()
        self._combined: tuple[Offering, ...] = ()
        self._settled = False  # this pass finished a checkpoint (and drained its node) while observing
        self._observe_errors: list[str] = []  # calls observe made that failed (a checkpoint's drain)
        self._notes: list[str] = []  # this pass's PassReport.notes

    # --- the pass ------------------------------------------------------------------------------
    def run_once(self) -> PassReport:
        self._settled = False
        self._observe_errors = []
        self._notes = []
        try:
            snapshot = self.observe()
        except _PoolUnread as unread:  # no demand to decide on: report it, keep what observe learnt
            self.state.commit()
            log.warning("pool unreadable, only the hard budgets decided this pass: %s", unread.err)
            errors = [*self._observe_errors, f"pool unreadable, only the hard budgets decided: {unread.err}"]
            plan = self.policy.budget_stop(unread.blind)
            report = PassReport(unread.now, plan, errors=errors, notes=self._notes)
            self._terminate_blind(plan, report)
            self.record(report)
            return report
        self.state.commit()  # what observe learnt (ends, adoptions, charges) is kept before any call out
        plan = self.policy.decide(snapshot)
        report = PassReport(snapshot.now, plan, errors=self._observe_errors, notes=self._notes)
        # a checkpoint observe finished requeued its job, which the pool may start by the next tick: look again then
        if not self._settled and not plan.actions and not plan.refused:
            report.quiet_until = plan.quiet_until
        self.actuate(plan, snapshot, report)
        self.record(report)
        return report

    # --- observe -------------------------------------------------------------------------------
    def observe(self) -> Snapshot:
        now = self.clock.now()
        degraded = self.nodes.unconfigured(self.providers)  # a kept store's nodes on a cloud since disabled
        listed: dict[str, Sequence[Node]] = {}
        notices: list[Interruption] = []
        for name, provider in self.providers.items():
            try:
                listed[name] = provider.list_nodes()
                notices += provider.interruptions()
                self._offerings[name] = provider.offerings()
            except ProviderError as err:
                degraded.add(name)
                log.warning("provider %s degraded this pass: %s", name, err)
        first = self.nodes.take_notices(notices)  # before sync ends nodes: one gone with its notice was taken back
        self.nodes.sync(now, listed, degraded, self._charge)
        self.blocks.noticed(first)
        self.nodes.expire_intents(now)
        self._observe_errors += self.launches.replay_partly_listed(now)
        self._poll_checkpoints(now)
        standing = self.nodes.standing_notices()
        running: tuple[Placement, ...] = ()
        try:
            running = tuple(self.pool.running())  # after the checkpoints that finished left it (and requeued)
            pending, pool_nodes = tuple(self.pool.pending()), tuple(self.pool.nodes())
            history = self.pool.runtime_history()
        except ProviderError as err:
            self.nodes.bill_ended(running)  # the ends sync found are charged by the placements read, if any
            blind = Snapshot(now=now, pending=(), running=(), pool_nodes=(), cloud_nodes=self.nodes.blind_nodes(),
                             offerings=self._all_offerings(), interruptions=standing,
                             degraded_providers=frozenset(degraded), spend=self.nodes.spend(now, self.budget_period),
                             in_flight=self.nodes.in_flight(now))
            raise _PoolUnread(now, err, blind) from err
        cloud_nodes = self.nodes.snapshot_nodes(now, running)
        self.blocks.joined(cloud_nodes)
        return Snapshot(
            now=now,
            pending=pending,
            running=running,
            pool_nodes=pool_nodes,
            cloud_nodes=cloud_nodes,
            offerings=self._all_offerings(),
            signals=self._signals(now),
            interruptions=standing,
            blocked_offerings=frozenset(k for k, until in self.state.blocked.items() if until > now),
            degraded_providers=frozenset(degraded),
            spend=self.nodes.spend(now, self.budget_period),
            runtime_ratios=history.ratios,
            runtime_ratio_teams=history.teams,
            team_runtime_ratios=history.by_team,
            in_flight=self.nodes.in_flight(now),
        )

    def _all_offerings(self) -> tuple[Offering, ...]:
        """All providers' offerings; the same tuple object while no provider's list changed."""
        parts = tuple(self._offerings.get(name, ()) for name in self.providers)
        if len(parts) != len(self._parts) or any(a is not b for a, b in zip(parts, self._parts, strict=True)):
            self._parts = parts
            self._combined = tuple(o for part in parts for o in part)
        return self._combined

    def _signals(self, now: datetime) -> tuple[Signal, ...]:
        out: list[Signal] = []
        for source in self.signal_sources:
            try:
                out += source.signals(now)
            except ProviderError as err:
                log.warning("signal source failed this pass: %s", err)
        return tuple(out)

    def _poll_checkpoints(self, now: datetime) -> None:
        """Poll each checkpoint in flight; drain and terminate the nodes whose checkpoint is done or
        past its deadline. A call that fails keeps the ticket, to be polled again next pass, until the
        deadline: past it the node goes unpolled, and a drain the pool refuses does not hold it up
        (the pool down, its checkpoint would otherwise bill on for the whole outage)."""
        for node_id in sorted(self.state.tickets):
            asked = self.state.tickets[node_id]
            try:
                ticket = self.pool.checkpoint(node_id, asked.deadline)
            except ProviderError as err:
                self._observe_errors.append(f"checkpoint of {node_id} failed: {err}")
                if now < asked.deadline:
                    log.warning("checkpoint handshake failed (will retry next pass): %s", err)
                    continue
                ticket = asked  # past its deadline: no answer of the pool's would keep the node
            if asked.job_id and ticket.job_id and ticket.job_id != asked.job_id:
                self._call_off(node_id, asked.job_id, ticket.job_id)
                continue
            self.state.tickets[node_id] = ticket
            if ticket.done or now >= ticket.deadline:
                self._settled = True
                if not ticket.done:
                    note = (f"checkpoint of job {asked.job_id or '?'} on {node_id} timed out at "
                            f"{ticket.deadline:%H:%M:%S}: drained without it (its work since its last "
                            f"checkpoint is lost; raise cost.checkpoint_write_s if writes take longer)")
                    log.warning("%s", note)
                    self._notes.append(note)
                try:
                    self._drain_and_terminate(node_id, "checkpoint done" if ticket.done else "checkpoint timed out",
                                              drain_optional=not ticket.done)
                    self.state.tickets.pop(node_id, None)
                except ProviderError as err:
                    self._observe_errors.append(f"checkpoint of {node_id} failed: {err}")
                    log.warning("checkpoint handshake failed (will retry next pass): %s", err)

    def _call_off(self, node_id: str, left: str, started: str) -> None:
        """The job a checkpoint was for left the node (ended, or stopped) and the pool started
        another there: the handshake, and the reclaim it led to, were for the job that left, so
        the node is ready again and the policy decides on it anew."""
        log.info("checkpoint of node %s called off: %s left it and %s started there", node_id, left, started)
        self.state.tickets.pop(node_id, None)
        self.nodes.mark(node_id, NodeState.READY)
        self._settled = True

    # --- actuate -------------------------------------------------------------------------------
    def actuate(self, plan: Plan, snapshot: Snapshot, report: PassReport) -> None:
        self._terminate_again(report)
        for action in plan.actions:
            try:
                if isinstance(action, Launch):
                    report.launched_nodes += self.launches.launch(action, snapshot.now)
                elif isinstance(action, Terminate):
                    if action.never_joined:
                        self.blocks.never_joined(action.node_ids, snapshot.now)
                    for node_id in action.node_ids:
                        self._drain_and_terminate(node_id, action.reason)
                elif isinstance(action, Checkpoint):
                    self._checkpoint(action, snapshot.now)
                elif isinstance(action, Drain):
                    self.pool.drain(action.node_id)
                    self.nodes.mark(action.node_id, NodeState.DRAINING)
                elif isinstance(action, Hold):
                    self.pool.hold(action.node_id, action.job_id, action.start_at, action.until)
                elif isinstance(action, Preempt):
                    self.pool.preempt(action.job_id, action.deadline)
            except (ProviderError, ConfigError) as err:  # an adapter's ConfigError: an offering it cannot launch
                _failed(report, type(action).__name__.lower(), err)
            if isinstance(action, Launch):
                self.state.commit()  # the nodes it made (or gave back) are kept before the next call out

    def _terminate_blind(self, plan: Plan, report: PassReport) -> None:
        """Carry out a pass's plan made without the pool (``Policy.budget_stop``): its terminates, each
        node drained first if the pool takes the call (a drain refused does not hold the terminate up)."""
        self._terminate_again(report)
        for action in plan.actions:
            for node_id in action.node_ids if isinstance(action, Terminate) else ():
                try:
                    self._drain_and_terminate(node_id, action.reason, drain_optional=True)
                except (ProviderError, ConfigError) as err:
                    _failed(report, "terminate", err)

    def _terminate_again(self, report: PassReport) -> None:
        """Terminate again any node whose terminate failed (left terminating) or that is recorded as
        ended while its cloud still lists it alive (listed late, or started outside us): the same
        request id as the first terminate, so the call is idempotent (a stray's time past its
        recorded end was charged as observe found it)."""
        overdue = self.nodes.overdue_take_backs(self.clock.now())
        for node_id in sorted(self.nodes.unterminated | overdue):
            why = ("its cloud did not take it back by its notice's time" if node_id in overdue else
                   "the last call failed, or it stops outside the controller (a stopped VM bills its disks)")
            try:
                self._drain_and_terminate(node_id, f"terminate: {why}")
            except ProviderError as err:
                _failed(report, "terminate", err)
        for node_id, provider in sorted(self.nodes.strays.items()):
            log.warning("node %s is recorded as ended but %s lists it running: terminating it and "
                        "charging its time since", node_id, provider)
            try:
                self.providers[provider].terminate([node_id], request_id=f"term-{node_id}")
            except ProviderError as err:
                _failed(report, "terminate", err)  # a stray still: terminated again next pass
                continue
            self.nodes.terminated_stray(node_id)

    def _checkpoint(self, a: Checkpoint, now: datetime) -> None:
        rec = self.state.nodes.get(a.node_id)
        if rec is None or a.node_id in self.state.tickets:
            return
        if a.deadline <= now:  # due already: no time to write one (``policies.budget_stop``), drained now
            return self._drain_and_terminate(a.node_id, a.reason)
        # first: if it fails, the node stays as it was
        ticket = self.pool.checkpoint(a.node_id, a.deadline, cordon=a.cordon)
        self.nodes.mark(a.node_id, NodeState.CHECKPOINTING)
        # a ticket naming no job (it left first) stays the asked job's: the poll calls it off for the next
        self.state.tickets[a.node_id] = ticket if ticket.job_id else replace(ticket, job_id=a.job_id)

    def _drain_and_terminate(self, node_id: str, reason: str, *, drain_optional: bool = False) -> None:
        """Drain and terminate; a node its cloud takes back free within moments is drained and left
        to it (``NodeBook.left_to_cloud``: terminating it ourselves would be billed). ``drain_optional``:
        a drain the pool refuses does not stop the terminate (the pool could not be read this pass, or
        the node's checkpoint is past its deadline)."""
        rec = self.state.nodes.get(node_id)
        if rec is None or rec.state in (NodeState.TERMINATED, NodeState.FAILED):
            return
        if rec.state is not NodeState.TERMINATING:
            if rec.state in (NodeState.READY, NodeState.CHECKPOINTING, NodeState.LAUNCHING):
                # a booting node too: should the terminate fail, it joins drained and nothing starts there
                try:
                    self.pool.drain(node_id)
                    if rec.state is not NodeState.LAUNCHING:
                        self.nodes.mark(node_id, NodeState.DRAINING)
                except ProviderError:
                    if not drain_optional:
                        raise
            if self.nodes.left_to_cloud(node_id, self.clock.now()):
                note = f"{node_id} drained, not terminated: its cloud takes it back unbilled at its notice's time"
                log.info("%s (%s)", note, reason)
                self._notes.append(note)
                return
            self.nodes.mark(node_id, NodeState.TERMINATING)
        # request id ``term-<id>``: a retry is the same call; one refused leaves the record terminating, made
        # again next pass listed or not (``NodeBook.sync``)
        self.providers[rec.provider].terminate([node_id], request_id=f"term-{node_id}")
        self.nodes.ended(node_id, self.clock.now(), self._charge)

    def _charge(self, node_id: str, end: datetime) -> None:
        for e in self.nodes.ledger_entries(node_id, end):
            self.state.charge(e)

    def close_books(self, now: datetime) -> None:
        """The simulation stops at ``now``: every node still live is ended in the record and charged up
        to then as a bill read at the stop shows it (no cloud call; ``NodeBook.close_books``)."""
        try:
            running = tuple(self.pool.running())  # jobs started since the last pass take their nodes over
        except ProviderError:
            running = ()
        self.nodes.close_books(now, running, self._charge)
        self.state.commit()

    # --- record --------------------------------------------------------------------------------
    def record(self, report: PassReport) -> None:
        self.state.commit()
        if self.on_event is None:
            return
        for line in self._decisions.lines(report.plan):
            self.on_event(f"{report.now:%Y-%m-%d %H:%M:%S} {line}")
        for note in report.notes:
            self.on_event(f"{report.now:%Y-%m-%d %H:%M:%S} note: {note}")
        for err in report.errors:
            self.on_event(f"{report.now:%Y-%m-%d %H:%M:%S} error: {err}")


def _failed(report: PassReport, action: str, err: ProviderError | ConfigError) -> None:
    """Report an action a cloud or the pool refused; the next pass tries it again."""
    report.errors.append(f"{action} failed: {err}")
    log.warning("action failed (will retry next pass): %s", err)

