"""`gpuwhy serve` over HTTP: a real process, real sockets, requests signed as Slack signs them."""

from __future__ import annotations

import json
import shutil
import sqlite3
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.store import Store
from scoring.verdict import Verdict
from tests.bot.slack.test_slack_app import as_posted
from tests.kubeapi import FakeKubeAPI
from tests.paths import FIXTURES
from tests.slackfake import FakeSlack, ServeProcess, command_body, http, message_event, sign

SEVEN_STATES = str(FIXTURES / "scenarios" / "seven-states")
SECRET = "e3b0c44298fc1c149afbf4c8996fb924"
GOLDEN = json.loads((FIXTURES / "golden" / "seven-states--research--full.json")
                    .read_text(encoding="utf-8"))


def post_signed(port: int, body: str, content_type: str, secret: str = SECRET,
                **extra: Any) -> tuple[int, str]:
    return http(port, "/slack/events", body,
                {"Content-Type": content_type, **sign(secret, body), **extra})


def environment(slack: FakeSlack, tmp_path: Path, **overrides: str) -> dict[str, str]:
    env = {"SLACK_BOT_TOKEN": "xoxb-serve-test", "SLACK_SIGNING_SECRET": SECRET,
           "SLACK_API_URL": slack.api_url,
           "GPUWHY_DATABASE_URL": f"sqlite:///{tmp_path / 'gpuwhy.db'}"}
    env.update(overrides)
    return {k: v for k, v in env.items() if v}


def test_serve_answers_signed_slack_requests_over_http(tmp_path: Path, slack: FakeSlack) -> None:
    # A fresh copy: the dump's files are as old as the copy, so the answer carries no age.
    dump = shutil.copytree(SEVEN_STATES, tmp_path / "seven-states", copy_function=shutil.copy)
    served = ServeProcess(["--snapshot", str(dump)], environment(slack, tmp_path),
                          verbose=True)
    try:
        port = served.port()
        assert http(port, "/healthz") == (200, "ok\n")
        assert http(port, "/readyz") == (200, "ready\ncluster: ready\nstore: ok\n")
        assert http(port, "/nope")[0] == 404

        command = command_body("research/full", response_url=slack.response_url())
        form = "application/x-www-form-urlencoded"
        assert post_signed(port, command, form) == (200, "")
        [post] = slack.wait_for("chat.postMessage")
        assert post.params["blocks"] == as_posted("seven-states--research--full")["blocks"]
        assert post.headers["Authorization"] == "Bearer xoxb-serve-test"
        ts = post.answer["ts"]
        served.wait_remembered(ts)

        event = json.dumps(message_event("show devices", thread_ts=ts, event_id="EvHTTP1"))
        assert post_signed(port, event, "application/json")[0] == 200
        reply = slack.wait_for("chat.postMessage", 2)[1]
        assert reply.params["thread_ts"] == ts
        assert reply.params["blocks"][:-1] == GOLDEN["devices_blocks"][:-1]

        assert post_signed(port, command, form, secret="forged")[0] == 401
        stale = {"Content-Type": form, **sign(SECRET, command, int(time.time()) - 600)}
        assert http(port, "/slack/events", command, stale)[0] == 401
        assert http(port, "/slack/events", command, {"Content-Type": form})[0] == 401
        slack.settle()
        assert len(slack.calls_to("chat.postMessage")) == 2
    finally:
        assert served.stop() == 0
    with sqlite3.connect(tmp_path / "gpuwhy.db") as db:
        rows = db.execute("SELECT cause, asked_by, source, channel, message_ts "
                          "FROM incidents").fetchall()
    assert rows == [("exhausted", "U0ALICE", "slack", "C0SUPPORT", ts)]


@pytest.mark.parametrize(("overrides", "args", "message"), [
    ({"SLACK_SIGNING_SECRET": ""}, ["--snapshot", SEVEN_STATES],
     "gpuwhy serve: SLACK_SIGNING_SECRET is not set; HTTP mode needs it to verify requests "
     "(or set SLACK_APP_TOKEN for Socket Mode)\n"),
    ({"SLACK_BOT_TOKEN": ""}, ["--snapshot", SEVEN_STATES],
     "gpuwhy serve: SLACK_BOT_TOKEN is not set; export the bot token (xoxb-...)\n"),
    ({}, ["--snapshot", "/nonexistent/dump"], None),
    ({"GPUWHY_DATABASE_URL": "nosuchdb://x"}, ["--snapshot", SEVEN_STATES], None),
    ({"GPUWHY_CONFIG": str(FIXTURES / "no-such-config.yaml")}, ["--snapshot", SEVEN_STATES],
     None),
    ({"SLACK_API_URL": "http://127.0.0.1:1/api/"}, ["--snapshot", SEVEN_STATES],
     "gpuwhy serve: cannot reach the Slack Web API at http://127.0.0.1:1/api/: "
     "connection refused\n"),
])
def test_serve_setup_problems_are_one_line(overrides: dict[str, str], args: list[str],
                                           message: str | None, tmp_path: Path,
                                           slack: FakeSlack) -> None:
    served = ServeProcess(args, environment(slack, tmp_path, **overrides))
    assert served.wait() == 1
    output = "".join(served.stderr)
    assert output.startswith("gpuwhy serve: ") and output.count("\n") == 1
    assert "Traceback" not in output
    if message is not None:
        assert output == message
    assert slack.calls_to("chat.postMessage") == []


@pytest.mark.parametrize(("config", "message"), [
    ("triage:\n  node_policy: fastest\n",
     "triage.node_policy = 'fastest': must be one of binpack or spread"),
    ("triage:\n  gpu_resources: nvidia.com/gpu\n", "triage.gpu_resources = 'nvidia.com/gpu'"),
    ("channels: [\n", "cannot read"),
])
def test_serve_with_a_bad_config_file_is_one_line(config: str, message: str, tmp_path: Path,
                                                  slack: FakeSlack) -> None:
    path = tmp_path / "gpuwhy.yaml"
    path.write_text(config, encoding="utf-8")
    served = ServeProcess(["--snapshot", SEVEN_STATES],
                          environment(slack, tmp_path, GPUWHY_CONFIG=str(path)))
    assert served.wait() == 1
    [line] = served.stderr
    assert line.startswith(f"gpuwhy serve: config {path}: ") and message in line


def test_serve_with_a_rejected_token_is_one_line(tmp_path: Path, slack: FakeSlack) -> None:
    slack.fail("auth.test", "invalid_auth")
    served = ServeProcess(["--snapshot", SEVEN_STATES], environment(slack, tmp_path))
    assert served.wait() == 1
    assert served.stderr == ["gpuwhy serve: Slack rejected SLACK_BOT_TOKEN (invalid_auth)\n"]


def test_serve_posts_the_weekly_digest_when_due(tmp_path: Path, slack: FakeSlack) -> None:
    config = tmp_path / "gpuwhy.yaml"
    config.write_text("digest:\n  channel: C0DIGEST\n  weekday: 0\n  hour: 0\n",
                      encoding="utf-8")
    # Last week had an answer (a week without one posts nothing).
    store = Store(f"sqlite:///{tmp_path / 'gpuwhy.db'}")
    store.upgrade()
    store.record(Verdict("research/full", "exhausted", "wait"), cluster="seven-states",
                 asked_by="U1", source="slack", at=datetime.now(UTC) - timedelta(days=7))
    store.close()
    served = ServeProcess(["--snapshot", SEVEN_STATES],
                          environment(slack, tmp_path, GPUWHY_CONFIG=str(config)))
    try:
        served.port()
        [digest] = slack.wait_for("chat.postMessage")
        assert digest.params["channel"] == "C0DIGEST"
        slack.settle()
        assert len(slack.calls_to("chat.postMessage")) == 1
    finally:
        assert served.stop() == 0
    # Nothing but the line saying where it listens: no warnings from the libraries.
    [line] = served.stderr
    assert line.startswith("gpuwhy serve: HTTP, POST /slack/events; listening on ")


def wait_ready(port: int, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while http(port, "/readyz")[0] != 200:
        assert time.monotonic() < deadline, "serve never became ready"
        time.sleep(0.05)


def test_serve_answers_from_the_live_cluster(tmp_path: Path, slack: FakeSlack) -> None:
    with FakeKubeAPI(SEVEN_STATES) as cluster:
        kubeconfig = cluster.kubeconfig(tmp_path / "kubeconfig")
        served = ServeProcess(["--kubeconfig", str(kubeconfig)], environment(slack, tmp_path))
        try:
            port = served.port()
            wait_ready(port)
            command = command_body("research/full", response_url=slack.response_url())
            assert post_signed(port, command, "application/x-www-form-urlencoded") == (200, "")
            [post] = slack.wait_for("chat.postMessage")
            # The watch cache keeps no finished pods, so the action's aside about them
            # differs from the dump's; headline, nodes and scheduler lines are the same.
            blocks = post.params["blocks"]
            assert blocks[0] == GOLDEN["blocks"][0]
            assert blocks[1] == {"type": "context", "elements": [
                {"type": "mrkdwn", "text": "asked by <@U0ALICE>"}]}
            assert blocks[4:] == GOLDEN["blocks"][3:]
        finally:
            assert served.stop() == 0


def test_serve_against_an_unreachable_cluster(tmp_path: Path, slack: FakeSlack) -> None:
    with FakeKubeAPI() as gone:
        kubeconfig = gone.kubeconfig(tmp_path / "kubeconfig")
    served = ServeProcess(["--kubeconfig", str(kubeconfig)], environment(slack, tmp_path))
    try:
        port = served.port()
        assert http(port, "/healthz") == (200, "ok\n")
        assert http(port, "/readyz")[0] == 503
        command = command_body("research/full", response_url=slack.response_url())
        assert post_signed(port, command, "application/x-www-form-urlencoded") == (200, "")
        [reply] = slack.wait_for("response_url")
        # The watch cache's first list keeps failing: that failure is the answer.
        assert reply.params == {
            "text": f"Cannot reach the Kubernetes API server at {gone.url}: connection refused."}
        assert slack.calls_to("chat.postMessage") == []
    finally:
        assert served.stop() == 0
