"""The HTTP endpoint `gpuwhy serve` runs (bot.web.server.HTTPServer with serve's routes), in this
process: Slack's 3-second ack rule under slow triage, signatures, retries, health and
readiness."""

from __future__ import annotations

import json
import logging
import threading
import time
import urllib.parse
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

import pytest
from slack_bolt import App

from bot.clusters.sources import SnapshotSource
from bot.config import BotConfig
from bot.slack.app import bolt_app, slack_client
from bot.slack.listeners.state import BotState
from bot.store import Store
from bot.web.serve import (
    Check,
    Readiness,
    ReplayGuard,
    SlackEndpoint,
    cluster_check,
    http_routes,
    source_ready,
)
from bot.web.server import HTTPLimits, HTTPServer
from scoring.verdict import Verdict
from tests.bot.slack.test_slack_app import (
    CHANNEL,
    SECRET,
    make_app,
    simple_source,
    wait_until,
    web_calls,
)
from tests.slackfake import FakeSlack, command_body, http, message_event, sign
from triage.refs import PodRef

FORM = "application/x-www-form-urlencoded"
SLACK_ACK_LIMIT = 3.0


@contextmanager
def serving(app: App | None, source: object = None, limits: HTTPLimits | None = None,
            guard: ReplayGuard | None = None) -> Iterator[int]:
    """serve's routes on a free port: Slack's endpoint for ``app`` (None: Socket Mode)."""
    endpoint = SlackEndpoint(app, SECRET, guard) if app is not None else None
    routes = http_routes(slack=endpoint, readiness=Readiness({"cluster": cluster_check(source)}))
    server = HTTPServer("127.0.0.1", 0, routes, limits or HTTPLimits())
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.port
    finally:
        server.shutdown()
        thread.join(5)


class StuckSource:
    """A cluster that answers only when the test lets it: triage as slow as it gets."""

    cluster = "stuck"

    def __init__(self) -> None:
        self.release = threading.Event()

    def as_of(self) -> datetime | None:
        return None

    def triage(self, ref: PodRef) -> Verdict:
        self.release.wait(20)
        return Verdict(ref=str(ref), cause="exhausted", action="wait")


def post(port: int, body: str, content_type: str = FORM, **headers: str) -> tuple[int, str]:
    return http(port, "/slack/events", body, {"Content-Type": content_type, **headers})


def signed(body: str, timestamp: int | None = None, secret: str = SECRET) -> dict[str, str]:
    return sign(secret, body, timestamp)


def test_acks_come_back_at_once_while_triage_is_stuck(slack: FakeSlack) -> None:
    source = StuckSource()
    # More commands than bolt's listener threads (10) and gpuwhy's answer workers.
    refs = [f"research/job-{i}" for i in range(24)]

    def ask(ref: str) -> tuple[int, str, float]:
        body = command_body(ref, response_url=slack.response_url())
        started = time.monotonic()
        status, text = post(port, body, **signed(body))
        return status, text, time.monotonic() - started

    with serving(make_app(slack, source)) as port:
        try:
            with ThreadPoolExecutor(len(refs)) as pool:
                acks = list(pool.map(ask, refs))
            assert [(status, text) for status, text, _ in acks] == [(200, "")] * len(refs)
            slowest = max(seconds for _, _, seconds in acks)
            assert slowest < SLACK_ACK_LIMIT / 2, f"slowest ack took {slowest:.2f}s"
            assert slack.calls_to("chat.postMessage") == []  # no answer before the triage
        finally:
            source.release.set()
        posts = slack.wait_for("chat.postMessage", len(refs))
    assert sorted(p.params["blocks"][-1]["elements"][0]["value"] for p in posts) == sorted(refs)


def test_stopping_finishes_acked_answers_and_records_them(tmp_path: Path,
                                                           slack: FakeSlack) -> None:
    store = Store(f"sqlite:///{tmp_path / 'gpuwhy.db'}")
    store.upgrade()
    source = StuckSource()
    state = BotState(config=BotConfig(database_url="sqlite://"), source=source, store=store)
    client = slack_client({"SLACK_BOT_TOKEN": "xoxb-test", "SLACK_API_URL": slack.api_url})
    with serving(bolt_app(state, client, signing_secret=SECRET)) as port:
        body = command_body("research/full", response_url=slack.response_url())
        assert post(port, body, **signed(body)) == (200, "")
    closing = threading.Thread(target=state.close)
    closing.start()
    closing.join(0.3)
    assert closing.is_alive(), "close() returned with an acked answer still owed"
    source.release.set()
    closing.join(10)
    assert not closing.is_alive()
    [answer] = slack.calls_to("chat.postMessage")
    incident = store.incident_for_thread(CHANNEL, answer.answer["ts"])
    assert incident is not None and incident.verdict.ref == "research/full"


def test_bad_signatures_are_refused_with_401_and_no_action(slack: FakeSlack) -> None:
    source = simple_source()
    body = command_body("research/full", response_url=slack.response_url())
    tampered = body.replace(urllib.parse.quote("research/full", safe=""), "ml%2Ffinetune")
    with serving(make_app(slack, source)) as port:
        refused = {
            "forged": post(port, body, **signed(body, secret="not-the-secret")),
            "missing": post(port, body),
            # Taken at the moment of each post: a slow start of the server must not bring a
            # "future" stamp back inside Slack's five-minute window.
            "stale": post(port, body, **signed(body, int(time.time()) - 360)),
            "future": post(port, body, **signed(body, int(time.time()) + 360)),
            "tampered": post(port, tampered, **signed(body)),
            "garbled": post(port, body, **{"X-Slack-Request-Timestamp": "soon",
                                           "X-Slack-Signature": "v0=00"}),
        }
        slack.settle()
        assert {case: status for case, (status, _) in refused.items()} == dict.fromkeys(
            refused, 401)
        assert web_calls(slack) == []
        assert source.asked == []
        # The same body, signed now, is answered: the refusals were about the signature.
        assert post(port, body, **signed(body)) == (200, "")
        slack.wait_for("chat.postMessage")


def test_a_retried_event_through_the_endpoint_is_answered_once(
        slack: FakeSlack, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="bot.slack.listeners.state")
    with serving(make_app(slack, simple_source())) as port:
        command = command_body("research/full", response_url=slack.response_url())
        assert post(port, command, **signed(command)) == (200, "")
        ts = slack.wait_for("chat.postMessage")[0].answer["ts"]
        # The thread is an answer once it is remembered, a moment after the post returns.
        wait_until(lambda: f"ts {ts}" in caplog.text or None)
        event = json.dumps(message_event("show devices", thread_ts=ts, event_id="EvRetry"))
        statuses = [post(port, event, "application/json", **signed(event), **retry)[0]
                    for retry in ({}, {"X-Slack-Retry-Num": "1",
                                       "X-Slack-Retry-Reason": "http_timeout"},
                                  {"X-Slack-Retry-Num": "2",
                                   "X-Slack-Retry-Reason": "http_timeout"})]
        assert statuses == [200, 200, 200]
        reply = slack.wait_for("chat.postMessage", 2)[1]
        assert reply.params["thread_ts"] == ts
        slack.settle(0.5)
        assert web_calls(slack) == ["chat.postMessage", "chat.postMessage"]


class WarmingSource:
    """A source that becomes ready later, as the watch cache does."""

    cluster = "warming"

    def __init__(self) -> None:
        self.loaded = threading.Event()

    def ready(self) -> bool:
        return self.loaded.is_set()


def test_readyz_is_false_until_the_source_is_ready() -> None:
    source = WarmingSource()
    with serving(None, source) as port:
        assert http(port, "/healthz") == (200, "ok\n")
        assert http(port, "/readyz") == (
            503, "not ready\ncluster: loading (the watch cache has not listed nodes and pods "
                 "yet)\n")
        source.loaded.set()
        assert http(port, "/readyz") == (200, "ready\ncluster: ready\n")
        assert http(port, "/healthz?probe=1") == (200, "ok\n")


def test_healthz_needs_no_worker_while_every_worker_is_busy() -> None:
    release = threading.Event()

    def stuck() -> Check:
        release.wait(10)
        return Check(True, "ready")

    routes = http_routes(slack=None, readiness=Readiness({"cluster": stuck}))
    server = HTTPServer("127.0.0.1", 0, routes, HTTPLimits(threads=2))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        with ThreadPoolExecutor(2) as pool:
            held = [pool.submit(http, server.port, "/readyz") for _ in range(2)]
            time.sleep(0.3)  # both workers wait in the readiness check
            started = time.monotonic()
            assert http(server.port, "/healthz") == (200, "ok\n")
            took = time.monotonic() - started
            assert not any(request.done() for request in held)
            release.set()
            assert [request.result()[0] for request in held] == [200, 200]
        assert took < 0.5, f"/healthz took {took:.2f} s"
    finally:
        release.set()
        server.shutdown()
        thread.join(5)


def test_a_dump_directory_is_ready_at_once() -> None:
    assert source_ready(SnapshotSource("tests/fixtures/scenarios/seven-states"))


def test_the_endpoint_refuses_what_is_not_slack(slack: FakeSlack) -> None:
    with serving(make_app(slack, simple_source())) as port:
        assert http(port, "/slack/other", "x")[0] == 404
        assert http(port, "/nope")[0] == 404
        assert http(port, "/healthz", "x")[0] == 405
    with serving(None) as port:  # Socket Mode: Slack's requests come over the websocket
        body = command_body("research/full")
        assert post(port, body, **signed(body))[0] == 404
    slack.settle(0.1)
    assert web_calls(slack) == []


def test_slack_url_verification_is_answered(slack: FakeSlack) -> None:
    # Slack sends this once, when the Events request URL is entered in the app settings.
    body = json.dumps({"token": "legacy-verification-token", "challenge": "3eZbrw1aB",
                       "type": "url_verification"})
    with serving(make_app(slack, simple_source())) as port:
        status, text = post(port, body, "application/json", **signed(body))
    assert (status, json.loads(text)) == (200, {"challenge": "3eZbrw1aB"})
