"""gpuwhy's Prometheus metrics: one registry, served on /metrics by `gpuwhy serve`.

Every metric gpuwhy exports is defined here, on REGISTRY (not the client library's global
registry, so nothing else in the process leaks into the page). Values that are a reading of
some object at scrape time (the watch cache, the incidents waiting for the store) are
registered as readings by whoever owns the object; the rest are counters and histograms
that the call sites move.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.registry import Collector

REGISTRY = CollectorRegistry()
CONTENT_TYPE = CONTENT_TYPE_LATEST

ANSWERS = Counter(
    "gpuwhy_answers",
    "Answers given, by cause word and source (slack, cli; watch, alert: posted unasked)",
    ["cause", "source"], registry=REGISTRY)
TRIAGE_SECONDS = Histogram(
    "gpuwhy_triage_duration_seconds",
    "Time to answer one ref: reading the cluster and classifying, by reader "
    "(snapshot, live, watch)",
    ["reader"], registry=REGISTRY,
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0))
KUBERNETES_REQUESTS = Counter(
    "gpuwhy_kubernetes_api_requests",
    "Requests to the Kubernetes API server, by resource and HTTP status code "
    "(code 0: no response)",
    ["resource", "code"], registry=REGISTRY)
SLACK_API_ERRORS = Counter(
    "gpuwhy_slack_api_errors",
    "Slack Web API calls that failed, by method and Slack's error (unreachable: no answer)",
    ["method", "error"], registry=REGISTRY)
STORE_WRITES_FAILED = Counter(
    "gpuwhy_store_writes_failed",
    "Incident writes the store refused (each is kept and retried)", registry=REGISTRY)
PROMETHEUS_QUERIES = Counter(
    "gpuwhy_prometheus_queries",
    "Queries for DCGM telemetry, by metric family and result (ok, failed, late)",
    ["family", "result"], registry=REGISTRY)
DIGEST_POSTS = Counter(
    "gpuwhy_digest_posts",
    "Weekly digest posts, by result (posted, already-posted, empty, failed)",
    ["result"], registry=REGISTRY)

ALERT_POSTS = Counter(
    "gpuwhy_alert_posts",
    "Answers posted unasked (stuck pods, Alertmanager alerts), by kind: root (a first post), "
    "reply (the cause changed), line (started, gone, resolved), summary (rate limit reached)",
    ["kind"], registry=REGISTRY)
ALERT_REPEATS_SUPPRESSED = Counter(
    "gpuwhy_alert_repeats_suppressed",
    "Stuck workloads triaged again with nothing new to post (every pod + cause already was)",
    registry=REGISTRY)
ALERT_POSTS_RATE_LIMITED = Counter(
    "gpuwhy_alert_posts_rate_limited",
    "Unasked answers held back by the per-channel hourly limit, by channel",
    ["channel"], registry=REGISTRY)
WEBHOOK_DELIVERIES = Counter(
    "gpuwhy_webhook_deliveries",
    "Verdicts POSTed to route webhooks, by result (delivered, failed: after every retry)",
    ["result"], registry=REGISTRY)
ALERTMANAGER_ALERTS = Counter(
    "gpuwhy_alertmanager_alerts",
    "Alerts received on /alertmanager, by outcome (firing, resolved, unmapped: names no pod "
    "or workload, unknown-cluster: its cluster label names no configured cluster, "
    "repeated: already posted)",
    ["outcome"], registry=REGISTRY)


@dataclass(frozen=True)
class CacheReading:
    """The watch cache at scrape time."""

    age_seconds: float | None  # since the API server was last heard from; None: never
    objects: Mapping[str, int] = field(default_factory=dict)  # kind (nodes, pods) -> count


class _Readings(Collector):
    """Gauges read from live objects at scrape time; an unregistered reading is left out."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._caches: Callable[[], Mapping[str, CacheReading]] | None = None
        self._waiting: Callable[[], int] | None = None
        self._clusters: Callable[[], Mapping[str, bool]] | None = None

    def watch_caches(self, read: Callable[[], Mapping[str, CacheReading]] | None) -> None:
        """Per cluster: its watch cache."""
        with self._lock:
            self._caches = read

    def incidents_waiting(self, read: Callable[[], int] | None) -> None:
        with self._lock:
            self._waiting = read

    def clusters(self, read: Callable[[], Mapping[str, bool]] | None) -> None:
        """Per configured cluster: can it answer now (set up, and its watch cache loaded)."""
        with self._lock:
            self._clusters = read

    def describe(self) -> Iterator[Metric]:
        return iter(())  # the families depend on what is registered at scrape time

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            caches, waiting, clusters = self._caches, self._waiting, self._clusters
        if clusters is not None:
            up = GaugeMetricFamily("gpuwhy_cluster_up",
                                   "1 when the cluster can answer (set up, watch cache loaded)",
                                   labels=["cluster"])
            for name, ready in sorted(clusters().items()):
                up.add_metric([name], 1.0 if ready else 0.0)
            yield up
        if waiting is not None:
            yield GaugeMetricFamily(
                "gpuwhy_incidents_waiting",
                "Answers given but not stored yet (the store refused them; retried)",
                value=waiting())
        if caches is None:
            return
        readings = sorted(caches().items())
        age = GaugeMetricFamily("gpuwhy_watch_cache_age_seconds",
                                "Seconds since the watch cache last heard from the API server",
                                labels=["cluster"])
        objects = GaugeMetricFamily("gpuwhy_watch_cache_objects",
                                    "Objects held in the watch cache, by cluster and kind",
                                    labels=["cluster", "kind"])
        for cluster, reading in readings:
            if reading.age_seconds is not None:
                age.add_metric([cluster], reading.age_seconds)
            for kind, count in sorted(reading.objects.items()):
                objects.add_metric([cluster, kind], count)
        yield age
        yield objects


def count_kubernetes_requests(api_client: Any) -> Any:
    """``api_client`` (a kubernetes ApiClient) with every request counted in
    gpuwhy_kubernetes_api_requests: all of gpuwhy's requests go through its call_api."""
    if getattr(api_client, "_gpuwhy_counted", False):
        return api_client
    call_api = api_client.call_api

    def counted(method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        resource = resource_of(url)
        try:
            response = call_api(method, url, *args, **kwargs)
        except Exception as exc:
            KUBERNETES_REQUESTS.labels(resource, str(getattr(exc, "status", None) or 0)).inc()
            raise
        KUBERNETES_REQUESTS.labels(resource, str(response.status)).inc()
        return response

    api_client.call_api = counted
    api_client._gpuwhy_counted = True
    return api_client


def resource_of(url: str) -> str:
    """The resource a request is about, as RBAC names it: "pods", "deployments.apps",
    "resourceslices.resource.k8s.io"; the path itself for the rest ("/version")."""
    path = urlsplit(url).path
    parts = [part for part in path.split("/") if part]
    if parts[:1] == ["api"] and len(parts) >= 3:
        group, rest = "", parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 4:
        group, rest = parts[1], parts[3:]
    else:
        return path or "/"
    if len(rest) >= 3 and rest[0] == "namespaces":
        rest = rest[2:]
    return f"{rest[0]}.{group}" if group else rest[0]


READINGS = _Readings()
REGISTRY.register(READINGS)


def page() -> bytes:
    """The /metrics page in Prometheus' text format (CONTENT_TYPE)."""
    return generate_latest(REGISTRY)
