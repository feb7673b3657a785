"""A report reads a cluster's state while its controller writes: every table comes from one snapshot
(PostgreSQL) or one read transaction (SQLite), so a pass the controller commits during the read is
seen whole or not at all."""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
import sqlalchemy as sa

from burster.lifecycle import NodeState
from burster.sqlstate import SqlState
from tests.store.sqlstate_records import SPOT, T0, _entry, _record


def test_a_read_sees_a_pass_committed_during_it_whole_or_not_at_all(postgres_url: str) -> None:
    """The controller ends node n-1 and charges it in one commit, made while the reader is between
    its nodes and its ledger. The read used to mix the two (n-1 live, its charge in the ledger:
    spend counted for a node still running); it now sees the state before that commit."""
    ctl = SqlState.open(postgres_url)
    ctl.add_node(_record("n-1", SPOT))
    for step in (NodeState.LAUNCHING, NodeState.JOINING, NodeState.READY):
        ctl.move("n-1", step)
    ctl.commit()
    fired: list[bool] = []

    def before(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if fired or not statement.lstrip().upper().startswith("SELECT") or "burster_ledger" not in statement:
            return
        fired.append(True)
        ctl.move("n-1", NodeState.TERMINATING)
        ctl.move("n-1", NodeState.TERMINATED, ended_at=T0 + timedelta(hours=1))
        ctl.charge(_entry("n-1", "vision", "9.8312"))
        ctl.commit()

    sa.event.listen(sa.engine.Engine, "before_cursor_execute", before)
    try:
        report = SqlState.read(postgres_url)
    finally:
        sa.event.remove(sa.engine.Engine, "before_cursor_execute", before)
    assert fired
    assert report.nodes["n-1"].state is NodeState.READY and report.ledger == [] and report.spent_usd == 0.0
    after = SqlState.read(postgres_url)
    assert after.nodes["n-1"].state is NodeState.TERMINATED
    assert [e.usd for e in after.ledger] == [Decimal("9.831200")]
    ctl.close()


def test_a_sqlite_read_sees_a_pass_committed_during_it_whole_or_not_at_all(sqlite_url: str) -> None:
    """pysqlite starts no transaction for reads, so each table was read as of its own moment: the
    controller's commit between the nodes and the ledger showed n-1 live with its charge already in
    the ledger. The read is now one transaction; the commit waits for it (the driver's busy timeout)."""
    ctl = SqlState.open(sqlite_url)
    ctl.add_node(_record("n-1", SPOT))
    for step in (NodeState.LAUNCHING, NodeState.JOINING, NodeState.READY):
        ctl.move("n-1", step)
    ctl.commit()
    writer: list[threading.Thread] = []

    def end_and_charge() -> None:
        ctl.move("n-1", NodeState.TERMINATING)
        ctl.move("n-1", NodeState.TERMINATED, ended_at=T0 + timedelta(hours=1))
        ctl.charge(_entry("n-1", "vision", "9.8312"))
        ctl.commit()

    def before(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if writer or not statement.lstrip().upper().startswith("SELECT") or "burster_ledger" not in statement:
            return
        writer.append(threading.Thread(target=end_and_charge))
        writer[0].start()
        time.sleep(0.3)  # time enough to commit, had the read left the database unlocked

    sa.event.listen(sa.engine.Engine, "before_cursor_execute", before)
    try:
        report = SqlState.read(sqlite_url)
    finally:
        sa.event.remove(sa.engine.Engine, "before_cursor_execute", before)
    writer[0].join(timeout=10)
    assert report.nodes["n-1"].state is NodeState.READY and report.ledger == [] and report.spent_usd == 0.0
    after = SqlState.read(sqlite_url)
    assert after.nodes["n-1"].state is NodeState.TERMINATED
    assert [e.usd for e in after.ledger] == [Decimal("9.831200")]
    ctl.close()


@pytest.mark.parametrize("url_fixture", ["sqlite_url", "postgres_url"])
def test_a_read_changes_nothing_and_leaves_the_controller_writing(url_fixture: str,
                                                                  request: pytest.FixtureRequest) -> None:
    """The reader's snapshot ends with the read: the controller's next commit goes through."""
    url = str(request.getfixturevalue(url_fixture))
    ctl = SqlState.open(url)
    ctl.add_node(_record("n-1", SPOT))
    ctl.commit()
    assert SqlState.read(url).nodes["n-1"].state is NodeState.REQUESTED
    ctl.move("n-1", NodeState.LAUNCHING)
    ctl.commit()
    assert SqlState.read(url).nodes["n-1"].state is NodeState.LAUNCHING
    ctl.close()
