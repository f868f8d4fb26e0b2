"""The alert tables (migration 0003): claims that make every unasked post happen once across
restarts and replicas, the threads later news goes into, and the posts the rate limit counts."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from sqlalchemy import CursorResult, delete, func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import sessionmaker

from bot.store import Store, StoreError
from bot.store.models import AlertClaim, AlertPost, AlertThread


@dataclass(frozen=True)
class Thread:
    id: int
    subject: str
    cause: str
    channel: str | None
    message_ts: str | None
    pod_uids: tuple[str, ...]
    opened_at: datetime


def _thread(row: AlertThread) -> Thread:
    return Thread(row.id, row.subject, row.cause, row.channel, row.message_ts,
                  tuple(json.loads(row.pod_uids)), row.opened_at)


class AlertStore:
    """Every method raises StoreError (one line) when the database fails."""

    def __init__(self, store: Store, cluster: str) -> None:
        self.store = store
        self.cluster = cluster
        self._sessions = sessionmaker(store.engine)

    def _open_key(self, subject: str) -> str:
        return f"{self.cluster}/{subject}"

    # claims -----------------------------------------------------------------------------

    def claim_key(self, *parts: str) -> str:
        """A claim key carrying the cluster, so several clusters can share one store."""
        return "/".join((self.cluster, *parts))

    def claimed(self, keys: Iterable[str]) -> set[str]:
        wanted = list(keys)
        if not wanted:
            return set()
        query = select(AlertClaim.key).where(AlertClaim.key.in_(wanted))
        with self.store._failures("read alert claims"), self._sessions() as session:
            return set(session.scalars(query))

    def claim(self, key: str, at: datetime) -> bool:
        """True for exactly one caller per key, whatever the replicas."""
        return self.store._insert_once(AlertClaim(key=key, claimed_at=at), "claim an alert")

    def release(self, keys: Iterable[str]) -> None:
        """Give claims back after a failed post, so the next round tries again."""
        query = delete(AlertClaim).where(AlertClaim.key.in_(list(keys)))
        with self.store._failures("release alert claims"), self._sessions.begin() as session:
            session.execute(query)

    def prune(self, before: datetime) -> None:
        """Forget claims, closed threads and rate-limit posts older than ``before``."""
        with self.store._failures("prune alert claims"), self._sessions.begin() as session:
            session.execute(delete(AlertClaim).where(AlertClaim.claimed_at < before))
            session.execute(delete(AlertPost).where(AlertPost.posted_at < before))
            session.execute(delete(AlertThread).where(AlertThread.closed_at < before))

    # threads ----------------------------------------------------------------------------

    def open_thread(self, subject: str) -> Thread | None:
        query = select(AlertThread).where(AlertThread.open_key == self._open_key(subject))
        with self.store._failures("read an alert thread"), self._sessions() as session:
            row = session.scalars(query).one_or_none()
            return None if row is None else _thread(row)

    def open_threads(self, prefix: str) -> list[Thread]:
        """This cluster's open threads whose subject starts with ``prefix``, oldest first."""
        query = (select(AlertThread)
                 .where(AlertThread.open_key.startswith(self._open_key(prefix), autoescape=True))
                 .order_by(AlertThread.id))
        with self.store._failures("read alert threads"), self._sessions() as session:
            return [_thread(row) for row in session.scalars(query)]

    def start_thread(self, subject: str, cause: str, channel: str | None,
                     pod_uids: Iterable[str], at: datetime) -> int | None:
        """The new thread's id; None when another replica has one open for ``subject``."""
        row = AlertThread(open_key=self._open_key(subject), cluster=self.cluster,
                          subject=subject, cause=cause, channel=channel,
                          pod_uids=json.dumps(sorted(pod_uids)), opened_at=at)
        try:
            with self.store._failures("open an alert thread"), \
                    self._sessions.begin() as session:
                session.add(row)
                session.flush()
                thread_id = row.id
        except StoreError as exc:
            if isinstance(exc.__cause__, IntegrityError):
                return None
            raise
        return thread_id

    def set_message(self, thread_id: int, channel: str, message_ts: str) -> None:
        self._update(thread_id, "record an alert thread",
                     channel=channel, message_ts=message_ts)

    def add_pods(self, thread: Thread, pod_uids: Iterable[str]) -> None:
        uids = sorted({*thread.pod_uids, *pod_uids})
        self._update(thread.id, "record an alert thread", pod_uids=json.dumps(uids))

    def switch_cause(self, thread: Thread, cause: str) -> bool:
        """True for the one replica that moves the thread from its cause to ``cause``."""
        return self._update(thread.id, "record a cause change", AlertThread.cause == thread.cause,
                            cause=cause) == 1

    def close(self, thread: Thread, at: datetime) -> bool:
        """True for the one replica that closes the thread (and posts its last line)."""
        return self._update(thread.id, "close an alert thread",
                            AlertThread.open_key.is_not(None), open_key=None, closed_at=at) == 1

    def drop(self, thread_id: int) -> None:
        """Forget a thread whose first post failed."""
        query = delete(AlertThread).where(AlertThread.id == thread_id)
        with self.store._failures("drop an alert thread"), self._sessions.begin() as session:
            session.execute(query)

    def _update(self, thread_id: int, doing: str, *where: Any, **values: Any) -> int:
        query = update(AlertThread).where(AlertThread.id == thread_id, *where).values(**values)
        with self.store._failures(doing), self._sessions.begin() as session:
            return cast(CursorResult[Any], session.execute(query)).rowcount

    # rate limit -------------------------------------------------------------------------

    def posts_since(self, channel: str, since: datetime) -> int:
        query = select(func.count()).select_from(AlertPost).where(
            AlertPost.channel == channel, AlertPost.posted_at >= since)
        with self.store._failures("count alert posts"), self._sessions() as session:
            return int(session.scalar(query) or 0)

    def log_post(self, channel: str, at: datetime) -> None:
        with self.store._failures("count an alert post"), self._sessions.begin() as session:
            session.add(AlertPost(channel=channel, posted_at=at))
