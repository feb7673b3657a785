"""A launch intent keeps when its call was first sent: a launch in flight dates from it across a restart.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("burster_intents", sa.Column("sent_at", sa.DateTime))


def downgrade() -> None:
    with op.batch_alter_table("burster_intents") as batch:  # SQLite drops a column only by a copy
        batch.drop_column("sent_at")
