"""Where a triage reads the cluster from: a dump directory, the live API, or a watch cache."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from bot.config import BotConfig
from scoring.objects import K8sObject
from scoring.summary import log_lines
from scoring.verdict import Verdict
from triage import cluster as kube  # loaded on first use
from triage.classify import triage
from triage.cluster.limits import DEFAULT_PAGE_SIZE, DEFAULT_TIMEOUT
from triage.config import DEFAULT_CONFIG, TriageConfig
from triage.dumpfile import bulk_parse, one_answer
from triage.refs import PodRef
from triage.slim import slim_outside
from triage.snapshot import Snapshot, parse_rfc3339

if TYPE_CHECKING:  # the kubernetes client is loaded only by the sources that talk to a cluster
    from kubernetes.client import ApiClient

    from bot.web.metrics import CacheReading

log = logging.getLogger("gpuwhy.triage")


class TriageSource(Protocol):
    cluster: str

    def triage(self, ref: PodRef) -> Verdict:
        """Answer for one ref; raise triage.errors.ClusterError when the cluster can't be read."""
        ...

    def as_of(self) -> datetime | None:
        """When the data the answers come from was read, if not just now (a dump's time)."""
        ...

    def cluster_snapshot(self) -> Snapshot:
        """The whole cluster (nodes, the pods on them, DRA objects) for the capacity view and
        ``where``; raise triage.errors.ClusterError when it can't be read."""
        ...


def configured_name(config: BotConfig) -> str:
    """The name ``cluster`` (GPUWHY_CLUSTER) gives the one cluster of --kubeconfig; "" when
    the config names none, and the source records the API server's URL."""
    return "" if config.cluster == BotConfig.cluster else config.cluster


def answered(reader: str, answer: Callable[[], Verdict], *, timed: bool = True) -> Verdict:
    """Run one triage, timed per reader (gpuwhy_triage_duration_seconds) unless not ``timed``,
    and log the per-node facts at the two levels of HAMi's event-log proposal, with pod and
    node on every line: INFO NodeUnfitPod / NodeFitPod, DEBUG one line per device."""
    with _timed(reader) if timed else nullcontext(), one_answer():
        verdict = answer()
    if log.isEnabledFor(logging.INFO):  # a line per node: 5,000 of them, unless -v
        for level, line in log_lines(verdict.ref, verdict.nodes):
            log.log(level, line)
    return verdict


@contextmanager
def _timed(reader: str) -> Iterator[None]:
    from bot.web.metrics import TRIAGE_SECONDS  # prometheus_client: loaded where timed

    with TRIAGE_SECONDS.labels(reader).time():
        yield


def metered(api_client: ApiClient) -> ApiClient:
    """The client, its requests counted in gpuwhy_kubernetes_api_requests_total."""
    from bot.web.metrics import count_kubernetes_requests

    counted: ApiClient = count_kubernetes_requests(api_client)
    return counted


class SnapshotSource:
    """A dump directory read once (``gpuwhy triage --snapshot``, ``gpuwhy serve --snapshot``).

    With ``namespace`` (one answer for a ref in it), the pods of every other namespace are
    read slim: a triage looks at them only for what they hold on their nodes.
    """

    def __init__(self, directory: str | Path, config: TriageConfig = DEFAULT_CONFIG,
                 cluster: str = "", namespace: str | None = None) -> None:
        self.snapshot = Snapshot.from_dir(
            directory, cluster,
            keep_pod=None if namespace is None else partial(slim_outside, namespace))
        self.cluster = self.snapshot.cluster
        self.config = config
        self._as_of = parse_rfc3339(self.snapshot.read_at) if self.snapshot.read_at else None

    def pods(self) -> list[K8sObject]:
        """The dump's pods, for the stuck-pod watch."""
        return self.snapshot.pods

    def triage(self, ref: PodRef) -> Verdict:
        return answered("snapshot", lambda: triage(self.snapshot, ref, self.config))

    def cluster_snapshot(self) -> Snapshot:
        return self.snapshot

    def as_of(self) -> datetime | None:
        return self._as_of




class LiveSource:
    """The live API, read cold for every triage (``gpuwhy triage``): nodes and pods are paged.

    Configured like kubectl (``kubeconfig`` / ``context``, KUBECONFIG, in-cluster service
    account), or from a ready ``api_client``. Raises ClusterError when that fails. Only
    non-terminated pods are listed (see triage.cluster), so an answer never names finished
    pods that "hold nothing"; otherwise it equals the answer from a dump of the cluster.
    ``one_shot``: the process answers once and ends (``gpuwhy triage``). Its requests and
    triage time are not counted (it has no /metrics to show them, and spares loading
    prometheus_client), and what the read made is frozen when the answer is out rather than
    walked by the collector: at 150,000 pods that collection alone took 1.3-1.7 s of CPU.
    """

    def __init__(self, kubeconfig: str | None = None, context: str | None = None,
                 config: TriageConfig = DEFAULT_CONFIG, *, api_client: ApiClient | None = None,
                 cluster: str = "", page_size: int = DEFAULT_PAGE_SIZE,
                 timeout: float = DEFAULT_TIMEOUT, one_shot: bool = False) -> None:
        self.api_client = api_client or kube.load_api_client(kubeconfig, context)
        if not one_shot:
            self.api_client = metered(self.api_client)
        self.one_shot = one_shot
        self.cluster = cluster or kube.server_url(self.api_client)
        self.config = config
        self.page_size = page_size
        self.timeout = timeout
        self.read: Snapshot | None = None  # a one-shot source's last read (see ``triage``)

    def triage(self, ref: PodRef) -> Verdict:
        def judged(snapshot: Snapshot) -> Verdict:
            if self.one_shot:
                # kept until the process ends: freeing 150,000 pods object by object took
                # 0.4 s of CPU once the answer was out (the CLI ends without a teardown)
                self.read = snapshot
            return triage(snapshot, ref, self.config)

        def answer() -> Verdict:
            # The collector stays off through the first triage too: it indexes the fresh
            # snapshot, and a collection would walk every young object the read just made.
            with bulk_parse(freeze=self.one_shot):
                return kube.answer_cold(self.api_client, ref, judged, self.page_size,
                                        self.timeout, self.cluster)

        return answered("live", answer, timed=not self.one_shot)

    def cluster_snapshot(self) -> Snapshot:
        with bulk_parse(freeze=False):
            return kube.read_cluster(self.api_client, self.page_size, self.timeout, self.cluster)

    def as_of(self) -> datetime | None:
        return None  # every triage reads the cluster afresh


class WatchSource:
    """Nodes and non-terminated pods kept in memory by list + watch (``gpuwhy serve``).

    ``start()`` lists and then watches in two threads; ``ready()`` is true once both lists are
    complete (``wait_ready(timeout)`` blocks until then); ``stop()`` ends the watches. A triage
    costs a few requests (the pod or workload, its events, quotas, RuntimeClasses), whatever
    the cluster size; before ready it raises ClusterError: why the first list keeps failing
    (forbidden, unreachable), else "still loading". Watch faults (410 Gone, dropped streams,
    ERROR events) are repaired in the background while the last good state keeps serving.
    """

    def __init__(self, kubeconfig: str | None = None, context: str | None = None,
                 config: TriageConfig = DEFAULT_CONFIG, *, api_client: ApiClient | None = None,
                 cluster: str = "", page_size: int = DEFAULT_PAGE_SIZE,
                 timeout: float = DEFAULT_TIMEOUT, watch_seconds: int = 300,
                 retry_delay: float = 2.0, stale_after: float = 120.0) -> None:
        api_client = metered(api_client or kube.load_api_client(kubeconfig, context))
        self.cluster = cluster or kube.server_url(api_client)
        self.config = config
        self.stale_after = stale_after
        # Each watch is renewed well within the window, so a quiet cluster (no events, no
        # bookmarks) still proves the API server is there.
        self.cache = kube.WatchCache(api_client, timeout=timeout, page_size=page_size,
                                watch_seconds=max(1, min(watch_seconds, int(stale_after / 2))),
                                retry_delay=retry_delay, name=cluster)

    def start(self) -> WatchSource:
        self.cache.start()
        return self

    def stop(self) -> None:
        self.cache.stop()

    def ready(self) -> bool:
        """Listed, and heard from the API server within ``stale_after`` seconds."""
        return self.cache.ready and self.staleness() is None

    def staleness(self) -> str | None:
        """Why the cache does not count as current, for /readyz; None while it does (or is
        still loading its first lists): RBAC refusing a read, a first list that keeps
        failing, or no word from the API server for longer than ``stale_after``."""
        if (trouble := self.cache.trouble()) is not None:
            return trouble
        age = self.cache.age()
        if not self.cache.ready or (age is not None and age <= self.stale_after):
            return None
        return (f"stale: the API server last answered the watch cache {age or 0:.0f} s ago "
                f"(more than {self.stale_after:g} s)")

    def cache_reading(self) -> CacheReading:
        from bot.web.metrics import CacheReading

        return CacheReading(self.cache.age(), self.cache.counts())

    def wait_ready(self, timeout: float) -> bool:
        return self.cache.wait_ready(timeout)

    def pods(self) -> list[K8sObject]:
        """The cached non-terminated pods, for the stuck-pod watch (no request)."""
        return self.cache.all_pods()

    def triage(self, ref: PodRef) -> Verdict:
        return answered("watch", lambda: triage(self.cache.snapshot_for(ref, self.cluster), ref,
                                                self.config))

    def cluster_snapshot(self) -> Snapshot:
        return self.cache.cluster_snapshot(self.cluster)

    def as_of(self) -> datetime | None:
        """None while the watch keeps nodes and pods current (the pod itself is read afresh);
        once it has not heard from the API server for ``stale_after``, when it last did."""
        age = self.cache.age()
        if age is None or age <= self.stale_after:
            return None
        return datetime.now(UTC) - timedelta(seconds=age)
