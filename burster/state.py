"""Controller state between passes: launch intents, node records, checkpoint tickets, standing
interruption notices, ended nodes still watched for, blocked offerings, the ledger.

``MemoryState`` keeps it in memory (the simulator, tests); ``burster.sqlstate.SqlState`` keeps the
same in a SQL database (the controller), written back by ``commit`` at the end of each pass. The
reconciler writes a launch intent *before* calling the cloud, so a crash between the two is
recovered on the next pass: nodes tagged with the intent's request id are adopted instead of
launched again.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime
from decimal import Decimal

from burster.budget_period import share_since
from burster.lifecycle import NodeState, transition
from burster.model import CheckpointTicket, Interruption, Offering
from burster.plan import Launch


@dataclass(frozen=True, slots=True)
class NodeRecord:
    """What the controller knows about one node beyond what its cloud reports."""

    node_id: str
    provider: str
    offering: Offering
    request_id: str
    launched_at: datetime
    state: NodeState
    for_job: str | None = None
    team: str = ""
    project: str = ""
    sprint: str = ""
    reason: str = ""
    idle_since: datetime | None = None
    ended_at: datetime | None = None
    exclusive: bool = False  # the pool gives it no job on its own (``Launch.exclusive``)
    # its run is charged up to here, to whom it served before a job of another team started on it
    # (``burster.node_bills``); None: nothing charged yet
    charged_from: datetime | None = None


@dataclass(frozen=True, slots=True)
class EndWatch:
    """A node recorded as ended that listings are still watched for (``NodeBook.sync``)."""

    ended_at: datetime  # its first recorded end
    unseen: bool  # ended because listings left it out: listed again, it is surely running
    running: bool = False  # listed running since: charged up to each such listing


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    """Money one node cost, attributed to who and what caused it. USD as Decimal."""

    node_id: str
    provider: str
    market: str
    instance_type: str
    region: str
    team: str
    project: str
    sprint: str
    reason: str
    start: datetime
    end: datetime
    billed_s: float
    usd: Decimal


@dataclass
class MemoryState:
    intents: dict[str, Launch] = field(default_factory=dict)
    sent: dict[str, datetime] = field(default_factory=dict)  # intent request id -> when its call was first sent
    nodes: dict[str, NodeRecord] = field(default_factory=dict)
    tickets: dict[str, CheckpointTicket] = field(default_factory=dict)
    ledger: list[LedgerEntry] = field(default_factory=list)
    blocked: dict[str, datetime] = field(default_factory=dict)  # offering key -> blocked until
    block_strikes: dict[str, int] = field(default_factory=dict)  # offering key -> capacity errors in a row
    launch_times: list[datetime] = field(default_factory=list)
    failed_requests: dict[str, int] = field(default_factory=dict)  # plan request id -> failed or spent attempts
    notices: dict[str, Interruption] = field(default_factory=dict)  # standing interruption notices, by node id
    watched: dict[str, EndWatch] = field(default_factory=dict)  # ended nodes listings are watched for, by id
    spent_usd: float = 0.0
    spent_by_team: dict[str, float] = field(default_factory=dict)
    _live: dict[str, None] = field(default_factory=dict)  # ids of live nodes, in launch order
    _live_by_provider: dict[str, dict[str, None]] = field(default_factory=dict)  # the same, per provider
    _by_request: dict[str, list[str]] = field(default_factory=dict)  # launch request id -> node ids
    _since: datetime | None = None  # start of the budget period the two sums below count
    _since_usd: float = 0.0
    _since_by_team: dict[str, float] = field(default_factory=dict)

    # --- intents & nodes -----------------------------------------------------------------------
    def put_intent(self, launch: Launch, sent_at: datetime | None = None) -> None:
        """Keep a launch intent; ``sent_at``: its call is being sent then (a standing intent asked
        again keeps its first send: ``NodeBook.in_flight`` dates it so)."""
        self.intents[launch.request_id] = launch
        if sent_at is not None:
            self.sent.setdefault(launch.request_id, sent_at)

    def clear_intent(self, request_id: str) -> None:
        self.intents.pop(request_id, None)
        self.sent.pop(request_id, None)

    def add_node(self, rec: NodeRecord) -> None:
        """Record a node launched or adopted (once); it is live until it ends."""
        self.restore(rec, live=True)

    def restore(self, rec: NodeRecord, *, live: bool) -> None:
        """Put a record back as a store kept it (once), live or not as it was (rows written before
        failed became an end may hold a failed node moved on to terminating: it stays out)."""
        if rec.node_id not in self.nodes:
            self.nodes[rec.node_id] = rec
            self._by_request.setdefault(rec.request_id, []).append(rec.node_id)
            if live:
                self._live[rec.node_id] = None
                self._live_by_provider.setdefault(rec.provider, {})[rec.node_id] = None

    def is_live(self, node_id: str) -> bool:
        return node_id in self._live

    def recall(self, node_ids: Iterable[str]) -> None:
        """Bring back the records of these nodes that a store left out of memory (ended long ago:
        ``SqlState``), so a node listed again is known for what it was; in memory, all are here."""

    def nodes_of_request(self, request_id: str) -> int:
        """How many nodes are recorded under launch ``request_id`` (live or ended)."""
        return len(self._by_request.get(request_id, ()))

    def request_spent(self, request_id: str) -> bool:
        """True when nodes were launched under ``request_id`` and all of them have ended: the cloud
        would answer that id again with those ended nodes (EC2 ClientToken, the simulated clouds)."""
        ids = self._by_request.get(request_id, [])
        return bool(ids) and not any(i in self._live for i in ids)

    def move(self, node_id: str, state: NodeState, **changes: object) -> NodeRecord:
        """Change a node's lifecycle state through the table (raises on an illegal move)."""
        rec = self.nodes[node_id]
        if rec.state is not state:
            transition(rec.state, state)
        rec = replace(rec, state=state, **changes)  # type: ignore[arg-type]
        self.nodes[node_id] = rec
        if state in (NodeState.TERMINATED, NodeState.FAILED):
            self._live.pop(node_id, None)
            self._live_by_provider.get(rec.provider, {}).pop(node_id, None)
        return rec

    def update(self, node_id: str, **changes: object) -> None:
        self.nodes[node_id] = replace(self.nodes[node_id], **changes)  # type: ignore[arg-type]

    def live(self) -> list[NodeRecord]:
        return [self.nodes[i] for i in self._live]

    def live_of(self, provider: str) -> list[NodeRecord]:
        """Live nodes of one provider, in launch order."""
        return [self.nodes[i] for i in self._live_by_provider.get(provider, ())]

    def live_providers(self) -> set[str]:
        """The providers that have live nodes."""
        return {p for p, ids in self._live_by_provider.items() if ids}

    def has_live(self) -> bool:
        return bool(self._live)

    def commit(self) -> None:
        """Keep this pass's changes (the reconcile pass calls it last); memory keeps them already."""

    def close(self) -> None:
        """Let go of the store (a SQL store gives its cluster back); nothing to do in memory."""

    # --- money ---------------------------------------------------------------------------------
    def charge(self, entry: LedgerEntry) -> None:
        self.ledger.append(entry)
        usd = float(entry.usd)
        self.spent_usd += usd
        self.spent_by_team[entry.team] = self.spent_by_team.get(entry.team, 0.0) + usd
        if self._since is not None:
            self._add_since(entry)

    def spent_since(self, since: datetime | None) -> tuple[float, dict[str, float]]:
        """Ledger dollars (total, by team) that fell at or after ``since`` (None: all of them),
        a node across ``since`` pro rata by time. Summed again only when ``since`` moves."""
        if since is None:
            return self.spent_usd, self.spent_by_team
        if since != self._since:
            self._since, self._since_usd, self._since_by_team = since, 0.0, {}
            for entry in self.ledger:
                self._add_since(entry)
        return self._since_usd, self._since_by_team

    def _add_since(self, entry: LedgerEntry) -> None:
        usd = share_since(float(entry.usd), entry.start, entry.end, self._since)
        if usd:
            self._since_usd += usd
            self._since_by_team[entry.team] = self._since_by_team.get(entry.team, 0.0) + usd
