"""`gpuwhy serve` and its store: --db, and incidents the store refused at first reaching it
later (the journal's writer retrying while serving, and at shutdown)."""

from __future__ import annotations

import logging
import re
import sqlite3
from pathlib import Path

import pytest

from bot.cli.main import main
from bot.config import BotConfig
from bot.slack.app import bolt_app, slack_client
from bot.slack.listeners.state import BotState
from bot.store import Store
from bot.store.journal import IncidentJournal
from tests.bot.slack.test_slack_app import CHANNEL, SECRET, simple_source, wait_until
from tests.bot.web.test_serve import SEVEN_STATES, environment, post_signed
from tests.bot.web.test_serve_endpoint import FORM, post, serving, signed
from tests.slackfake import FakeSlack, ServeProcess, command_body


def rename_table(store: Store, old: str, new: str) -> None:
    with store.engine.begin() as connection:
        connection.exec_driver_sql(f"ALTER TABLE {old} RENAME TO {new}")


def answer_during_outage(state: BotState, store: Store, slack: FakeSlack,
                         caplog: pytest.LogCaptureFixture) -> str:
    """Answer a signed /gpuwhy while the incidents table is away, then bring it back; the
    answer's message ts."""
    client = slack_client({"SLACK_BOT_TOKEN": "xoxb-test", "SLACK_API_URL": slack.api_url})
    rename_table(store, "incidents", "incidents_away")
    with caplog.at_level(logging.WARNING, logger="bot.store"), \
            serving(bolt_app(state, client, signing_secret=SECRET)) as port:
        body = command_body("research/full", response_url=slack.response_url())
        assert post(port, body, FORM, **signed(body)) == (200, "")
        ts = str(slack.wait_for("chat.postMessage")[0].answer["ts"])
        wait_until(lambda: "research/full not stored yet" in caplog.text or None)
    rename_table(store, "incidents_away", "incidents")
    return ts


def test_the_journal_stores_what_waited(database_url: str, slack: FakeSlack,
                                        caplog: pytest.LogCaptureFixture) -> None:
    store = Store(database_url)
    store.upgrade()
    journal = IncidentJournal(store, retry_s=(0.05, 0.05))  # it keeps retrying
    state = BotState(config=BotConfig(database_url="sqlite://"), source=simple_source(),
                     store=store, journal=journal)
    ts = answer_during_outage(state, store, slack, caplog)
    incident = wait_until(lambda: store.incident_for_thread(CHANNEL, ts))
    assert incident.verdict.ref == "research/full"
    assert state.close()
    store.close()


def test_closing_stores_what_waited(tmp_path: Path, slack: FakeSlack,
                                    caplog: pytest.LogCaptureFixture) -> None:
    store = Store(f"sqlite:///{tmp_path / 'gpuwhy.db'}")
    store.upgrade()
    state = BotState(config=BotConfig(database_url="sqlite://"), source=simple_source(),
                     store=store)
    ts = answer_during_outage(state, store, slack, caplog)
    state.close()
    assert store.incident_for_thread(CHANNEL, ts) is not None
    store.close()


def test_serve_db_beats_the_environment_and_the_config_file(tmp_path: Path,
                                                            slack: FakeSlack) -> None:
    config = tmp_path / "gpuwhy.yaml"
    config.write_text(f"database_url: sqlite:///{tmp_path / 'config.db'}\n", encoding="utf-8")
    flagged = tmp_path / "flag" / "gpuwhy.db"
    env = environment(slack, tmp_path, GPUWHY_CONFIG=str(config),
                      GPUWHY_DATABASE_URL=f"sqlite:///{tmp_path / 'env.db'}")
    served = ServeProcess(["--snapshot", SEVEN_STATES, "--db", f"sqlite:///{flagged}"], env,
                          verbose=True)
    try:
        port = served.port()
        # The store refuses this answer; serve keeps it and writes it when it stops.
        with sqlite3.connect(flagged) as db:
            db.execute("ALTER TABLE incidents RENAME TO incidents_away")
        command = command_body("research/full", response_url=slack.response_url())
        assert post_signed(port, command, FORM) == (200, "")
        ts = slack.wait_for("chat.postMessage")[0].answer["ts"]
        served.wait_for_line(re.compile(r"research/full not stored yet"))
        with sqlite3.connect(flagged) as db:
            db.execute("ALTER TABLE incidents_away RENAME TO incidents")
    finally:
        assert served.stop() == 0
    with sqlite3.connect(flagged) as db:
        rows = db.execute("SELECT message_ts FROM incidents").fetchall()
    assert rows == [(ts,)]
    assert not (tmp_path / "env.db").exists()
    assert not (tmp_path / "config.db").exists()


@pytest.mark.parametrize("url", ["nosuchdb://x", "postgresql://gpuwhy:s3cret-pw@db:port/x"])
def test_serve_with_a_bad_db_is_one_line(url: str, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-test")
    monkeypatch.setenv("SLACK_SIGNING_SECRET", SECRET)
    # Were --db ignored, serve would go on to Slack: this address refuses at once.
    monkeypatch.setenv("SLACK_API_URL", "http://127.0.0.1:1/api/")
    monkeypatch.delenv("SLACK_APP_TOKEN", raising=False)
    assert main(["serve", "--snapshot", SEVEN_STATES, "--db", url]) == 1
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("gpuwhy serve: ") and "s3cret" not in line
    assert "is not a database URL" in line or "unsupported driver" in line
