"""The reconciler's book of cloud nodes: records merged with what clouds and the pool report."""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timedelta

from burster import node_bills as bills
from burster.billing import interrupted_spot_billed_s
from burster.budget_period import period_start
from burster.errors import ProviderError
from burster.interfaces import CloudProvider
from burster.lifecycle import TRANSITIONS, NodeState
from burster.model import InFlight, Interruption, Market, Node, Placement, Spend
from burster.plan import Launch
from burster.state import EndWatch, LedgerEntry, MemoryState, NodeRecord

log = logging.getLogger("burster.reconcile")

# The path a record takes to reach a state the cloud reports, through legal transitions only.
_FORWARD = (NodeState.REQUESTED, NodeState.LAUNCHING, NodeState.JOINING, NodeState.READY)
_ENDED = (NodeState.TERMINATED, NodeState.FAILED)

# A node younger than this that a listing leaves out is not taken for gone: clouds list new
# instances late, and ending the record would orphan a running node. EC2's guide to its eventual
# consistency says to retry a Describe with backoff "up to about five minutes"
# (https://docs.aws.amazon.com/ec2/latest/devguide/eventual-consistency.html).
LISTING_GRACE_S = 300.0
# An AWS Spot Instance EC2 interrupts in its first hour is not billed; one the customer terminates
# is (burster/billing.py). A node with a definite notice that its cloud would take back free is left
# to it, drained, and terminated only if still up this long after the notice's time.
TAKE_BACK_GRACE_S = 120.0


class Providers(dict[str, CloudProvider]):
    """The configured clouds by name. One that node records name but the config no longer has (a kept
    store, the cloud since disabled) is a ProviderError, which a pass reports, not a KeyError."""

    def __missing__(self, name: str) -> CloudProvider:
        raise ProviderError(f"provider {name!r} is not configured, but this controller's records hold live "
                            f"nodes there: enable clouds.{name} again so it can end them", provider=name)


class NodeBook:
    def __init__(self, state: MemoryState, listing_grace_s: float = LISTING_GRACE_S) -> None:
        self.state = state
        self.listing_grace_s = listing_grace_s
        self.strays: dict[str, str] = {}  # node id -> provider: recorded as ended, listed alive
        self.unterminated: set[str] = set()  # terminating (the call failed) or stopped outside us: terminate
        self.missing: dict[str, datetime] = {}  # node id -> when a listing that still leaves it out ends it
        self._running: Sequence[Placement] | None = None  # the last pool placements seen ...
        self._on: dict[str, Placement] = {}  # ... and the run on each of their cloud nodes
        self._views: dict[str, tuple[NodeRecord, str | None, Node]] = {}  # last snapshot's Node per id
        self._intents_seen: dict[str, datetime] = {}  # when each launch intent's grace started (expire_intents)
        self._taken_back: set[str] = set()  # ending now, taken back by the cloud (billed as such)
        self._unbilled = bills.EndsToBill(self._taken_back)  # ends sync found, charged by bill_ended
        self._orphans_warned: dict[str, int] = {}  # unconfigured provider -> live nodes when last warned

    def adopt(self, nodes: Iterable[Node], launch: Launch | None, now: datetime) -> None:
        """Record nodes a launch returned (or that a listing found, after a crash)."""
        for n in nodes:
            if n.node_id in self.state.nodes:
                continue
            self.state.add_node(NodeRecord(
                node_id=n.node_id, provider=n.offering.provider, offering=n.offering,
                request_id=n.request_id, launched_at=n.launched_at or now,
                state=NodeState.REQUESTED,
                for_job=launch.job_id if launch else None,
                team=launch.team if launch else n.team,
                project=launch.project if launch else n.project,
                sprint=launch.sprint if launch else n.sprint,
                reason=launch.reason if launch else "adopted: tagged by this controller",
                exclusive=launch.exclusive if launch else n.exclusive,
            ))
            self.follow(n.node_id, n.state)

    def adopt_launched(self, nodes: Sequence[Node], launch: Launch, now: datetime,
                       charge: Callable[[str, datetime], None]) -> list[Node]:
        """Record the nodes a launch call returned, and return those still live. A replayed request id
        (EC2 ClientToken) answers with the request's earlier nodes, ended ones included (one
        preempted while the first call's reply was lost): those are recorded as ending or ended, and billed."""
        for n in nodes:
            if n.node_id not in self.state.nodes:
                self._adopt_one(n, launch, now, charge)
        return [n for n in nodes if n.state in _FORWARD]

    def _adopt_one(self, n: Node, launch: Launch | None, now: datetime,
                   charge: Callable[[str, datetime], None]) -> None:
        """Adopt a node this controller launched, in whatever state its cloud reports."""
        self.adopt([n], launch, now)
        if n.state is NodeState.TERMINATING:
            self.state.move(n.node_id, NodeState.TERMINATING)
        elif n.state in _ENDED:  # launched by us, and gone since: bill it
            self.ended(n.node_id, n.ended_at or now, charge, taken_back=n.taken_back)

    def follow(self, node_id: str, cloud_state: NodeState) -> None:
        """Move a record forward to the state its cloud reports (LAUNCHING/READY)."""
        rec = self.state.nodes[node_id]
        if rec.state is cloud_state or cloud_state not in _FORWARD or rec.state not in _FORWARD:
            return
        target = _FORWARD.index(cloud_state)
        for step in _FORWARD[_FORWARD.index(rec.state) + 1: target + 1]:
            self.state.move(node_id, step)

    def mark(self, node_id: str, state: NodeState) -> None:
        rec = self.state.nodes.get(node_id)
        if rec is None or rec.state is state:
            return
        if state not in TRANSITIONS[rec.state] and rec.state in _FORWARD[:-1]:
            self.follow(node_id, NodeState.READY)  # e.g. draining or checkpointing a node still booting
        if state in TRANSITIONS[self.state.nodes[node_id].state]:
            self.state.move(node_id, state)

    def unconfigured(self, configured: Collection[str]) -> set[str]:
        """Providers with live node records but no adapter: degraded every pass (their nodes kept as last
        known and billed, nothing there reclaimed), with a warning saying how to end them when first
        seen and whenever their live node count changes (not every pass)."""
        orphans = self.state.live_providers() - set(configured)
        counts = {name: len(self.state.live_of(name)) for name in orphans}
        for name in sorted(n for n, c in counts.items() if self._orphans_warned.get(n) != c):
            log.warning("provider %s is not configured but %d live node(s) are recorded there: they stay "
                        "billed and are never reclaimed; enable clouds.%s again so the controller can end them",
                        name, counts[name], name)
        self._orphans_warned = counts
        return orphans

    def sync(self, now: datetime, listed: Mapping[str, Sequence[Node]], degraded: set[str],
             charge: Callable[[str, datetime], None]) -> None:
        """Merge provider listings: adopt unknown tagged nodes (an ending or ended one only if an
        intent of ours launched it), follow states, end vanished ones (once older than
        ``listing_grace_s``; one left terminating at once, charged to now: our terminate went
        through with its reply lost, or it went since), and note in ``strays`` nodes recorded as
        ended (for ``listing_grace_s`` or more) and in ``unterminated`` nodes left terminating (the
        call failed: listed or not, as a terminate is idempotent; the record says so, so across a restart too),
        and live ones it shows stopping or stopped outside the controller (a stopped VM bills its disks
        until it is terminated). An ended record listed running is charged up to each such listing,
        and up to the first that leaves it out (as a live node is) unless the controller's terminate
        of it went through first (``terminated_stray``), or to its end if a listing shows it ended;
        it is a stray a grace after its first recorded end, or at once if listings had left it out
        (taken for gone). What is watched is in the state (``MemoryState.watched``), so a restart
        keeps it. The nodes it ends are charged by ``bill_ended``, once the pool's placements are read."""
        charge, records = self._unbilled.later(charge), self.state.nodes
        unknown = [n.node_id for ns in listed.values() for n in ns if n.node_id not in records]
        if unknown:
            self.state.recall(unknown)  # a store's records of long-ended nodes, listed again
        self.strays, self.unterminated, self.missing = {}, set(), {}
        grace = timedelta(seconds=self.listing_grace_s)
        watched = self.state.watched
        for node_id in [i for i, w in watched.items() if not w.running and now - w.ended_at >= grace]:
            del watched[node_id]  # taken for gone a grace ago: the rule for every ended record covers it
        for provider, nodes in listed.items():
            seen = set()
            for n in sorted(nodes, key=lambda n: n.node_id):  # a cloud lists in no set order: adopt and bill by id
                seen.add(n.node_id)
                rec = records.get(n.node_id)
                if rec is None:
                    intent = self.state.intents.get(n.request_id)
                    if intent is None and n.state not in _FORWARD:
                        continue  # ending or ended before this controller knew of it: not its to track
                    self._adopt_one(n, intent, now, charge)
                elif n.state in _ENDED:
                    if n.node_id in watched:  # a stray's end, listed (EC2 lists it for an hour); one taken
                        # for gone too: it ran on to that end (charges nothing if that is before its record's)
                        self._charge_overrun(n.node_id, n.ended_at or now)
                        del watched[n.node_id]
                    self.ended(n.node_id, n.ended_at or now, charge, taken_back=n.taken_back)
                elif rec.state in _ENDED:
                    if n.state in _FORWARD:  # running on: charged; a late listing of its end only so long
                        w = watched.get(n.node_id) or EndWatch(rec.ended_at or rec.launched_at, unseen=False)
                        self._charge_overrun(n.node_id, now)
                        watched[n.node_id] = replace(w, running=True)
                        if w.unseen or now - w.ended_at >= grace:
                            self.strays[n.node_id] = provider
                elif NodeState.TERMINATING in (rec.state, n.state) and rec.state is not n.state:
                    self.unterminated.add(n.node_id)  # our terminate failed, or it stops outside us
                elif rec.state is not n.state:
                    self.follow(n.node_id, n.state)
            if provider in degraded:
                continue
            for rec in self.state.live_of(provider):
                if rec.node_id not in seen and (rec.state is NodeState.TERMINATING or now - rec.launched_at >= grace):
                    self.ended(rec.node_id, now, charge)  # gone: preempted, removed outside us, or by us
                    watched[rec.node_id] = EndWatch(now, unseen=True)
                elif rec.node_id not in seen:  # too young to take for gone: a listing may lag a launch
                    self.missing[rec.node_id] = rec.launched_at + grace
            for node_id in sorted(i for i, w in watched.items()  # by id: a store loads in no set order
                                  if w.running and i not in seen and records[i].provider == provider):
                self._charge_overrun(node_id, now)  # gone at last: charged to the listing without it
                del watched[node_id]
        # a live record left terminating and not listed so: its terminate was refused (or the process died
        # in the call); made again listed or not, as a listing that failed would leave it billing a tick more
        if terminating := [r.node_id for r in self.state.live() if r.state is NodeState.TERMINATING]:
            ending = {n.node_id for ns in listed.values() for n in ns if n.state is NodeState.TERMINATING}
            self.unterminated.update(i for i in terminating if i not in ending)

    def ended(self, node_id: str, now: datetime, charge: Callable[[str, datetime], None], *,
              still_up: bool = False, taken_back: bool = False) -> None:
        """End a record and bill it; a spot node was taken back by its cloud (``interrupted_spot_billed_s``)
        if its listing says so (``taken_back``: even after a terminate of ours, which came too late), or
        if it had a standing notice and ends without this controller's terminate; not if ``still_up``:
        the books close while it runs (a simulation's stop), its cloud has taken nothing yet."""
        rec = self.state.nodes.get(node_id)
        if rec is None or rec.state in _ENDED:
            return
        if not still_up and rec.offering.market is Market.SPOT and (taken_back or (
                rec.state is not NodeState.TERMINATING and node_id in self.state.notices)):
            self._taken_back.add(node_id)
        if rec.state is NodeState.REQUESTED:
            self.state.move(node_id, NodeState.FAILED, ended_at=now)
        else:
            if rec.state is not NodeState.TERMINATING:
                self.state.move(node_id, NodeState.TERMINATING)
            self.state.move(node_id, NodeState.TERMINATED, ended_at=now)
        charge(node_id, now)
        self._taken_back.discard(node_id)
        self.state.tickets.pop(node_id, None)

    def expire_intents(self, now: datetime) -> None:
        """Clear a launch intent once listings have shown all its nodes (its reply was lost), and
        forget one not fully answered for ``listing_grace_s`` since its call was first sent
        (``MemoryState.sent``, kept in the store, so a restart does not start it again; with none,
        since a pass first found it): its call failed (one that might have launched: a timeout,
        throttling) or its nodes never came. A node it did launch that is listed later still is
        adopted, as this cluster's, untied to a job."""
        seen = self._intents_seen
        for rid in [r for r in seen if r not in self.state.intents]:
            del seen[rid]
        for rid in [r for r in self.state.sent if r not in self.state.intents]:
            del self.state.sent[rid]
        grace = timedelta(seconds=self.listing_grace_s)
        for rid, launch in list(self.state.intents.items()):
            found = self.state.nodes_of_request(rid)
            if found < launch.count and now - seen.setdefault(rid, self.state.sent.get(rid) or now) < grace:
                continue
            if found == 0:
                log.warning("launch %s: no node answered it in %.0fs; forgetting its intent", rid,
                            grace.total_seconds())
            elif found < launch.count:
                log.warning("launch %s: listings showed %d of its %d nodes in %.0fs; forgetting its intent",
                            rid, found, launch.count, grace.total_seconds())
            self.state.clear_intent(rid)
            seen.pop(rid, None)

    def in_flight(self, now: datetime) -> tuple[InFlight, ...]:
        """Standing launch intents as the policy sees them (``Snapshot.in_flight``): their nodes listings
        have not shown yet, under the request id the policy planned (a retry's ``-rN`` left off), since
        their call was first sent (``MemoryState.sent``, kept in the store; for an intent kept with no
        send time, since a pass first found it). By request id."""
        st, out = self.state, []
        for rid, a in sorted(st.intents.items()):
            unseen = a.count - st.nodes_of_request(rid)
            if unseen > 0:
                planned = next((b for b, n in st.failed_requests.items() if n and rid == f"{b}-r{n}"), rid)
                asked = st.sent.get(rid) or self._intents_seen.get(rid, now)
                out.append(InFlight(planned, a.offering, unseen, asked, a.job_id, a.team, a.exclusive))
        return tuple(out)

    def partly_listed(self) -> list[Launch]:
        """Standing launch intents whose nodes listings show only in part: the call reached its cloud. By
        request id: a restarted controller's store loads them in no set order."""
        return [a for rid, a in sorted(self.state.intents.items()) if 0 < self.state.nodes_of_request(rid) < a.count]

    def spend(self, now: datetime, period: str) -> Spend:
        """The budget period's spend: ledger since its start plus what live nodes accrued in it,
        by team; and the launches of the last minute (older launch times are dropped)."""
        st = self.state
        since = period_start(period, now)
        total, spent_by_team = st.spent_since(since)
        by_team = dict(spent_by_team)
        for team, usd in self.accrued_usd_all(now, since):
            total += usd
            by_team[team] = by_team.get(team, 0.0) + usd
        minute_ago = now - timedelta(seconds=60)
        st.launch_times = [t for t in st.launch_times if t > minute_ago]
        return Spend(total, tuple(sorted(by_team.items())), len(st.launch_times), period)

    def take_notices(self, new: Sequence[Interruption]) -> list[Interruption]:
        """Keep new notices (per node the one ending it first) before listings end nodes: a spot node listed
        gone in the pass its notice is read (late: a degraded provider) was taken back. Returns nodes' first."""
        standing, first = self.state.notices, []
        for n in new:
            kept = standing.get(n.node_id)
            first += [n] if kept is None else []
            if kept is None or n.terminate_at < kept.terminate_at:
                standing[n.node_id] = n
        return first

    def standing_notices(self) -> tuple[Interruption, ...]:
        """Notices kept (in the state, so across a restart) until their node ends (clouds hand each out once):
        one whose handling failed, a checkpoint the pool refused, is handled again next pass. By end, node."""
        standing = self.state.notices
        for node_id in [k for k in standing if not self.state.is_live(k)]:
            del standing[node_id]
        return tuple(sorted(standing.values(), key=lambda n: (n.terminate_at, n.node_id)))

    def left_to_cloud(self, node_id: str, now: datetime) -> bool:
        """Whether to leave ``node_id`` for its cloud to take back rather than terminate it: a spot
        node with a definite notice ("spot-interruption") whose taking back at the notice's time
        is not billed, until ``TAKE_BACK_GRACE_S`` past that time."""
        rec, notice = self.state.nodes.get(node_id), self.state.notices.get(node_id)
        if rec is None or notice is None or notice.kind != "spot-interruption" \
                or rec.offering.market is not Market.SPOT:
            return False
        if rec.state is NodeState.TERMINATING or now >= notice.terminate_at + timedelta(seconds=TAKE_BACK_GRACE_S):
            return False
        return interrupted_spot_billed_s(rec.provider, (notice.terminate_at - rec.launched_at).total_seconds()) == 0.0

    def overdue_take_backs(self, now: datetime) -> set[str]:
        """Nodes left to their cloud (drained, with a notice) that it has not taken back in time."""
        grace = timedelta(seconds=TAKE_BACK_GRACE_S)
        return {node_id for node_id, notice in self.state.notices.items() if now >= notice.terminate_at + grace
                and (rec := self.state.nodes.get(node_id)) is not None and rec.state is NodeState.DRAINING}

    def bill_ended(self, running: Sequence[Placement]) -> None:
        """Charge the nodes ``sync`` ended, each handed over first to a job of another team that
        ``running`` (the pool's placements; none if unread) shows started on it before its end."""
        if running is not self._running:
            self._running = running
            self._on = {node_id: p for p in running if p.on_cloud for node_id in p.node_ids}
        self._unbilled.bill(lambda node_id, end: bills.hand_over(self.state, node_id, self._on.get(node_id), end))

    def snapshot_nodes(self, now: datetime, running: Sequence[Placement]) -> tuple[Node, ...]:
        """Live nodes as the policy sees them, in launch order (those adopted from one listing by
        id), after ``bill_ended``; a Node is reused while its record and job hold."""
        self.bill_ended(running)
        on, views, nodes = self._on, self._views, self.state.nodes
        self._views = fresh = {}
        out = []
        for rec in self.state.live():
            node_id = rec.node_id
            run = on.get(node_id)
            job = run.job.job_id if run is not None else None
            rec = bills.hand_over(self.state, node_id, run)
            if job is None and rec.idle_since is None and rec.state is NodeState.READY:
                self.state.update(node_id, idle_since=now)
                rec = nodes[node_id]
            elif job is not None and rec.idle_since is not None:
                self.state.update(node_id, idle_since=None)
                rec = nodes[node_id]
            view = views.get(node_id)
            if view is None or view[0] is not rec or view[1] != job:
                view = (rec, job, _node_of(rec, job))
            fresh[node_id] = view
            out.append(view[2])
        out.sort(key=_node_id)
        return tuple(out)

    def blind_nodes(self) -> tuple[Node, ...]:
        """Live nodes for a pass whose pool could not be read: each as the last snapshot showed it
        while its record holds, else as its record says (what runs there unknown); no record changes."""
        views = self._views
        return tuple(sorted((v[2] if (v := views.get(rec.node_id)) is not None and v[0] is rec else _node_of(rec)
                             for rec in self.state.live()), key=_node_id))

    def close_books(self, now: datetime, running: Sequence[Placement], charge: Callable[[str, datetime], None]) -> None:
        """End every live node at ``now`` (the simulation's stop) by its cloud's plain rule, a spot node
        with a notice standing too (its cloud has not taken it back), each handed over first to a job
        of another team ``running`` shows started on it since the last pass."""
        self.snapshot_nodes(now, running)
        for rec in self.state.live():
            self.ended(rec.node_id, now, charge, still_up=True)

    def accrued_usd_all(self, now: datetime, since: datetime | None = None) -> list[tuple[str, float]]:
        """(team, USD billed so far and not charged yet) of every live node, in launch order; with
        ``since``, only the share of it that fell at or after ``since`` (pro rata by time)."""
        return [(rec.team, bills.accrued_usd(rec, now, since)) for rec in self.state.live()]

    def ledger_entries(self, node_id: str, end: datetime) -> list[LedgerEntry]:
        """What to charge as the node ends at ``end`` (``burster.node_bills.final_entries``)."""
        rec, ledger = self.state.nodes[node_id], self.state.ledger
        return bills.final_entries(rec, end, node_id in self._taken_back, lambda: ledger)

    def terminated_stray(self, node_id: str) -> None:
        """This controller's terminate of a stray went through: its end is charged already."""
        self.state.watched.pop(node_id, None)

    def _charge_overrun(self, node_id: str, now: datetime) -> None:
        """Charge what a stray cost past its recorded end, billed as one run to ``now``, and move
        the record's end to ``now``: each second is charged once however often the node is found."""
        rec = self.state.nodes[node_id]
        end = rec.ended_at or rec.launched_at
        extra = bills.billed_s(rec, now) - bills.billed_s(rec, end)
        self.state.update(node_id, ended_at=max(now, end))
        if extra > 0:
            self.state.charge(bills.entry(rec, end, now, extra, f"{rec.reason}; ran on after it was recorded as ended"))


def _node_of(rec: NodeRecord, job: str | None = None) -> Node:
    """The policy's view of a live record, ``job`` running there (None: idle, or unknown); launched for
    another job than the one it runs, it is for none."""
    for_job = None if job is not None and rec.for_job not in (None, job) else rec.for_job
    return Node(rec.node_id, rec.offering, rec.state, rec.launched_at, rec.request_id, job_id=job, for_job=for_job,
                idle_since=rec.idle_since, team=rec.team, exclusive=rec.exclusive)


def _node_id(node: Node) -> str:
    return node.node_id

