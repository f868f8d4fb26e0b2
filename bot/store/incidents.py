"""The incident store: every answer gpuwhy gives, and which weekly digests went out.

Any SQLAlchemy URL works; SQLite (a file, WAL) is the default, PostgreSQL suits several replicas.
Every database failure surfaces as a StoreError whose message is one line, safe to print.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar, cast

import alembic.command
import alembic.config
import alembic.util
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import CursorResult, delete, func, select
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlalchemy.orm import sessionmaker

from bot.answer.kept import kept_verdict
from bot.store.engine import (
    MIGRATIONS_DIR,
    StoreError,
    alembic_config,
    lock_schema,
    make_engine,
    one_line,
    safe_url,
)
from bot.store.models import Base, DigestRun, Incident, SlackEvent, SlackRequest
from scoring.verdict import Verdict

log = logging.getLogger(__name__)

SOURCES = ("slack", "cli", "watch", "alert")  # alert: from Alertmanager
# Slack retries a delivery within minutes; a day-old claim only takes up space.
EVENT_RETENTION = timedelta(days=1)
EVENT_PRUNE_INTERVAL = timedelta(hours=1)
# A digest for week W is claimed during week W+1; two weeks keep every claim that still counts.
DIGEST_CLAIM_RETENTION = timedelta(days=14)
# What an answer waits on from the store (an event claim, a thread lookup) gives up after this.
QUICK_TIMEOUT_S = 1.0
QUICK_PENDING = 32
T = TypeVar("T")
# Alembic keeps the running migration in module globals: one migration per process at a time.
_MIGRATING = threading.Lock()


class DuplicateThreadError(StoreError):
    """An incident for this Slack message is already stored."""


@dataclass(frozen=True)
class Revisions:
    current: str | None  # None: no schema yet
    head: str | None

    @property
    def at_head(self) -> bool:
        return self.current == self.head


@dataclass(frozen=True)
class Pruned:
    incidents: int
    event_claims: int
    digest_claims: int


@dataclass(frozen=True)
class StoredIncident:
    id: int
    created_at: datetime  # UTC
    verdict: Verdict
    cluster: str
    channel: str | None
    message_ts: str | None


def utc(at: datetime | None) -> datetime:
    """``at`` in UTC (now when None); a naive datetime is refused, never guessed."""
    if at is None:
        return datetime.now(UTC)
    if at.tzinfo is None:
        raise ValueError(f"naive datetime {at.isoformat()}: give it a timezone")
    return at.astimezone(UTC)


def _stored(row: Incident) -> StoredIncident:
    return StoredIncident(
        id=row.id,
        created_at=row.created_at,
        verdict=Verdict.from_dict(json.loads(row.verdict)),
        cluster=row.cluster,
        channel=row.channel,
        message_ts=row.message_ts,
    )


class Store:
    def __init__(self, url: str) -> None:
        self.engine = make_engine(url)
        self.url = safe_url(self.engine.url)
        self._sessions = sessionmaker(self.engine)
        self._next_event_prune: datetime | None = None
        self._quick_slots = threading.BoundedSemaphore(QUICK_PENDING)
        # Why the last use of the database failed; None once it answers (or before any use).
        self.last_failure: str | None = None

    def quickly(self, call: Callable[[], T], doing: str,
                timeout: float = QUICK_TIMEOUT_S) -> T:
        """``call()``, or a StoreError after ``timeout`` seconds: for what an answer waits on
        (a locked SQLite file waits out its busy timeout; a PostgreSQL that accepts and never
        answers, its connect timeout). The call runs on to its end in a daemon thread, which
        never holds up the process's exit (a pool's workers would, at interpreter exit)."""
        if not self._quick_slots.acquire(blocking=False):
            raise StoreError(f"database {self.url}: cannot {doing}: too many calls waiting")
        done = threading.Event()
        outcome: list[T] = []
        failure: list[BaseException] = []

        def run() -> None:
            try:
                outcome.append(call())
            except BaseException as exc:  # handed to the caller below
                failure.append(exc)
            finally:
                self._quick_slots.release()
                done.set()

        threading.Thread(target=run, name="gpuwhy-store", daemon=True).start()
        if not done.wait(timeout):
            self.last_failure = (f"database {self.url}: cannot {doing}: no answer within "
                                 f"{timeout:g} s")
            raise StoreError(self.last_failure)
        if failure:
            raise failure[0]
        return outcome[0]

    def close(self) -> None:
        self.engine.dispose()

    @property
    def sqlite_path(self) -> Path | None:
        """The SQLite file, or None (another database, or SQLite in memory)."""
        if self.engine.dialect.name != "sqlite":
            return None
        database = self.engine.url.database or ""
        if not database or database == ":memory:" or database.startswith("file:"):
            return None
        return Path(database)

    def file_identity(self) -> tuple[int, int] | None:
        """(device, inode) of the SQLite file; None when it is missing or not a file store."""
        path = self.sqlite_path
        try:
            found = path.stat() if path is not None else None
        except OSError:
            return None
        return None if found is None else (found.st_dev, found.st_ino)

    def reopen(self) -> None:
        """Drop pooled connections, so the next use opens new ones (and, for SQLite, the
        directory exists again)."""
        self.engine.dispose()
        path = self.sqlite_path
        if path is not None:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                log.warning("incident store: cannot create %s: %s", path.parent, exc)

    @contextmanager
    def _failures(self, doing: str) -> Iterator[None]:
        """Every use of the database goes through here: its outcome is :attr:`last_failure`."""
        try:
            yield
        except (SQLAlchemyError, alembic.util.CommandError) as exc:
            error = StoreError(f"database {self.url}: cannot {doing}: {one_line(exc)}")
            # A unique key already taken is an answer from a working database.
            self.last_failure = None if isinstance(exc, IntegrityError) else str(error)
            raise error from exc
        self.last_failure = None

    def upgrade(self) -> None:
        """Bring the schema to the newest migration (safe to run from several replicas at once)."""
        with _MIGRATING, self._failures("upgrade the schema"), \
                self.engine.begin() as connection:
            lock_schema(connection)
            alembic.command.upgrade(alembic_config(connection), "head")

    def revisions(self) -> Revisions:
        """The schema's migration and the newest one this gpuwhy ships; migrates nothing."""
        script = ScriptDirectory(str(MIGRATIONS_DIR))
        path = self.sqlite_path
        if path is not None and not path.exists():  # connecting would create an empty file
            return Revisions(current=None, head=script.get_current_head())
        with self._failures("read the schema version"), self.engine.connect() as connection:
            current = MigrationContext.configure(connection).get_current_revision()
        return Revisions(current=current, head=script.get_current_head())

    def prune(self, before: datetime, *, dry_run: bool = False) -> Pruned:
        """Delete incidents and claims older than ``before`` (or only count them).

        Digest claims younger than DIGEST_CLAIM_RETENTION stay whatever ``before`` says:
        without last week's claim a restarted bot would post last week's digest again.
        """
        claims_before = min(utc(before), datetime.now(UTC) - DIGEST_CLAIM_RETENTION)
        conditions = (
            (Incident, Incident.created_at < utc(before)),
            (SlackEvent, SlackEvent.received_at < utc(before)),
            (DigestRun, DigestRun.claimed_at < claims_before),
        )
        counts = []
        with self._failures("prune"), self._sessions.begin() as session:
            for table, condition in conditions:
                if dry_run:
                    counts.append(session.scalar(
                        select(func.count()).select_from(table).where(condition)) or 0)
                else:
                    result = session.execute(delete(table).where(condition))
                    counts.append(cast(CursorResult[Any], result).rowcount)
        return Pruned(*counts)

    def record(
        self,
        verdict: Verdict,
        *,
        cluster: str,
        asked_by: str,
        source: str,
        channel: str | None = None,
        message_ts: str | None = None,
        at: datetime | None = None,
    ) -> int:
        """Store one answer, as gpuwhy keeps it (``bot.answer.kept``); returns the incident
        id."""
        if source not in SOURCES:
            raise ValueError(f"source must be one of {SOURCES}, not {source!r}")
        verdict = kept_verdict(verdict)
        namespace, _, name = verdict.ref.partition("/")
        row = Incident(
            created_at=utc(at),
            cluster=cluster,
            namespace=namespace,
            name=name,
            cause=verdict.cause,
            action=verdict.action,
            node_summary=verdict.node_summary,
            verdict=json.dumps(verdict.to_dict(), ensure_ascii=False),
            asked_by=asked_by,
            channel=channel,
            message_ts=message_ts,
            source=source,
        )
        try:
            with self._failures("record an incident"), self._sessions.begin() as session:
                session.add(row)
                session.flush()
                incident_id = row.id
            return incident_id
        except StoreError as exc:
            if isinstance(exc.__cause__, IntegrityError) and message_ts is not None:
                raise DuplicateThreadError(
                    f"an incident for message {channel}/{message_ts} is already stored"
                ) from exc
            raise

    def incident_for_thread(self, channel: str, message_ts: str) -> StoredIncident | None:
        """The incident whose answer was posted as ``message_ts`` in ``channel``."""
        query = select(Incident).where(
            Incident.channel == channel, Incident.message_ts == message_ts
        )
        with self._failures("read an incident"), self._sessions() as session:
            row = session.scalars(query).one_or_none()
            return None if row is None else _stored(row)

    def incidents_between(self, start: datetime, end: datetime) -> list[StoredIncident]:
        """Incidents with start <= created_at < end, oldest first."""
        query = (
            select(Incident)
            .where(Incident.created_at >= utc(start), Incident.created_at < utc(end))
            .order_by(Incident.created_at, Incident.id)
        )
        with self._failures("read incidents"), self._sessions() as session:
            return [_stored(row) for row in session.scalars(query)]

    def causes_before(self, moment: datetime, cluster: str | None = None) -> set[str]:
        """Every cause word recorded before ``moment`` (in ``cluster``, when one is named), to
        tell which causes are new."""
        query = select(Incident.cause).where(Incident.created_at < utc(moment))
        if cluster is not None:
            query = query.where(Incident.cluster == cluster)
        query = query.distinct()
        with self._failures("read incidents"), self._sessions() as session:
            return set(session.scalars(query))

    def _insert_once(self, row: Base, doing: str) -> bool:
        """Add ``row``; False when its unique key is already taken (by any replica)."""
        try:
            with self._failures(doing), self._sessions.begin() as session:
                session.add(row)
        except StoreError as exc:
            if isinstance(exc.__cause__, IntegrityError):
                return False
            raise
        return True

    def claim_digest(self, week_key: str, channel: str) -> bool:
        """True for exactly one caller per (week, channel): that one posts the digest."""
        run = DigestRun(week_key=week_key, channel=channel, claimed_at=datetime.now(UTC))
        return self._insert_once(run, "claim the digest")

    def claim_event(self, event_id: str, at: datetime | None = None) -> bool:
        """True for exactly one caller per Slack event id: that one answers the event."""
        return self._claim(SlackEvent(event_id=event_id, received_at=utc(at)),
                           "claim a Slack event")

    def claim_request(self, key: str, at: datetime | None = None) -> bool:
        """True for exactly one caller per signed Slack request (``key``: its timestamp and
        signature): a request replayed within the signature window, to this replica or
        another, is answered once."""
        return self._claim(SlackRequest(key=key, received_at=utc(at)), "claim a Slack request")

    def _claim(self, row: SlackEvent | SlackRequest, doing: str) -> bool:
        """Insert a claim; claims older than EVENT_RETENTION are pruned first, at most once
        per EVENT_PRUNE_INTERVAL in each process."""
        now = row.received_at
        if self._next_event_prune is None or now >= self._next_event_prune:
            self.prune_events(now - EVENT_RETENTION)
            self._next_event_prune = now + EVENT_PRUNE_INTERVAL
        return self._insert_once(row, doing)

    def prune_events(self, before: datetime) -> int:
        """Forget event and request claims made before ``before``; returns how many."""
        with self._failures("prune Slack event claims"), self._sessions.begin() as session:
            return sum(cast(CursorResult[Any], session.execute(
                delete(table).where(table.received_at < utc(before)))).rowcount
                for table in (SlackEvent, SlackRequest))

    def release_digest(self, week_key: str, channel: str) -> None:
        """Give a claim back after a failed post, so the next attempt can send it."""
        query = delete(DigestRun).where(
            DigestRun.week_key == week_key, DigestRun.channel == channel
        )
        with self._failures("release the digest claim"), self._sessions.begin() as session:
            session.execute(query)
