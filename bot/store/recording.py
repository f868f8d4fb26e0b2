"""Recording that never makes an answer fail: a write the store refuses waits in memory for a
retry (the journal, ``bot.store.journal``, keeps them across restarts)."""

from __future__ import annotations

import logging
import threading
from collections import deque
from dataclasses import dataclass
from datetime import datetime

from bot.store.engine import StoreError
from bot.store.incidents import DuplicateThreadError, Store, utc
from bot.web.metrics import STORE_WRITES_FAILED
from scoring.verdict import Verdict

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PendingIncident:
    """An answer on its way into the store (kept in memory, or in the journal)."""

    verdict: Verdict
    cluster: str
    asked_by: str
    source: str
    channel: str | None
    message_ts: str | None
    at: datetime


class RecordingStore:
    """Store.record that never raises: a failed write is logged and kept for a retry.

    The retry happens on the next record() and on flush(); the queue is bounded so a long
    outage cannot eat the bot's memory (the oldest entries go first, with a log line).
    """

    def __init__(self, store: Store, max_pending: int = 1000) -> None:
        self.store = store
        self._pending: deque[PendingIncident] = deque()
        self._max_pending = max_pending
        self._lock = threading.Lock()

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._pending)

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
    ) -> int | None:
        """The incident id, or None when it waits for a retry."""
        incident = PendingIncident(verdict, cluster, asked_by, source, channel, message_ts,
                                    utc(at))
        error = self._retry()
        if error is None:
            try:
                return self._write(incident)
            except DuplicateThreadError:
                return None
            except StoreError as exc:
                error = exc
        self._keep(incident, error)
        return None

    def flush(self) -> bool:
        """Retry waiting incidents, oldest first; True when none is left waiting."""
        error = self._retry()
        if error is not None:
            log.warning("incident store: %d incidents waiting, retry failed: %s",
                        self.pending, error)
        return error is None

    def _retry(self) -> StoreError | None:
        while True:
            with self._lock:
                if not self._pending:
                    return None
                incident = self._pending.popleft()
            try:
                self._write(incident)
            except DuplicateThreadError:
                continue  # an earlier attempt did reach the database
            except StoreError as exc:
                with self._lock:
                    self._pending.appendleft(incident)
                return exc

    def _write(self, incident: PendingIncident) -> int:
        try:
            return self.store.record(
                incident.verdict, cluster=incident.cluster, asked_by=incident.asked_by,
                source=incident.source, channel=incident.channel, message_ts=incident.message_ts,
                at=incident.at,
            )
        except DuplicateThreadError:
            raise
        except StoreError:
            STORE_WRITES_FAILED.inc()
            raise

    def _keep(self, incident: PendingIncident, error: StoreError) -> None:
        with self._lock:
            if len(self._pending) >= self._max_pending:
                dropped = self._pending.popleft()
                log.error("incident store: queue full, dropped %s from %s",
                          dropped.verdict.ref, dropped.at.isoformat())
            self._pending.append(incident)
            waiting = len(self._pending)
        log.warning("incident store: %s not stored yet (%d waiting): %s",
                    incident.verdict.ref, waiting, error)
