"""The alerts inside `gpuwhy serve`: the stuck-pod watch in a thread, the /alertmanager
receiver for the route table, both posting through one poster."""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol, runtime_checkable

from slack_sdk import WebClient

from bot.alerts.poster import AlertPoster
from bot.alerts.receiver import (
    PASSWORD_VARIABLE,
    TOKEN_VARIABLE,
    AlertmanagerReceiver,
    Credentials,
)
from bot.alerts.routes import missing_environment
from bot.alerts.store import AlertStore
from bot.alerts.watch import StuckPodWatch, utc_now
from bot.alerts.webhook import WebhookSender
from bot.config import BotConfig, ConfigError
from bot.listeners.state import BotState
from bot.serve import source_ready
from bot.sources import TriageSource
from bot.store import Store
from triage.objects import K8sObject
from triage.refs import PodRef
from triage.verdict import Verdict

log = logging.getLogger(__name__)

ALERTMANAGER_WORKERS = 2


@runtime_checkable
class PodSource(Protocol):
    """A triage source that also shows its pods without a request (the watch cache, a dump)."""

    cluster: str

    def pods(self) -> list[K8sObject]: ...

    def triage(self, ref: PodRef) -> Verdict: ...


def no_pods() -> list[K8sObject]:
    return []


class AlertService:
    def __init__(self, config: BotConfig, store: Store, client: WebClient, state: BotState,
                 source: TriageSource, environ: Mapping[str, str],
                 stop: threading.Event) -> None:
        """Alerts about ``source``'s cluster, answered through ``state``'s sources (with their
        telemetry). Raises ConfigError when a webhook header names an unset variable."""
        if missing := missing_environment(config, environ):
            raise ConfigError(f"routes: a webhook_header refers to ${{{missing[0]}}}, which is "
                              "not set in the environment")
        self.stop = stop
        self.poster = AlertPoster(config, AlertStore(store, source.cluster), client,
                                  state.remember, WebhookSender(config.alerts, environ, stop))
        triage = state.fleet.source(source.cluster).triage
        if isinstance(source, PodSource):
            pods = source.pods
        else:  # a cluster that could not be set up: Alertmanager alerts get its sentence
            log.warning("alerts: cluster %s shows no pods; the stuck-pod watch is off",
                        source.cluster)
            pods = no_pods
        self.watch = StuckPodWatch(config, self.poster, pods, lambda: source_ready(source),
                                   triage)
        self._workers = ThreadPoolExecutor(ALERTMANAGER_WORKERS,
                                           thread_name_prefix="gpuwhy-alertmanager")
        credentials = Credentials(environ)
        if not credentials.configured:
            log.warning("alerts: neither %s nor %s is set, so POST /alertmanager answers 401",
                        TOKEN_VARIABLE, PASSWORD_VARIABLE)
        self.receiver = AlertmanagerReceiver(credentials, self.poster, triage,
                                             self._workers, utc_now)
        self._thread = threading.Thread(target=self.watch.run_forever, args=(stop,),
                                        name="gpuwhy-stuck-pods", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        """After ``stop`` is set: the round in progress ends, alerts received are answered,
        webhook deliveries finish (their back-off is cut short)."""
        self._workers.shutdown(wait=True)
        if self._thread.is_alive():
            self._thread.join()
        self.poster.close()
