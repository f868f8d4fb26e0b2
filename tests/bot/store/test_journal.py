"""The incident journal against a real SQLite file: a read-only spell, a deleted directory, a
locked store, a store that is down at start and at SIGTERM. Rows == answers afterwards."""

from __future__ import annotations

import json
import logging
import os
import shutil
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.config import BotConfig
from bot.slack.app import bolt_app, slack_client
from bot.slack.listeners.state import BotState
from bot.store import Store, StoreError
from bot.store.journal import IncidentJournal, JournalEntry, JournalError, store_status
from scoring.verdict import Verdict
from tests.bot.slack.test_slack_app import CHANNEL, SECRET, simple_source, wait_until
from tests.bot.web.test_serve import SEVEN_STATES, environment, post_signed
from tests.bot.web.test_serve_endpoint import FORM, post, serving, signed
from tests.slackfake import FakeSlack, ServeProcess, command_body, http, message_event

FAST = (0.05, 0.2)


def entry(number: int) -> JournalEntry:
    return JournalEntry(Verdict(ref=f"research/job-{number}", cause="exhausted", action="wait"),
                        cluster="c1", asked_by="U0ALICE", source="slack", channel=CHANNEL,
                        message_ts=f"1764511500.{number:06d}",
                        at=datetime(2026, 12, 1, 10, 0, number % 60, tzinfo=UTC))


def rows(db: Path) -> list[str]:
    with sqlite3.connect(db) as connection:
        return sorted(ts for (ts,) in connection.execute("SELECT message_ts FROM incidents"))


def stamps(numbers: range) -> list[str]:
    return sorted(entry(n).message_ts or "" for n in numbers)


@contextmanager
def read_only(directory: Path) -> Iterator[None]:
    """The directory and the database files read-only, as a 444/555 spell makes them for a
    bot that does not run as root (root ignores modes: it gets the immutable flag)."""
    # The -shm file is mapped into memory; SQLite treats it as scratch, never as data.
    files = [str(p) for p in directory.iterdir() if not p.name.endswith("-shm")]
    if os.geteuid() == 0:
        flagged = subprocess.run(["chattr", "+i", *files, str(directory)], check=False,
                                 capture_output=True)
        if flagged.returncode:
            pytest.skip(f"cannot make files read-only here: {flagged.stderr.decode().strip()}")
        try:
            yield
        finally:
            subprocess.run(["chattr", "-i", *files, str(directory)], check=True)
    else:
        for name in files:
            os.chmod(name, 0o444)
        directory.chmod(0o555)
        try:
            yield
        finally:
            directory.chmod(0o755)
            for name in files:
                os.chmod(name, 0o644)


def test_a_read_only_spell_loses_nothing(tmp_path: Path,
                                         caplog: pytest.LogCaptureFixture) -> None:
    db = tmp_path / "store" / "gpuwhy.db"
    store = Store(f"sqlite:///{db}")
    store.upgrade()
    journal = IncidentJournal(store, tmp_path / "store" / "gpuwhy.db.incidents.jsonl",
                              retry_s=FAST)
    for n in range(10):
        journal.append(entry(n))
    wait_until(lambda: journal.waiting == 0 or None)
    with read_only(db.parent):
        started = time.monotonic()
        for n in range(10, 20):
            journal.append(entry(n))
        assert time.monotonic() - started < 1  # appends never wait for the store
        wait_until(lambda: journal.last_error)
        time.sleep(0.5)  # several failed attempts, each reopening the store
        assert journal.waiting == 10
    for n in range(20, 30):
        journal.append(entry(n))
    wait_until(lambda: journal.waiting == 0 or None)
    assert journal.close()
    store.close()
    assert rows(db) == stamps(range(30))
    failures = [r.getMessage() for r in caplog.records if "not stored yet" in r.getMessage()]
    assert len(failures) == 1  # one line per outage, not one per attempt
    assert (tmp_path / "store" / "gpuwhy.db.incidents.jsonl").read_bytes() == b""


def test_a_deleted_store_directory_is_made_again_and_migrated(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    db = tmp_path / "store" / "gpuwhy.db"
    store = Store(f"sqlite:///{db}")
    store.upgrade()
    journal = IncidentJournal(store, tmp_path / "store" / "gpuwhy.db.incidents.jsonl",
                              retry_s=FAST)
    for n in range(3):
        journal.append(entry(n))
    wait_until(lambda: journal.waiting == 0 or None)
    shutil.rmtree(db.parent)
    for n in range(3, 9):
        journal.append(entry(n))
    wait_until(lambda: journal.waiting == 0 or None)
    assert journal.close()
    store.close()
    # What was in the deleted file went with it; every answer since is in the new one.
    assert rows(db) == stamps(range(3, 9))
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert any("was deleted or replaced; creating it again and migrating" in e for e in errors)
    assert any("incident journal" in e and "was deleted" in e for e in errors)


def test_a_torn_journal_line_is_skipped_and_the_rest_replayed(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "journal.jsonl"
    path.write_bytes(entry(1).line() + entry(2).line() + entry(3).line()[:40])
    store = Store(f"sqlite:///{tmp_path / 'gpuwhy.db'}")
    store.upgrade()
    journal = IncidentJournal(store, path, retry_s=FAST)
    wait_until(lambda: journal.waiting == 0 or None)
    journal.append(entry(4))
    assert journal.close()
    assert rows(tmp_path / "gpuwhy.db") == stamps(range(1, 5)[:2]) + stamps(range(4, 5))
    assert "line 3 unreadable, skipped" in caplog.text
    store.close()


def test_one_journal_file_serves_one_process(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'gpuwhy.db'}")
    store.upgrade()
    first = IncidentJournal(store, tmp_path / "journal.jsonl")
    with pytest.raises(JournalError, match="in use by another gpuwhy process"):
        IncidentJournal(store, tmp_path / "journal.jsonl")
    first.close()
    store.close()


@contextmanager
def locked(db: Path) -> Iterator[None]:
    """Another writer holding the SQLite file's write lock."""
    holder = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        yield
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_answers_and_show_devices_go_out_under_a_locked_store(tmp_path: Path,
                                                              slack: FakeSlack) -> None:
    db = tmp_path / "gpuwhy.db"
    store = Store(f"sqlite:///{db}")
    store.upgrade()
    state = BotState(config=BotConfig(database_url="sqlite://"), source=simple_source(),
                     store=store, journal=IncidentJournal(store, retry_s=FAST))
    client = slack_client({"SLACK_BOT_TOKEN": "xoxb-test", "SLACK_API_URL": slack.api_url})
    refs = [f"research/job-{n}" for n in range(12)]
    with serving(bolt_app(state, client, signing_secret=SECRET)) as port, locked(db):
        started = time.monotonic()

        def ask(ref: str) -> tuple[int, str]:
            body = command_body(ref, response_url=slack.response_url())
            return post(port, body, FORM, **signed(body))

        with ThreadPoolExecutor(len(refs)) as pool:
            assert list(pool.map(ask, refs)) == [(200, "")] * len(refs)
        answers = slack.wait_for("chat.postMessage", len(refs), timeout=5)
        took = time.monotonic() - started
        assert took < 2, f"12 answers took {took:.1f}s under a locked store"

        ts = answers[0].answer["ts"]
        event = json.dumps(message_event("show devices", thread_ts=ts, event_id="EvLocked"))
        started = time.monotonic()
        assert post(port, event, "application/json", **signed(event))[0] == 200
        slack.wait_for("chat.postMessage", len(refs) + 1, timeout=5)
        assert time.monotonic() - started < 2
    assert state.close()
    store.close()
    assert len(rows(db)) == len(refs)


def served_rows(db: Path) -> int:
    return len(rows(db)) if db.exists() else 0


def ask_serve(port: int, slack: FakeSlack, count: int) -> None:
    for n in range(count):
        command = command_body("research/full", response_url=slack.response_url(str(n)))
        assert post_signed(port, command, FORM) == (200, "")


def test_a_locked_store_at_sigterm_keeps_answers_for_the_next_start(
        tmp_path: Path, slack: FakeSlack) -> None:
    db = tmp_path / "gpuwhy.db"
    env = environment(slack, tmp_path)
    served = ServeProcess(["--snapshot", SEVEN_STATES], env)
    try:
        port = served.port()
        with locked(db):
            ask_serve(port, slack, 5)
            slack.wait_for("chat.postMessage", 5)
            started = time.monotonic()
            assert served.stop() == 0
            assert time.monotonic() - started < 10
    finally:
        served.stop()
    assert "5 incidents not stored" in "".join(served.stderr)
    assert served_rows(db) == 0
    again = ServeProcess(["--snapshot", SEVEN_STATES], env)
    try:
        again.port()
        wait_until(lambda: served_rows(db) == 5 or None)
    finally:
        assert again.stop() == 0
    assert served_rows(db) == 5


def test_serve_answers_with_the_store_down_and_stores_after_restart(
        tmp_path: Path, slack: FakeSlack) -> None:
    journal = tmp_path / "journal.jsonl"
    down = environment(slack, tmp_path, GPUWHY_JOURNAL=str(journal),
                       GPUWHY_DATABASE_URL="postgresql+psycopg://gpuwhy@127.0.0.1:1/gpuwhy")
    served = ServeProcess(["--snapshot", SEVEN_STATES], down)
    try:
        port = served.port()
        ask_serve(port, slack, 4)
        slack.wait_for("chat.postMessage", 4)
        # Ready all the same: answers go out, the journal keeps them.
        waiting = "store: failing (4 incidents waiting in the journal)"

        def ready_saying_so() -> int | None:
            status, text = http(port, "/readyz")
            return status if waiting in text else None

        assert wait_until(ready_saying_so) == 200
    finally:
        assert served.stop() == 0
    log = "".join(served.stderr)
    assert "unavailable at start, answering anyway" in log
    assert "4 incidents not stored" in log and str(journal) in log
    assert "Traceback" not in log
    assert len(journal.read_bytes().splitlines()) == 4

    db = tmp_path / "gpuwhy.db"
    up = environment(slack, tmp_path, GPUWHY_JOURNAL=str(journal))
    again = ServeProcess(["--snapshot", SEVEN_STATES], up)
    try:
        port = again.port()
        wait_until(lambda: served_rows(db) == 4 or None)
        assert http(port, "/readyz") == (200, "ready\ncluster: ready\nstore: ok\n")
    finally:
        assert again.stop() == 0
    assert journal.read_bytes() == b""


def test_a_store_down_at_start_is_tried_again_with_nothing_to_store(tmp_path: Path) -> None:
    where = tmp_path / "gpuwhy.db"
    where.mkdir()  # a directory where the SQLite file should be: every connection fails
    store = Store(f"sqlite:///{where}")
    with pytest.raises(StoreError):
        store.upgrade()  # serve's check at start
    journal = IncidentJournal(store, upgraded=False, retry_s=(0.05, 0.05))
    try:
        assert store_status(journal).startswith(
            "failing (0 incidents waiting in the journal): database sqlite:///")
        where.rmdir()  # the store can be reached now; nobody has asked anything yet
        wait_until(lambda: store_status(journal) == "ok" or None, timeout=10)
        assert store.revisions().at_head  # migrated by the journal's writer
    finally:
        journal.close()
        store.close()
