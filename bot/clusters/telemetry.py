"""DCGM telemetry from Prometheus, at the edge: the HTTP queries and the wrapper that adds
their facts to an answer after the triage (classification itself reads nothing).

One instant query per metric family for all the nodes an answer shows, sent at once; the
whole round never takes longer than the timeout. When Prometheus is down, slow, refuses or
answers garbage, the answer goes out without telemetry and says why in one line.
"""

from __future__ import annotations

import argparse
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime

from bot.clusters.sources import TriageSource
from bot.config import ENVIRONMENT, BotConfig, PrometheusConfig
from scoring.verdict import Verdict
from triage.classify.capacity import CapacityView, with_idle_held
from triage.dcgm import (
    FAMILIES,
    DcgmLabels,
    Family,
    Telemetry,
    TelemetryError,
    idle_holders,
    idle_query,
    promql,
    read_families,
    with_telemetry,
    without_telemetry,
)
from triage.refs import PodRef
from triage.snapshot import Snapshot

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT = PrometheusConfig.timeout  # seconds for the whole round of queries
TOKEN_ENV = PrometheusConfig.token_env  # bearer token
CA_ENV = PrometheusConfig.ca_env  # CA bundle (PEM file) to verify an https URL
URL_ENV = next(name for name, key in ENVIRONMENT.items() if key == "prometheus.url")


class TelemetryUnavailable(Exception):
    """No telemetry this time; the message is the one line the answer shows."""


@dataclass(frozen=True)
class PrometheusSettings:
    url: str
    timeout: float = DEFAULT_TIMEOUT
    labels: DcgmLabels = field(default_factory=DcgmLabels)
    token: str | None = None  # from the environment only
    ca_file: str | None = None  # from the environment only


def prometheus_settings(config: BotConfig, url: str | None = None, *,
                        cluster: str | None = None,
                        environ: Mapping[str, str] | None = None) -> PrometheusSettings | None:
    """Settings for ``url`` (--prometheus), else the cluster's own ``prometheus`` in
    ``clusters``, else the top-level one (GPUWHY_PROMETHEUS_URL sets its url); None when none
    names a URL."""
    env = os.environ if environ is None else environ
    entry = config.clusters.get(cluster) if cluster is not None else None
    chosen = entry.prometheus if entry is not None and entry.prometheus is not None \
        else config.prometheus
    address = url or chosen.url
    if not address:
        return None
    return PrometheusSettings(url=address.rstrip("/"), timeout=chosen.timeout,
                              labels=DcgmLabels(**asdict(chosen.labels)),
                              token=env.get(chosen.token_env) or None,
                              ca_file=env.get(chosen.ca_env) or None)


class PrometheusClient:
    """Reads DCGM exporter's series through Prometheus' HTTP API (``/api/v1/query``)."""

    def __init__(self, settings: PrometheusSettings) -> None:
        self.settings = settings

    def read(self, nodes: list[str], at: float) -> Telemetry:
        """The families for ``nodes``, evaluated at ``at``; TelemetryUnavailable when no
        family could be read. A family that fails while others answer is named in
        ``Telemetry.problems``."""
        answers: dict[Family, object] = {}
        failures: dict[Family, str] = {}
        lock = threading.Lock()

        def query(family: Family) -> None:
            try:
                payload: object = self._query(promql(family, nodes, self.settings.labels), at)
            except TelemetryUnavailable as exc:
                with lock:
                    failures[family] = str(exc)
                return
            with lock:
                answers[family] = payload

        # Daemon threads: a server that trickles bytes can keep a socket open past the
        # timeout, and neither the answer nor the process exit may wait for it.
        threads = [threading.Thread(target=query, args=(family,), daemon=True,
                                    name=f"gpuwhy-prometheus-{family.name}")
                   for family in FAMILIES]
        deadline = time.monotonic() + self.settings.timeout
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        with lock:  # in FAMILIES order, whichever answered first
            answers = {f: answers[f] for f in FAMILIES if f in answers}
            failures = {f: failures[f] for f in FAMILIES if f in failures}
        late = [f for f in FAMILIES if f not in answers and f not in failures]
        from bot.web.metrics import PROMETHEUS_QUERIES  # loaded where Prometheus is asked

        for family in FAMILIES:
            result = "ok" if family in answers else "failed" if family in failures else "late"
            PROMETHEUS_QUERIES.labels(family.name, result).inc()
        if not answers:
            first = next((failures[f] for f in FAMILIES if f in failures), None)
            raise TelemetryUnavailable(first or f"Prometheus at {self.settings.url} did not "
                                                f"answer within {self.settings.timeout:g} s")
        problems = [f"{family.name}: {why}" for family, why in failures.items()]
        problems += [f"{family.name}: no answer within {self.settings.timeout:g} s"
                     for family in late]
        telemetry = read_families(answers, self.settings.labels, at, problems)
        if len(telemetry.problems) == len(FAMILIES):
            raise TelemetryUnavailable(f"Prometheus at {self.settings.url} answered, but not "
                                       f"with query results ({telemetry.problems[0]})")
        return telemetry

    def idle_holders(self, nodes: list[str], at: float) -> dict[str, list[str]]:
        """Per node, the pods DCGM saw holding a GPU at 0 % all of the last hour (one query);
        TelemetryUnavailable when it cannot be read."""
        payload = self._query(idle_query(nodes, self.settings.labels), at)
        try:
            return idle_holders(payload, self.settings.labels)
        except TelemetryError as exc:
            raise TelemetryUnavailable(f"Prometheus at {self.settings.url} answered, but not "
                                       f"with query results ({exc})") from None

    def _query(self, expression: str, at: float) -> object:
        import requests  # loaded only when a Prometheus is asked: `gpuwhy triage` rarely does

        settings = self.settings
        headers = {"Accept": "application/json"}
        if settings.token:
            headers["Authorization"] = f"Bearer {settings.token}"
        try:
            # POST: the node regex of a long answer could outgrow a URL.
            response = requests.post(
                f"{settings.url}/api/v1/query",
                data={"query": expression, "time": f"{at:.3f}",
                      "timeout": f"{settings.timeout:g}s"},
                headers=headers, timeout=settings.timeout,
                verify=settings.ca_file or True, allow_redirects=False)
        except requests.Timeout as exc:
            raise TelemetryUnavailable(f"Prometheus at {settings.url} did not answer within "
                                       f"{settings.timeout:g} s") from exc
        except requests.RequestException as exc:
            raise TelemetryUnavailable(f"Prometheus at {settings.url} is unreachable "
                                       f"({type(exc).__name__})") from exc
        try:
            payload: object = response.json()
        except ValueError:
            payload = None
        # Prometheus answers errors (400 bad_data, 422 execution, 503 timeout) as JSON too.
        if response.status_code >= 400 and not _is_error_document(payload):
            raise TelemetryUnavailable(f"Prometheus at {settings.url} answered HTTP "
                                       f"{response.status_code}")
        if payload is None:
            raise TelemetryUnavailable(f"Prometheus at {settings.url} answered something "
                                       "that is not JSON")
        return payload


def _is_error_document(payload: object) -> bool:
    return isinstance(payload, Mapping) and payload.get("status") == "error"


def wall_clock() -> float:
    return time.time()


def add_telemetry(verdict: Verdict, client: PrometheusClient,
                  clock: Callable[[], float] | None = None) -> Verdict:
    """The answer with DCGM's facts for the nodes it shows, or with one line saying why not.
    The queries are evaluated at ``clock()`` (default: now)."""
    from bot.answer.devices import relevant_nodes  # the devices table only when Prometheus answers

    nodes = [node.name for node in relevant_nodes(verdict).shown]
    if not nodes:
        return verdict
    try:
        telemetry = client.read(nodes, (clock or wall_clock)())
    except TelemetryUnavailable as exc:
        log.info("no telemetry for %s: %s", verdict.ref, exc)  # the answer says it
        return without_telemetry(verdict, str(exc))
    return with_telemetry(verdict, telemetry, "Prometheus")


def with_idle(view: CapacityView, snapshot: Snapshot, settings: PrometheusSettings | None,
              at: float | None = None) -> CapacityView:
    """The capacity view with its idle held GPUs when a Prometheus is configured (one query
    for every GPU node), else as it is; when Prometheus cannot be read, the view says why."""
    if settings is None or not view.groups:
        return view
    try:
        idle = PrometheusClient(settings).idle_holders(view.gpu_node_names(),
                                                       wall_clock() if at is None else at)
    except TelemetryUnavailable as exc:
        log.warning("capacity without idle GPUs: %s", exc)
        return replace(view, idle_note=f"no telemetry: {exc}")
    return with_idle_held(view, snapshot.rows, idle)


class TelemetrySource:
    """A triage source whose answers carry DCGM telemetry."""

    def __init__(self, source: TriageSource, client: PrometheusClient,
                 clock: Callable[[], float] | None = None) -> None:
        self.source = source
        self.client = client
        self.clock = clock
        self.cluster = source.cluster

    def triage(self, ref: PodRef) -> Verdict:
        return add_telemetry(self.source.triage(ref), self.client, self.clock)

    def cluster_snapshot(self) -> Snapshot:
        return self.source.cluster_snapshot()

    def as_of(self) -> datetime | None:
        return self.source.as_of()


def add_prometheus_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--prometheus", metavar="URL",
                        help="Prometheus with DCGM exporter's series (default: prometheus.url "
                             f"of the config or of the --cluster's entry, ${URL_ENV}; bearer "
                             "token and CA bundle from the variables prometheus.token_env / "
                             f"ca_env name, by default ${TOKEN_ENV} / ${CA_ENV})")


def with_prometheus(source: TriageSource, settings: PrometheusSettings | None) -> TriageSource:
    """``source`` itself when no Prometheus is configured."""
    return source if settings is None else TelemetrySource(source, PrometheusClient(settings))
