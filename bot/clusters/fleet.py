"""Several clusters, one bot: the registry of named clusters (config ``clusters``), each with
its own triage source, set up side by side so that one failing leaves the others answering.

A name leads to a kubeconfig (and context), the pod's own service account, or a dump
directory. ``gpuwhy serve`` keeps one watch cache per live cluster; ``gpuwhy triage
--cluster`` reads the one it names cold.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime

from bot.clusters.sources import LiveSource, SnapshotSource, TriageSource, WatchSource
from bot.config import BotConfig, ClusterSource
from scoring.verdict import Verdict
from triage import cluster as kube  # the kubernetes client is loaded on first use
from triage.cluster.limits import DEFAULT_PAGE_SIZE, DEFAULT_TIMEOUT
from triage.config import TriageConfig
from triage.errors import ClusterError
from triage.refs import PodRef, RefError, parse_ref
from triage.snapshot import Snapshot, SnapshotError

log = logging.getLogger(__name__)
_CLUSTER_NAME = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
USAGE = ("usage: /gpuwhy [CLUSTER] NAMESPACE/POD  (also: NAMESPACE POD, -n NAMESPACE POD, "
         "pod/POD -n NAMESPACE)")


class UnknownClusterError(RefError):
    """A question names a cluster gpuwhy does not know; the message lists the known ones."""

    def __init__(self, name: str, known: Iterable[str]) -> None:
        self.name = name
        super().__init__(f"There is no cluster `{name}`. Known clusters: "
                         f"{', '.join(sorted(known)) or 'none'}.")


class UnavailableSource:
    """A cluster that could not be set up (bad kubeconfig, unreadable dump): every answer is
    the one sentence saying why, while the other clusters answer as usual."""

    def __init__(self, cluster: str, reason: str) -> None:
        self.cluster = cluster
        self.reason = reason

    def triage(self, ref: PodRef) -> Verdict:
        raise ClusterError(f"Cluster {self.cluster} is unavailable: {self.reason}")

    def cluster_snapshot(self) -> Snapshot:
        raise ClusterError(f"Cluster {self.cluster} is unavailable: {self.reason}")

    def as_of(self) -> datetime | None:
        return None

    def ready(self) -> bool:
        return False


@dataclass(frozen=True)
class Fleet:
    """Named triage sources; ``default`` answers questions that name no cluster."""

    sources: Mapping[str, TriageSource]
    default: str

    @classmethod
    def single(cls, source: TriageSource) -> Fleet:
        """The one cluster of ``--kubeconfig`` / ``--snapshot``, under its own name."""
        return cls({source.cluster: source}, source.cluster)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.sources)

    @property
    def several(self) -> bool:
        """More than one cluster: answers say which one they are about."""
        return len(self.sources) > 1

    def source(self, name: str | None = None) -> TriageSource:
        """The source of ``name`` (default: the default cluster); UnknownClusterError if none."""
        chosen = self.default if name is None else name
        if chosen not in self.sources:
            raise UnknownClusterError(chosen, self.names)
        return self.sources[chosen]

    def wrapped(self, wrap: Callable[[str, TriageSource], TriageSource]) -> Fleet:
        """The same clusters, each source wrapped by ``wrap(name, source)`` (e.g. to add its
        own Prometheus's telemetry to its answers)."""
        return Fleet({name: wrap(name, source) for name, source in self.sources.items()},
                     self.default)

    def stop(self) -> None:
        for source in self.sources.values():
            if isinstance(source, WatchSource):
                source.stop()


def split_cluster(text: str, clusters: Iterable[str]) -> tuple[str | None, str]:
    """``[CLUSTER] REF`` → (cluster or None, the ref's text).

    A first word that is a known cluster, followed by a ref, names the cluster ("prod
    research/full"); "research full" stays namespace + pod when "full" alone is no ref. A first
    word that could be a cluster but is none, followed by a ref, while the whole is no ref, is
    an unknown cluster when there are several (UnknownClusterError).
    """
    known = set(clusters)
    first, _, rest = text.strip().partition(" ")
    if not rest.strip() or not _CLUSTER_NAME.fullmatch(first):
        return None, text
    if _is_ref(rest):
        if first in known:
            return first, rest
        if len(known) > 1 and not _is_ref(text):
            raise UnknownClusterError(first, known)
    return None, text


def _is_ref(text: str) -> bool:
    try:
        parse_ref(text)
    except RefError:
        return False
    return True


# -- building the registry from the configuration (I/O: kubeconfigs, dump directories) --------

def _build_one(name: str, where: ClusterSource, triage_config: TriageConfig, *, watch: bool,
               page_size: int, timeout: float, stale_after: float,
               one_shot: bool) -> TriageSource:
    """One cluster's source; a cluster that cannot be set up becomes an UnavailableSource."""
    try:
        if where.snapshot is not None:
            return SnapshotSource(where.snapshot, triage_config, cluster=name)
        api_client = kube.load_api_client(where.kubeconfig, where.context,
                                     in_cluster=where.in_cluster)
        if watch:
            return WatchSource(config=triage_config, api_client=api_client, cluster=name,
                               page_size=page_size, timeout=timeout,
                               stale_after=stale_after).start()
        return LiveSource(config=triage_config, api_client=api_client, cluster=name,
                          page_size=page_size, timeout=timeout, one_shot=one_shot)
    except (ClusterError, SnapshotError) as exc:
        log.warning("cluster %s (%s) is unavailable: %s", name, where.kind, exc)
        return UnavailableSource(name, str(exc))


def build_fleet(config: BotConfig, *, watch: bool, page_size: int = DEFAULT_PAGE_SIZE,
                timeout: float = DEFAULT_TIMEOUT,
                only: str | None = None, one_shot: bool = False) -> Fleet:
    """The configured clusters (``only``: just that one), set up in parallel: reading a large
    dump or a slow kubeconfig does not hold the others back, and none failing stops them.
    ``one_shot``: for a process that answers once (``gpuwhy triage --cluster``), the live
    sources are LiveSource(one_shot=True)."""
    wanted = {name: where for name, where in config.clusters.items()
              if only is None or name == only}
    if only is not None and not wanted:
        raise UnknownClusterError(only, config.clusters)
    def build(item: tuple[str, ClusterSource]) -> TriageSource:
        return _build_one(*item, config.triage, watch=watch, page_size=page_size,
                          timeout=timeout, stale_after=config.watch.stale_after_seconds,
                          one_shot=one_shot)

    with ThreadPoolExecutor(max(1, min(8, len(wanted))),
                            thread_name_prefix="gpuwhy-cluster") as pool:
        sources = dict(zip(wanted, pool.map(build, wanted.items()), strict=True))
    default = only or config.default_cluster or next(iter(wanted))
    return Fleet(sources, default)
