"""The SQL state store when a write fails: a failed or unacknowledged commit is written whole by the
next, an intent it cannot keep is not launched (and a standing one is not dropped), and a naive time is
refused."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

import pytest
import sqlalchemy as sa

from burster.errors import StoreError
from burster.plan import Launch
from burster.sqlstate import SqlState
from tests.store.sqlstate_records import SPOT, T0, _ended, _entry, _record


def test_a_failed_commit_is_written_whole_by_the_next(sqlite_url: str) -> None:
    sql = SqlState.open(sqlite_url)
    sql.add_node(_record("n-1", SPOT))
    sql.charge(_entry("n-0", "vision", "2.25"))
    engine = sa.create_engine(sqlite_url)
    with engine.begin() as conn:
        conn.exec_driver_sql("ALTER TABLE burster_ledger RENAME TO ledger_away")
    with pytest.raises(StoreError, match="could not write this pass"):
        sql.commit()
    with engine.begin() as conn:
        conn.exec_driver_sql("ALTER TABLE ledger_away RENAME TO burster_ledger")
    engine.dispose()
    assert SqlState.read(sqlite_url).nodes == {}  # the node written before the ledger failed was rolled back
    sql.commit()
    again = SqlState.read(sqlite_url)
    assert list(again.nodes) == ["n-1"] and [e.usd for e in again.ledger] == [Decimal("2.25")]


def test_an_intent_the_store_cannot_keep_is_not_left_behind(sqlite_url: str) -> None:
    sql = SqlState.open(sqlite_url)
    engine = sa.create_engine(sqlite_url)
    with engine.begin() as conn:
        conn.exec_driver_sql("DROP TABLE burster_intents")
    engine.dispose()
    with pytest.raises(StoreError, match="could not keep the launch intent req-1, so it was not launched"):
        sql.put_intent(Launch(SPOT, 1, "burst", "req-1"))
    assert sql.intents == {}


def test_a_naive_time_is_refused_not_shifted(sqlite_url: str) -> None:
    sql = SqlState.open(sqlite_url)
    sql.launch_times = [datetime(2026, 3, 2, 9)]
    with pytest.raises(StoreError, match="naive datetime"):
        sql.commit()


def test_an_intent_standing_from_an_earlier_try_outlives_a_failed_write_of_it_again(store_url: str) -> None:
    """A launch that timed out keeps its intent and is tried again next pass; if writing the same
    intent then fails, the standing one stays (in memory and so in the database): it used to be
    dropped, and the next commit deleted its row, so the nodes of the timed-out call lost their job."""
    import sqlalchemy as sa

    launch = Launch(SPOT, 2, "burst for job-7", "req-job7", job_id="job-7", team="vision")
    sql = SqlState.open(store_url)
    sql.put_intent(launch)
    sql.commit()
    engine = sa.create_engine(store_url)
    with engine.begin() as conn:
        conn.exec_driver_sql("ALTER TABLE burster_intents RENAME TO burster_intents_away")
    with pytest.raises(StoreError, match="could not keep the launch intent req-job7, so it was not launched"):
        sql.put_intent(launch)
    assert sql.intents == {"req-job7": launch}
    with engine.begin() as conn:
        conn.exec_driver_sql("ALTER TABLE burster_intents_away RENAME TO burster_intents")
    engine.dispose()
    sql.commit()
    sql.close()
    assert SqlState.read(store_url).intents == {"req-job7": launch}


def test_a_commit_whose_reply_was_lost_does_not_block_the_later_ones(store_url: str,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The database committed but the reply was lost (a reset at the acknowledgement): the store
    takes it for not written, and the next commit writes it all again. Each step may be made again,
    so that commit goes through (it failed on the ledger's and the keyed tables' keys, and so did
    every commit after it, while launches went on)."""
    import importlib

    import sqlalchemy.engine.default as default

    sql = SqlState.open(store_url)
    _ended(sql, "n1", T0, "vision", "0.50")
    sql.failed_requests["req-9"] = 1
    real = default.DefaultDialect.do_commit
    dbapi = importlib.import_module("sqlite3" if store_url.startswith("sqlite") else "psycopg2")

    def commit_then_lose_the_reply(self: object, dbapi_connection: object) -> None:
        real(self, dbapi_connection)  # type: ignore[arg-type]
        monkeypatch.setattr(default.DefaultDialect, "do_commit", real)
        raise dbapi.OperationalError("server closed the connection unexpectedly")
    monkeypatch.setattr(default.DefaultDialect, "do_commit", commit_then_lose_the_reply)
    with pytest.raises(StoreError, match="could not write this pass"):
        sql.commit()
    sql.failed_requests["req-10"] = 1
    sql.commit()
    sql.close()
    back = SqlState.read(store_url)
    assert [e.node_id for e in back.ledger] == ["n1"] and back.spent_usd == 0.5
    assert back.failed_requests == {"req-9": 1, "req-10": 1} and list(back.nodes) == ["n1"]
