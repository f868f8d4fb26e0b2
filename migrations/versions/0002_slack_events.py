"""slack events claimed by a replica

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "slack_events",
        sa.Column("event_id", sa.String(length=255), nullable=False),
        sa.Column("received_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("event_id", name=op.f("pk_slack_events")),
    )
    op.create_index(op.f("ix_slack_events_received_at"), "slack_events", ["received_at"])


def downgrade() -> None:
    op.drop_index(op.f("ix_slack_events_received_at"), table_name="slack_events")
    op.drop_table("slack_events")
