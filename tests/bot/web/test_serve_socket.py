"""`gpuwhy serve` in Socket Mode: the app dials a local websocket speaking Slack's envelopes."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.bot.slack.test_slack_app import as_posted
from tests.paths import FIXTURES
from tests.slackfake import (
    FakeSlack,
    FakeSocketMode,
    ServeProcess,
    button_payload,
    command_payload,
    message_event,
)
from triage.refs import USAGE

SEVEN_STATES = FIXTURES / "scenarios" / "seven-states"


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    fake = FakeSlack()
    fake.socket = FakeSocketMode()
    yield fake
    fake.close()


@pytest.fixture
def served(slack: FakeSlack, tmp_path: Path) -> Iterator[ServeProcess]:
    # A fresh copy: the dump's files are as old as the copy, so the answer carries no age.
    dump = shutil.copytree(SEVEN_STATES, tmp_path / "seven-states", copy_function=shutil.copy)
    process = ServeProcess(["--snapshot", str(dump)], {
        "SLACK_BOT_TOKEN": "xoxb-socket-test", "SLACK_APP_TOKEN": "xapp-socket-test",
        "SLACK_API_URL": slack.api_url,
        "GPUWHY_DATABASE_URL": f"sqlite:///{tmp_path / 'gpuwhy.db'}"}, verbose=True)
    process.port()
    yield process
    assert process.stop() == 0


def envelope(kind: str, envelope_id: str, payload: dict[str, Any],
             **extra: Any) -> dict[str, Any]:
    return {"envelope_id": envelope_id, "type": kind, "payload": payload,
            "accepts_response_payload": kind != "events_api", **extra}


def test_socket_mode_gives_the_same_answers(slack: FakeSlack, served: ServeProcess) -> None:
    socket = slack.socket
    assert socket is not None
    assert socket.connected.wait(20)
    [opened] = slack.calls_to("apps.connections.open")
    assert opened.headers["Authorization"] == "Bearer xapp-socket-test"

    # Bad input is answered in the ack itself, ephemerally.
    socket.send(envelope("slash_commands", "env-bad", command_payload("research full extra")))
    assert socket.ack_for("env-bad") == {"envelope_id": "env-bad", "payload": {"text": USAGE}}

    socket.send(envelope("slash_commands", "env-cmd",
                         command_payload("research/full", response_url=slack.response_url())))
    assert socket.ack_for("env-cmd") == {"envelope_id": "env-cmd"}
    [post] = slack.wait_for("chat.postMessage")
    want = as_posted("seven-states--research--full")
    assert post.params["blocks"] == want["blocks"]
    assert post.params["text"] == want["text"]
    ts = post.answer["ts"]
    served.wait_remembered(ts)

    event = message_event("show devices", thread_ts=ts, event_id="EvSock1")
    socket.send(envelope("events_api", "env-ev1", event, retry_attempt=0, retry_reason=""))
    assert socket.ack_for("env-ev1") == {"envelope_id": "env-ev1"}
    reply = slack.wait_for("chat.postMessage", 2)[1]
    assert reply.params["thread_ts"] == ts
    assert reply.params["blocks"][:-1] == want["devices_blocks"][:-1]

    # Slack redelivers an event it thinks was lost: same event_id, a new envelope.
    socket.send(envelope("events_api", "env-ev1-retry", event, retry_attempt=1,
                         retry_reason="timeout"))
    assert socket.ack_for("env-ev1-retry") == {"envelope_id": "env-ev1-retry"}

    socket.send(envelope("interactive", "env-button", button_payload(
        channel="C0SUPPORT", message_ts=ts, value="research/full",
        response_url=slack.response_url("button"))))
    assert socket.ack_for("env-button") == {"envelope_id": "env-button"}
    button_reply = slack.wait_for("chat.postMessage", 3)[2]
    assert button_reply.params["thread_ts"] == ts
    slack.settle(0.5)
    assert len(slack.calls_to("chat.postMessage")) == 3  # the retry was not answered again


def test_a_rejected_app_token_is_one_line(tmp_path: Path) -> None:
    slack = FakeSlack()  # no Socket Mode endpoint: apps.connections.open says invalid_auth
    try:
        process = ServeProcess(["--snapshot", SEVEN_STATES], {
            "SLACK_BOT_TOKEN": "xoxb-socket-test", "SLACK_APP_TOKEN": "xapp-revoked",
            "SLACK_API_URL": slack.api_url,
            "GPUWHY_DATABASE_URL": f"sqlite:///{tmp_path / 'gpuwhy.db'}"})
        assert process.wait() == 1
    finally:
        slack.close()
    assert process.stderr == [
        "gpuwhy serve: Slack rejected SLACK_APP_TOKEN (invalid_auth); Socket Mode needs an "
        "app-level token with connections:write\n"]
