"""The state store's tables (SQLAlchemy Core), their column types, the JSON the records are kept
as, and the Alembic upgrade that creates them (``burster/migrations``; docs/state.md)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from sqlalchemy import (
    Boolean,
    Column,
    DateTime,
    Dialect,
    Engine,
    Float,
    Index,
    Integer,
    MetaData,
    Numeric,
    String,
    Table,
    Text,
    TypeDecorator,
)

from burster.errors import StoreError
from burster.model import Market, Offering
from burster.plan import Launch


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
        if value is None:
            return None
        usd = Decimal(str(value)).quantize(_MICRO)  # here: PostgreSQL would round half up, SQLite keep it all
        return str(usd) if dialect.name == "sqlite" else usd

    def process_result_value(self, value: Any, dialect: Dialect) -> Decimal | None:
        return None if value is None else Decimal(str(value)).quantize(_MICRO)


_MICRO = Decimal("0.000001")


metadata = MetaData()
_KEY = 200  # request ids, node ids and offering keys are far shorter

intents = Table(
    "burster_intents", metadata,
    Column("cluster", String(63), primary_key=True),
    Column("request_id", String(_KEY), primary_key=True),
    Column("launch", Text, nullable=False),  # the Launch as JSON
    Column("sent_at", UtcDateTime),  # when its call was first sent (migration 0005); None: not recorded
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
    Column("live", Boolean, nullable=False),  # in the live index (a failed node never is again)
    Column("charged_from", UtcDateTime),  # charged up to here, to whom it served before (migration 0004)
)
Index("ix_burster_nodes_request", nodes.c.cluster, nodes.c.request_id)  # SqlState.request_spent
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
notices = Table(
    "burster_interruption_notices", metadata,  # standing until their node ends (clouds send each once)
    Column("cluster", String(63), primary_key=True),
    Column("node_id", String(_KEY), primary_key=True),
    Column("provider", String(32), nullable=False),
    Column("kind", String(32), nullable=False),
    Column("notice_at", UtcDateTime, nullable=False),
    Column("terminate_at", UtcDateTime, nullable=False),
)
watched_ends = Table(
    "burster_watched_ends", metadata,  # ended nodes listings are still watched for (state.EndWatch)
    Column("cluster", String(63), primary_key=True),
    Column("node_id", String(_KEY), primary_key=True),
    Column("ended_at", UtcDateTime, nullable=False),
    Column("unseen", Boolean, nullable=False),
    Column("running", Boolean, nullable=False),
)
leases = Table(
    "burster_leases", metadata,
    Column("cluster", String(63), primary_key=True),
    Column("holder", Text, nullable=False),  # host:pid:nonce of the controller writing the cluster's state
    Column("expires_at", UtcDateTime, nullable=False),
)
STATE_TABLES = (intents, nodes, tickets, ledger, blocks, failed_requests, launch_times, notices, watched_ends, leases)

MIGRATIONS = Path(__file__).with_name("migrations")


def upgrade(engine: Engine) -> None:
    """Bring the database's schema to the newest migration (Alembic ``upgrade head``), all of it
    in one transaction: an upgrade cut short leaves the schema as it was, SQLite too (whose
    Python driver would otherwise run each CREATE TABLE outside any transaction, keeping half an
    upgrade that no later one could finish)."""
    from alembic import command
    from alembic.util import CommandError

    cfg = _alembic_config()
    with engine.connect() as conn:
        sqlite = conn.connection.dbapi_connection if engine.dialect.name == "sqlite" else None
        manual = getattr(sqlite, "isolation_level", None)
        try:
            if sqlite is not None:
                sqlite.isolation_level = None  # pysqlite: BEGIN is ours
                conn.exec_driver_sql("BEGIN")
            cfg.attributes["connection"] = conn
            try:
                command.upgrade(cfg, "head")
            except CommandError as err:  # a revision this code does not know: a newer burster's
                raise StoreError(f"its schema is not one this burster can migrate ({err}): a newer burster "
                                 "wrote it; run that one") from err
            conn.commit()
        except BaseException:
            conn.rollback()
            raise
        finally:
            if sqlite is not None:
                sqlite.isolation_level = manual


def schema_lag(engine: Engine) -> str | None:
    """Why the database's schema is not the one this code reads (None when it is), changing nothing."""
    from alembic.script import ScriptDirectory

    head = ScriptDirectory.from_config(_alembic_config()).get_current_head()
    current = _revision(engine)
    if current == head:
        return None
    if current is None:
        return "it holds no burster state (no schema)"
    return f"its schema is at revision {current}, this burster reads {head}"


def migrates_from_older(engine: Engine) -> bool:
    """Whether opening the store would migrate an older schema this code knows (not an empty
    database, not the newest revision, not a newer burster's)."""
    from alembic.script import ScriptDirectory
    from alembic.util import CommandError

    script = ScriptDirectory.from_config(_alembic_config())
    current = _revision(engine)
    if current is None or current == script.get_current_head():
        return False
    try:
        return script.get_revision(current) is not None
    except CommandError:  # a revision a newer burster wrote
        return False


def _revision(engine: Engine) -> str | None:
    from alembic.migration import MigrationContext

    with engine.connect() as conn:
        current: str | None = MigrationContext.configure(conn).get_current_revision()
    return current


def _alembic_config() -> Any:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    return cfg


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
