"""alert claims, threads and posts

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "alert_claims",
        sa.Column("key", sa.String(length=512), nullable=False),
        sa.Column("claimed_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("key", name=op.f("pk_alert_claims")),
    )
    op.create_index(op.f("ix_alert_claims_claimed_at"), "alert_claims", ["claimed_at"])
    op.create_table(
        "alert_threads",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("open_key", sa.String(length=800), nullable=True),
        sa.Column("cluster", sa.String(length=253), nullable=False),
        sa.Column("subject", sa.String(length=512), nullable=False),
        sa.Column("cause", sa.String(length=64), nullable=False),
        sa.Column("channel", sa.String(length=64), nullable=True),
        sa.Column("message_ts", sa.String(length=32), nullable=True),
        sa.Column("pod_uids", sa.Text(), nullable=False),
        sa.Column("opened_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("closed_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_alert_threads")),
        sa.UniqueConstraint("open_key", name=op.f("uq_alert_threads_open_key")),
    )
    op.create_index(op.f("ix_alert_threads_channel_message_ts"), "alert_threads",
                    ["channel", "message_ts"])
    op.create_table(
        "alert_posts",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("channel", sa.String(length=64), nullable=False),
        sa.Column("posted_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_alert_posts")),
    )
    op.create_index(op.f("ix_alert_posts_channel_posted_at"), "alert_posts",
                    ["channel", "posted_at"])


def downgrade() -> None:
    op.drop_index(op.f("ix_alert_posts_channel_posted_at"), table_name="alert_posts")
    op.drop_table("alert_posts")
    op.drop_index(op.f("ix_alert_threads_channel_message_ts"), table_name="alert_threads")
    op.drop_table("alert_threads")
    op.drop_index(op.f("ix_alert_claims_claimed_at"), table_name="alert_claims")
    op.drop_table("alert_claims")
