"""State-store tests run against a SQLite file and a real PostgreSQL server (a fresh database each).

The server is ``$BURSTER_TEST_POSTGRES`` (an SQLAlchemy URL of a database to connect to as an admin,
default ``postgresql+psycopg2://postgres@127.0.0.1:5432/postgres``: the development machine's server,
trust auth). When it cannot be reached the PostgreSQL tests fail, saying so; set
``BURSTER_SKIP_POSTGRES=1`` to skip them on a machine without one.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

ADMIN_URL = os.environ.get("BURSTER_TEST_POSTGRES", "postgresql+psycopg2://postgres@127.0.0.1:5432/postgres")


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A new, empty PostgreSQL database, dropped afterwards."""
    if os.environ.get("BURSTER_SKIP_POSTGRES") == "1":
        pytest.skip("BURSTER_SKIP_POSTGRES=1")
    admin = sa.create_engine(ADMIN_URL, isolation_level="AUTOCOMMIT")
    name = f"burster_test_{uuid.uuid4().hex[:12]}"
    try:
        with admin.connect() as conn:
            conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
    except sa.exc.OperationalError as err:
        pytest.fail(f"no PostgreSQL server at {admin.url!r} ({str(err.orig).strip()}); start one, point "
                    "BURSTER_TEST_POSTGRES at one, or set BURSTER_SKIP_POSTGRES=1")
    try:
        yield admin.url.set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.dispose()


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'burster.db'}"


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest) -> str:
    """Each test once on SQLite, once on PostgreSQL."""
    return str(request.getfixturevalue(f"{request.param}_url"))
