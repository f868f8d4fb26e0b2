"""POST a Verdict's JSON to a route's webhook, with its header, retried with back-off.

A 5xx, 408, 429 or a connection failure is tried again (``retries`` times, waiting
``backoff``, then twice that, ...); any other 4xx is final. Every outcome is logged and
counted; a failure never reaches the caller as an exception.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import requests

from bot.alerts.routes import expand_env
from bot.config import AlertsSettings
from bot.web.metrics import WEBHOOK_DELIVERIES

log = logging.getLogger(__name__)

RETRIED_STATUSES = frozenset({408, 429})
USER_AGENT = "gpuwhy-webhook"


@dataclass(frozen=True)
class Delivery:
    delivered: bool
    attempts: int
    status: int | None  # the last HTTP status, None when no answer came
    error: str | None  # why it failed, one line


class WebhookSender:
    def __init__(self, settings: AlertsSettings, environ: Mapping[str, str] | None = None,
                 stop: threading.Event | None = None) -> None:
        self.retries = settings.webhook_retries
        self.backoff_s = settings.webhook_backoff.total_seconds()
        self.timeout_s = settings.webhook_timeout.total_seconds()
        self.environ = os.environ if environ is None else environ
        self.stop = stop or threading.Event()  # set: no more waiting between tries
        self.session = requests.Session()

    def close(self) -> None:
        self.session.close()

    def send(self, url: str, header: str | None, payload: Mapping[str, Any]) -> Delivery:
        headers = {"Content-Type": "application/json", "User-Agent": USER_AGENT}
        if header is not None:
            name, _, value = expand_env(header, self.environ).partition(":")
            headers[name.strip()] = value.strip()
        body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        delivery = Delivery(False, 0, None, None)
        for attempt in range(1, self.retries + 2):
            delivery = self._try(url, headers, body, attempt)
            if delivery.delivered or not self._retried(delivery) or attempt > self.retries:
                break
            if self.stop.wait(self.backoff_s * 2 ** (attempt - 1)):
                break
        WEBHOOK_DELIVERIES.labels("delivered" if delivery.delivered else "failed").inc()
        if delivery.delivered:
            log.info("webhook %s: delivered (HTTP %s, try %d)", url, delivery.status,
                     delivery.attempts)
        else:
            log.warning("webhook %s: not delivered after %d tries: %s", url, delivery.attempts,
                        delivery.error)
        return delivery

    def _try(self, url: str, headers: Mapping[str, str], body: bytes, attempt: int) -> Delivery:
        try:
            response = self.session.post(url, data=body, headers=dict(headers),
                                         timeout=self.timeout_s, allow_redirects=False)
        except requests.RequestException as exc:
            reason = " ".join(str(exc).split()) or type(exc).__name__
            return Delivery(False, attempt, None, f"{type(exc).__name__}: {reason}"[:300])
        with response:
            if 200 <= response.status_code < 300:
                return Delivery(True, attempt, response.status_code, None)
            return Delivery(False, attempt, response.status_code,
                            f"HTTP {response.status_code} {response.reason or ''}".strip())

    @staticmethod
    def _retried(delivery: Delivery) -> bool:
        status = delivery.status
        return status is None or status >= 500 or status in RETRIED_STATUSES
