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
    AlertTarget,
    Credentials,
)
from bot.alerts.routes import missing_environment
from bot.alerts.store import AlertStore
from bot.alerts.watch import StuckPodWatch, utc_now
from bot.alerts.webhook import WebhookSender
from bot.clusters.fleet import Fleet
from bot.clusters.sources import TriageSource
from bot.config import BotConfig, ConfigError
from bot.slack.listeners.state import BotState
from bot.store import Store
from bot.web.serve import source_ready
from scoring.objects import K8sObject
from scoring.verdict import Verdict
from triage.refs import PodRef

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


class ClusterAlerts:
    """One cluster's poster and stuck-pod watch (its thread started by ``start``)."""

    def __init__(self, config: BotConfig, store: Store, client: WebClient, state: BotState,
                 name: str, source: TriageSource, environ: Mapping[str, str],
                 stop: threading.Event) -> None:
        self.poster = AlertPoster(config, AlertStore(store, name), client, state.remember,
                                  WebhookSender(config.alerts, environ, stop),
                                  name_cluster=state.fleet.several)
        self.target = AlertTarget(self.poster, state.fleet.source(name).triage)
        if isinstance(source, PodSource):
            pods = source.pods
        else:  # a cluster that could not be set up: Alertmanager alerts get its sentence
            log.warning("alerts: cluster %s shows no pods; the stuck-pod watch is off", name)
            pods = no_pods
        self.watch = StuckPodWatch(config, self.poster, pods, lambda: source_ready(source),
                                   self.target.triage)
        self.thread = threading.Thread(target=self.watch.run_forever, args=(stop,),
                                       name=f"gpuwhy-stuck-pods-{name}", daemon=True)


class AlertService:
    def __init__(self, config: BotConfig, store: Store, client: WebClient, state: BotState,
                 fleet: Fleet, environ: Mapping[str, str], stop: threading.Event) -> None:
        """Alerts about every cluster of ``fleet`` (its sources show the pods), answered
        through ``state``'s sources (with their telemetry). Raises ConfigError when a webhook
        header names an unset variable."""
        if missing := missing_environment(config, environ):
            raise ConfigError(f"routes: a webhook_header refers to ${{{missing[0]}}}, which is "
                              "not set in the environment")
        self.stop = stop
        self.clusters = {name: ClusterAlerts(config, store, client, state, name, source,
                                             environ, stop)
                         for name, source in fleet.sources.items()}
        self._workers = ThreadPoolExecutor(ALERTMANAGER_WORKERS,
                                           thread_name_prefix="gpuwhy-alertmanager")
        credentials = Credentials(environ)
        if not credentials.configured:
            log.warning("alerts: neither %s nor %s is set, so POST /alertmanager answers 401",
                        TOKEN_VARIABLE, PASSWORD_VARIABLE)
        self.receiver = AlertmanagerReceiver(
            credentials, {name: alerts.target for name, alerts in self.clusters.items()},
            fleet.default, self._workers, utc_now)

    def start(self) -> None:
        for alerts in self.clusters.values():
            alerts.thread.start()

    def close(self) -> None:
        """After ``stop`` is set: the rounds in progress end, alerts received are answered,
        webhook deliveries finish (their back-off is cut short)."""
        self._workers.shutdown(wait=True)
        for alerts in self.clusters.values():
            if alerts.thread.is_alive():
                alerts.thread.join()
            alerts.poster.close()
