"""A node's run charged in parts, each to the team it served: where the part not charged yet starts.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("burster_nodes", sa.Column("charged_from", sa.DateTime))


def downgrade() -> None:
    with op.batch_alter_table("burster_nodes") as batch:  # SQLite drops a column only by a copy
        batch.drop_column("charged_from")
