"""Controller state kept in SQL (SQLAlchemy 2: a SQLite file by default, PostgreSQL in production).

``SqlState`` is a ``MemoryState`` whose contents outlive the process: opened on a database URL, it
loads what an earlier controller of the same cluster left (node records, launch intents, checkpoint
tickets, blocked offerings, the ledger and so the spend the budgets count), and the reconcile pass
writes it back at the end of every pass (``commit``). A launch intent is written at once, before
the cloud is called, so a crash between the call and the pass's end is recovered as in memory:
the nodes carrying the intent's request id are adopted with its team, job and reason. The schema
is migrated by Alembic (``burster/migrations``) when the store is opened.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from sqlalchemy import (
    Boolean,
    Column,
    Connection,
    DateTime,
    Dialect,
    Engine,
    Float,
    Integer,
    MetaData,
    Numeric,
    String,
    Table,
    Text,
    TypeDecorator,
    create_engine,
    delete,
    insert,
    select,
)
from sqlalchemy.exc import SQLAlchemyError

from burster.errors import ConfigError, StoreError
from burster.lifecycle import NodeState
from burster.model import CheckpointTicket, Market, Offering
from burster.plan import Launch
from burster.redact import redact
from burster.state import LedgerEntry, MemoryState, NodeRecord


class UtcDateTime(TypeDecorator[datetime]):
    """A timezone-aware UTC datetime, stored naive in UTC (SQLite keeps no zone)."""

    impl = DateTime
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value!r}: the state store keeps UTC instants only")
        return value.astimezone(UTC).replace(tzinfo=None)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        return None if value is None else value.replace(tzinfo=UTC)


class Usd(TypeDecorator[Decimal]):
    """Dollars to the micro-dollar, exact: NUMERIC(18, 6), or text on SQLite (whose NUMERIC is a float)."""

    impl = Numeric(18, 6)
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> Any:
        return dialect.type_descriptor(String(32) if dialect.name == "sqlite" else Numeric(18, 6))

    def process_bind_param(self, value: Decimal | None, dialect: Dialect) -> Any:
        return None if value is None else str(value) if dialect.name == "sqlite" else value

    def process_result_value(self, value: Any, dialect: Dialect) -> Decimal | None:
        return None if value is None else Decimal(str(value)).quantize(Decimal("0.000001"))


metadata = MetaData()
_KEY = 200  # request ids, node ids and offering keys are far shorter

intents = Table(
    "burster_intents", metadata,
    Column("cluster", String(63), primary_key=True),
    Column("request_id", String(_KEY), primary_key=True),
    Column("launch", Text, nullable=False),  # the Launch as JSON
)
nodes = Table(
    "burster_nodes", metadata,
    Column("cluster", String(63), primary_key=True),
    Column("node_id", String(_KEY), primary_key=True),
    Column("seq", Integer, nullable=False),  # launch order (the live index's order)
    Column("provider", String(32), nullable=False),
    Column("request_id", String(_KEY), nullable=False),
    Column("offering", Text, nullable=False),  # the Offering as JSON
    Column("launched_at", UtcDateTime, nullable=False),
    Column("state", String(16), nullable=False),
    Column("for_job", Text),
    Column("team", Text, nullable=False),
    Column("project", Text, nullable=False),
    Column("sprint", Text, nullable=False),
    Column("reason", Text, nullable=False),
    Column("idle_since", UtcDateTime),
    Column("ended_at", UtcDateTime),
    Column("exclusive", Boolean, nullable=False),
)
tickets = Table(
    "burster_checkpoint_tickets", metadata,
    Column("cluster", String(63), primary_key=True),
    Column("node_id", String(_KEY), primary_key=True),
    Column("job_id", Text, nullable=False),
    Column("deadline", UtcDateTime, nullable=False),
    Column("done", Boolean, nullable=False),
    Column("saved_s", Float, nullable=False),
)
ledger = Table(
    "burster_ledger", metadata,
    Column("cluster", String(63), primary_key=True),
    Column("seq", Integer, primary_key=True, autoincrement=False),  # charge order
    Column("node_id", String(_KEY), nullable=False),
    Column("provider", String(32), nullable=False),
    Column("market", String(16), nullable=False),
    Column("instance_type", String(_KEY), nullable=False),
    Column("region", String(_KEY), nullable=False),
    Column("team", Text, nullable=False),
    Column("project", Text, nullable=False),
    Column("sprint", Text, nullable=False),
    Column("reason", Text, nullable=False),
    Column("start", UtcDateTime, nullable=False),
    Column("end", UtcDateTime, nullable=False),
    Column("billed_s", Float, nullable=False),
    Column("usd", Usd, nullable=False),
)
blocks = Table(
    "burster_offering_blocks", metadata,
    Column("cluster", String(63), primary_key=True),
    Column("offering_key", String(_KEY), primary_key=True),
    Column("blocked_until", UtcDateTime),  # None: not blocked (strikes alone are kept)
    Column("strikes", Integer),  # capacity errors in a row; None: none counted
)
failed_requests = Table(
    "burster_failed_requests", metadata,
    Column("cluster", String(63), primary_key=True),
    Column("request_id", String(_KEY), primary_key=True),
    Column("tries", Integer, nullable=False),
)
launch_times = Table(
    "burster_launch_times", metadata,
    Column("cluster", String(63), primary_key=True),
    Column("seq", Integer, primary_key=True, autoincrement=False),
    Column("at", UtcDateTime, nullable=False),
)
STATE_TABLES = (intents, nodes, tickets, ledger, blocks, failed_requests, launch_times)

MIGRATIONS = Path(__file__).with_name("migrations")


def upgrade(engine: Engine) -> None:
    """Bring the database's schema to the newest migration (Alembic ``upgrade head``)."""
    from alembic import command
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "head")


class SqlState(MemoryState):
    """``MemoryState`` loaded from, and written back to, one cluster's rows of a SQL database."""

    def __init__(self, engine: Engine, cluster: str) -> None:
        super().__init__()
        self.engine = engine
        self.cluster = cluster
        self._seq: dict[str, int] = {}  # node id -> launch order
        self._dirty: set[str] = set()  # node records changed since the last commit
        self._saved_ledger = 0  # entries already written
        self._saved: dict[str, Any] = {}  # the small tables as last written (set by _load)
        with engine.connect() as conn:
            self._load(conn)

    @classmethod
    def open(cls, url: str, cluster: str = "default") -> SqlState:
        """The state of ``cluster`` in the database at ``url`` (created and migrated as needed)."""
        try:
            engine = create_engine(url)
        except (SQLAlchemyError, ImportError) as err:
            raise ConfigError(f"store.url {redact(url)!r} is not a database URL SQLAlchemy can use "
                              f"({_why(err)}); e.g. sqlite:///burster.db or "
                              "postgresql+psycopg2://user@host/db (pip install 'burster[postgres]')") from err
        try:
            upgrade(engine)
            return cls(engine, cluster)
        except SQLAlchemyError as err:
            engine.dispose()
            raise StoreError(f"state store {redact(url)!r} cannot be opened: {_why(err)}") from err

    @property
    def empty(self) -> bool:
        """Whether this cluster has no state in the store yet."""
        return not (self.nodes or self.intents or self.ledger or self.tickets or self.blocked
                    or self.block_strikes or self.failed_requests or self.launch_times)

    # --- writes the pass makes ---------------------------------------------------------------
    def put_intent(self, launch: Launch) -> None:
        """Kept at once, before the cloud is called (the crash-recovery contract)."""
        super().put_intent(launch)
        try:
            with self.engine.begin() as conn:
                conn.execute(delete(intents).where(intents.c.cluster == self.cluster,
                                                   intents.c.request_id == launch.request_id))
                conn.execute(insert(intents).values(cluster=self.cluster, request_id=launch.request_id,
                                                    launch=json.dumps(launch_json(launch))))
        except SQLAlchemyError as err:  # not launched: a launch the store cannot recover is not made
            self.intents.pop(launch.request_id, None)
            raise StoreError(f"state store {redact(str(self.engine.url))!r}: could not keep the launch intent "
                             f"{launch.request_id}, so it was not launched: {_why(err)}") from err
        self._saved.setdefault("intents", {})[launch.request_id] = launch

    def add_node(self, rec: NodeRecord) -> None:
        if rec.node_id not in self.nodes:
            self._seq[rec.node_id] = len(self._seq)
            self._dirty.add(rec.node_id)
        super().add_node(rec)

    def move(self, node_id: str, state: NodeState, **changes: object) -> NodeRecord:
        self._dirty.add(node_id)
        return super().move(node_id, state, **changes)

    def update(self, node_id: str, **changes: object) -> None:
        self._dirty.add(node_id)
        super().update(node_id, **changes)

    def commit(self) -> None:
        """Write what changed since the last commit, in one transaction; nothing when nothing did
        (StoreError if it fails: nothing of it is written, and the next commit writes it all)."""
        steps: list[tuple[Any, list[dict[str, Any]] | None]] = []
        if self._dirty:
            ids = sorted(self._dirty)
            steps += [(delete(nodes).where(nodes.c.cluster == self.cluster, nodes.c.node_id.in_(ids)), None),
                      (insert(nodes), [self._node_row(self.nodes[i]) for i in ids])]
        new = self.ledger[self._saved_ledger:]
        if new:
            steps.append((insert(ledger), [_ledger_row(self.cluster, self._saved_ledger + k, e)
                                           for k, e in enumerate(new)]))
        saved: dict[str, Any] = {"intents": dict(self.intents), "tickets": dict(self.tickets),
                                 "blocks": self._blocks(), "failed": dict(self.failed_requests)}
        for name, now in saved.items():
            steps += self._keyed_steps(name, now)
        saved["times"] = times = list(self.launch_times)
        if times != self._saved["times"]:
            steps.append((delete(launch_times).where(launch_times.c.cluster == self.cluster), None))
            if times:
                steps.append((insert(launch_times), [{"cluster": self.cluster, "seq": k, "at": v}
                                                     for k, v in enumerate(times)]))
        if not steps:
            return
        try:
            with self.engine.begin() as conn:
                for statement, rows in steps:
                    conn.execute(statement, rows)
        except SQLAlchemyError as err:
            raise StoreError(f"state store {redact(str(self.engine.url))!r}: could not write this pass: "
                             f"{_why(err)}") from err
        self._dirty.clear()
        self._saved_ledger = len(self.ledger)
        self._saved = saved

    def close(self) -> None:
        self.engine.dispose()

    # --- internals ----------------------------------------------------------------------------
    def _blocks(self) -> dict[str, tuple[datetime | None, int | None]]:
        keys = sorted(set(self.blocked) | set(self.block_strikes))
        return {k: (self.blocked.get(k), self.block_strikes.get(k)) for k in keys}

    def _keyed_steps(self, name: str, now: dict[str, Any]) -> list[tuple[Any, list[dict[str, Any]] | None]]:
        """What brings one small keyed table from its last written contents to ``now``: delete the
        rows gone or changed, insert the new ones."""
        before = self._saved[name]
        if now == before:
            return []
        table, key, row = _KEYED[name]
        steps: list[tuple[Any, list[dict[str, Any]] | None]] = []
        stale = [k for k in before if now.get(k, _GONE) != before[k]]
        if stale:
            steps.append((delete(table).where(table.c.cluster == self.cluster, key.in_(stale)), None))
        fresh = [k for k in now if before.get(k, _GONE) != now[k]]
        if fresh:
            steps.append((insert(table), [{"cluster": self.cluster, key.name: k, **row(now[k])} for k in fresh]))
        return steps

    def _node_row(self, rec: NodeRecord) -> dict[str, Any]:
        return {
            "cluster": self.cluster, "node_id": rec.node_id, "seq": self._seq[rec.node_id],
            "provider": rec.provider, "request_id": rec.request_id, "offering": json.dumps(offering_json(rec.offering)),
            "launched_at": rec.launched_at, "state": rec.state.value, "for_job": rec.for_job, "team": rec.team,
            "project": rec.project, "sprint": rec.sprint, "reason": rec.reason, "idle_since": rec.idle_since,
            "ended_at": rec.ended_at, "exclusive": rec.exclusive,
        }

    def _load(self, conn: Connection) -> None:
        mine = self.cluster
        for r in conn.execute(select(nodes).where(nodes.c.cluster == mine).order_by(nodes.c.seq)).mappings():
            rec = NodeRecord(
                node_id=r["node_id"], provider=r["provider"], offering=offering_from(json.loads(r["offering"])),
                request_id=r["request_id"], launched_at=r["launched_at"], state=NodeState(r["state"]),
                for_job=r["for_job"], team=r["team"], project=r["project"], sprint=r["sprint"],
                reason=r["reason"], idle_since=r["idle_since"], ended_at=r["ended_at"], exclusive=r["exclusive"])
            MemoryState.add_node(self, rec)
            self._seq[rec.node_id] = r["seq"]
            if rec.state in (NodeState.TERMINATED, NodeState.FAILED):
                self._live.pop(rec.node_id, None)
                self._live_by_provider.get(rec.provider, {}).pop(rec.node_id, None)
        for r in conn.execute(select(ledger).where(ledger.c.cluster == mine).order_by(ledger.c.seq)).mappings():
            self.charge(LedgerEntry(**{c: r[c] for c in _LEDGER_FIELDS}))
        self._saved_ledger = len(self.ledger)
        for r in conn.execute(select(intents).where(intents.c.cluster == mine)).mappings():
            self.intents[r["request_id"]] = launch_from(json.loads(r["launch"]))
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
        rows = conn.execute(select(launch_times.c.at).where(launch_times.c.cluster == mine)
                            .order_by(launch_times.c.seq))
        self.launch_times = [r[0] for r in rows]
        self._saved = {"intents": dict(self.intents), "tickets": dict(self.tickets), "blocks": self._blocks(),
                       "failed": dict(self.failed_requests), "times": list(self.launch_times)}


_GONE = object()
# the small keyed tables: (table, key column, the other columns of a value)
_KEYED: dict[str, tuple[Table, Any, Any]] = {
    "intents": (intents, intents.c.request_id, lambda a: {"launch": json.dumps(launch_json(a))}),
    "tickets": (tickets, tickets.c.node_id, lambda t: {"job_id": t.job_id, "deadline": t.deadline, "done": t.done,
                                                       "saved_s": t.saved_s}),
    "blocks": (blocks, blocks.c.offering_key, lambda v: {"blocked_until": v[0], "strikes": v[1]}),
    "failed": (failed_requests, failed_requests.c.request_id, lambda tries: {"tries": tries}),
}


def _why(err: BaseException) -> str:
    """The driver's own message (SQLAlchemy's wraps it with the SQL and a link), redacted."""
    orig = getattr(err, "orig", None)
    return redact(str(orig if orig is not None else err).strip().splitlines()[0])
_LEDGER_FIELDS = ("node_id", "provider", "market", "instance_type", "region", "team", "project", "sprint",
                  "reason", "start", "end", "billed_s", "usd")


def _ledger_row(cluster: str, seq: int, e: LedgerEntry) -> dict[str, Any]:
    return {"cluster": cluster, "seq": seq, **{c: getattr(e, c) for c in _LEDGER_FIELDS}}


def offering_json(o: Offering) -> dict[str, Any]:
    return {"provider": o.provider, "region": o.region, "zone": o.zone, "instance_type": o.instance_type,
            "gpu_model": o.gpu_model, "gpus_per_node": o.gpus_per_node, "market": o.market.value,
            "price_per_hour_usd": o.price_per_hour_usd, "available": o.available}


def offering_from(d: Mapping[str, Any]) -> Offering:
    return Offering(d["provider"], d["region"], d["zone"], d["instance_type"], d["gpu_model"], d["gpus_per_node"],
                    Market(d["market"]), d["price_per_hour_usd"], d["available"])


def launch_json(a: Launch) -> dict[str, Any]:
    return {"offering": offering_json(a.offering), "count": a.count, "reason": a.reason,
            "request_id": a.request_id, "job_id": a.job_id, "team": a.team, "project": a.project,
            "sprint": a.sprint, "est_hours": a.est_hours, "exclusive": a.exclusive}


def launch_from(d: Mapping[str, Any]) -> Launch:
    return Launch(offering_from(d["offering"]), d["count"], d["reason"], d["request_id"], job_id=d["job_id"],
                  team=d["team"], project=d["project"], sprint=d["sprint"], est_hours=d["est_hours"],
                  exclusive=d["exclusive"])

