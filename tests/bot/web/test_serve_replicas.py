"""Two `gpuwhy serve` replicas sharing one store: a Slack retry that reaches the other replica
is not answered again."""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.store import Store
from bot.web.serve import ReplayGuard
from tests.bot.slack.test_slack_app import (
    CHANNEL,
    SECRET,
    ask,
    dispatch,
    event_body,
    make_app,
    simple_source,
    wait_until,
)
from tests.bot.web.test_serve_endpoint import FORM, post, serving
from tests.slackfake import FakeSlack, command_body, sign

JSON = "application/json"


@pytest.fixture
def replicas(database_url: str) -> Iterator[tuple[Store, Store]]:
    """Two stores on one database, as two serve processes open it."""
    first, second = Store(database_url), Store(database_url)
    first.upgrade()
    yield first, second
    first.close()
    second.close()


def test_a_retry_reaching_the_other_replica_is_not_answered_again(
        replicas: tuple[Store, Store], slack: FakeSlack,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="bot.slack.listeners.messages")
    store_a, store_b = replicas
    replica_a = make_app(slack, simple_source(), store=store_a)
    replica_b = make_app(slack, simple_source(), store=store_b)
    ask(replica_a, slack, "research/full")
    ts = str(slack.wait_for("chat.postMessage")[0].answer["ts"])
    wait_until(lambda: store_b.incident_for_thread(CHANNEL, ts))

    body = event_body("show devices", thread_ts=ts, event_id="Ev0REPLICA")
    assert dispatch(replica_a, body, content_type=JSON).status == 200
    retry = {"x-slack-retry-num": "1", "x-slack-retry-reason": "http_timeout"}
    assert dispatch(replica_b, body, content_type=JSON, extra=retry).status == 200
    # Replica B does answer an event nobody claimed yet, in the same thread.
    other = event_body("show devices", thread_ts=ts, event_id="Ev0OTHER")
    assert dispatch(replica_b, other, content_type=JSON).status == 200
    slack.wait_for("chat.postMessage", 3)
    slack.settle(0.3)
    replies = [call for call in slack.calls_to("chat.postMessage")
               if call.params.get("thread_ts") == ts]
    assert len(replies) == 2
    assert "event Ev0REPLICA already claimed in the store" in caplog.text


def test_a_signed_command_replayed_four_times_is_answered_once(
        replicas: tuple[Store, Store], slack: FakeSlack,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="bot.web.serve")
    store_a, store_b = replicas
    body = command_body("research/full", response_url=slack.response_url())
    headers = sign(SECRET, body)  # one timestamp, one signature: the same request each time
    with serving(make_app(slack, simple_source()), guard=ReplayGuard(store_a)) as port_a, \
            serving(make_app(slack, simple_source()), guard=ReplayGuard(store_b)) as port_b:
        statuses = [post(port, body, FORM, **headers)
                    for port in (port_a, port_b, port_a, port_b)]
        assert statuses == [(200, "")] * 4
        slack.wait_for("chat.postMessage")
        slack.settle(0.5)
        assert len(slack.calls_to("chat.postMessage")) == 1
        # The same command signed again (a new request, as a person typing it twice) is
        # answered again.
        again = command_body("research/full", response_url=slack.response_url("2"))
        assert post(port_b, again, FORM, **sign(SECRET, again)) == (200, "")
        slack.wait_for("chat.postMessage", 2)
    assert caplog.text.count("seen before (same timestamp and signature)") == 3


def test_the_replay_guard_answers_when_the_store_fails(slack: FakeSlack, tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'never-migrated.db'}")  # no tables: every claim fails
    body = command_body("research/full", response_url=slack.response_url())
    headers = sign(SECRET, body)
    with serving(make_app(slack, simple_source()), guard=ReplayGuard(store)) as port:
        assert [post(port, body, FORM, **headers) for _ in range(3)] == [(200, "")] * 3
        slack.wait_for("chat.postMessage")
        slack.settle(0.5)
        assert len(slack.calls_to("chat.postMessage")) == 1  # memory still stops the replays
    store.close()


def test_the_ack_does_not_wait_for_the_store_claim(tmp_path: Path, slack: FakeSlack) -> None:
    path = tmp_path / "gpuwhy.db"
    store = Store(f"sqlite:///{path}")
    store.upgrade()
    # Another writer holds the SQLite write lock: a claim waits out its 1-second limit.
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    body = command_body("research/full", response_url=slack.response_url())
    try:
        with serving(make_app(slack, simple_source()), guard=ReplayGuard(store)) as port:
            started = time.monotonic()
            assert post(port, body, FORM, **sign(SECRET, body)) == (200, "")
            took = time.monotonic() - started
            assert took < 0.5, f"the ack took {took:.2f} s"
            holder.rollback()
            slack.wait_for("chat.postMessage")  # answered after the claim, once
            slack.settle(0.3)
            assert len(slack.calls_to("chat.postMessage")) == 1
    finally:
        holder.close()
        store.close()
