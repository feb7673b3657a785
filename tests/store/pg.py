"""A new, empty PostgreSQL database for one test or one fuzzed run, dropped afterwards.

The server is ``$BURSTER_TEST_POSTGRES`` (an SQLAlchemy URL of a database to connect to as an admin,
default ``postgresql+psycopg2://postgres@127.0.0.1:5432/postgres``: the development machine's server,
trust auth).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import sqlalchemy as sa

ADMIN_URL = os.environ.get("BURSTER_TEST_POSTGRES", "postgresql+psycopg2://postgres@127.0.0.1:5432/postgres")


class NoServer(Exception):
    """No PostgreSQL server answered at ``ADMIN_URL``."""


@contextmanager
def fresh_database(admin_url: str | None = None) -> Iterator[str]:
    """The URL of a new database on ``admin_url``'s server (default ``ADMIN_URL``), dropped on leaving;
    NoServer, saying what to do, when the server cannot be reached."""
    admin = sa.create_engine(admin_url or ADMIN_URL, isolation_level="AUTOCOMMIT")
    name = f"burster_test_{uuid.uuid4().hex[:12]}"
    try:
        with admin.connect() as conn:
            conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
    except sa.exc.OperationalError as err:
        admin.dispose()
        raise NoServer(f"no PostgreSQL server at {admin.url!r} ({str(err.orig).strip()}); start one, point "
                       "BURSTER_TEST_POSTGRES at one, or set BURSTER_SKIP_POSTGRES=1") from err
    try:
        yield admin.url.set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.dispose()
