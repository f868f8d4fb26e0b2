"""A small Kubernetes API server for tests: serves a dump directory at the real API paths.

The real ``kubernetes`` client (and kubectl) talks HTTP to it on 127.0.0.1. It answers
discovery (the legacy documents), get, list (fieldSelector, labelSelector, limit/continue) and
watch (ADDED/MODIFIED/DELETED/BOOKMARK, ERROR with a 410 Status) the way kube-apiserver does:
list items carry no kind/apiVersion, lists are kind ``<Kind>List`` with a resourceVersion, a
too-old continue token or watch resourceVersion is 410.
Faults can be injected per request (delay, Status error, connection reset, truncated JSON),
open watch streams can be cut or ended with an ERROR event, every request is counted (with the
credentials it carried), SelfSubjectAccessReviews are answered (allowed unless ``deny``-ed; a
review stores nothing), and any write other than a ``dryRun=All`` create of a Pod is recorded
as unexpected: ``FakeKubeAPI.__exit__`` fails the test when one happened. With ``tls`` it
serves HTTPS (``make_certificates`` writes a CA and a certificate for 127.0.0.1).
"""

from __future__ import annotations

import base64
import bisect
import copy
import datetime
import ipaddress
import json
import re
import shutil
import socket
import ssl
import struct
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import parse_qsl, urlsplit

Obj = dict[str, Any]
Key = tuple[str, str]
ACCESS_REVIEW_PATH = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"


KUEUE_GROUP = "kueue.x-k8s.io"
KUEUE_VERSIONS = ("v1beta2", "v1beta1")  # what Kueue's CRDs serve, preferred first
KUEUE_V1BETA1 = f"{KUEUE_GROUP}/v1beta1"


@dataclass(frozen=True)
class Kind:
    plural: str
    kind: str
    group_version: str
    namespaced: bool = True

    @property
    def store(self) -> str:
        """Where its objects are kept: by plural, as a CRD's versions share them, qualified by
        the group where two groups use the same plural."""
        group = self.group_version.rpartition("/")[0]
        return f"{self.plural}.{group}" if self.plural in SHARED_PLURALS else self.plural


# Kueue's integrations, JobSet's and KubeRay's CRDs: served where the dump has such objects.
JOB_KINDS = (Kind("jobsets", "JobSet", "jobset.x-k8s.io/v1alpha2"),
             Kind("rayjobs", "RayJob", "ray.io/v1"))
KINDS = (
    Kind("nodes", "Node", "v1", namespaced=False),
    Kind("pods", "Pod", "v1"),
    Kind("events", "Event", "v1"),
    Kind("resourcequotas", "ResourceQuota", "v1"),
    Kind("runtimeclasses", "RuntimeClass", "node.k8s.io/v1", namespaced=False),
    Kind("persistentvolumeclaims", "PersistentVolumeClaim", "v1"),
    Kind("deployments", "Deployment", "apps/v1"),
    Kind("replicasets", "ReplicaSet", "apps/v1"),
    Kind("statefulsets", "StatefulSet", "apps/v1"),
    Kind("daemonsets", "DaemonSet", "apps/v1"),
    Kind("jobs", "Job", "batch/v1"),
    Kind("deviceclasses", "DeviceClass", "resource.k8s.io/v1", namespaced=False),
    Kind("resourceclaims", "ResourceClaim", "resource.k8s.io/v1"),
    Kind("resourceclaimtemplates", "ResourceClaimTemplate", "resource.k8s.io/v1"),
    Kind("resourceslices", "ResourceSlice", "resource.k8s.io/v1", namespaced=False),
    # Kueue's CRDs serve both versions, v1beta2 stored (v1beta2 listed last: the storage version)
    *(Kind(plural, kind, f"{KUEUE_GROUP}/{version}", namespaced)
      for version in reversed(KUEUE_VERSIONS) for plural, kind, namespaced in (
          ("resourceflavors", "ResourceFlavor", False), ("clusterqueues", "ClusterQueue", False),
          ("localqueues", "LocalQueue", True), ("workloads", "Workload", True),
          ("cohorts", "Cohort", False), ("workloadpriorityclasses", "WorkloadPriorityClass",
                                         False))),
    Kind("devicetaintrules", "DeviceTaintRule", "resource.k8s.io/v1beta2", namespaced=False),
    *JOB_KINDS,
    # gangs: alpha, served in 1.36 only with --runtime-config=scheduling.k8s.io/v1alpha2=true
    Kind("workloads", "Workload", "scheduling.k8s.io/v1alpha2"),
    Kind("podgroups", "PodGroup", "scheduling.k8s.io/v1alpha2"),
)
BY_KIND = {k.kind: k for k in KINDS}
# By API group and kind: Kueue's Workload is not scheduling.k8s.io's (the last version listed
# of a group is the one stored)
BY_GROUP_KIND = {(k.group_version.rpartition("/")[0], k.kind): k for k in KINDS}
# Plurals two groups share ("workloads"): those groups' objects are stored apart
SHARED_PLURALS = frozenset(plural for plural in {k.plural for k in KINDS}
                           if len({k.group_version.partition("/")[0] for k in KINDS
                                   if k.plural == plural}) > 1)
# Discovery only: a review is created, never stored, listed or read back.
ACCESS_REVIEWS = Kind("selfsubjectaccessreviews", "SelfSubjectAccessReview",
                      "authorization.k8s.io/v1", namespaced=False)
SHORT_NAMES = {"nodes": ["no"], "pods": ["po"], "events": ["ev"], "resourcequotas": ["quota"],
               "persistentvolumeclaims": ["pvc"], "deployments": ["deploy"],
               "replicasets": ["rs"], "statefulsets": ["sts"], "daemonsets": ["ds"]}
BY_PATH = {(k.group_version, k.plural): k for k in KINDS}
DUMP_LISTS = ("nodes", "pods", "events", "resourcequotas", "runtimeclasses", "workloads", "dra",
              "gangs", "queues")


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    query: dict[str, str]
    authorization: str = ""


@dataclass
class Fault:
    """What to do instead of answering a matching request, ``times`` times."""

    kind: str  # "delay" | "status" | "reset" | "truncate"
    method: str = "GET"
    path: str = ""  # regular expression searched in the request path
    query: str = ""  # substring of the raw query string
    times: int = 1
    seconds: float = 0.0
    status: Obj = field(default_factory=dict)

    def matches(self, method: str, path: str, raw_query: str) -> bool:
        return (self.times > 0 and method == self.method and re.search(self.path, path) is not None
                and self.query in raw_query)


@dataclass
class Change:
    resource_version: int
    kind: Kind
    old: Obj | None
    new: Obj
    deleted: bool = False


def status_body(code: int, reason: str, message: str, details: Obj | None = None) -> Obj:
    body: Obj = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                 "message": message, "reason": reason, "code": code}
    if details is not None:
        body["details"] = details
    return body


def forbidden_status(verb: str, plural: str, group: str = "", namespace: str = "",
                     name: str = "",
                     user: str = "system:serviceaccount:gpuwhy:gpuwhy") -> Obj:
    """The Status body kube-apiserver's RBAC authorizer returns."""
    subject = f'{plural} "{name}"' if name else plural
    scope = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
    message = (f'{subject} is forbidden: User "{user}" cannot {verb} resource "{plural}" '
               f'in API group "{group}" {scope}')
    details: Obj = {"kind": plural}
    if name:
        details["name"] = name
    if group:
        details["group"] = group
    return status_body(403, "Forbidden", message, details)


class FakeKubeAPI:
    def __init__(self, dump_dir: str | Path | None = None, bookmark_interval: float = 0.2,
                 tls: ssl.SSLContext | None = None, unserved: Iterable[str] = (),
                 kueue: tuple[str, ...] | None = None) -> None:
        self._lock = threading.Condition()
        # The Kueue versions served, preferred first: by default both where the dump has a
        # queues.json (Kueue installed), none where it has not.
        if kueue is None:
            kueue = KUEUE_VERSIONS if dump_dir is not None and (
                Path(dump_dir) / "queues.json").exists() else ()
        self.kueue = kueue
        # API groups/versions answered 404, like a cluster without them (resource.k8s.io/v1)
        self.unserved = frozenset(unserved) | {f"{KUEUE_GROUP}/{version}"
                                               for version in KUEUE_VERSIONS
                                               if version not in kueue} | {
            kind.group_version for kind in JOB_KINDS
            if not _dump_has(dump_dir, "workloads.json", kind.kind)}
        self._objects: dict[str, dict[Key, Obj]] = {k.store: {} for k in KINDS}
        # each object's list-item JSON, encoded once when stored (kube-apiserver serves lists
        # from its watch cache; re-encoding every page in Python would time this server)
        self._encoded: dict[str, dict[Key, bytes]] = {k.store: {} for k in KINDS}
        self._sorted_keys: dict[str, list[Key]] = {}
        # pods by spec.nodeName, as kube-apiserver's watch cache indexes them for the kubelet's
        # (and a pinned cold read's) fieldSelector=spec.nodeName=...
        self._pods_on: dict[str, set[Key]] = {}
        self._history: list[Change] = []
        self._resource_version = 1000
        self._compacted = 0
        self._drop_generation = 0
        self._drop_error: Obj | None = None
        self._stopping = threading.Event()
        self.bookmark_interval = bookmark_interval
        self.faults: list[Fault] = []
        self.requests: list[Request] = []
        self.sent: list[tuple[Request, int]] = []  # each answer's body size in bytes
        self.unexpected_writes: list[Request] = []
        self.dry_runs: list[Obj] = []
        self.denied: set[tuple[str, str, str]] = set()  # (verb, group, resource)
        self.access_reviews: list[Obj] = []  # the resourceAttributes asked about
        self.open_watches = 0
        if dump_dir is not None:
            self.load(Path(dump_dir))
        self._server = _QuietServer(("127.0.0.1", 0), _handler_for(self))
        self.tls = tls
        if tls is not None:
            self._server.socket = tls.wrap_socket(self._server.socket, server_side=True)
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,),
                                        daemon=True)

    # -- lifecycle ------------------------------------------------------------------

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"{'https' if self.tls else 'http'}://{host!s}:{port}"

    def start(self) -> FakeKubeAPI:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        with self._lock:
            self._lock.notify_all()
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FakeKubeAPI:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
        if exc_type is None:
            assert not self.unexpected_writes, f"writes to the cluster: {self.unexpected_writes}"

    def kubeconfig(self, path: Path, namespace: str = "default",
                   ca_file: Path | None = None) -> Path:
        """A kubeconfig file pointing at this server, with a bearer token."""
        cluster: Obj = {"server": self.url}
        if ca_file is not None:
            cluster["certificate-authority"] = str(ca_file)
        config = {
            "apiVersion": "v1", "kind": "Config", "current-context": "fake",
            "clusters": [{"name": "fake", "cluster": cluster}],
            "users": [{"name": "tester", "user": {"token": "test-token"}}],
            "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "tester",
                                                       "namespace": namespace}}],
        }
        path.write_text(json.dumps(config))
        return path

    # -- state ----------------------------------------------------------------------

    def load(self, directory: Path) -> None:
        for name in DUMP_LISTS:
            file = directory / f"{name}.json"
            if file.exists():
                for item in json.loads(file.read_text())["items"]:
                    self._store(item)
        rvs = [int(o["metadata"].get("resourceVersion") or 0)
               for objects in self._objects.values() for o in objects.values()]
        self._resource_version = max([self._resource_version, *rvs])

    def add_many(self, items: Iterable[Obj]) -> None:
        """Bulk load without history (generated clusters)."""
        with self._lock:
            for item in items:
                self._resource_version += 1
                item.setdefault("metadata", {})["resourceVersion"] = str(self._resource_version)
                self._store(item)

    def _store(self, item: Obj) -> None:
        kind, key = _kind_of(item), _key(item)
        if kind.plural == "pods":
            self._unindex_pod(key)
            self._pods_on.setdefault(_field(item, "spec.nodeName"), set()).add(key)
        self._objects[kind.store][key] = item
        self._encoded[kind.store][key] = json.dumps(_as_list_item(item)).encode()
        self._sorted_keys.pop(kind.store, None)

    def apply(self, item: Obj) -> Obj:
        """Create or replace an object, as a controller would; watchers see it."""
        with self._lock:
            kind = _kind_of(item)
            old = self._objects[kind.store].get(_key(item))
            new = copy.deepcopy(item)
            self._resource_version += 1
            new["metadata"]["resourceVersion"] = str(self._resource_version)
            self._store(new)
            self._history.append(Change(self._resource_version, kind, old, new))
            self._lock.notify_all()
            return new

    def delete(self, kind_name: str, namespace: str, name: str, group: str = "") -> None:
        """Delete an object, as a controller would (``group``: of a kind two groups name)."""
        with self._lock:
            kind = BY_GROUP_KIND[(group, kind_name)] if group else BY_KIND[kind_name]
            if kind.plural == "pods":
                self._unindex_pod((namespace, name))
            old = self._objects[kind.store].pop((namespace, name))
            del self._encoded[kind.store][(namespace, name)]
            self._sorted_keys.pop(kind.store, None)
            self._resource_version += 1
            gone = copy.deepcopy(old)
            gone["metadata"]["resourceVersion"] = str(self._resource_version)
            self._history.append(Change(self._resource_version, kind, old, gone, deleted=True))
            self._lock.notify_all()

    def _unindex_pod(self, key: Key) -> None:
        old = self._objects["pods"].get(key)
        if old is not None:
            self._pods_on.get(_field(old, "spec.nodeName"), set()).discard(key)

    def get_object(self, kind_name: str, namespace: str, name: str) -> Obj:
        return self._objects[BY_KIND[kind_name].store][(namespace, name)]

    def compact(self) -> None:
        """Forget history: older watch resourceVersions and continue tokens become 410 Gone."""
        with self._lock:
            self._resource_version += 1  # as if another write happened, then etcd compacted
            self._compacted = self._resource_version
            self._history.clear()
            self._lock.notify_all()

    def drop_watches(self, error: Obj | None = None) -> None:
        """Cut every open watch stream mid-way, as a restarting API server or a proxy does;
        with ``error`` (a Status), end each one with that ERROR event instead."""
        with self._lock:
            self._drop_generation += 1
            self._drop_error = error
            self._lock.notify_all()

    def inject(self, kind: str, path: str = "", *, method: str = "GET", query: str = "",
               times: int = 1, seconds: float = 0.0, status: Obj | None = None) -> Fault:
        fault = Fault(kind, method, path, query, times, seconds, status or {})
        self.faults.append(fault)
        return fault

    def count(self, since: int = 0) -> int:
        """Requests since position ``since``, not counting watch streams (they run on their own)."""
        return sum(1 for r in self.requests[since:] if r.query.get("watch") not in ("1", "true"))

    def mark(self) -> int:
        return len(self.requests)

    def watch_requests(self) -> list[Request]:
        return [r for r in self.requests if r.query.get("watch") in ("1", "true")]

    # -- request handling -----------------------------------------------------------

    def take_fault(self, method: str, path: str, raw_query: str) -> Fault | None:
        with self._lock:
            for fault in self.faults:
                if fault.matches(method, path, raw_query):
                    fault.times -= 1
                    return fault
        return None

    def route(self, path: str) -> tuple[Kind, str, str] | None:
        """(kind, namespace, name) for an API path, or None."""
        parts = [p for p in path.split("/") if p]
        if parts[:2] == ["api", "v1"]:
            group_version, rest = "v1", parts[2:]
        elif parts[:1] == ["apis"] and len(parts) >= 3:
            group_version, rest = f"{parts[1]}/{parts[2]}", parts[3:]
        else:
            return None
        namespace = ""
        if len(rest) >= 3 and rest[0] == "namespaces":
            namespace, rest = rest[1], rest[2:]
        if not 1 <= len(rest) <= 2 or (group_version, rest[0]) not in BY_PATH or (
                group_version in self.unserved):
            return None
        kind = BY_PATH[(group_version, rest[0])]
        if namespace and not kind.namespaced:
            return None
        return kind, namespace, rest[1] if len(rest) == 2 else ""

    def read(self, kind: Kind, namespace: str, name: str) -> tuple[int, Obj]:
        with self._lock:
            item = self._objects[kind.store].get((namespace, name))
        if item is None:
            group = kind.group_version.rpartition("/")[0]
            resource = f"{kind.plural}.{group}" if group else kind.plural
            return 404, status_body(404, "NotFound", f'{resource} "{name}" not found',
                                    {"name": name, "kind": kind.plural,
                                     **({"group": group} if group else {})})
        return 200, _served_as(kind, item)

    def list_items(self, kind: Kind, namespace: str,
                   query: Mapping[str, str]) -> tuple[int, Obj | bytes]:
        """A list answer: the Status of a 410, or the list's JSON (from the stored encodings)."""
        matches = _selector(query.get("fieldSelector", ""), query.get("labelSelector", ""))
        limit = int(query.get("limit") or 0)
        with self._lock:
            list_rv = self._resource_version
            start: Key = ("", "")
            if token := query.get("continue"):
                state = json.loads(base64.b64decode(token))
                if state["rv"] < self._compacted:
                    return 410, status_body(
                        410, "Expired",
                        "The provided continue parameter is too old to display a consistent "
                        "list result. You can start a new list without the continue parameter.")
                list_rv, start = state["rv"], (state["ns"], state["name"])
            objects, encoded = self._objects[kind.store], self._encoded[kind.store]
            keys = self._sorted_keys.get(kind.store)
            if (node := _node_of(kind, query.get("fieldSelector", ""))) is not None:
                keys = sorted(self._pods_on.get(node, ()))
            elif keys is None:
                keys = self._sorted_keys[kind.store] = sorted(objects)
            position = bisect.bisect_right(keys, start) if query.get("continue") else 0
            items: list[bytes] = []
            last: Key | None = None
            next_key: Key | None = None
            for key in keys[position:]:
                if namespace and key[0] != namespace:
                    continue
                if not matches(objects[key]):
                    continue
                if limit and len(items) == limit:
                    next_key = last
                    break
                items.append(encoded[key] if kind.group_version != KUEUE_V1BETA1 else
                             json.dumps(_as_list_item(as_v1beta1(objects[key]))).encode())
                last = key
        metadata: Obj = {"resourceVersion": str(list_rv)}
        if next_key is not None:
            metadata["continue"] = base64.b64encode(json.dumps(
                {"rv": list_rv, "ns": next_key[0], "name": next_key[1]}).encode()).decode()
        return 200, _list_json({"kind": f"{kind.kind}List", "apiVersion": kind.group_version,
                                "metadata": metadata}, items)

    def watch(self, kind: Kind, namespace: str, query: Mapping[str, str]) -> Iterator[Obj | None]:
        """Watch events; None means "cut the connection now"."""
        since = int(query.get("resourceVersion") or 0)
        with self._lock:
            generation = self._drop_generation
            self.open_watches += 1
        try:
            yield from self._watch_loop(kind, namespace, query, generation, since)
        finally:
            with self._lock:
                self.open_watches -= 1

    def _watch_loop(self, kind: Kind, namespace: str, query: Mapping[str, str],
                    generation: int, since: int) -> Iterator[Obj | None]:
        matches = _selector(query.get("fieldSelector", ""), query.get("labelSelector", ""))
        bookmarks = query.get("allowWatchBookmarks") in ("true", "1")
        deadline = time.monotonic() + float(query.get("timeoutSeconds") or 1800)
        last_bookmark = time.monotonic()
        while True:
            with self._lock:
                changes = self._changes_since(since, kind)
                if not changes and not self._interrupted(generation, since):
                    now = time.monotonic()
                    wake = deadline
                    if bookmarks:
                        wake = min(wake, last_bookmark + self.bookmark_interval)
                    self._lock.wait(max(wake - now, 0.0))
                    changes = self._changes_since(since, kind)
                if self._stopping.is_set():
                    return
                dropped = self._drop_generation != generation
                error = self._drop_error
                expired = since < self._compacted
                current = self._resource_version
                compacted = self._compacted
            if dropped:
                yield None if error is None else {"type": "ERROR", "object": error}
                return
            if expired:
                yield {"type": "ERROR", "object": status_body(
                    410, "Expired", f"too old resource version: {since} ({compacted})")}
                return
            for change in changes:
                since = change.resource_version
                event = _watch_event(change, namespace, matches)
                if event is not None:
                    yield {**event, "object": _served_as(kind, event["object"])}
            now = time.monotonic()
            if now >= deadline:
                return
            if bookmarks and now - last_bookmark >= self.bookmark_interval:
                since, last_bookmark = max(since, current), now
                yield {"type": "BOOKMARK", "object": {
                    "kind": kind.kind, "apiVersion": kind.group_version,
                    "metadata": {"resourceVersion": str(since)}}}

    def _changes_since(self, since: int, kind: Kind) -> list[Change]:
        return [c for c in self._history
                if c.resource_version > since and c.kind.store == kind.store]

    def _interrupted(self, generation: int, since: int) -> bool:
        return (self._stopping.is_set() or self._drop_generation != generation
                or since < self._compacted)

    def discovery(self, path: str) -> Obj | None:
        """The legacy discovery documents (``/api``, ``/apis``, ``/api/v1``, ``/apis/G``,
        ``/apis/G/V``) for what this server serves; None for any other path.

        kubectl asks for aggregated discovery first (an ``Accept`` of
        ``application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,...``); a plain
        ``application/json`` answer makes it read these documents instead, as from an API server
        older than 1.26.
        """
        served = [k for k in (*KINDS, ACCESS_REVIEWS) if k.group_version not in self.unserved]
        versions = sorted({k.group_version for k in served if "/" in k.group_version})
        if path == "/api":
            host, port = self._server.server_address[:2]
            return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [
                {"clientCIDR": "0.0.0.0/0", "serverAddress": f"{host!s}:{port}"}]}
        groups = {group: _api_group(group, [gv for gv in versions
                                            if gv.partition("/")[0] == group])
                  for group in dict.fromkeys(gv.partition("/")[0] for gv in versions)}
        if KUEUE_GROUP in groups:  # its versions in the order this server was given them
            entries = sorted(groups[KUEUE_GROUP]["versions"],
                             key=lambda entry: self.kueue.index(entry["version"]))
            groups[KUEUE_GROUP] = {"name": KUEUE_GROUP, "versions": entries,
                                   "preferredVersion": entries[0]}
        if path == "/apis":
            return {"kind": "APIGroupList", "apiVersion": "v1", "groups": list(groups.values())}
        parts = [p for p in path.split("/") if p]
        if parts[:1] == ["apis"] and len(parts) == 2 and parts[1] in groups:
            return {"kind": "APIGroup", "apiVersion": "v1", **groups[parts[1]]}
        if parts == ["api", "v1"]:
            group_version = "v1"
        elif parts[:1] == ["apis"] and len(parts) == 3 and "/".join(parts[1:]) in versions:
            group_version = "/".join(parts[1:])
        else:
            return None
        return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version,
                "resources": [_api_resource(k) for k in served
                              if k.group_version == group_version]}

    def deny(self, verb: str, resource: str, group: str = "") -> None:
        """Answer SelfSubjectAccessReviews of ``verb`` on ``resource`` with allowed: false."""
        self.denied.add((verb, group, resource))

    def review_access(self, body: Obj) -> tuple[int, Obj]:
        attributes = (body.get("spec") or {}).get("resourceAttributes") or {}
        self.access_reviews.append(attributes)
        key = (attributes.get("verb", ""), attributes.get("group", ""),
               attributes.get("resource", ""))
        allowed = key not in self.denied
        status: Obj = {"allowed": allowed}
        if not allowed:
            status["reason"] = "no RBAC policy matched"
        return 201, {**body, "metadata": {"creationTimestamp": None}, "status": status}

    def is_allowed(self, request: Request) -> bool:
        """Reads, access reviews (they store nothing), and the one write gpuwhy may make: a
        dry-run create of a Pod."""
        if request.method == "GET" or (request.method == "POST"
                                       and request.path == ACCESS_REVIEW_PATH):
            return True
        route = self.route(request.path)
        return (request.method == "POST" and request.query.get("dryRun") == "All"
                and route is not None and route[0].kind == "Pod" and not route[2])

    def create(self, namespace: str, body: Obj) -> tuple[int, Obj]:
        self.dry_runs.append(body)
        return _admit(self, namespace, body)

    def keys(self, plural: str) -> set[Key]:
        with self._lock:
            return set(self._objects[plural])

    def namespace_objects(self, plural: str, namespace: str) -> list[Obj]:
        with self._lock:
            return [o for (ns, _), o in self._objects[plural].items() if ns == namespace]


# -- discovery ------------------------------------------------------------------------

def _dump_has(dump_dir: str | Path | None, filename: str, kind: str) -> bool:
    file = None if dump_dir is None else Path(dump_dir) / filename
    return file is not None and file.exists() and any(
        item.get("kind") == kind for item in json.loads(file.read_text())["items"])


def _api_group(name: str, group_versions: list[str]) -> Obj:
    """An APIGroup entry of ``/apis``: its versions, the most stable preferred (v1 before
    v1beta2 before v1alpha2), as kube-apiserver orders them."""
    entries = sorted(({"groupVersion": gv, "version": gv.partition("/")[2]}
                      for gv in group_versions), key=lambda e: _stability(e["version"]))
    return {"name": name, "versions": entries, "preferredVersion": entries[0]}


def _stability(version: str) -> tuple[int, int, int]:
    """GA first, then beta, then alpha; higher numbers first within each."""
    match = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", version)
    if match is None:
        return (3, 0, 0)
    major, level, minor = match.groups()
    return ({None: 0, "beta": 1, "alpha": 2}[level], -int(major), -int(minor or 0))


def as_v1beta1(obj: Obj) -> Obj:
    """A Kueue object stored as v1beta2, as Kueue's conversion serves it at v1beta1: the few
    fields whose names differ (apis/kueue/v1beta1/*_conversion.go)."""
    old = copy.deepcopy(obj)
    old["apiVersion"] = KUEUE_V1BETA1
    spec, status = old.get("spec") or {}, old.get("status") or {}
    if old.get("kind") == "ClusterQueue" and "cohortName" in spec:
        spec["cohort"] = spec.pop("cohortName")
    if old.get("kind") == "Workload" and (ref := spec.pop("priorityClassRef", None)):
        spec["priorityClassName"] = ref.get("name", "")
        spec["priorityClassSource"] = ("kueue.x-k8s.io/workloadpriorityclass"
                                       if ref.get("kind") == "WorkloadPriorityClass"
                                       else "scheduling.k8s.io/priorityclass")
    if old.get("kind") == "LocalQueue" and "flavorsUsage" in status:
        status["flavorUsage"] = status.pop("flavorsUsage")
    return old


def _kind_of(item: Obj) -> Kind:
    """The kind an object is stored as, by its apiVersion's group and its kind."""
    group = str(item.get("apiVersion", "")).rpartition("/")[0]
    return BY_GROUP_KIND.get((group, item["kind"])) or BY_KIND[item["kind"]]


def _served_as(kind: Kind, item: Obj) -> Obj:
    return as_v1beta1(item) if kind.group_version == KUEUE_V1BETA1 else item


def _api_resource(kind: Kind) -> Obj:
    """An APIResourceList entry with the verbs this server answers."""
    if kind is ACCESS_REVIEWS:
        verbs = ["create"]
    else:
        verbs = ["get", "list", "watch", *(["create"] if kind.kind == "Pod" else [])]
    resource: Obj = {"name": kind.plural, "singularName": kind.kind.lower(),
                     "namespaced": kind.namespaced, "kind": kind.kind, "verbs": verbs}
    if kind.plural in SHORT_NAMES:
        resource["shortNames"] = SHORT_NAMES[kind.plural]
    return resource


# -- admission, as kube-apiserver's ResourceQuota and RuntimeClass plugins do it -------------

def _admit(api: FakeKubeAPI, namespace: str, body: Obj) -> tuple[int, Obj]:
    pod = copy.deepcopy(body)
    meta = pod.setdefault("metadata", {})
    display = meta.get("name") or meta.get("generateName", "")
    runtime_class = pod.get("spec", {}).get("runtimeClassName")
    if runtime_class and runtime_class not in {
            o["metadata"]["name"] for o in api.namespace_objects("runtimeclasses", "")}:
        return 403, status_body(
            403, "Forbidden",
            f'pods "{display}" is forbidden: pod rejected: RuntimeClass "{runtime_class}" '
            "not found", {"name": display, "kind": "pods"})
    requests = _pod_requests(pod)
    for quota in api.namespace_objects("resourcequotas", namespace):
        hard = quota.get("status", {}).get("hard", {})
        used = quota.get("status", {}).get("used", {})
        over = [key for key, limit in hard.items() if key in requests
                and int(used.get(key, 0)) + requests[key] > int(limit)]
        if over:
            def listing(values: Mapping[str, Any], keys: list[str] = over) -> str:
                return ",".join(f"{k}={values.get(k, 0)}" for k in keys)
            return 403, status_body(
                403, "Forbidden",
                f'pods "{display}" is forbidden: exceeded quota: {quota["metadata"]["name"]}, '
                f"requested: {listing(requests)}, used: {listing(used)}, "
                f"limited: {listing(hard)}", {"name": display, "kind": "pods"})
    if meta.get("name") and (namespace, meta["name"]) in api.keys("pods"):
        return 409, status_body(409, "AlreadyExists", f'pods "{meta["name"]}" already exists',
                                {"name": meta["name"], "kind": "pods"})
    if not meta.get("name"):
        meta["name"] = f"{meta.get('generateName', 'pod-')}x7k2q"
    meta.update(namespace=namespace, uid="0d5c2a9e-dry-run", resourceVersion="",
                creationTimestamp="2026-11-30T13:00:00Z")
    pod.setdefault("spec", {}).setdefault("schedulerName", "default-scheduler")
    pod["status"] = {"phase": "Pending", "qosClass": "Burstable"}
    return 201, {"apiVersion": "v1", "kind": "Pod", **pod}


def _pod_requests(pod: Obj) -> dict[str, int]:
    """Integer requests of the app containers, extended resources defaulted from limits."""
    totals: dict[str, int] = {}
    for container in pod.get("spec", {}).get("containers", []):
        resources = container.get("resources", {})
        merged = {**resources.get("limits", {}), **resources.get("requests", {})}
        for name, value in merged.items():
            if str(value).isdigit():
                totals[f"requests.{name}"] = totals.get(f"requests.{name}", 0) + int(value)
    return totals


# -- selectors ----------------------------------------------------------------------

def _field(obj: Obj, path: str) -> str:
    value: Any = obj
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return "" if value is None else str(value)


_SET_EXPRESSION = re.compile(r"^(!?)([\w./-]+)(?:\s+(in|notin)\s+\(([^)]*)\))?$")


def _split_selector(text: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += char
    if current.strip():
        parts.append(current.strip())
    return parts


def _selector(field_selector: str, label_selector: str) -> Callable[[Obj], bool]:
    tests: list[Callable[[Obj], bool]] = []
    for term in _split_selector(field_selector):
        tests.append(_field_test(term))
    for term in _split_selector(label_selector):
        tests.append(_label_test(term))
    return lambda obj: all(test(obj) for test in tests)


def _node_of(kind: Kind, field_selector: str) -> str | None:
    """The node a pod list's fieldSelector names (spec.nodeName=...), if it names one."""
    if kind.plural != "pods":
        return None
    for term in _split_selector(field_selector):
        name, negate, value = _equality(term)
        if name == "spec.nodeName" and not negate:
            return value
    return None


def _field_test(term: str) -> Callable[[Obj], bool]:
    name, negate, value = _equality(term)
    return lambda obj: (_field(obj, name) == value) != negate


def _equality(term: str) -> tuple[str, bool, str]:
    for operator, negate in (("!=", True), ("==", False), ("=", False)):
        if operator in term:
            name, _, value = term.partition(operator)
            return name.strip(), negate, value.strip()
    raise ValueError(f"bad selector term {term!r}")


def _label_test(term: str) -> Callable[[Obj], bool]:
    def labels(obj: Obj) -> dict[str, str]:
        result: dict[str, str] = obj.get("metadata", {}).get("labels") or {}
        return result

    match = _SET_EXPRESSION.match(term)
    if match and (match.group(3) or "=" not in term):
        bang, key, operator, values = match.groups()
        if operator:
            allowed = {v.strip() for v in values.split(",")}
            inside = operator == "in"
            return lambda o: (key in labels(o) and labels(o)[key] in allowed) == inside
        return lambda o: (key in labels(o)) != bool(bang)
    name, negate, value = _equality(term)
    return lambda o: (labels(o).get(name) == value) != negate


def _watch_event(change: Change, namespace: str, matches: Callable[[Obj], bool]) -> Obj | None:
    def visible(obj: Obj | None) -> bool:
        return (obj is not None and (not namespace or _key(obj)[0] == namespace)
                and matches(obj))

    was, now = visible(change.old), visible(change.new)
    if change.deleted:
        return {"type": "DELETED", "object": change.new} if was else None
    if now:
        return {"type": "MODIFIED" if was else "ADDED", "object": change.new}
    if was:  # no longer matches the selector: the API server reports it as DELETED
        return {"type": "DELETED", "object": change.new}
    return None


def _key(obj: Obj) -> Key:
    meta = obj.get("metadata", {})
    return meta.get("namespace", "") or "", meta.get("name", "")


def _list_json(head: Obj, items: list[bytes]) -> bytes:
    """``json.dumps({**head, "items": [...]})`` from the items' own encodings, byte for byte."""
    return b"".join((json.dumps(head)[:-1].encode(), b', "items": [', b", ".join(items), b"]}"))


def _as_list_item(item: Obj) -> Obj:
    """kube-apiserver's list items carry no kind / apiVersion (kubectl adds them)."""
    return {k: v for k, v in item.items() if k not in ("kind", "apiVersion")}


# -- HTTP -------------------------------------------------------------------------------

class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that gave up (timeout, reset) is part of the tests, not an error."""
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)



def _handler_for(api: FakeKubeAPI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        timeout = 30

        def setup(self) -> None:
            super().setup()
            # headers and body go out as separate writes; without this, Nagle + delayed ACK
            # add 40 ms to every keep-alive request
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
            return

        def do_GET(self) -> None:
            self._serve("GET")

        def do_POST(self) -> None:
            self._serve("POST")

        def do_PUT(self) -> None:
            self._serve("PUT")

        def do_PATCH(self) -> None:
            self._serve("PATCH")

        def do_DELETE(self) -> None:
            self._serve("DELETE")

        def _serve(self, method: str) -> None:
            split = urlsplit(self.path)
            query = dict(parse_qsl(split.query, keep_blank_values=True))
            request = Request(method, split.path, query, self.headers.get("Authorization") or "")
            api.requests.append(request)
            self._request = request
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length)) if length else {}
            if not api.is_allowed(request):
                api.unexpected_writes.append(request)
                self._send(405, status_body(405, "MethodNotAllowed", "this test server is "
                                            "read only"))
                return
            fault = api.take_fault(method, split.path, split.query)
            if fault is not None and self._fault(fault):
                return
            truncate = fault is not None and fault.kind == "truncate"
            if split.path == ACCESS_REVIEW_PATH:
                self._send(*api.review_access(body), truncate)
                return
            if split.path == "/version":
                self._send(200, {"major": "1", "minor": "36", "gitVersion": "v1.36.2"}, truncate)
                return
            if (document := api.discovery(split.path)) is not None:
                self._send(200, document, truncate)
                return
            route = api.route(split.path)
            if route is None:
                self._send(404, status_body(404, "NotFound", "the server could not find the "
                                            "requested resource"), truncate)
                return
            kind, namespace, name = route
            if method == "POST":
                self._send(*api.create(namespace, body), truncate)
            elif name:
                self._send(*api.read(kind, namespace, name), truncate)
            elif query.get("watch") in ("1", "true"):
                self._stream(api.watch(kind, namespace, query))
            else:
                self._send(*api.list_items(kind, namespace, query), truncate)

        def _fault(self, fault: Fault) -> bool:
            """Apply a fault; True when the request is answered (or the connection gone)."""
            if fault.kind == "delay":
                api._stopping.wait(fault.seconds)
                return False
            if fault.kind == "status":
                self._send(int(fault.status["code"]), fault.status)
                return True
            if fault.kind == "reset":
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                           struct.pack("ii", 1, 0))
                self.connection.close()
                self.close_connection = True
                return True
            return False

        def _send(self, code: int, document: Obj | bytes, truncate: bool = False) -> None:
            data = document if isinstance(document, bytes) else json.dumps(document).encode()
            if truncate:
                data = data[: len(data) // 2]
            api.sent.append((self._request, len(data)))
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _stream(self, events: Iterator[Obj | None]) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            try:
                for event in events:
                    if event is None:  # dropped: no terminating chunk
                        self.connection.shutdown(socket.SHUT_RDWR)
                        self.close_connection = True
                        return
                    line = json.dumps(event).encode() + b"\n"
                    self.wfile.write(f"{len(line):x}\r\n".encode() + line + b"\r\n")
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
            except OSError:  # the client went away
                self.close_connection = True

    return Handler


def generated_cluster(nodes: int, pods_per_node: int, gpus_per_node: int = 8) -> list[Obj]:
    """Nodes with GPUs and Running pods holding one GPU each, as list items of a large cluster."""
    objects: list[Obj] = []
    for n in range(nodes):
        node_name = f"gen-node-{n:05d}"
        objects.append({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": node_name, "uid": f"node-{n}",
                         "labels": {"kubernetes.io/hostname": node_name, "pool": "gen"},
                         "annotations": {"node.alpha.kubernetes.io/ttl": "0"}},
            "spec": {},
            "status": {
                "capacity": {"cpu": "64", "memory": "512Gi", "pods": "110",
                             "nvidia.com/gpu": str(gpus_per_node)},
                "allocatable": {"cpu": "63", "memory": "500Gi", "pods": "110",
                                "nvidia.com/gpu": str(gpus_per_node)},
                "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
                "images": [{"names": [f"registry.example/image:{i}"], "sizeBytes": 1000}
                           for i in range(5)],
                "nodeInfo": {"kubeletVersion": "v1.36.2"},
            },
        })
        for p in range(pods_per_node):
            objects.append({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": f"gen-{n:05d}-{p:03d}", "namespace": f"team-{p % 7}",
                             "uid": f"pod-{n}-{p}", "labels": {"app": f"gen-{p}"},
                             "annotations": {"kubectl.kubernetes.io/restartedAt": "never"},
                             "managedFields": [{"manager": "kubectl", "operation": "Update"}]},
                "spec": {"nodeName": node_name, "schedulerName": "default-scheduler",
                         "containers": [{
                             "name": "main", "image": "registry.example/train:1",
                             "command": ["python", "train.py", "--epochs", "10"],
                             "env": [{"name": "RANK", "value": str(p)}],
                             "resources": {"limits": {"nvidia.com/gpu": "1"} if p < gpus_per_node
                                           else {},
                                           "requests": {"cpu": "1", "memory": "2Gi"}}}],
                         "tolerations": [{"key": "node.kubernetes.io/not-ready",
                                          "operator": "Exists", "effect": "NoExecute"}]},
                "status": {"phase": "Running", "podIP": "10.0.0.1",
                           "conditions": [{"type": "Ready", "status": "True"}],
                           "containerStatuses": [{"name": "main", "ready": True,
                                                  "restartCount": 0}]},
            })
    return objects


def find_kubectl() -> str | None:
    """The kubectl on PATH, or the one .ci/run installs into the venv when there is none."""
    return shutil.which("kubectl") or shutil.which("kubectl", path=str(Path(sys.executable)
                                                                         .parent))


def make_certificates(directory: Path) -> tuple[Path, ssl.SSLContext]:
    """A throwaway CA (``ca.crt`` in ``directory``) and a server context for 127.0.0.1 it signs."""
    # Imported here: only the TLS tests need it.
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)

    def certificate(subject: str, key: ec.EllipticCurvePrivateKey, issuer: str,
                    signer: ec.EllipticCurvePrivateKey, ca: bool) -> x509.Certificate:
        builder = (x509.CertificateBuilder()
                   .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
                   .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer)]))
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(minutes=5))
                   .not_valid_after(now + datetime.timedelta(days=1))
                   .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
        if ca:
            builder = builder.add_extension(x509.KeyUsage(
                digital_signature=True, content_commitment=False, key_encipherment=False,
                data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
                encipher_only=False, decipher_only=False), critical=True)
        else:
            builder = builder.add_extension(x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        return builder.sign(signer, hashes.SHA256())

    ca_key = ec.generate_private_key(ec.SECP256R1())
    server_key = ec.generate_private_key(ec.SECP256R1())
    ca_file, chain_file, key_file = (directory / n for n in ("ca.crt", "server.crt", "server.key"))
    ca_file.write_bytes(certificate("fake-ca", ca_key, "fake-ca", ca_key, True)
                        .public_bytes(serialization.Encoding.PEM))
    chain_file.write_bytes(certificate("127.0.0.1", server_key, "fake-ca", ca_key, False)
                           .public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(server_key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(chain_file, key_file)
    return ca_file, context
