"""The watch cache (``gpuwhy serve``): nodes, non-terminated pods, the DRA objects and the
gangs (Workloads, PodGroups) kept in memory by list + watch, so a triage from it costs only
the per-ref reads, whatever the cluster size."""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import Counter
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from kubernetes.client import ApiClient

from scoring.objects import K8sObject, object_key
from triage import integrations, queues
from triage.cache import DraStores, IndexedSnapshot, NodeStore, ObjectStore, PodStore
from triage.cluster.groups import read_gang_pods
from triage.cluster.kueue import read_position
from triage.cluster.limits import DEFAULT_PAGE_SIZE, DEFAULT_TIMEOUT
from triage.cluster.reader import ClusterReader, Forbidden, UnknownVersion
from triage.cluster.reflector import MAX_RETRY_DELAY, Reflector
from triage.cluster.refs import RefObjects, events_about, owned_by, read_ref_objects, ref_policy
from triage.cluster.resources import (
    CLAIM_TEMPLATES,
    DEVICE_CLASSES,
    DEVICE_TAINT_RULES,
    JOB_RESOURCES,
    NODES,
    NON_TERMINATED,
    PODS,
    RESOURCE_CLAIMS,
    RESOURCE_SLICES,
    WORKLOADS,
    gang_resources,
    kueue_resource,
)
from triage.errors import ClusterError
from triage.queues import WorkloadRow
from triage.refs import PodRef
from triage.snapshot import rfc3339

log = logging.getLogger(__name__)


class _QueueDiscovery:
    """Asks once whether the cluster serves Kueue, and in which version, then starts the
    watches of its kinds: a cluster without Kueue costs this one request."""

    def __init__(self, cache: WatchCache) -> None:
        self.cache = cache
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.run, name="watch-kueue-discovery",
                                       daemon=True)

    def run(self) -> None:
        cache, stop = self.cache, self.cache.stopped
        failures = 0
        while not stop.is_set():
            try:
                version = cache.reader.served_version(queues.GROUP, queues.KNOWN_VERSIONS)
            except UnknownVersion as exc:
                log.warning("watch cache of cluster %s: %s", cache.name, exc)
                version = None
            except ClusterError as exc:
                # as the reflectors do: backed off, said once per failure and period
                cache.last_error = str(exc)
                failures += 1
                delay = min(cache.retry_delay * 2 ** (failures - 1), MAX_RETRY_DELAY)
                cache.warn(str(exc), delay)
                stop.wait(delay)
                continue
            if version is not None:
                started = tuple(Reflector(cache, kueue_resource(kind, version), "",
                                           cache.queues[kind], optional=True)
                                for kind in CACHED_QUEUE_KINDS)
                cache._reflectors = (*cache._reflectors, *started)
                for reflector in started:
                    reflector.thread.start()
            self.done.set()
            return


# Kueue's kinds the cache keeps: few, but Workloads (slim) grow with the queued jobs.
CACHED_QUEUE_KINDS = ("ResourceFlavor", "ClusterQueue", "LocalQueue", "Cohort", "Workload")
# The kinds a Kueue Workload stands for that a ref may name, by the owner reference's
# apiVersion and kind: a ref to one of them Kueue holds is read with one GET.
QUEUED_OWNERS = {("batch/v1", "Job"): WORKLOADS["Job"],
                 **{(resource.api_version, kind): resource
                    for kind, resource in JOB_RESOURCES.items()}}


class _WorkloadStore(ObjectStore):
    """Kueue's Workloads (slim), each also by the object it stands for (its controller owner
    reference): the Workload of a Job ref is found without a request."""

    def __init__(self) -> None:
        super().__init__(queues.slim_workload)
        self._owners_lock = threading.Lock()
        self._by_owner: dict[tuple[str, str, str, str], K8sObject] = {}
        self._owner_of: dict[tuple[str, str], tuple[str, str, str, str]] = {}

    def replace(self, items: Iterable[K8sObject]) -> None:
        kept = list(items)
        super().replace(kept)
        with self._owners_lock:
            self._by_owner, self._owner_of = {}, {}
            for workload in kept:
                self._index(workload)

    def upsert(self, obj: K8sObject) -> None:
        super().upsert(obj)
        with self._owners_lock:
            self._unindex(object_key(obj))
            self._index(self.slim(obj))

    def remove(self, obj: K8sObject) -> None:
        super().remove(obj)
        with self._owners_lock:
            self._unindex(object_key(obj))

    def owned_by(self, api_version: str, kind: str, namespace: str,
                 name: str) -> K8sObject | None:
        with self._owners_lock:
            return self._by_owner.get((api_version, kind, namespace, name))

    def _index(self, workload: K8sObject) -> None:
        row = WorkloadRow.of(workload)
        if row.owner_kind:
            key = (row.owner_api_version, row.owner_kind, row.namespace, row.owner_name)
            self._by_owner[key] = workload
            self._owner_of[object_key(workload)] = key

    def _unindex(self, workload: tuple[str, str]) -> None:
        if (owner := self._owner_of.pop(workload, None)) is not None:
            self._by_owner.pop(owner, None)


class WatchCache:
    """Nodes, non-terminated pods, the DRA objects (ResourceSlices, ResourceClaims,
    DeviceClasses, ResourceClaimTemplates) and, where served, scheduling.k8s.io's Workloads
    and PodGroups, kept current by list + watch, one thread each."""

    def __init__(self, api_client: ApiClient, timeout: float = DEFAULT_TIMEOUT,
                 page_size: int = DEFAULT_PAGE_SIZE, watch_seconds: int = 300,
                 retry_delay: float = 2.0, name: str = "") -> None:
        """``name``: the cluster's, for the log lines (else the API server's URL)."""
        self.reader = ClusterReader(api_client, timeout)
        self.name = name or self.reader.server
        self._warned: dict[str, float] = {}  # message -> time.monotonic() it was logged
        self._warn_lock = threading.Lock()
        self.page_size = page_size
        self.watch_seconds = watch_seconds
        self.retry_delay = retry_delay
        self.stopped = threading.Event()
        self.last_error: str | None = None
        self.nodes = NodeStore()
        self.pods = PodStore()
        # with their rows; classes and templates are few, and asked by any pending GPU pod
        # on a DRA cluster: cached, not read per triage
        self.dra = DraStores()
        self.slices, self.claims = self.dra.slices, self.dra.claims
        self.classes, self.templates = self.dra.classes, self.dra.templates
        self.taint_rules = self.dra.taint_rules
        self.gang_workloads = ObjectStore()
        self.pod_groups = ObjectStore()
        workloads, pod_groups = gang_resources("")
        # Kueue's objects, by kind: watched only where discovery says the group is served
        self.kueue_workloads = _WorkloadStore()
        self.queues = {kind: self.kueue_workloads if kind == "Workload" else ObjectStore()
                       for kind in CACHED_QUEUE_KINDS}
        self._discovery = _QueueDiscovery(self)
        self._reflectors: tuple[Reflector, ...] = (
            Reflector(self, NODES, "", self.nodes),
            Reflector(self, PODS, NON_TERMINATED, self.pods),
            Reflector(self, RESOURCE_SLICES, "", self.slices, optional=True),
            Reflector(self, RESOURCE_CLAIMS, "", self.claims, optional=True),
            Reflector(self, DEVICE_CLASSES, "", self.classes, optional=True),
            Reflector(self, CLAIM_TEMPLATES, "", self.templates, optional=True),
            Reflector(self, DEVICE_TAINT_RULES, "", self.taint_rules, optional=True),
            Reflector(self, workloads, "", self.gang_workloads, optional=True, discovered=0),
            Reflector(self, pod_groups, "", self.pod_groups, optional=True, discovered=1),
        )

    def start(self) -> None:
        for reflector in self._reflectors:
            reflector.thread.start()
        self._discovery.thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self.stopped.set()
        if self._discovery.thread.is_alive():
            self._discovery.thread.join(timeout)
        for reflector in self._reflectors:
            reflector.close()
        for reflector in self._reflectors:
            if reflector.thread.is_alive():
                reflector.thread.join(timeout)

    def warn(self, message: str, retry_in: float) -> None:
        """One warning per distinct failure and back-off period: every resource fails alike
        when the API server is gone, and each retries on its own."""
        now = time.monotonic()
        with self._warn_lock:
            if now - self._warned.get(message, -math.inf) < retry_in:
                return
            self._warned[message] = now
        log.warning("watch cache of cluster %s: %s (trying again in %.0f s, then less often)",
                    self.name, message, math.ceil(retry_in))

    def trouble(self) -> str | None:
        """Why the cache cannot be trusted now, for /readyz: RBAC refusing a resource it
        must read (at once, however fresh the rest is), or a first list that keeps failing
        (instead of "loading" for ever); None otherwise."""
        required = [r for r in self._reflectors if not r.optional]
        forbidden = [r.failing for r in required if isinstance(r.failing, Forbidden)]
        if forbidden:
            return ", ".join(dict.fromkeys(f"forbidden: {f.verb} {f.resource}"
                                           for f in forbidden)) + f" ({forbidden[0]})"
        failing = next((r.list_error for r in self._reflectors
                        if r.list_error and not r.listed.is_set()), None)
        return None if failing is None else f"unavailable: {failing}"

    @property
    def ready(self) -> bool:
        """True once nodes, pods, the DRA objects (and Kueue's, where served) have each been
        listed."""
        return self._discovery.done.is_set() and all(r.listed.is_set() for r in self._reflectors)

    def wait_ready(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        return self._discovery.done.wait(timeout) and all(
            r.listed.wait(max(deadline - time.monotonic(), 0.0)) for r in self._reflectors)

    def all_pods(self) -> list[K8sObject]:
        """The non-terminated pods as cached, without a request (the stuck-pod watch)."""
        return self.pods.all()

    def last_error_of(self, plural: str) -> str | None:
        """The last failure listing or watching one resource (another's cannot hide it)."""
        return next((r.last_error for r in self._reflectors if r.resource.plural == plural),
                    None)

    @property
    def lists(self) -> int:
        """How many full lists were made (1 per resource, more after 410 Gone)."""
        return sum(r.lists for r in self._reflectors)

    def age(self) -> float | None:
        """Seconds since the API server last answered the watch that heard from it least
        recently (lists, events, bookmarks, a stream's end); None until each has heard once."""
        heard = [r.heard for r in self._reflectors]
        if any(moment is None for moment in heard):
            return None
        return time.monotonic() - min(moment for moment in heard if moment is not None)

    def counts(self) -> dict[str, int]:
        """Objects held, by resource: its plural, with its group where two groups share it
        (Kueue's Workloads and scheduling.k8s.io's)."""
        reflectors = self._reflectors
        shared = Counter(r.resource.plural for r in reflectors)
        return {(r.resource.display if shared[r.resource.plural] > 1 else r.resource.plural):
                len(r.store) for r in reflectors}

    def snapshot_for(self, ref: PodRef, cluster: str = "") -> IndexedSnapshot:
        """The Snapshot for one triage: per-ref reads from the API, nodes and pods from memory."""
        self._check_ready()
        held = self._held_by_kueue(ref)
        found = held or read_ref_objects(self.reader, ref, self.page_size)
        read_gang_pods(self.reader, found, ref, self._gangs(), self.page_size)
        # a workload kept suspended wants no pods: no quota or RuntimeClass can decide
        quotas, runtime_classes = ([], []) if held else ref_policy(
            self.reader, found, ref.namespace, self.page_size)
        return self._view(
            cluster, pods=found.pods, events=found.events, resourcequotas=quotas,
            runtimeclasses=runtime_classes, workloads=found.workloads,
            queue_positions=read_position(self.reader, found, self._queues()),
            problems=tuple(found.problems),
            namespace_pods=tuple(self.pods.in_namespace(ref.namespace)),
            cached_nodes_of_fetched=self.pods.nodes_of(object_key(p) for p in found.pods))

    def cluster_snapshot(self, cluster: str = "") -> IndexedSnapshot:
        """The Snapshot of the whole cluster as cached (the capacity view, ``where``, the App
        Home): nodes, the pods on them, the DRA objects, and as ``pods`` the pods not running
        yet (no node, or bound and Pending), as a cold read lists them; no request."""
        self._check_ready()
        waiting = self.pods.waiting()
        return self._view(cluster, pods=waiting,
                          cached_nodes_of_fetched=self.pods.nodes_of(map(object_key, waiting)))

    def _view(self, cluster: str, **fetched: Any) -> IndexedSnapshot:
        by_node, requested, holdings = self.pods.by_node_view()
        nodes, node_rows, rows_by_name, columns = self.nodes.table()
        return IndexedSnapshot(
            nodes=nodes, node_rows=node_rows, node_rows_by_name=rows_by_name,
            node_rows_columns=columns,
            dra=(dra := self.dra.view()).objects, kept_dra=dra,
            gangs=self._gangs(), queues=self._queues(),
            cluster=cluster or self.reader.server, read_at=rfc3339(datetime.now(UTC)),
            pods_by_node=by_node, requested_by_node=requested, holdings_by_node=holdings,
            cached_rows=self.pods.row_of, cached_hami_usage=self.pods.hami_usage_on, **fetched)

    def _held_by_kueue(self, ref: PodRef) -> RefObjects | None:
        """The ref read with one GET when it names a Job (a JobSet, a RayJob) the cache knows
        Kueue holds: a cached Workload it owns has no quota, it is still suspended and has no
        pods; None otherwise (the ref is read as any other). Its events only if it ran before
        (evicted, re-queued): only then may its controller have recorded a FailedCreate."""
        namespace = ref.namespace
        for (api_version, kind), resource in QUEUED_OWNERS.items():
            cached = self.kueue_workloads.owned_by(api_version, kind, namespace, ref.name)
            workload = None if cached is None else WorkloadRow.of(cached)
            if workload is None or workload.admitted_in:
                continue
            if any(object_key(pod)[1] == ref.name for pod in self.pods.in_namespace(namespace)):
                return None  # a pod of that name: the ref names it
            owner = self.reader.get(resource, namespace, ref.name)
            uid = queues.text(queues.part(owner, "metadata"), "uid")
            if owner is None or uid not in workload.owner_uids or not (owner.get("spec") or {}).get(
                    "suspend") or queues.queue_name(owner) is None or any(
                    owned_by(pod, {uid}) or integrations.is_pod_of(owner, pod)
                    for pod in self.pods.in_namespace(namespace)):
                return None
            found = RefObjects(workloads=[owner])
            if workload.ran_before:
                found.events = events_about(self.reader, namespace, [ref.name], self.page_size,
                                            found.problems)
            return found
        return None

    def _queues(self) -> list[K8sObject]:
        return [obj for kind in CACHED_QUEUE_KINDS for obj in self.queues[kind].view()]

    def _gangs(self) -> list[K8sObject]:
        return [*self.gang_workloads.view(), *self.pod_groups.view()]

    def _check_ready(self) -> None:
        if not self.ready:
            # a first list that keeps failing (forbidden, unreachable) is the answer, not "wait"
            failing = next((r.list_error for r in self._reflectors
                            if r.list_error and not r.listed.is_set()), None)
            raise ClusterError(failing or "gpuwhy is still loading the cluster's nodes and "
                               "pods; try again in a minute.")
