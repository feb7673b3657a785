"""The SQL state store at its edges, on SQLite and PostgreSQL: what a commit that failed may have left
is put right by the next, a change refused leaves later commits working, micro-dollars and instants
come back alike from both databases, the lease lapses at its instant, and what cannot be opened says
so as a StoreError or ConfigError (without the password)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal

import pytest
import sqlalchemy as sa
import sqlalchemy.engine.default as default

from burster.errors import ConfigError, StoreError
from burster.lifecycle import NodeState
from burster.model import CheckpointTicket, Interruption
from burster.plan import Launch
from burster.sqlschema import leases
from burster.sqlstate import HISTORY, SqlState
from burster.state import EndWatch
from tests.store.sqlstate_records import SPOT, T0, Wall, _ended, _entry, _record


def _fail_next_commit(monkeypatch: pytest.MonkeyPatch, url: str, *, written: bool, message: str = "reset") -> None:
    """The database's next COMMIT fails (``written``: it went through, its reply was lost)."""
    real = default.DefaultDialect.do_commit
    dbapi = importlib.import_module("sqlite3" if url.startswith("sqlite") else "psycopg2")

    def commit_and_fail(self: object, dbapi_connection: object) -> None:
        monkeypatch.setattr(default.DefaultDialect, "do_commit", real)
        if written:
            real(self, dbapi_connection)  # type: ignore[arg-type, no-untyped-call]
        else:
            dbapi_connection.rollback()  # type: ignore[attr-defined]
        raise dbapi.OperationalError(*([message] if message else []))
    monkeypatch.setattr(default.DefaultDialect, "do_commit", commit_and_fail)


def test_rows_a_lost_reply_commit_wrote_go_when_the_next_pass_has_dropped_them(store_url: str,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Pass 1 adds a notice, a ticket, a block, a failed request, a watched end and a launch time;
    its commit goes through but the reply is lost. Pass 2 is done with all of them. Its commit must
    delete them: they used to stay (pass 2 compared with what pass 0 wrote), and a restart brought
    back a notice and a checkpoint for a node long gone, a block, a rate limit."""
    sql = SqlState.open(store_url)
    sql.failed_requests["req-0"] = 1
    sql.commit()
    sql.notices["n-1"] = Interruption("n-1", "aws", "spot-interruption", T0, T0 + timedelta(minutes=2))
    sql.tickets["n-1"] = CheckpointTicket("n-1", "job-1", T0 + timedelta(minutes=2))
    sql.blocked[SPOT.key] = T0 + timedelta(minutes=10)
    sql.failed_requests["req-1"] = 1
    sql.watched["n-2"] = EndWatch(T0, unseen=True)
    sql.launch_times = [T0]
    _fail_next_commit(monkeypatch, store_url, written=True)
    with pytest.raises(StoreError, match="could not write this pass: reset"):
        sql.commit()
    sql.notices.clear()
    sql.tickets.clear()
    sql.blocked.clear()
    sql.failed_requests.pop("req-1")
    sql.watched.clear()
    sql.launch_times = []
    sql.commit()
    sql.close()
    back = SqlState.read(store_url)
    assert (back.notices, back.tickets, back.blocked, back.watched, back.launch_times) == ({}, {}, {}, {}, [])
    assert back.failed_requests == {"req-0": 1}


def test_a_failed_commit_of_a_pass_that_then_changes_nothing_is_written_by_the_next(
        store_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rolled back, not written: the next commit writes the same rows again, not nothing."""
    sql = SqlState.open(store_url)
    sql.failed_requests["req-1"] = 2
    sql.launch_times = [T0]
    _fail_next_commit(monkeypatch, store_url, written=False)
    with pytest.raises(StoreError, match="could not write this pass"):
        sql.commit()
    sql.commit()
    sql.close()
    back = SqlState.read(store_url)
    assert back.failed_requests == {"req-1": 2} and back.launch_times == [T0]


def test_a_driver_error_without_a_message_is_a_store_error_still(store_url: str,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """It used to be an IndexError out of the message's first line: not a StoreError, so the pass
    stopped as on a bug."""
    sql = SqlState.open(store_url)
    sql.failed_requests["req-1"] = 1
    _fail_next_commit(monkeypatch, store_url, written=False, message="")
    with pytest.raises(StoreError, match="could not write this pass: OperationalError"):
        sql.commit()
    sql.commit()
    assert SqlState.read(store_url).failed_requests == {"req-1": 1}


def test_a_change_refused_for_an_unknown_node_leaves_later_commits_working(store_url: str) -> None:
    """A pass's item that names a node the state does not hold fails alone (KeyError); every later
    commit used to fail on it too, so nothing more was ever written."""
    sql = SqlState.open(store_url)
    with pytest.raises(KeyError):
        sql.update("n-unknown", idle_since=T0)
    with pytest.raises(KeyError):
        sql.move("n-unknown", NodeState.LAUNCHING)
    sql.add_node(_record("n-1", SPOT))
    sql.commit()
    assert list(SqlState.read(store_url).nodes) == ["n-1"]
    sql.update("n-1", idle_since=T0)  # a change made alone is written too
    sql.commit()
    assert SqlState.read(store_url).nodes["n-1"].idle_since == T0


def test_dollars_past_the_micro_dollar_round_alike_on_both_databases(store_url: str) -> None:
    """PostgreSQL's NUMERIC(18, 6) rounded half up, SQLite's text was rounded half even on reading:
    the same ledger gave different spend by database. Rounded half even on both, as the bill is."""
    sql = SqlState.open(store_url)
    for usd in ("0.0000005", "0.0000025", "0.0000035", "1.0000015", "2.25"):
        sql.charge(_entry("n-1", "vision", usd))
    sql.commit()
    assert [e.usd for e in SqlState.read(store_url).ledger] == [
        Decimal("0.000000"), Decimal("0.000002"), Decimal("0.000004"), Decimal("1.000002"), Decimal("2.25")]


def test_instants_given_in_another_zone_come_back_as_the_same_instants_in_utc(store_url: str) -> None:
    east, west = timezone(timedelta(hours=5, minutes=30)), timezone(timedelta(hours=-7))
    sql = SqlState.open(store_url)
    sql.add_node(_record("n-1", SPOT, launched_at=T0.astimezone(east), idle_since=T0.astimezone(west)))
    sql.blocked[SPOT.key] = (T0 + timedelta(minutes=10)).astimezone(west)
    sql.launch_times = [T0.astimezone(east)]
    sql.commit()
    back = SqlState.read(store_url)
    rec = back.nodes["n-1"]
    assert (rec.launched_at, rec.idle_since, back.blocked[SPOT.key], back.launch_times) == (
        T0, T0, T0 + timedelta(minutes=10), [T0])
    assert rec.launched_at.tzinfo is UTC and back.blocked[SPOT.key].utcoffset() == timedelta(0)


def test_a_lease_lapses_at_its_instant_to_the_microsecond(store_url: str) -> None:
    """Held 60 s (the default): refused a microsecond before it lapses, taken over at that instant;
    the controller that lost it, closed, does not give back the new one's."""
    wall = Wall()
    old = SqlState.open(store_url, now=wall)
    wall.advance(60 - 1e-6)
    with pytest.raises(StoreError, match="being written by"):
        SqlState.open(store_url, now=wall)
    wall.advance(1e-6)
    new = SqlState.open(store_url, now=wall)
    old.failed_requests["req-old"] = 1
    with pytest.raises(StoreError, match="lost cluster 'default'"):
        old.commit()
    old.close()  # gives back only its own lease, not the one the new controller holds
    with pytest.raises(StoreError, match="being written by"):
        SqlState.open(store_url, now=wall)
    new.close()


def test_a_pass_that_changes_nothing_renews_the_lease_once_a_third_of_it_has_passed(store_url: str) -> None:
    wall = Wall()
    running = SqlState.open(store_url, lease_s=60, now=wall)
    engine = sa.create_engine(store_url)

    def expires() -> datetime:
        with engine.connect() as conn:
            at: datetime = conn.execute(sa.select(leases.c.expires_at)).scalar_one()
            return at
    wall.advance(20 - 1e-6)
    running.commit()  # not due yet: nothing written
    assert expires() == T0 + timedelta(seconds=60)
    wall.advance(1e-6)
    running.commit()  # a third: renewed
    assert expires() == T0 + timedelta(seconds=80)
    engine.dispose()
    running.close()


def test_a_controller_loads_a_whole_month_of_ledger(store_url: str) -> None:
    """The monthly budget counts the month's entries one by one (pro rata across its start): a
    controller must load at least a month back from its latest record (sqlstate.HISTORY)."""
    sql = SqlState.open(store_url)
    _ended(sql, "n-1", T0, "vision", "1.00")
    _ended(sql, "n-2", T0 + timedelta(days=32), "vision", "2.00")
    sql.commit()
    sql.close()
    kept, full = SqlState.open(store_url), SqlState.read(store_url)
    assert [e.node_id for e in kept.ledger] == ["n-1", "n-2"] and sorted(kept.nodes) == ["n-1", "n-2"]
    since = T0 + timedelta(minutes=30)
    assert kept.spent_since(since) == full.spent_since(since) == (2.5, {"vision": 2.5})
    kept.close()


def test_a_store_a_newer_burster_migrated_is_refused_as_a_store_error(store_url: str) -> None:
    """An older controller (a deploy rolled back) used to stop on Alembic's own exception."""
    SqlState.open(store_url).close()
    engine = sa.create_engine(store_url)
    with engine.begin() as conn:
        conn.exec_driver_sql("UPDATE alembic_version SET version_num = '9999'")
    engine.dispose()
    with pytest.raises(StoreError, match=r"^state store '.+': its schema is not one .*'9999'.*a newer burster"):
        SqlState.open(store_url)
    with pytest.raises(StoreError, match="schema is at revision 9999"):
        SqlState.read(store_url)


def test_a_port_that_is_not_a_number_is_a_config_error_without_the_password() -> None:
    with pytest.raises(ConfigError, match=r"store\.url 'postgresql\+psycopg2://\*\*\*@db:port/burster'") as err:
        SqlState.open("postgresql+psycopg2://burster:hunter2@db:port/burster")
    assert "hunter2" not in str(err.value)


def test_a_cluster_holding_any_one_kind_of_state_is_not_empty(store_url: str) -> None:
    """``simulate --store`` refuses a cluster that is not empty: its state would be taken for its own."""
    kinds: dict[str, Callable[[SqlState], object]] = {
        "intent": lambda s: s.put_intent(Launch(SPOT, 1, "burst", "req-1")),
        "node": lambda s: s.add_node(_record("n-1", SPOT)),
        "ledger": lambda s: s.charge(_entry("n-1", "vision", "1")),
        "ticket": lambda s: s.tickets.update({"n-1": CheckpointTicket("n-1", "job-1", T0)}),
        "block": lambda s: s.blocked.update({SPOT.key: T0}),
        "strikes": lambda s: s.block_strikes.update({SPOT.key: 1}),
        "failed": lambda s: s.failed_requests.update({"req-1": 1}),
        "times": lambda s: s.launch_times.append(T0),
        "notice": lambda s: s.notices.update({"n-1": Interruption("n-1", "aws", "rebalance", T0, T0)}),
        "watched": lambda s: s.watched.update({"n-1": EndWatch(T0, unseen=True)}),
    }
    for kind, put in kinds.items():
        sql = SqlState.open(store_url, kind)
        put(sql)
        sql.commit()
        sql.close()
        assert not SqlState.read(store_url, kind).empty, kind
    assert SqlState.read(store_url, "none").empty


def test_a_password_in_the_url_is_in_no_message_of_a_write_that_failed(postgres_url: str,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    url = sa.make_url(postgres_url).set(password="hunter2").render_as_string(hide_password=False)
    sql = SqlState.open(url)  # (the test server trusts: the password is not checked)
    sql.failed_requests["req-1"] = 1
    _fail_next_commit(monkeypatch, url, written=False, message="reset")
    with pytest.raises(StoreError, match="could not write this pass") as err:
        sql.commit()
    assert "hunter2" not in str(err.value) and "127.0.0.1" in str(err.value)
    sql.close()


def test_an_intent_written_again_and_cleared_in_its_pass_is_gone_after_the_commit(store_url: str) -> None:
    """A launch tried again (its first call timed out) writes its intent again; recorded, it is cleared,
    and the commit deletes the row put_intent wrote (not in the last commit, and not in memory now)."""
    launch = Launch(SPOT, 1, "burst", "req-1")
    sql = SqlState.open(store_url)
    sql.put_intent(launch)
    sql.put_intent(launch)
    assert SqlState.read(store_url).intents == {"req-1": launch}
    sql.clear_intent("req-1")
    sql.commit()
    assert SqlState.read(store_url).intents == {}


def test_a_charge_that_ends_inside_the_loaded_history_is_loaded_however_early_it_began(store_url: str) -> None:
    """A node that ran 40 days is charged when it ends: the months it spans count its share, so a
    restarted controller loads it (it ended after the horizon), and the node that ended on the horizon."""
    sql = SqlState.open(store_url)
    sql.add_node(_record("n-long", SPOT))
    for step in (NodeState.LAUNCHING, NodeState.JOINING, NodeState.READY, NodeState.TERMINATING):
        sql.move("n-long", step)
    sql.move("n-long", NodeState.TERMINATED, ended_at=T0 + timedelta(days=40))
    sql.charge(replace(_entry("n-long", "nlp", "40.00"), end=T0 + timedelta(days=40)))
    _ended(sql, "n-edge", T0 + timedelta(days=5), "vision", "1.00")  # ends at the horizon exactly
    _ended(sql, "n-last", T0 + timedelta(days=50), "vision", "2.00")
    sql.commit()
    sql.close()
    assert T0 + timedelta(days=50) - HISTORY == T0 + timedelta(days=5)
    kept, full = SqlState.open(store_url), SqlState.read(store_url)
    assert [e.node_id for e in kept.ledger] == ["n-long", "n-edge", "n-last"]
    assert sorted(kept.nodes) == ["n-edge", "n-last", "n-long"]
    since = T0 + timedelta(days=30)
    assert kept.spent_since(since) == full.spent_since(since) == (12.0, {"nlp": 10.0, "vision": 2.0})
    kept.close()


def test_a_restarted_controller_writes_its_loaded_nodes_back_in_their_launch_order(store_url: str) -> None:
    sql = SqlState.open(store_url)
    for node_id in ("n-b", "n-a", "n-c"):
        sql.add_node(_record(node_id, SPOT))
    sql.commit()
    sql.close()
    again = SqlState.open(store_url)
    again.move("n-a", NodeState.LAUNCHING)
    again.add_node(_record("n-0", SPOT))
    again.commit()
    again.close()
    assert [r.node_id for r in SqlState.read(store_url).live()] == ["n-b", "n-a", "n-c", "n-0"]
