"""Webhook deliveries against a real local receiver: the Verdict JSON, the header with ${ENV},
retries with back-off on 5xx / 429 / no answer, no retry on other 4xx, every result counted."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from datetime import timedelta

import pytest

from bot.alerts.webhook import WebhookSender
from bot.config import AlertsSettings
from scoring.verdict import Evidence, Verdict
from tests.alertkit import Counted, WebhookReceiver

VERDICT = Verdict(ref="research/broken-node", cause="allocatable-zero", action="repair it",
                  evidence=[Evidence("Node/gpu-v100-broken", "status.allocatable", "0")])
FAST = AlertsSettings(webhook_retries=3, webhook_backoff=timedelta(seconds=1),
                      webhook_timeout=timedelta(seconds=2))


@pytest.fixture
def receiver() -> Iterator[WebhookReceiver]:
    made = WebhookReceiver()
    yield made
    made.close()


def sender(environ: dict[str, str] | None = None,
           settings: AlertsSettings = FAST) -> WebhookSender:
    made = WebhookSender(settings, environ or {})
    made.backoff_s = 0.05  # the schedule is what matters here, not the wait
    return made


def test_delivers_the_verdict_json_with_the_header(receiver: WebhookReceiver) -> None:
    counted = Counted()
    delivery = sender({"HOOK_TOKEN": "s3cret"}).send(
        receiver.url, "Authorization: Bearer ${HOOK_TOKEN}", VERDICT.to_dict())
    assert (delivery.delivered, delivery.attempts, delivery.status) == (True, 1, 200)
    [(headers, body)] = receiver.received
    assert headers["Authorization"] == "Bearer s3cret"
    assert headers["Content-Type"] == "application/json"
    assert Verdict.from_dict(body) == VERDICT
    assert counted("gpuwhy_webhook_deliveries", result="delivered") == 1


@pytest.mark.parametrize("statuses", [[500], [503, 502], [429], [408, 500, 500]])
def test_retries_on_server_errors_then_delivers(receiver: WebhookReceiver,
                                                 statuses: list[int]) -> None:
    receiver.statuses = list(statuses)
    counted = Counted()
    delivery = sender().send(receiver.url, None, VERDICT.to_dict())
    assert delivery.delivered and delivery.attempts == len(statuses) + 1
    assert len(receiver.received) == len(statuses) + 1
    assert counted("gpuwhy_webhook_deliveries", result="delivered") == 1


def test_gives_up_after_the_retries_and_counts_the_failure(receiver: WebhookReceiver,
                                                           caplog: pytest.LogCaptureFixture
                                                           ) -> None:
    receiver.statuses = [500] * 10
    counted = Counted()
    made = sender()
    started = time.monotonic()
    delivery = made.send(receiver.url, None, VERDICT.to_dict())
    waited = time.monotonic() - started
    assert (delivery.delivered, delivery.attempts) == (False, 4)
    assert delivery.error == "HTTP 500 Internal Server Error"
    assert waited >= 0.05 + 0.1 + 0.2  # back-off doubles
    assert counted("gpuwhy_webhook_deliveries", result="failed") == 1
    assert "not delivered after 4 tries: HTTP 500" in caplog.text


def test_a_client_error_is_not_retried(receiver: WebhookReceiver) -> None:
    receiver.statuses = [401]
    counted = Counted()
    delivery = sender().send(receiver.url, None, VERDICT.to_dict())
    assert (delivery.delivered, delivery.attempts, delivery.status) == (False, 1, 401)
    assert counted("gpuwhy_webhook_deliveries", result="failed") == 1


def test_a_receiver_that_is_down_is_retried_and_reported() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    counted = Counted()
    delivery = sender().send(f"http://127.0.0.1:{port}/hook", None, VERDICT.to_dict())
    assert not delivery.delivered and delivery.attempts == 4 and delivery.status is None
    assert delivery.error is not None and delivery.error.startswith("ConnectionError")
    assert counted("gpuwhy_webhook_deliveries", result="failed") == 1


def test_a_slow_receiver_times_out() -> None:
    with socket.socket() as silent:  # accepts, never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        port = silent.getsockname()[1]
        slow = AlertsSettings(webhook_retries=0, webhook_timeout=timedelta(seconds=1))
        delivery = sender(settings=slow).send(
            f"http://127.0.0.1:{port}/hook", None, VERDICT.to_dict())
    assert not delivery.delivered and delivery.error is not None
    assert "Timeout" in delivery.error
