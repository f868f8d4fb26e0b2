"""Database tables. The schema only changes through a migration in migrations/versions/."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import DateTime, Dialect, Index, MetaData, String, Text, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.types import TypeDecorator

# Named constraints, so migrations can drop them by name (SQLite batch mode needs names).
NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC datetimes on every backend (SQLite keeps no offset: store naive UTC)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value.isoformat()}: give it a timezone")
        utc = value.astimezone(UTC)
        return utc.replace(tzinfo=None) if dialect.name == "sqlite" else utc

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        moment: datetime = value
        return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class Incident(Base):
    """One answer gpuwhy gave: what was asked, where, and the full Verdict."""

    __tablename__ = "incidents"
    __table_args__ = (
        # The thread anchor: one incident per Slack message. CLI rows leave both NULL.
        UniqueConstraint("channel", "message_ts"),
        Index(None, "created_at"),
        Index(None, "cause"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    cluster: Mapped[str] = mapped_column(String(253))
    namespace: Mapped[str] = mapped_column(String(253))
    name: Mapped[str] = mapped_column(String(253))
    cause: Mapped[str] = mapped_column(String(64))
    action: Mapped[str] = mapped_column(Text)
    node_summary: Mapped[str] = mapped_column(Text)
    verdict: Mapped[str] = mapped_column(Text)  # JSON of Verdict.to_dict()
    asked_by: Mapped[str] = mapped_column(String(64))  # Slack user id, or "cli"
    channel: Mapped[str | None] = mapped_column(String(64))
    message_ts: Mapped[str | None] = mapped_column(String(32))
    source: Mapped[str] = mapped_column(String(8))  # "slack" or "cli"


class DigestRun(Base):
    """A digest claimed for one week and channel; the unique key makes every post happen once."""

    __tablename__ = "digest_runs"
    __table_args__ = (UniqueConstraint("week_key", "channel"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    week_key: Mapped[str] = mapped_column(String(32))  # ISO week, e.g. "2026-W48"
    channel: Mapped[str] = mapped_column(String(64))
    claimed_at: Mapped[datetime] = mapped_column(UTCDateTime())


class SlackEvent(Base):
    """An Events API delivery claimed by one replica; Slack's retries of it find the row."""

    __tablename__ = "slack_events"
    __table_args__ = (Index(None, "received_at"),)  # pruning deletes by age

    event_id: Mapped[str] = mapped_column(String(255), primary_key=True)
    received_at: Mapped[datetime] = mapped_column(UTCDateTime())


class AlertClaim(Base):
    """Something posted unasked, claimed by one replica: a pod + cause, an alert's firing, a
    rate-limit summary. The key says which; a second claim of it fails."""

    __tablename__ = "alert_claims"
    __table_args__ = (Index(None, "claimed_at"),)  # pruning deletes by age

    key: Mapped[str] = mapped_column(String(512), primary_key=True)
    claimed_at: Mapped[datetime] = mapped_column(UTCDateTime())


class AlertThread(Base):
    """The first post about a stuck workload or a firing alert: later news goes in its thread.

    ``open_key`` (cluster + subject) is set while the thread is open and unique, so one
    workload has one open thread whatever the replicas; closing it clears the key.
    """

    __tablename__ = "alert_threads"
    __table_args__ = (UniqueConstraint("open_key"), Index(None, "channel", "message_ts"))

    id: Mapped[int] = mapped_column(primary_key=True)
    open_key: Mapped[str | None] = mapped_column(String(800))
    cluster: Mapped[str] = mapped_column(String(253))
    subject: Mapped[str] = mapped_column(String(512))  # "Deployment/ns/name", "alert/fp/start"
    cause: Mapped[str] = mapped_column(String(64))
    channel: Mapped[str | None] = mapped_column(String(64))
    message_ts: Mapped[str | None] = mapped_column(String(32))
    pod_uids: Mapped[str] = mapped_column(Text)  # JSON list of the pods posted about
    opened_at: Mapped[datetime] = mapped_column(UTCDateTime())
    closed_at: Mapped[datetime | None] = mapped_column(UTCDateTime())


class AlertPost(Base):
    """One unasked post in a channel, for the per-channel rate limit shared by replicas."""

    __tablename__ = "alert_posts"
    __table_args__ = (Index(None, "channel", "posted_at"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    channel: Mapped[str] = mapped_column(String(64))
    posted_at: Mapped[datetime] = mapped_column(UTCDateTime())


class SlackRequest(Base):
    """A signed Slack request answered by one replica, keyed on its timestamp and signature
    (a SHA-256 of both): the same request replayed within Slack's 5-minute window finds it."""

    __tablename__ = "slack_requests"
    __table_args__ = (Index(None, "received_at"),)

    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    received_at: Mapped[datetime] = mapped_column(UTCDateTime())
