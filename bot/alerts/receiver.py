"""`POST /alertmanager`: Alertmanager's webhook (payload version 4), behind a bearer token
(GPUWHY_ALERTMANAGER_TOKEN) or basic auth (GPUWHY_ALERTMANAGER_USERNAME, default
"alertmanager", and GPUWHY_ALERTMANAGER_PASSWORD).

The answer is 200 as soon as the payload is read; the triage and the posts run on workers,
so Alertmanager's timeout never depends on the cluster. Alerts that name no pod or workload
are acknowledged and counted, never an error.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import logging
from collections.abc import Callable, Mapping
from concurrent.futures import Executor
from dataclasses import dataclass
from datetime import datetime

from bot.alerts.alertmanager import FIRING, Alert, PayloadError, parse_payload
from bot.alerts.poster import AlertPoster
from bot.web.metrics import ALERTMANAGER_ALERTS
from bot.web.server import Request, Response
from scoring.verdict import Verdict
from triage.errors import ClusterError
from triage.refs import PodRef

log = logging.getLogger(__name__)

PATH = "/alertmanager"
TOKEN_VARIABLE = "GPUWHY_ALERTMANAGER_TOKEN"
USERNAME_VARIABLE = "GPUWHY_ALERTMANAGER_USERNAME"
PASSWORD_VARIABLE = "GPUWHY_ALERTMANAGER_PASSWORD"
DEFAULT_USERNAME = "alertmanager"
MAX_BODY = 4 << 20  # Alertmanager truncates big groups itself (truncatedAlerts)


class Credentials:
    def __init__(self, environ: Mapping[str, str]) -> None:
        self.token = environ.get(TOKEN_VARIABLE) or None
        password = environ.get(PASSWORD_VARIABLE) or None
        username = environ.get(USERNAME_VARIABLE) or DEFAULT_USERNAME
        self.basic = None if password is None else f"{username}:{password}"

    @property
    def configured(self) -> bool:
        return self.token is not None or self.basic is not None

    def allow(self, authorization: str | None) -> bool:
        scheme, _, value = (authorization or "").strip().partition(" ")
        value = value.strip()
        if scheme.lower() == "bearer" and self.token is not None:
            return hmac.compare_digest(value.encode(), self.token.encode())
        if scheme.lower() == "basic" and self.basic is not None:
            try:
                given = base64.b64decode(value, validate=True)
            except (binascii.Error, ValueError):
                return False
            return hmac.compare_digest(given, self.basic.encode())
        return False


@dataclass(frozen=True)
class AlertTarget:
    """Where the alerts about one cluster are answered and posted."""

    poster: AlertPoster
    triage: Callable[[PodRef], Verdict]


class AlertmanagerReceiver:
    def __init__(self, credentials: Credentials, targets: Mapping[str, AlertTarget],
                 default: str, workers: Executor, clock: Callable[[], datetime]) -> None:
        """``targets`` by cluster name; an alert without a ``cluster`` label is about
        ``default``."""
        self.credentials = credentials
        self.targets = targets
        self.default = default
        self.workers = workers
        self.clock = clock

    def respond(self, request: Request) -> Response:
        """POST /alertmanager, for the route table of `gpuwhy serve`."""
        status, text = self.handle(request.headers.get("authorization"), request.body)
        challenge = (("WWW-Authenticate", 'Bearer realm="gpuwhy"'),) if status == 401 else ()
        if status == 401:  # a wrong token in Alertmanager's credentials_file drops alerts
            given = "no credentials" if not request.headers.get("authorization") \
                else "wrong credentials"
            log.warning("alertmanager: refused a request from %s: %s (%s or %s)",
                        request.client, given, TOKEN_VARIABLE, PASSWORD_VARIABLE)
        return Response(status, text + "\n", headers=challenge)

    def handle(self, authorization: str | None, body: bytes) -> tuple[int, str]:
        """(HTTP status, one line of text) for one POST."""
        if not self.credentials.allow(authorization):
            return 401, "unauthorized"
        try:
            alerts = parse_payload(body)
        except PayloadError as exc:
            log.warning("alertmanager: rejected a payload: %s", exc)
            return 400, str(exc)
        for alert in alerts:
            if alert.ref is None:
                ALERTMANAGER_ALERTS.labels("unmapped").inc()
                log.info("alertmanager: %s (%s) names no pod or workload; acknowledged",
                         alert.name, alert.status)
                continue
            target = self.targets.get(alert.cluster or self.default)
            if target is None:
                ALERTMANAGER_ALERTS.labels("unknown-cluster").inc()
                log.info("alertmanager: %s (%s) is about cluster %s, which is not configured; "
                         "acknowledged", alert.name, alert.status, alert.cluster)
                continue
            ALERTMANAGER_ALERTS.labels(alert.status).inc()
            self.workers.submit(self._work, alert, target)
        return 200, f"{len(alerts)} alerts received"

    def _work(self, alert: Alert, target: AlertTarget) -> None:
        try:
            if alert.status != FIRING:
                target.poster.resolve_alert(alert, self.clock())
                return
            assert alert.ref is not None
            try:
                verdict = target.triage(alert.ref)
            except ClusterError as exc:
                log.warning("alertmanager: %s on %s: cannot triage: %s", alert.name, alert.ref,
                            exc)
                return
            target.poster.report_alert(alert, verdict, self.clock())
            target.poster.flush_held(self.clock())
        except Exception:
            log.exception("alertmanager: handling %s on %s failed", alert.name, alert.ref)
