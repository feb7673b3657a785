"""Alembic environment of the state store: run by ``burster.sqlschema.upgrade`` on the connection it
hands over (``config.attributes["connection"]``), or by the ``alembic`` command on a URL
(``alembic -x url=postgresql+psycopg2://... upgrade head`` from this folder's parent, with
``script_location`` set to it)."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine

from burster.sqlschema import metadata

config = context.config
connection = config.attributes.get("connection")
if connection is not None:
    context.configure(connection=connection, target_metadata=metadata)
    with context.begin_transaction():
        context.run_migrations()
else:
    url = context.get_x_argument(as_dictionary=True).get("url") or config.get_main_option("sqlalchemy.url")
    if not url:
        raise SystemExit("no database URL: pass -x url=... (the store.url of the config)")
    with create_engine(url).begin() as conn:
        context.configure(connection=conn, target_metadata=metadata)
        with context.begin_transaction():
            context.run_migrations()
