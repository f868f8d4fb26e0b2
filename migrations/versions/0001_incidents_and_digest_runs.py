"""incidents and digest runs

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "incidents",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("cluster", sa.String(length=253), nullable=False),
        sa.Column("namespace", sa.String(length=253), nullable=False),
        sa.Column("name", sa.String(length=253), nullable=False),
        sa.Column("cause", sa.String(length=64), nullable=False),
        sa.Column("action", sa.Text(), nullable=False),
        sa.Column("node_summary", sa.Text(), nullable=False),
        sa.Column("verdict", sa.Text(), nullable=False),
        sa.Column("asked_by", sa.String(length=64), nullable=False),
        sa.Column("channel", sa.String(length=64), nullable=True),
        sa.Column("message_ts", sa.String(length=32), nullable=True),
        sa.Column("source", sa.String(length=8), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_incidents")),
        sa.UniqueConstraint("channel", "message_ts", name=op.f("uq_incidents_channel_message_ts")),
    )
    with op.batch_alter_table("incidents") as batch_op:
        batch_op.create_index(batch_op.f("ix_incidents_cause"), ["cause"])
        batch_op.create_index(batch_op.f("ix_incidents_created_at"), ["created_at"])

    op.create_table(
        "digest_runs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("week_key", sa.String(length=32), nullable=False),
        sa.Column("channel", sa.String(length=64), nullable=False),
        sa.Column("claimed_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_digest_runs")),
        sa.UniqueConstraint("week_key", "channel", name=op.f("uq_digest_runs_week_key_channel")),
    )


def downgrade() -> None:
    op.drop_table("digest_runs")
    with op.batch_alter_table("incidents") as batch_op:
        batch_op.drop_index(batch_op.f("ix_incidents_created_at"))
        batch_op.drop_index(batch_op.f("ix_incidents_cause"))
    op.drop_table("incidents")
