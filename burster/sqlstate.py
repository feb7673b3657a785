"""Controller state kept in SQL (SQLAlchemy 2: a SQLite file by default, PostgreSQL in production).

``SqlState`` is a ``MemoryState`` whose contents outlive the process: opened on a database URL, it
loads what an earlier controller of the same cluster left (node records, launch intents, checkpoint
tickets, standing interruption notices, ended nodes still watched for, blocked offerings, the ledger
and so the spend the budgets count), and the reconcile pass writes it back at the end of every pass
(``commit``). A launch intent is written at once, before the cloud is called, so a crash between the
call and the pass's end is recovered as in memory: the nodes carrying the intent's request id are
adopted with its team, job and reason. The tables are ``burster.sqlschema``'s, migrated by Alembic
when the store is opened.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Connection, Engine, RowMapping, create_engine, delete, func, insert, select, true
from sqlalchemy.exc import SQLAlchemyError

from burster.clock import utc_now
from burster.errors import ConfigError, StoreError
from burster.lifecycle import NodeState
from burster.model import CheckpointTicket, Interruption, Offering
from burster.plan import Launch
from burster.redact import redact, redact_url
from burster.sqllease import LEASE_S, Lease, holders
from burster.sqlrows import KEYED, keyed_values, ledger_entry_of, ledger_row, node_row, record_of
from burster.sqlschema import (
    blocks,
    failed_requests,
    intents,
    launch_from,
    launch_json,
    launch_times,
    ledger,
    migrates_from_older,
    nodes,
    notices,
    offering_from,
    schema_lag,
    tickets,
    upgrade,
    watched_ends,
)
from burster.state import EndWatch, MemoryState, NodeRecord

# Ended nodes and ledger entries a controller loads: longer than any budget period (a month), so the
# period's spend is whole in memory; older ones count in the all-time spend and stay in the database.
HISTORY = timedelta(days=45)


class SqlState(MemoryState):
    """``MemoryState`` loaded from, and written back to, one cluster's rows of a SQL database."""

    def __init__(self, engine: Engine, cluster: str, lease: Lease | None, history: timedelta | None = None) -> None:
        """``lease``: write as the cluster's one controller (taken here); None: read only.
        ``history``: load ended nodes and ledger entries only this far back from the cluster's
        latest record (the spend they add up to is loaded all the same); None: everything."""
        super().__init__()
        self.engine = engine
        self.cluster = cluster
        self.lease = lease
        self.history = history
        self._seq: dict[str, int] = {}  # node id -> launch order
        self._offerings: dict[str, Offering] = {}  # loaded records share them, by their JSON
        self._next_seq = 0  # the launch order of the next node added
        self._unloaded = 0  # node records the load left in the database (older than ``history``)
        self._dirty: set[str] = set()  # node records changed since the last commit
        self._ledger_seq0 = 0  # the charge order of self.ledger[0] (older entries stay unloaded)
        self._saved_ledger = 0  # entries already written
        self._saved: dict[str, Any] = {}  # the small tables as last written (set by _load)
        with engine.connect() as conn:
            if lease is None and engine.dialect.name == "postgresql":  # a reader beside a controller's
                conn.execution_options(isolation_level="REPEATABLE READ")  # commits: all from one snapshot
            with conn.begin():
                if lease is not None:
                    lease.take(conn)
                elif engine.dialect.name == "sqlite":  # pysqlite begins none before reads: one for them all
                    conn.exec_driver_sql("BEGIN")
                self._load(conn)

    @classmethod
    def open(cls, url: str, cluster: str = "default", *, lease_s: float = LEASE_S,
             now: Callable[[], datetime] = utc_now) -> SqlState:
        """The state of ``cluster`` in the database at ``url`` (created and migrated as needed), to
        be written by this controller alone (``burster.sqllease``; StoreError while another holds it).
        Nodes that ended and ledger entries older than ``HISTORY`` stay in the database only."""
        return cls._open(url, cluster, Lease(cluster, lease_s, now), HISTORY)

    @classmethod
    def read(cls, url: str, cluster: str = "default") -> SqlState:
        """The state of ``cluster`` as it is now, to read (reports, tests), not to run a controller on;
        nothing in the database changes (StoreError if its schema is not this code's: none, or older)."""
        return cls._open(url, cluster, None, None)

    @classmethod
    def _open(cls, url: str, cluster: str, lease: Lease | None, history: timedelta | None) -> SqlState:
        try:
            engine = create_engine(url)
        except (SQLAlchemyError, ImportError, ValueError) as err:  # ValueError: a port not a number
            raise ConfigError(f"store.url {redact_url(url)!r} is not a database URL SQLAlchemy can use "
                              f"({_why(err)}); e.g. sqlite:///burster.db or "
                              "postgresql+psycopg2://user@host/db (pip install 'burster[postgres]')") from err
        try:
            if lease is None:  # a reader changes nothing, the schema included
                lag = schema_lag(engine)
                if lag is not None:
                    raise StoreError(f"cannot be read: {lag}; a controller opening it migrates it, or run "
                                     "the Alembic upgrade in docs/state.md")
            else:
                busy = holders(engine, lease.now()) if migrates_from_older(engine) else []
                if busy:  # an older burster still writing would meet tables it does not know
                    raise StoreError(f"its schema needs migrating ({schema_lag(engine)}), but older controllers "
                                     f"still write it ({'; '.join(busy)}): stop them, or let their leases "
                                     "lapse, then start this one")
                upgrade(engine)
            return cls(engine, cluster, lease, history)
        except SQLAlchemyError as err:
            engine.dispose()
            raise StoreError(f"state store {redact_url(url)!r} cannot be opened: {_why(err)}") from err
        except StoreError as err:
            engine.dispose()
            raise StoreError(f"state store {redact_url(url)!r}: {err}") from err

    @property
    def empty(self) -> bool:
        """Whether this cluster has no state in the store yet."""
        return not (self.nodes or self.intents or self.ledger or self.tickets or self.blocked
                    or self.block_strikes or self.failed_requests or self.launch_times or self.notices
                    or self.watched)

    def recall(self, node_ids: Iterable[str]) -> None:
        """Load the records of these nodes that ``open`` left out (ended before its horizon): a node
        taken for gone long ago and listed again is a stray, not a new node to adopt and bill again."""
        ids = [i for i in node_ids if i not in self.nodes]
        if not ids or not self._unloaded:
            return
        try:
            with self.engine.connect() as conn:
                self._recall(conn, ids)
        except SQLAlchemyError as err:
            raise StoreError(f"state store {redact(str(self.engine.url))!r}: could not look up node records: "
                             f"{_why(err)}") from err

    def request_spent(self, request_id: str) -> bool:
        """As in memory; a request id none of the loaded records carries may be an older node's,
        ended (live ones are always loaded): the database says, when the load left any out."""
        if request_id in self._by_request or not self._unloaded:
            return super().request_spent(request_id)
        try:
            with self.engine.connect() as conn:
                row = conn.execute(select(nodes.c.node_id).where(nodes.c.cluster == self.cluster,
                                                                 nodes.c.request_id == request_id).limit(1)).first()
        except SQLAlchemyError as err:
            raise StoreError(f"state store {redact(str(self.engine.url))!r}: could not look up launch request "
                             f"{request_id}: {_why(err)}") from err
        return row is not None

    # --- writes the pass makes ---------------------------------------------------------------
    def put_intent(self, launch: Launch, sent_at: datetime | None = None) -> None:
        """Kept at once, before the cloud is called (the crash-recovery contract), with its first send."""
        lease = self._writable()
        rid = launch.request_id
        before = self.intents.get(rid), self.sent.get(rid)  # standing since an earlier try (a timeout): it stays
        super().put_intent(launch, sent_at)
        try:
            with self.engine.begin() as conn:
                lease.renew(conn)  # a controller that lost its cluster launches nothing
                conn.execute(delete(intents).where(intents.c.cluster == self.cluster, intents.c.request_id == rid))
                conn.execute(insert(intents).values(cluster=self.cluster, request_id=rid,
                                                    launch=json.dumps(launch_json(launch)), sent_at=self.sent.get(rid)))
        except (StoreError, SQLAlchemyError) as err:
            self._put_back_intent(rid, *before)
            if isinstance(err, StoreError):
                raise
            # not launched: a launch the store cannot recover is not made
            raise StoreError(f"state store {redact(str(self.engine.url))!r}: could not keep the launch intent "
                             f"{rid}, so it was not launched: {_why(err)}") from err
        self._saved.setdefault("intents", {})[rid] = (launch, self.sent.get(rid))

    def _put_back_intent(self, request_id: str, launch: Launch | None, sent_at: datetime | None) -> None:
        self.intents.pop(request_id, None)
        self.sent.pop(request_id, None)
        if launch is not None:
            self.intents[request_id] = launch
        if sent_at is not None:
            self.sent[request_id] = sent_at

    def add_node(self, rec: NodeRecord) -> None:
        if rec.node_id not in self.nodes:
            self._seq[rec.node_id] = self._next_seq
            self._next_seq += 1
            self._dirty.add(rec.node_id)
        super().add_node(rec)

    def move(self, node_id: str, state: NodeState, **changes: object) -> NodeRecord:
        rec = super().move(node_id, state, **changes)
        self._dirty.add(node_id)  # (once made: a change refused leaves no record to write)
        return rec

    def update(self, node_id: str, **changes: object) -> None:
        super().update(node_id, **changes)
        self._dirty.add(node_id)

    def commit(self) -> None:
        """Write what changed since the last commit, in one transaction; nothing when nothing did
        (StoreError if it fails: the next commit writes it all again, and each step may be made
        again: a commit that went through but whose reply was lost does not block later ones)."""
        steps: list[tuple[Any, list[dict[str, Any]] | None]] = []
        if self._dirty:
            ids = sorted(self._dirty)
            steps += [(delete(nodes).where(nodes.c.cluster == self.cluster, nodes.c.node_id.in_(ids)), None),
                      (insert(nodes), [node_row(self.cluster, self._seq[i], self.nodes[i], self.is_live(i))
                                       for i in ids])]
        new = self.ledger[self._saved_ledger:]
        if new:  # (rows a commit wrote whose reply was lost go first: each step may be made again)
            first = self._ledger_seq0 + self._saved_ledger
            steps += [(delete(ledger).where(ledger.c.cluster == self.cluster, ledger.c.seq >= first), None),
                      (insert(ledger), [ledger_row(self.cluster, first + k, e) for k, e in enumerate(new)])]
        saved: dict[str, Any] = keyed_values(self)
        for name, now in saved.items():
            steps += self._keyed_steps(name, now)
        saved["times"] = times = list(self.launch_times)
        if times != self._saved["times"]:
            steps.append((delete(launch_times).where(launch_times.c.cluster == self.cluster), None))
            if times:
                steps.append((insert(launch_times), [{"cluster": self.cluster, "seq": k, "at": v}
                                                     for k, v in enumerate(times)]))
        if not steps and (self.lease is None or not self.lease.due):
            return
        lease = self._writable()
        try:
            with self.engine.begin() as conn:
                lease.renew(conn)
                for statement, rows in steps:
                    conn.execute(statement, rows)
        except SQLAlchemyError as err:
            # the database holds the last commit, or this one (its reply lost): rewrite what either may hold
            self._saved = {**{name: dict.fromkeys([*self._saved[name], *saved[name]], _UNKNOWN) for name in KEYED},
                           "times": None}
            raise StoreError(f"state store {redact(str(self.engine.url))!r}: could not write this pass: "
                             f"{_why(err)}") from err
        self._dirty.clear()
        self._saved_ledger = len(self.ledger)
        self._saved = saved

    def close(self) -> None:
        """Give the cluster back (another controller may take it at once) and let go of the database."""
        try:
            if self.lease is not None and self.lease.renewed_at is not None:
                with self.engine.begin() as conn:
                    self.lease.give_back(conn)
        except SQLAlchemyError as err:
            raise StoreError(f"state store {redact(str(self.engine.url))!r}: could not give cluster "
                             f"{self.cluster!r} back (it lapses by itself): {_why(err)}") from err
        finally:
            self.engine.dispose()

    def _writable(self) -> Lease:
        """This controller's lease on the cluster (StoreError for a store opened to read)."""
        if self.lease is None:
            raise StoreError(f"state store {redact(str(self.engine.url))!r}: cluster {self.cluster!r} was opened "
                             "to read (SqlState.read); a controller opens it with SqlState.open")
        return self.lease

    # --- internals ----------------------------------------------------------------------------
    def _load_nodes(self, conn: Connection, horizon: datetime | None) -> None:
        """The live node records, and the ended ones since ``horizon`` (None: all), in launch order."""
        kept = nodes.c.live | (func.coalesce(nodes.c.ended_at, nodes.c.launched_at) >= horizon) \
            if horizon is not None else true()
        mine = nodes.c.cluster == self.cluster
        self._restore_rows(conn.execute(select(nodes).where(mine, kept).order_by(nodes.c.seq)).mappings())
        last, count = conn.execute(select(func.max(nodes.c.seq), func.count()).where(mine)).one()
        self._next_seq = (last if last is not None else -1) + 1
        self._unloaded = count - len(self._seq)

    def _recall(self, conn: Connection, node_ids: Sequence[str]) -> None:
        mine = nodes.c.cluster == self.cluster
        rows = conn.execute(select(nodes).where(mine, nodes.c.node_id.in_(node_ids)).order_by(nodes.c.seq))
        self._unloaded -= self._restore_rows(rows.mappings())

    def _restore_rows(self, rows: Iterable[RowMapping]) -> int:
        """Node records from their rows, as loaded (not changes to write back); how many."""
        count = 0
        for r in rows:
            offering = self._offerings.get(r["offering"])
            if offering is None:  # by their JSON: a cluster's nodes share a few dozen
                offering = self._offerings[r["offering"]] = offering_from(json.loads(r["offering"]))
            rec = record_of(r, offering)
            self.restore(rec, live=r["live"])
            self._seq[rec.node_id] = r["seq"]
            count += 1
        return count

    def _load_ledger(self, conn: Connection, horizon: datetime | None) -> None:
        """The ledger from its first entry that ended since ``horizon`` (None: all of it); the
        spend of the entries before is added up all the same."""
        mine = ledger.c.cluster == self.cluster
        first = 0 if horizon is None else conn.execute(
            select(func.min(ledger.c.seq)).where(mine, ledger.c.end >= horizon)).scalar()
        if first is None:  # every entry is older than the horizon
            first = (conn.execute(select(func.max(ledger.c.seq)).where(mine)).scalar() or -1) + 1
        older = select(ledger.c.team, ledger.c.usd).where(mine, ledger.c.seq < first).order_by(ledger.c.seq)
        for team, usd in conn.execute(older):
            self.spent_usd += float(usd)  # in charge order, as ``charge`` adds them: the same sums
            self.spent_by_team[team] = self.spent_by_team.get(team, 0.0) + float(usd)
        self._ledger_seq0 = first
        rows = conn.execute(select(ledger).where(mine, ledger.c.seq >= first).order_by(ledger.c.seq)).mappings()
        for r in rows:
            self.charge(ledger_entry_of(r))
        self._saved_ledger = len(self.ledger)

    def _horizon(self, conn: Connection) -> datetime | None:
        """Ended nodes and ledger entries before this stay unloaded: ``history`` before the latest
        instant the cluster's node records hold (its own clock, so a simulation's too)."""
        if self.history is None:
            return None
        latest = conn.execute(select(func.max(func.coalesce(nodes.c.ended_at, nodes.c.launched_at)))
                              .where(nodes.c.cluster == self.cluster)).scalar()
        return None if latest is None else _utc(latest) - self.history

    def _keyed_steps(self, name: str, now: dict[str, Any]) -> list[tuple[Any, list[dict[str, Any]] | None]]:
        """What brings one small keyed table from its last written contents to ``now``: delete the
        rows gone or changed, insert the new ones."""
        before = self._saved[name]
        if now == before:
            return []
        table, key, row = KEYED[name]
        steps: list[tuple[Any, list[dict[str, Any]] | None]] = []
        stale = [k for k in before if now.get(k, _GONE) != before[k]]
        fresh = [k for k in now if before.get(k, _GONE) != now[k]]
        gone = sorted(set(stale) | set(fresh))  # a fresh row a lost-reply commit wrote goes too
        if gone:
            steps.append((delete(table).where(table.c.cluster == self.cluster, key.in_(gone)), None))
        if fresh:
            steps.append((insert(table), [{"cluster": self.cluster, key.name: k, **row(now[k])} for k in fresh]))
        return steps

    def _load(self, conn: Connection) -> None:
        mine = self.cluster
        horizon = self._horizon(conn)
        self._load_nodes(conn, horizon)
        self._load_ledger(conn, horizon)
        for r in conn.execute(select(intents).where(intents.c.cluster == mine)).mappings():
            self.intents[r["request_id"]] = launch_from(json.loads(r["launch"]))
            if r["sent_at"] is not None:  # (None: kept before migration 0005)
                self.sent[r["request_id"]] = r["sent_at"]
        for r in conn.execute(select(tickets).where(tickets.c.cluster == mine)).mappings():
            self.tickets[r["node_id"]] = CheckpointTicket(r["node_id"], r["job_id"], r["deadline"], r["done"],
                                                          r["saved_s"])
        for r in conn.execute(select(blocks).where(blocks.c.cluster == mine)).mappings():
            if r["blocked_until"] is not None:
                self.blocked[r["offering_key"]] = r["blocked_until"]
            if r["strikes"] is not None:
                self.block_strikes[r["offering_key"]] = r["strikes"]
        for r in conn.execute(select(failed_requests).where(failed_requests.c.cluster == mine)).mappings():
            self.failed_requests[r["request_id"]] = r["tries"]
        for r in conn.execute(select(watched_ends).where(watched_ends.c.cluster == mine)).mappings():
            self.watched[r["node_id"]] = EndWatch(r["ended_at"], r["unseen"], r["running"])
        if self._unloaded:  # a watched end's record, however old: the pass reads it
            self._recall(conn, [i for i in self.watched if i not in self.nodes])
        for r in conn.execute(select(notices).where(notices.c.cluster == mine)).mappings():
            self.notices[r["node_id"]] = Interruption(r["node_id"], r["provider"], r["kind"], r["notice_at"],
                                                      r["terminate_at"])
        rows = conn.execute(select(launch_times.c.at).where(launch_times.c.cluster == mine)
                            .order_by(launch_times.c.seq))
        self.launch_times = [r[0] for r in rows]
        self._saved = {**keyed_values(self), "times": list(self.launch_times)}


_GONE = object()
_UNKNOWN = object()  # a row the database may hold or not (a commit failed): written again



def _utc(at: datetime) -> datetime:
    """An aggregate's datetime as the column type gives it, or naive UTC as some drivers do."""
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def _why(err: BaseException) -> str:
    """The driver's own message (SQLAlchemy's wraps it with the SQL and a link), redacted."""
    orig = getattr(err, "orig", None)
    cause = orig if orig is not None else err
    return redact((str(cause).strip().splitlines() or [type(cause).__name__])[0])
