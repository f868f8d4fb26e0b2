"""The watch cache (``gpuwhy serve``): nodes, non-terminated pods, the DRA objects and the
gangs (Workloads, PodGroups) kept in memory by list + watch, so a triage from it costs only
the per-ref reads, whatever the cluster size."""

from __future__ import annotations

import bisect
import logging
import math
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from contextlib import closing, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from functools import cached_property
from typing import Any

import msgspec
from kubernetes.client import ApiClient

from scoring.objects import K8sObject, is_terminated, object_key
from triage import queues
from triage.cluster.errors import Expired, one_line
from triage.cluster.limits import DEFAULT_PAGE_SIZE, DEFAULT_TIMEOUT
from triage.cluster.pages import slim_nodes, slim_pods
from triage.cluster.read import (
    merge_pods,
    read_gang_pods,
    read_position,
    read_ref_objects,
    ref_policy,
)
from triage.cluster.reader import (
    CLAIM_TEMPLATES,
    DEVICE_CLASSES,
    DEVICE_TAINT_RULES,
    NODES,
    NON_TERMINATED,
    PODS,
    RESOURCE_CLAIMS,
    RESOURCE_SLICES,
    SCHEDULING_GROUP,
    ClusterReader,
    Forbidden,
    NotServed,
    Resource,
    UnknownVersion,
    gang_resources,
    kueue_resource,
)
from triage.dumpfile import bulk_parse
from triage.errors import ClusterError
from triage.nodetable import NodeInfo, node_info, node_table
from triage.pods import sum_requests
from triage.refs import PodRef
from triage.slim import slim_node, slim_pod
from triage.snapshot import Snapshot, rfc3339

log = logging.getLogger(__name__)
MAX_RETRY_DELAY = 60.0  # seconds between tries of a list or watch that keeps failing


# -- watch cache ---------------------------------------------------------------------------

class _NodeStore:
    """Nodes by name with their node-table rows (kept current per event), viewed in the API
    server's list order (by name) like a cold list."""

    slim = slim_nodes()  # kept of a node as its page arrives

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._nodes: dict[str, NodeInfo] = {}
        self._in_order = True
        self._view: tuple[list[K8sObject], tuple[NodeInfo, ...]] | None = None

    def replace(self, items: Iterable[K8sObject]) -> None:
        """A full list's nodes, slim already."""
        fresh = {(row := node_info(node)).name: row for node in items}
        with self._lock:
            self._nodes, self._in_order, self._view = fresh, False, None

    def upsert(self, node: K8sObject) -> None:
        row = node_info(slim_node(node))
        with self._lock:
            # replacing a known node keeps its place; only a new one spoils the order
            self._in_order = self._in_order and row.name in self._nodes
            self._nodes[row.name], self._view = row, None

    def remove(self, node: K8sObject) -> None:
        with self._lock:
            if self._nodes.pop(node["metadata"]["name"], None) is not None:
                self._view = None

    def view(self) -> tuple[list[K8sObject], tuple[NodeInfo, ...]]:
        """The nodes and their node table, in order (shared until the next change)."""
        with self._lock:
            if self._view is None:
                if not self._in_order:
                    self._nodes, self._in_order = dict(sorted(self._nodes.items())), True
                rows = tuple(self._nodes.values())
                self._view = [row.raw for row in rows], rows
            return self._view

    def __len__(self) -> int:
        return len(self._nodes)


class _ObjectStore:
    """Whole objects by namespace and name (ResourceSlices, ResourceClaims: small, and read
    in full by the DRA checks; Kueue's objects, Workloads slim); viewed in the API server's
    order."""

    def __init__(self, slim: Callable[[K8sObject], K8sObject] | None = None) -> None:
        self._lock = threading.Lock()
        self._objects: dict[tuple[str, str], K8sObject] = {}
        self.slim: Callable[[K8sObject], K8sObject] = slim or _without_managed_fields

    def replace(self, items: Iterable[K8sObject]) -> None:
        """A full list's objects, slim already."""
        fresh = {object_key(obj): obj for obj in items}
        with self._lock:
            self._objects = fresh

    def upsert(self, obj: K8sObject) -> None:
        kept = self.slim(obj)
        with self._lock:
            self._objects[object_key(obj)] = kept

    def remove(self, obj: K8sObject) -> None:
        with self._lock:
            self._objects.pop(object_key(obj), None)

    def view(self) -> list[K8sObject]:
        with self._lock:
            return [self._objects[key] for key in sorted(self._objects)]

    def __len__(self) -> int:
        return len(self._objects)


def _without_managed_fields(obj: K8sObject) -> K8sObject:
    metadata = {k: v for k, v in (obj.get("metadata") or {}).items() if k != "managedFields"}
    return {**obj, "metadata": metadata}


Amounts = dict[str, Decimal]  # resource -> summed effective request
MAX_SHARED_SPECS = 10_000  # distinct pod specs whose requests are remembered
_encode = msgspec.json.Encoder().encode


class _PodStore:
    """Non-terminated pods, indexed the way a triage asks for them, kept up to date per event.

    By node: immutable tuples in the API server's list order (namespace, name), plus each
    node's summed requests (a pod's share is added on ADDED and taken away on DELETED), so a
    triage takes a shallow copy of two node-keyed maps (O(nodes)) and never walks or copies
    the pods. By namespace: for the quota's holders, also in list order.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pods: dict[tuple[str, str], tuple[K8sObject, Amounts]] = {}
        self._by_node: dict[str, tuple[K8sObject, ...]] = {}
        self._requested: dict[str, Amounts] = {}
        self._by_namespace: dict[str, dict[str, K8sObject]] = {}
        self._unordered: set[str] = set()  # namespaces that gained a pod since last sorted
        self._shares: dict[bytes, Amounts] = {}  # by the spec less its node: see _share

    # what a list keeps of each pod as its page arrives (of a finished one: nothing)
    slim = slim_pods()

    def replace(self, items: Iterable[K8sObject]) -> None:
        """A full list's pods, slim already, indexed in bulk: each node's pods sorted and its
        requests summed once, not per insert."""
        pods: dict[tuple[str, str], tuple[K8sObject, Amounts]] = {}
        on_node: dict[str, list[K8sObject]] = {}
        requested: dict[str, Amounts] = {}
        by_namespace: dict[str, dict[str, K8sObject]] = {}
        for pod in items:
            namespace, name = key = object_key(pod)
            names = by_namespace.setdefault(namespace, {})
            if is_terminated(pod):
                names.pop(name, None)
                continue
            share = self._share(pod)
            pods[key] = (pod, share)
            names[name] = pod
            if node_name := pod.get("spec", {}).get("nodeName"):
                on_node.setdefault(node_name, []).append(pod)
                total = requested.setdefault(node_name, {})
                for resource, amount in share.items():
                    total[resource] = total.get(resource, Decimal(0)) + amount
        by_node = {node: tuple(sorted(listed, key=object_key)) for node, listed in on_node.items()}
        for total in requested.values():
            for resource in [r for r, amount in total.items() if not amount and r != "pods"]:
                del total[resource]
        with self._lock:
            self._pods, self._by_node, self._requested = pods, by_node, requested
            self._by_namespace, self._unordered = by_namespace, set(by_namespace)

    def upsert(self, pod: K8sObject) -> None:
        with self._lock:
            self._discard(object_key(pod))
            self._add(pod)

    def _share(self, pod: K8sObject) -> Amounts:
        """The pod's summed requests (never changed: node totals are new dicts). Only its spec
        decides them, and not where it runs, so a workload's replicas share one answer."""
        spec = pod.get("spec") or {}
        key = _encode({field: value for field, value in spec.items() if field != "nodeName"})
        share = self._shares.get(key)
        if share is None:
            if len(self._shares) >= MAX_SHARED_SPECS:
                self._shares.clear()
            share = self._shares[key] = sum_requests([pod])
        return share

    def remove(self, pod: K8sObject) -> None:
        namespace, name = key = object_key(pod)
        with self._lock:
            self._discard(key)
            self._by_namespace.get(namespace, {}).pop(name, None)

    def _add(self, pod: K8sObject) -> None:
        namespace, name = key = object_key(pod)
        names = self._by_namespace.setdefault(namespace, {})
        if is_terminated(pod):  # it left the field selector: the server sends it as DELETED
            names.pop(name, None)
            return
        small = slim_pod(pod)
        share = self._share(small)
        self._pods[key] = (small, share)
        if name not in names:
            self._unordered.add(namespace)
        names[name] = small  # a known name keeps its place
        if node_name := small.get("spec", {}).get("nodeName"):
            on_node = self._by_node.get(node_name, ())
            at = bisect.bisect_left(on_node, key, key=object_key)
            self._by_node[node_name] = (*on_node[:at], small, *on_node[at:])
            self._requested[node_name] = _add_amounts(self._requested.get(node_name, {}), share, 1)

    def _discard(self, key: tuple[str, str]) -> None:
        """Take the pod out of the node index and sums (the namespace index keeps its slot)."""
        entry = self._pods.pop(key, None)
        if entry is None:
            return
        old, share = entry
        node_name = old.get("spec", {}).get("nodeName")
        if not node_name:
            return
        rest = tuple(p for p in self._by_node.get(node_name, ()) if p is not old)
        if rest:
            self._by_node[node_name] = rest
            self._requested[node_name] = _add_amounts(self._requested[node_name], share, -1)
        else:
            self._by_node.pop(node_name, None)
            self._requested.pop(node_name, None)

    def by_node_view(self) -> tuple[dict[str, tuple[K8sObject, ...]], dict[str, Amounts]]:
        with self._lock:
            return dict(self._by_node), dict(self._requested)

    def nodes_of(self, keys: Iterable[tuple[str, str]]) -> frozenset[str]:
        """The nodes the cached copies of these pods are bound to."""
        with self._lock:
            entries = [self._pods.get(key) for key in keys]
        return frozenset(node for entry in entries if entry is not None
                         if (node := entry[0].get("spec", {}).get("nodeName")))

    def in_namespace(self, namespace: str) -> list[K8sObject]:
        with self._lock:
            names = self._by_namespace.get(namespace, {})
            if namespace in self._unordered:
                names = self._by_namespace[namespace] = dict(sorted(names.items()))
                self._unordered.discard(namespace)
            return list(names.values())

    def all(self) -> list[K8sObject]:
        """Every cached pod: the slim copies themselves, to read and never change."""
        with self._lock:
            return [small for small, _share in self._pods.values()]

    def __len__(self) -> int:
        return len(self._pods)


def _add_amounts(total: Mapping[str, Decimal], share: Mapping[str, Decimal],
                 sign: int) -> Amounts:
    """A new per-node total (the old one may be in a triage's view: never mutate it)."""
    result = dict(total)
    for resource, amount in share.items():
        result[resource] = result.get(resource, Decimal(0)) + sign * amount
        if not result[resource] and resource != "pods":
            del result[resource]
    return result


@dataclass(frozen=True)
class IndexedSnapshot(Snapshot):
    """A Snapshot whose pod indexes come prebuilt from the watch cache.

    ``pods`` holds only what the ref resolved to, fetched fresh; ``pods_on``, ``requested_on``
    and ``pods_in`` answer from the cache's per-node lists and sums and the ref namespace's
    pods, with the base class's meaning and a cold read's order: ``pods_on`` is every pod
    bound to the node (a fresh copy replaces the cached one, wherever that was; a fetched pod
    the cache lacks joins, finished or not), ``requested_on`` sums its non-terminated pods.
    On the few nodes a fetched pod touches (``fetched_nodes``: where it is bound, where the
    cache still has it) both are worked out from the merged list; everywhere else the cache's
    own sums are the answer.
    """

    node_rows: tuple[NodeInfo, ...] = ()  # the cache's node table, kept current per event
    pods_by_node: Mapping[str, tuple[K8sObject, ...]] = field(default_factory=dict)
    requested_by_node: Mapping[str, Amounts] = field(default_factory=dict)
    namespace_pods: tuple[K8sObject, ...] = ()
    cached_nodes_of_fetched: frozenset[str] = frozenset()

    @cached_property
    def node_table(self) -> tuple[NodeInfo, ...]:
        return self.node_rows if self.node_rows or not self.nodes else node_table(self.nodes)

    @cached_property
    def fetched_nodes(self) -> frozenset[str]:
        bound = {name for pod in self.pods if (name := pod.get("spec", {}).get("nodeName"))}
        return self.cached_nodes_of_fetched | bound

    def pods_on(self, node_name: str) -> list[K8sObject]:
        cached = self.pods_by_node.get(node_name, ())
        if node_name not in self.fetched_nodes:
            return list(cached)
        # the cached pods, with the fetched copies in their place; by namespace and name, as
        # the base class orders them
        fresh = self._pods_by_key
        return sorted([*(p for p in cached if object_key(p) not in fresh),
                       *super().pods_on(node_name)], key=object_key)

    def requested_on(self, node_name: str) -> dict[str, Decimal]:
        if node_name in self.fetched_nodes:
            return super().requested_on(node_name)
        return self.requested_by_node.get(node_name) or {"pods": Decimal(0)}

    def pods_in(self, namespace: str) -> list[K8sObject]:
        cached = [p for p in self.namespace_pods if object_key(p)[0] == namespace]
        return merge_pods(cached, super().pods_in(namespace))


class _Reflector:
    """List, then watch from the list's resourceVersion; list again on 410 Gone.

    A dropped stream is watched again from the last resourceVersion seen (bookmarks keep it
    fresh); if that is too old the server says 410 and the store is listed again.
    """

    def __init__(self, cache: WatchCache, resource: Resource, field_selector: str,
                 store: _NodeStore | _PodStore | _ObjectStore, optional: bool = False,
                 discovered: int | None = None) -> None:
        self.cache = cache
        self.resource = resource
        # Which of gang_resources(version) this is, the version asked of discovery before
        # each list (scheduling.k8s.io: alpha, the served version changes with the release)
        self.discovered = discovered
        self.field_selector = field_selector
        self.store = store
        # A cluster may not serve it (no DRA API group): then it is empty, asked again later.
        self.optional = optional
        self.listed = threading.Event()
        self.resource_version = ""
        self.lists = 0
        self.list_error: str | None = None  # why the list that is due keeps failing
        self.heard: float | None = None  # time.monotonic() of the API server's last answer
        self.last_error: str | None = None  # the last failure of this resource's list/watch
        self.failing: ClusterError | None = None  # set from a failure to the next success
        self.failures = 0  # in a row: the retry backs off
        self._response: Any = None
        self.thread = threading.Thread(target=self.run, name=f"watch-{resource.plural}",
                                       daemon=True)

    def run(self) -> None:
        stop = self.cache.stopped
        while not stop.is_set():
            try:
                if not self.resource_version:
                    self._discover()
                    with bulk_parse():  # a list makes objects that live on: GC would re-walk them
                        items, self.resource_version = self.cache.reader.list_all(
                            self.resource, field_selector=self.field_selector,
                            page_size=self.cache.page_size, keep=self.store.slim)
                        self.store.replace(items)
                        del items
                    self.heard = time.monotonic()
                    self.lists += 1
                    self.list_error = None
                    self._recovered()
                    self.listed.set()
                self._watch()
            except Expired:
                self.resource_version = ""
            except NotServed:
                if not self.optional:
                    raise
                self.store.replace([])
                self.heard = time.monotonic()
                self.resource_version = ""
                self.listed.set()
                stop.wait(self.cache.watch_seconds)
            except ClusterError as exc:
                if stop.is_set():
                    return
                self.cache.last_error = self.last_error = str(exc)
                if not self.resource_version:
                    self.list_error = str(exc)
                self.failing = exc
                self.failures += 1
                delay = min(self.cache.retry_delay * 2 ** (self.failures - 1), MAX_RETRY_DELAY)
                self.cache.warn(str(exc), delay)
                stop.wait(delay)
            except Exception:  # a dead thread would freeze the cache for good
                if stop.is_set():
                    return
                log.exception("watch cache: watching %s failed; listing again",
                              self.resource.plural)
                self.resource_version = ""
                stop.wait(self.cache.retry_delay)

    def _discover(self) -> None:
        if self.discovered is None:
            return
        version = self.cache.reader.preferred_version(SCHEDULING_GROUP)
        if version is None:
            raise NotServed(f"{SCHEDULING_GROUP} is not served")
        self.resource = gang_resources(version)[self.discovered]

    def _watch(self) -> None:
        events = self.cache.reader.watch(
            self.resource, self.resource_version, field_selector=self.field_selector,
            timeout_seconds=self.cache.watch_seconds, on_open=self._opened)
        try:
            with closing(events):  # an ERROR event ends the stream here: free its connection
                for event in events:
                    self.heard = time.monotonic()  # bookmarks too: the server is there
                    self._apply(event)
            self.heard = time.monotonic()  # the server ended the stream at timeoutSeconds
        finally:
            self._response = None

    def _apply(self, event: K8sObject) -> None:
        kind, obj = event.get("type"), event.get("object") or {}
        if kind == "ERROR":
            if obj.get("code") == 410:
                raise Expired(obj.get("message", ""))
            raise ClusterError(f"The Kubernetes API server at {self.cache.reader.server} "
                               f"ended the watch of {self.resource.plural}: "
                               f"{one_line(str(obj.get('message', '')))}.")
        if kind == "ADDED" or kind == "MODIFIED":
            self.store.upsert(obj)
        elif kind == "DELETED":
            self.store.remove(obj)
        self.resource_version = obj.get("metadata", {}).get("resourceVersion") or \
            self.resource_version

    def _recovered(self) -> None:
        self.failing, self.failures = None, 0

    def _opened(self, response: Any) -> None:
        self.heard = time.monotonic()
        self._recovered()
        self._response = response
        if self.cache.stopped.is_set():
            self.close()

    def close(self) -> None:
        """Unblock a stream that is waiting for the server (``stop()``)."""
        response = self._response
        if response is None:
            return
        with suppress(ValueError, RuntimeError, OSError):  # the stream ended on its own
            response.shutdown()


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
                started = tuple(_Reflector(cache, kueue_resource(kind, version), "",
                                           cache.queues[kind], optional=True)
                                for kind in CACHED_QUEUE_KINDS)
                cache._reflectors = (*cache._reflectors, *started)
                for reflector in started:
                    reflector.thread.start()
            self.done.set()
            return


# Kueue's kinds the cache keeps: few, but Workloads (slim) grow with the queued jobs.
CACHED_QUEUE_KINDS = ("ResourceFlavor", "ClusterQueue", "LocalQueue", "Cohort", "Workload")


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
        self.nodes = _NodeStore()
        self.pods = _PodStore()
        self.slices = _ObjectStore()
        self.claims = _ObjectStore()
        # few, and asked by any pending GPU pod on a DRA cluster: cached, not read per triage
        self.classes = _ObjectStore()
        self.templates = _ObjectStore()
        self.taint_rules = _ObjectStore()
        self.gang_workloads = _ObjectStore()
        self.pod_groups = _ObjectStore()
        workloads, pod_groups = gang_resources("")
        # Kueue's objects, by kind: watched only where discovery says the group is served
        self.queues = {kind: _ObjectStore(queues.slim_workload if kind == "Workload" else None)
                       for kind in CACHED_QUEUE_KINDS}
        self._discovery = _QueueDiscovery(self)
        self._reflectors: tuple[_Reflector, ...] = (
            _Reflector(self, NODES, "", self.nodes),
            _Reflector(self, PODS, NON_TERMINATED, self.pods),
            _Reflector(self, RESOURCE_SLICES, "", self.slices, optional=True),
            _Reflector(self, RESOURCE_CLAIMS, "", self.claims, optional=True),
            _Reflector(self, DEVICE_CLASSES, "", self.classes, optional=True),
            _Reflector(self, CLAIM_TEMPLATES, "", self.templates, optional=True),
            _Reflector(self, DEVICE_TAINT_RULES, "", self.taint_rules, optional=True),
            _Reflector(self, workloads, "", self.gang_workloads, optional=True, discovered=0),
            _Reflector(self, pod_groups, "", self.pod_groups, optional=True, discovered=1),
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
        if not self.ready:
            # a first list that keeps failing (forbidden, unreachable) is the answer, not "wait"
            failing = next((r.list_error for r in self._reflectors
                            if r.list_error and not r.listed.is_set()), None)
            raise ClusterError(failing or "gpuwhy is still loading the cluster's nodes and "
                               "pods; try again in a minute.")
        found = read_ref_objects(self.reader, ref, self.page_size)
        gangs = [*self.gang_workloads.view(), *self.pod_groups.view()]
        read_gang_pods(self.reader, found, ref, gangs, self.page_size)
        quotas, runtime_classes = ref_policy(self.reader, found, ref.namespace, self.page_size)
        kueue = [obj for kind in CACHED_QUEUE_KINDS for obj in self.queues[kind].view()]
        by_node, requested = self.pods.by_node_view()
        nodes, node_rows = self.nodes.view()
        return IndexedSnapshot(
            nodes=nodes, node_rows=node_rows, pods=found.pods, events=found.events,
            resourcequotas=quotas, runtimeclasses=runtime_classes, workloads=found.workloads,
            dra=[*self.classes.view(), *self.templates.view(), *self.claims.view(),
                 *self.slices.view(), *self.taint_rules.view()],
            gangs=gangs,
            queues=kueue, queue_positions=read_position(self.reader, found, kueue),
            cluster=cluster or self.reader.server, problems=tuple(found.problems),
            read_at=rfc3339(datetime.now(UTC)),
            pods_by_node=by_node,
            requested_by_node=requested,
            namespace_pods=tuple(self.pods.in_namespace(ref.namespace)),
            cached_nodes_of_fetched=self.pods.nodes_of(object_key(p) for p in found.pods))
