"""The SQL state store's schema and URL: Alembic's migrations build what the code reads, a lagging
schema is named and not migrated by a reader, an upgrade cut short is redone whole, and a bad or
unreachable database URL is reported (without its password)."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from burster.errors import ConfigError, StoreError
from burster.sqlschema import MIGRATIONS, metadata
from burster.sqlstate import SqlState


def test_the_migrations_build_the_schema_the_code_reads(store_url: str) -> None:
    SqlState.open(store_url).close()
    engine = sa.create_engine(store_url)
    with engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), metadata)
        version = conn.exec_driver_sql("SELECT version_num FROM alembic_version").scalar()
    engine.dispose()
    assert diff == []
    assert version == "0005"


def test_the_alembic_command_migrates_a_store_by_its_url(sqlite_url: str) -> None:
    """docs/state.md's command, as an operator runs it ahead of a deploy."""
    ini = str(MIGRATIONS / "alembic.ini")
    alembic = [sys.executable, "-m", "alembic", "-c", ini, "-x", f"url={sqlite_url}"]
    subprocess.run([*alembic, "upgrade", "head"], check=True, capture_output=True, cwd="/")
    current = subprocess.run([*alembic, "current"], check=True, capture_output=True, text=True, cwd="/")
    assert "0005 (head)" in current.stdout
    assert SqlState.read(sqlite_url).empty


def test_a_store_of_revision_0003_keeps_its_nodes_through_the_upgrade(store_url: str) -> None:
    """0004 adds where a node's uncharged run starts (``charged_from``): a node written before has
    charged nothing yet, and comes back whole with none."""
    from alembic import command

    from burster.sqlrows import node_row
    from burster.sqlschema import _alembic_config, nodes
    from tests.store.sqlstate_records import SPOT, _record

    engine = sa.create_engine(store_url)
    cfg = _alembic_config()
    rec = _record("n-old", SPOT)
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0003")
        row = {k: v for k, v in node_row("default", 0, rec, live=True).items() if k != "charged_from"}
        conn.execute(sa.insert(sa.table(nodes.name, *(sa.column(k) for k in row))).values(**row))
    engine.dispose()
    state = SqlState.open(store_url)
    assert state.nodes == {"n-old": rec} and rec.charged_from is None
    state.close()


def test_a_store_of_revision_0004_keeps_its_intents_through_the_upgrade(store_url: str) -> None:
    """0005 adds when an intent's call was first sent (``sent_at``): an intent written before has none,
    and comes back whole (in flight since the first pass that finds it, as before)."""
    from alembic import command

    from burster.plan import Launch
    from burster.sqlschema import _alembic_config, intents, launch_json
    from tests.store.sqlstate_records import SPOT

    engine = sa.create_engine(store_url)
    cfg = _alembic_config()
    launch = Launch(SPOT, 2, "burst job-9", "req-9", job_id="job-9", team="nlp")
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0004")
        row = {"cluster": "default", "request_id": "req-9", "launch": json.dumps(launch_json(launch))}
        conn.execute(sa.insert(sa.table(intents.name, *(sa.column(k) for k in row))).values(**row))
    engine.dispose()
    state = SqlState.open(store_url)
    assert state.intents == {"req-9": launch} and state.sent == {}
    state.close()


def test_a_url_that_is_not_a_database_says_what_to_write() -> None:
    with pytest.raises(ConfigError, match=r"store\.url 'burster\.db' is not a database URL.*sqlite:///burster\.db"):
        SqlState.open("burster.db")
    with pytest.raises(ConfigError, match=r"store\.url 'nosuchdb://x'"):
        SqlState.open("nosuchdb://x")


def test_an_unreachable_database_is_named_without_its_password() -> None:
    url = "postgresql+psycopg2://burster:hunter2@127.0.0.1:1/burster"
    with pytest.raises(StoreError) as err:
        SqlState.open(url)
    assert "cannot be opened" in str(err.value) and "127.0.0.1" in str(err.value)
    assert "hunter2" not in str(err.value)


def test_reading_a_store_changes_nothing_and_says_what_to_do_when_its_schema_lags(sqlite_url: str) -> None:
    """A report run with read-only credentials must not migrate (or create) the controller's tables."""
    with pytest.raises(StoreError, match="holds no burster state"):
        SqlState.read(sqlite_url)
    ini = str(MIGRATIONS / "alembic.ini")
    alembic = [sys.executable, "-m", "alembic", "-c", ini, "-x", f"url={sqlite_url}"]
    subprocess.run([*alembic, "upgrade", "0002"], check=True, capture_output=True, cwd="/")
    with pytest.raises(StoreError, match=r"schema is at revision 0002, this burster reads 0005.*docs/state.md"):
        SqlState.read(sqlite_url)
    engine = sa.create_engine(sqlite_url)
    with engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT version_num FROM alembic_version").scalar() == "0002"
    engine.dispose()
    SqlState.open(sqlite_url).close()  # a controller migrates it
    assert SqlState.read(sqlite_url).empty


def test_an_upgrade_cut_short_leaves_the_schema_as_it_was(store_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The process stops after the first table of an upgrade: the next open upgrades from where the
    schema was (on SQLite the tables already created used to stay, the revision did not move, and
    every later open failed on "table ... already exists")."""
    import alembic.op
    import sqlalchemy as sa
    from alembic import command

    from burster.sqlschema import _alembic_config

    engine = sa.create_engine(store_url)
    cfg = _alembic_config()
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0002")  # a database of the previous revision
    real, made = alembic.op.create_table, []

    def create_table_then_stop(*args: Any, **kwargs: Any) -> Any:
        made.append(args[0])
        if len(made) == 2:
            raise KeyboardInterrupt("stopped during the upgrade")
        return real(*args, **kwargs)
    monkeypatch.setattr(alembic.op, "create_table", create_table_then_stop)
    with pytest.raises(KeyboardInterrupt):
        SqlState.open(store_url)
    monkeypatch.setattr(alembic.op, "create_table", real)
    with engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT version_num FROM alembic_version").scalar() == "0002"
        assert "burster_interruption_notices" not in sa.inspect(conn).get_table_names()
    engine.dispose()
    SqlState.open(store_url).close()  # upgraded whole now


def test_a_migration_waits_for_the_older_controllers_still_writing(store_url: str) -> None:
    """A newer burster opening a store an older one still writes (a lease that has not lapsed, on
    any cluster) would change the schema under it: it is refused, naming the holders, and migrates
    once their leases lapse. A store already at this burster's schema opens beside them as before."""
    from datetime import timedelta

    from alembic import command

    from burster.sqlschema import _alembic_config, leases
    from tests.store.sqlstate_records import T0, Wall

    engine = sa.create_engine(store_url)
    cfg = _alembic_config()
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0002")  # the older burster's schema, leases included
        conn.execute(sa.insert(leases).values(cluster="gpu-a", holder="old-host:7:abcd1234",
                                              expires_at=T0 + timedelta(seconds=60)))
    wall = Wall()
    refused = (r"needs migrating \(its schema is at revision 0002, this burster reads 0005\), but older "
               r"controllers still write it \(gpu-a: old-host:7:abcd1234\)")
    with pytest.raises(StoreError, match=refused):
        SqlState.open(store_url, "gpu-b", now=wall)
    with engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT version_num FROM alembic_version").scalar() == "0002"
    wall.advance(60)  # the older controller's lease lapsed: it stopped
    SqlState.open(store_url, "gpu-b", now=wall).close()
    with engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT version_num FROM alembic_version").scalar() == "0005"
    other = SqlState.open(store_url, "gpu-c", now=wall)  # at this schema already: holders don't matter
    SqlState.open(store_url, "gpu-d", now=wall).close()
    other.close()
    engine.dispose()
