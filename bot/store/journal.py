"""The incident journal: an answer never waits for the store.

Each answer is first appended to a local journal, one fsync'd JSON line per incident; a writer
thread moves the lines into the store in order, backing off while the store fails, and empties
the journal once the store holds everything in it. A journal left over by a crash or a stop
with the store down is replayed at start, so incidents survive an outage, a SIGTERM and a
restart. Writing one twice is harmless: an answer's (channel, message ts) is unique in the
store, and a line already there counts as stored.

The writer also repairs what it can: a failed write disposes the engine's pool (a SQLite
connection opened while the file was read-only stays read-only), and a SQLite file that was
deleted or replaced under a running bot is created again and migrated, loudly, and every
incident still in the journal is written to it.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import threading
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import IO, Any

import platformdirs

from bot.store import DuplicateThreadError, PendingIncident, Store, StoreError
from bot.web.metrics import STORE_WRITES_FAILED
from scoring.verdict import Verdict

log = logging.getLogger(__name__)

JOURNAL_SUFFIX = ".incidents.jsonl"
FIRST_RETRY_S = 0.5
LAST_RETRY_S = 30.0


class JournalError(Exception):
    """The journal cannot be used; str() is one line for the terminal."""


@dataclass(frozen=True)
class JournalEntry(PendingIncident):
    """A pending incident as one JSON line of the journal."""

    def line(self) -> bytes:
        data = {"at": self.at.isoformat(), "cluster": self.cluster, "asked_by": self.asked_by,
                "source": self.source, "channel": self.channel, "message_ts": self.message_ts,
                "verdict": self.verdict.to_dict()}
        return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"

    @classmethod
    def parse(cls, line: bytes) -> JournalEntry:
        data: dict[str, Any] = json.loads(line)
        return cls(verdict=Verdict.from_dict(data["verdict"]), cluster=data["cluster"],
                   asked_by=data["asked_by"], source=data["source"], channel=data["channel"],
                   message_ts=data["message_ts"], at=datetime.fromisoformat(data["at"]))


def default_journal_path(store: Store) -> Path:
    """Next to the SQLite file (same volume), else in the user's data directory."""
    if store.sqlite_path is not None:
        return store.sqlite_path.with_name(store.sqlite_path.name + JOURNAL_SUFFIX)
    return Path(platformdirs.user_data_dir("gpuwhy")) / f"incidents{JOURNAL_SUFFIX}"


class _JournalFile:
    """The append-only file; held with an exclusive lock so two bots never share one."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.handle: IO[bytes] | None = None

    def open(self) -> list[JournalEntry]:
        """Open (creating the directory and file) and return the entries already in it; a
        torn or unreadable line is logged and dropped."""
        entries: list[JournalEntry] = []
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            handle = self.path.open("a+b")
        except OSError as exc:
            raise JournalError(f"incident journal {self.path}: {exc.strerror or exc}") from exc
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            raise JournalError(f"incident journal {self.path} is in use by another gpuwhy "
                               "process; give each one its own journal_path") from None
        handle.seek(0)
        for number, line in enumerate(handle.read().splitlines(), 1):
            try:
                entries.append(JournalEntry.parse(line))
            except (ValueError, KeyError, TypeError) as exc:
                log.warning("incident journal %s: line %d unreadable, skipped (%s)",
                            self.path, number, type(exc).__name__)
        self.handle = handle
        self.rewrite(entries)  # no torn tail for the next append to run into
        return entries

    def append(self, entry: JournalEntry, all_entries: list[JournalEntry]) -> None:
        """Append one line and fsync it; a journal deleted meanwhile is made again with every
        entry the bot still holds (``all_entries``)."""
        if self.handle is None or not self._still_there():
            self._recreate(all_entries)
            return
        self.handle.write(entry.line())
        self._sync()

    def rewrite(self, entries: list[JournalEntry]) -> None:
        assert self.handle is not None
        self.handle.seek(0)
        self.handle.truncate()
        self.handle.write(b"".join(entry.line() for entry in entries))
        self._sync()

    def close(self) -> None:
        if self.handle is not None:
            self.handle.close()  # releases the lock
            self.handle = None

    def _sync(self) -> None:
        assert self.handle is not None
        self.handle.flush()
        os.fsync(self.handle.fileno())

    def _still_there(self) -> bool:
        assert self.handle is not None
        try:
            on_disk = os.stat(self.path)
        except FileNotFoundError:
            return False
        held = os.fstat(self.handle.fileno())
        return (on_disk.st_dev, on_disk.st_ino) == (held.st_dev, held.st_ino)

    def _recreate(self, entries: list[JournalEntry]) -> None:
        log.error("incident journal %s was deleted; creating it again with the %d incidents "
                  "not yet emptied from it", self.path, len(entries))
        self.close()
        self.open()
        self.rewrite(entries)


class IncidentJournal:
    """Answers go in with :meth:`append` (never blocking on the store); a writer thread moves
    them into ``store``. Without ``path`` the journal lives in memory only (library use and
    tests): the order, retries and repairs are the same, a restart is not survived."""

    def __init__(self, store: Store, path: Path | None = None, *, upgraded: bool = True,
                 retry_s: tuple[float, float] = (FIRST_RETRY_S, LAST_RETRY_S)) -> None:
        self.store = store
        self.path = path
        self._file = _JournalFile(path) if path is not None else None
        self._entries: list[JournalEntry] = self._file.open() if self._file else []
        self._stored = 0  # entries[:stored] are in the store
        self._upgraded = upgraded
        self._identity = store.file_identity() if upgraded else None
        self._retry_s = retry_s
        self._cond = threading.Condition()
        self._stopping = False
        self._abandoned = False
        self.last_error: str | None = None
        if self._entries:
            log.warning("incident journal %s: %d incidents from an earlier run, storing them",
                        path, len(self._entries))
        self._writer = threading.Thread(target=self._run, name="gpuwhy-journal", daemon=True)
        self._writer.start()

    @property
    def waiting(self) -> int:
        """Incidents answered but not in the store yet."""
        with self._cond:
            return len(self._entries) - self._stored

    def append(self, entry: JournalEntry) -> None:
        with self._cond:
            self._entries.append(entry)
            if self._file is not None:
                try:
                    self._file.append(entry, self._entries)
                except (OSError, JournalError) as exc:
                    log.error("incident journal %s: cannot write %s, it is kept in memory "
                              "only: %s", self.path, entry.verdict.ref, exc)
            self._cond.notify_all()

    def close(self, timeout: float = 10.0) -> bool:
        """Give the writer ``timeout`` seconds to store what waits; True when nothing does.
        What is left stays in the journal file for the next start."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        self._writer.join(timeout)
        with self._cond:
            self._abandoned = True
            self._cond.notify_all()
            left = len(self._entries) - self._stored
            if left:
                where = (f"kept in {self.path}, stored at the next start" if self._file
                         else "lost: this journal has no file")
                log.warning("incident store: %d incidents not stored (%s), %s", left,
                            self.last_error or "the store is slow", where)
            if self._file is not None:
                self._file.close()
        return left == 0

    # The writer thread -------------------------------------------------------------------

    def _run(self) -> None:
        """Store the entries in order; a store not migrated yet (down at start) is tried at
        once and then on the backoff even with nothing to store, so readiness sees it."""
        delay = self._retry_s[0]
        while True:
            with self._cond:
                while not self._abandoned and not self._stopping and self._upgraded \
                        and self._stored == len(self._entries):
                    self._cond.wait()
                if self._abandoned or (self._stopping and self._stored == len(self._entries)):
                    return
                entry = self._entries[self._stored] if self._stored < len(self._entries) \
                    else None
            try:
                self._prepare_store()
                if entry is not None:
                    self._write(entry)
            except StoreError as exc:
                self._failed(entry, exc)
                with self._cond:
                    self._cond.wait_for(lambda: self._abandoned, delay)
                delay = min(delay * 2, self._retry_s[1])
                continue
            delay = self._retry_s[0]
            self._answering_again()
            if entry is not None:
                self._stored_one()

    def _prepare_store(self) -> None:
        """Migrate a store that was down at start; make again a SQLite file that vanished."""
        if self._upgraded and self.store.sqlite_path is not None \
                and self.store.file_identity() != self._identity:
            with self._cond:
                again = len(self._entries)
            log.error("incident store: %s was deleted or replaced; creating it again and "
                      "migrating. Incidents stored in it before are gone with it; the %d still "
                      "in the journal are written again", self.store.sqlite_path, again)
            self.store.reopen()
            self._upgraded = False
            with self._cond:
                self._stored = 0
        if not self._upgraded:
            self.store.upgrade()
            self._upgraded = True
            self._identity = self.store.file_identity()
            log.info("incident store %s is ready", self.store.url)

    def _write(self, entry: JournalEntry) -> None:
        try:
            self.store.record(entry.verdict, cluster=entry.cluster, asked_by=entry.asked_by,
                              source=entry.source, channel=entry.channel,
                              message_ts=entry.message_ts, at=entry.at)
        except DuplicateThreadError:
            pass  # an earlier attempt reached the store
        except StoreError:
            STORE_WRITES_FAILED.inc()
            raise

    def _failed(self, entry: JournalEntry | None, exc: StoreError) -> None:
        """``entry`` None: the store was only tried (its failure is the store's last_failure,
        and serve said at start that it is down)."""
        first = self.last_error is None
        if entry is not None:
            self.last_error = str(exc)
        if first and entry is not None:
            log.warning("incident store: %s not stored yet (%d waiting): %s", entry.verdict.ref,
                        self.waiting, exc)
        # A pooled connection may be stuck in what went wrong (opened read-only, or on a file
        # that was deleted): the next attempt opens new ones.
        self.store.reopen()

    def _answering_again(self) -> None:
        if self.last_error is not None:
            log.info("incident store: writing again after: %s", self.last_error)
            self.last_error = None

    def _stored_one(self) -> None:
        with self._cond:
            self._stored += 1
            caught_up = self._stored == len(self._entries)
        if caught_up and self.store.file_identity() == self._identity:
            self._empty()

    def _empty(self) -> None:
        """Forget what the store holds; the journal file is emptied only when it all is."""
        with self._cond:
            if self._stored != len(self._entries) or self._abandoned:
                return
            if self._file is not None and self._file.handle is not None:
                try:
                    self._file.rewrite([])
                except OSError as exc:
                    log.error("incident journal %s: cannot empty it: %s", self.path, exc)
                    return
            self._entries.clear()
            self._stored = 0


def store_status(journal: IncidentJournal | None) -> str:
    """One line about the store for /readyz: failing when its last use failed (the migration
    at start, a claim, a write), with why."""
    if journal is None:
        return "none"
    waiting = journal.waiting
    error = journal.last_error or journal.store.last_failure
    if error is not None:
        return f"failing ({waiting} incidents waiting in the journal): {error}"
    return f"ok ({waiting} incidents waiting)" if waiting else "ok"

