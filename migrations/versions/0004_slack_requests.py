"""signed slack requests claimed by a replica (replay guard)

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "slack_requests",
        sa.Column("key", sa.String(length=64), nullable=False),
        sa.Column("received_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("key", name=op.f("pk_slack_requests")),
    )
    op.create_index(op.f("ix_slack_requests_received_at"), "slack_requests", ["received_at"])


def downgrade() -> None:
    op.drop_index(op.f("ix_slack_requests_received_at"), table_name="slack_requests")
    op.drop_table("slack_requests")
