"""The controller's state: launch intents, node records, checkpoint tickets, the ledger, blocked
offerings, failed launch requests and recent launch times, each keyed by cluster.

Revision ID: 0001
Revises:
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

KEY = 200


def _cluster() -> sa.Column[str]:
    return sa.Column("cluster", sa.String(63), primary_key=True)


def upgrade() -> None:
    op.create_table(
        "burster_intents", _cluster(),
        sa.Column("request_id", sa.String(KEY), primary_key=True),
        sa.Column("launch", sa.Text, nullable=False),
    )
    op.create_table(
        "burster_nodes", _cluster(),
        sa.Column("node_id", sa.String(KEY), primary_key=True),
        sa.Column("seq", sa.Integer, nullable=False),
        sa.Column("provider", sa.String(32), nullable=False),
        sa.Column("request_id", sa.String(KEY), nullable=False),
        sa.Column("offering", sa.Text, nullable=False),
        sa.Column("launched_at", sa.DateTime, nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("for_job", sa.Text),
        sa.Column("team", sa.Text, nullable=False),
        sa.Column("project", sa.Text, nullable=False),
        sa.Column("sprint", sa.Text, nullable=False),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("idle_since", sa.DateTime),
        sa.Column("ended_at", sa.DateTime),
        sa.Column("exclusive", sa.Boolean, nullable=False),
        sa.Column("live", sa.Boolean, nullable=False),
    )
    op.create_table(
        "burster_checkpoint_tickets", _cluster(),
        sa.Column("node_id", sa.String(KEY), primary_key=True),
        sa.Column("job_id", sa.Text, nullable=False),
        sa.Column("deadline", sa.DateTime, nullable=False),
        sa.Column("done", sa.Boolean, nullable=False),
        sa.Column("saved_s", sa.Float, nullable=False),
    )
    op.create_table(
        "burster_ledger", _cluster(),
        sa.Column("seq", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("node_id", sa.String(KEY), nullable=False),
        sa.Column("provider", sa.String(32), nullable=False),
        sa.Column("market", sa.String(16), nullable=False),
        sa.Column("instance_type", sa.String(KEY), nullable=False),
        sa.Column("region", sa.String(KEY), nullable=False),
        sa.Column("team", sa.Text, nullable=False),
        sa.Column("project", sa.Text, nullable=False),
        sa.Column("sprint", sa.Text, nullable=False),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("start", sa.DateTime, nullable=False),
        sa.Column("end", sa.DateTime, nullable=False),
        sa.Column("billed_s", sa.Float, nullable=False),
        # exact dollars: NUMERIC on PostgreSQL, text on SQLite (whose NUMERIC is a float)
        sa.Column("usd", sa.Numeric(18, 6).with_variant(sa.String(32), "sqlite"), nullable=False),
    )
    op.create_table(
        "burster_offering_blocks", _cluster(),
        sa.Column("offering_key", sa.String(KEY), primary_key=True),
        sa.Column("blocked_until", sa.DateTime),
        sa.Column("strikes", sa.Integer),
    )
    op.create_table(
        "burster_failed_requests", _cluster(),
        sa.Column("request_id", sa.String(KEY), primary_key=True),
        sa.Column("tries", sa.Integer, nullable=False),
    )
    op.create_table(
        "burster_launch_times", _cluster(),
        sa.Column("seq", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("at", sa.DateTime, nullable=False),
    )


def downgrade() -> None:
    for name in ("burster_launch_times", "burster_failed_requests", "burster_offering_blocks", "burster_ledger",
                 "burster_checkpoint_tickets", "burster_nodes", "burster_intents"):
        op.drop_table(name)
