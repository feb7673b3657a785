"""One controller per cluster: the state store's lease (burster/sqllease.py) on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from burster.cli import main
from burster.errors import StoreError
from burster.model import Market, Offering
from burster.plan import Launch
from burster.sqlstate import SqlState
from tests.store.sqlstate_records import Wall

T0 = datetime(2026, 3, 2, 9, tzinfo=UTC)
SPOT = Offering("aws", "us-east-1", "us-east-1a", "g5.xlarge", "A10G", 1, Market.SPOT, 0.5)


def test_a_second_controller_is_refused_until_the_first_gives_the_cluster_back(store_url: str) -> None:
    first = SqlState.open(store_url)
    first.failed_requests["req-1"] = 1
    first.commit()
    with pytest.raises(StoreError, match=r"cluster 'default' is being written by .*:\d+:.*stop the other one"):
        SqlState.open(store_url)
    assert SqlState.open(store_url, "other").empty  # another cluster in the same database is free
    first.close()
    second = SqlState.open(store_url)
    assert second.failed_requests == {"req-1": 1}


def test_a_lapsed_lease_is_taken_over_and_its_old_holder_writes_and_launches_nothing(store_url: str) -> None:
    wall = Wall(T0)
    old = SqlState.open(store_url, lease_s=60, now=wall)
    wall.advance(61)  # the old controller hung: no pass wrote for a minute
    new = SqlState.open(store_url, lease_s=60, now=wall)
    old.failed_requests["req-old"] = 1
    with pytest.raises(StoreError, match="lost cluster 'default' to another"):
        old.commit()
    with pytest.raises(StoreError, match="lost cluster 'default'"):
        old.put_intent(Launch(SPOT, 1, "burst", "req-old"))
    assert old.intents == {}
    new.failed_requests["req-new"] = 1
    new.commit()
    assert SqlState.read(store_url).failed_requests == {"req-new": 1}


def test_passes_keep_the_lease_even_when_they_change_nothing(sqlite_url: str) -> None:
    wall = Wall(T0)
    running = SqlState.open(sqlite_url, lease_s=60, now=wall)
    for _ in range(9):  # 90 s of passes that write nothing
        wall.advance(10)
        running.commit()
    with pytest.raises(StoreError, match="being written by"):
        SqlState.open(sqlite_url, lease_s=60, now=wall)


def test_a_store_opened_to_read_reads_beside_the_writer_and_writes_nothing(store_url: str) -> None:
    writer = SqlState.open(store_url)
    writer.block_strikes[SPOT.key] = 2
    writer.commit()
    reader = SqlState.read(store_url)
    assert reader.block_strikes == {SPOT.key: 2}
    reader.commit()  # nothing changed: nothing to refuse
    reader.block_strikes[SPOT.key] = 3
    with pytest.raises(StoreError, match="opened to read"):
        reader.commit()
    with pytest.raises(StoreError, match="opened to read"):
        reader.put_intent(Launch(SPOT, 1, "burst", "req-1"))
    assert SqlState.read(store_url).block_strikes == {SPOT.key: 2}


def test_a_simulation_is_refused_a_cluster_a_controller_writes(sqlite_url: str,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    SqlState.open(sqlite_url)  # a controller holds cluster 'default'
    assert main(["simulate", "--demo", "--days", "0.25", "--store", sqlite_url]) == 2
    assert "is being written by" in capsys.readouterr().err


@pytest.mark.parametrize("left_behind", ["a lapsed lease", "no lease"])
def test_of_two_controllers_taking_a_cluster_at_once_one_is_refused(store_url: str, left_behind: str) -> None:
    """B reads the lease row (lapsed, or none) and, before it writes, A takes the cluster: B's write
    must not take it over (it used to delete A's new row and insert its own: both held the lease)."""
    import sqlalchemy as sa

    from burster.sqllease import Lease
    from burster.sqlschema import leases, upgrade

    engine = sa.create_engine(store_url)
    upgrade(engine)
    wall = Wall(T0)
    with engine.begin() as conn:
        conn.execute(sa.delete(leases))
        if left_behind == "a lapsed lease":
            conn.execute(sa.insert(leases).values(cluster="default", holder="dead:1:x",
                                                  expires_at=wall() - timedelta(minutes=5)))
    a, b = Lease("default", now=wall), Lease("default", now=wall)
    with engine.connect() as b_conn:

        def a_takes_it_first(conn: object, cursor: object, statement: str, *args: object) -> None:
            if statement.lstrip().upper().startswith(("UPDATE", "INSERT")) and a.renewed_at is None:
                with engine.begin() as a_conn:
                    a.take(a_conn)
        sa.event.listen(b_conn, "before_cursor_execute", a_takes_it_first)
        with pytest.raises(StoreError, match="being written by another controller"), b_conn.begin():
            b.take(b_conn)
    with engine.connect() as conn:
        assert conn.execute(sa.select(leases.c.holder)).scalars().all() == [a.holder]
    engine.dispose()
