"""One controller per cluster: the lease naming which controller writes a cluster's state.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "burster_leases",
        sa.Column("cluster", sa.String(63), primary_key=True),
        sa.Column("holder", sa.Text, nullable=False),
        sa.Column("expires_at", sa.DateTime, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("burster_leases")
