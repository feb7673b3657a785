"""State-store tests run against a SQLite file and a real PostgreSQL server (a fresh database each).

The server is ``$BURSTER_TEST_POSTGRES`` (an SQLAlchemy URL of a database to connect to as an admin,
default ``postgresql+psycopg2://postgres@127.0.0.1:5432/postgres``: the development machine's server,
trust auth). When it cannot be reached the PostgreSQL tests fail, saying so; set
``BURSTER_SKIP_POSTGRES=1`` to skip them on a machine without one.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.store.pg import NoServer, fresh_database


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A new, empty PostgreSQL database, dropped afterwards."""
    if os.environ.get("BURSTER_SKIP_POSTGRES") == "1":
        pytest.skip("BURSTER_SKIP_POSTGRES=1")
    try:
        with fresh_database() as url:
            yield url
    except NoServer as err:
        pytest.fail(str(err))


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'burster.db'}"


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest) -> str:
    """Each test once on SQLite, once on PostgreSQL."""
    return str(request.getfixturevalue(f"{request.param}_url"))
