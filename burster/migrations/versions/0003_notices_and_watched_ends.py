"""What a restarted controller must not forget: interruption notices standing until their node
ends, and ended nodes listings are still watched for (one found running on is charged and terminated);
and an index to find a node by its launch request id (a controller loads only recent ended nodes).

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "burster_interruption_notices",
        sa.Column("cluster", sa.String(63), primary_key=True),
        sa.Column("node_id", sa.String(200), primary_key=True),
        sa.Column("provider", sa.String(32), nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("notice_at", sa.DateTime, nullable=False),
        sa.Column("terminate_at", sa.DateTime, nullable=False),
    )
    op.create_table(
        "burster_watched_ends",
        sa.Column("cluster", sa.String(63), primary_key=True),
        sa.Column("node_id", sa.String(200), primary_key=True),
        sa.Column("ended_at", sa.DateTime, nullable=False),
        sa.Column("unseen", sa.Boolean, nullable=False),
        sa.Column("running", sa.Boolean, nullable=False),
    )


    op.create_index("ix_burster_nodes_request", "burster_nodes", ["cluster", "request_id"])


def downgrade() -> None:
    op.drop_index("ix_burster_nodes_request", "burster_nodes")
    op.drop_table("burster_watched_ends")
    op.drop_table("burster_interruption_notices")
