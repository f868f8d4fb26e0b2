"""A Kubernetes API server for the bench's largest sizes, rendering each list page as it is asked.

Run: python -m bench.pageserver --nodes 100000 --pods 1000000 [--seed 9]
(prints its URL, then serves on 127.0.0.1 until killed or its stdin closes).

1,000,000 pods of ~4 KB fit neither a dump nor encoded lists held in memory, so the cluster is
a seeded plan (each node's role and pool, each GPU holder's node and GPU count) and one
encoded template per kind of object with holes for what differs (name, node, uid, ...): item
i of a list is rendered when a page asks for it. The objects are bench/generate.py's shapes
(its recorded templates and node mix), the pods arranged as a cluster of that size runs them:

- ``bench``: 1,000 pending pods of five kinds (PAGED_PENDING_KINDS), with their
  FailedScheduling events where the scheduler would have spoken;
- ``ci``: 1,000 finished pods (a list with gpuwhy's fieldSelector leaves them out);
- ``kube-system``: the daemonsets' pods, on every node in turn (~8 a node at 100,000 nodes);
- ``team-00`` ... ``team-16``: one GPU workload pod per GPU node (8 GPUs on a full A100 node,
  fewer on the others), HAMi's shared pods on the HAMi nodes.

Lists are paged as kube-apiserver pages them: items in key order (namespace, name), ``limit``
and an opaque ``continue`` token, the list's resourceVersion, and the one fieldSelector
gpuwhy sends for pods (``status.phase!=Succeeded,status.phase!=Failed``). A watch stays open
and quiet until its timeoutSeconds; a GET of a single pod or node renders it; other core
lists (events, quotas) answer from small fixed lists; the API groups the bench's clusters do
not serve (DRA, scheduling.k8s.io, Kueue) answer 404.
"""

from __future__ import annotations

import argparse
import base64
import bisect
import json
import random
import re
import socket
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from bench.generate import (
    PENDING_NAMESPACE,
    Obj,
    Templates,
    _event,
    _pending_pod,
    _pod,
    make_node,
    node_roles,
)

PAGED_PENDING = 1_000
PAGED_PENDING_KINDS = ("any-node", "exhausted", "tainted", "too-large", "wrong-pool")  # sorted
FINISHED_PODS = 1_000
TEAMS = 17
# sorted, and none is another's prefix: names "<daemonset>-<node number>" list in key order
DAEMONSETS = ("calico-node", "csi-node", "dcgm-exporter", "fluent-bit", "gpu-feature-discovery",
              "kube-proxy", "node-exporter", "nvidia-container-toolkit", "nvidia-device-plugin",
              "nvidia-mig-manager", "nvidia-operator-validator", "topology-updater")
LIST_RESOURCE_VERSION = 5_000_000
# Times, as a real cluster's differ: each pod created and started at its own second (within
# POD_AGE_SPAN of NOW), each node's creation and its conditions' last heartbeat its own
NOW = 1_796_041_843  # 2026-11-30T12:30:43Z, the recorded scenarios' day
POD_AGE_SPAN = 30 * 24 * 3600
NODE_AGE_SPAN = 180 * 24 * 3600
HEARTBEAT_SPAN = 300  # a kubelet updates an unchanged node status every 5 minutes
_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")
NON_TERMINATED = "status.phase!=Succeeded,status.phase!=Failed"
_HOLE = re.compile(r"@@(\w+)@@")


class Template:
    """An object encoded once, compact as kube-apiserver sends it, with ``@@field@@`` holes
    in its strings filled per item."""

    def __init__(self, obj: Obj) -> None:
        text = json.dumps(obj, separators=(",", ":")).replace("%", "%%")
        self._format = _HOLE.sub(lambda hole: f"%({hole.group(1)})s", text)

    def render(self, values: Mapping[str, object]) -> bytes:
        return (self._format % values).encode()


def timed(obj: Any, holes: Mapping[str, str], other: str) -> Any:
    """The object with each time in it a hole: ``holes`` by the time's key, ``other`` for the
    rest (the holes of a Template)."""
    if isinstance(obj, dict):
        return {key: f"@@{holes.get(key, other)}@@" if isinstance(value, str)
                and _TIME.fullmatch(value) else timed(value, holes, other)
                for key, value in obj.items()}
    if isinstance(obj, list):
        return [timed(value, holes, other) for value in obj]
    return obj


_POD_TIMES = {"creationTimestamp": "created"}  # the rest: "started"
_NODE_TIMES = {"lastHeartbeatTime": "beat"}  # the rest: "created"


def _stamp(seconds: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def pending_names() -> list[str]:
    """The pending pods' names, in list order."""
    each = PAGED_PENDING // len(PAGED_PENDING_KINDS)
    return [f"{kind}-{number:03d}" for kind in PAGED_PENDING_KINDS for number in range(each)]


def paged_pending_refs() -> list[str]:
    """The pending pods' refs, the kinds interleaved (so any first N of them mix the kinds)."""
    names = pending_names()
    each = PAGED_PENDING // len(PAGED_PENDING_KINDS)
    return [f"{PENDING_NAMESPACE}/{names[kind * each + number]}"
            for number in range(each) for kind in range(len(PAGED_PENDING_KINDS))]


@dataclass(frozen=True)
class Block:
    """A run of list items of one namespace, rendered by index (0 .. count-1); ``locate``
    gives the index of a name (None: not one of the block's)."""

    namespace: str
    count: int
    render: Callable[[int], bytes]
    locate: Callable[[str], int | None]
    finished: bool = False


class GeneratedCluster:
    """Nodes and pods of a seeded cluster, item by item."""

    def __init__(self, nodes: int, pods: int, seed: int = 9, same_times: bool = False) -> None:
        """``same_times``: the recorded templates' times on every object (what pods of a kind
        and nodes of a pool then share is more than on a real cluster)."""
        rng = random.Random(seed)
        templates = Templates()
        self._seed, self._same_times = seed, same_times
        self.node_count = nodes
        self.roles = node_roles(nodes, rng)
        self._node_templates = {role: self._node_template(templates, role)
                                for role in {role for role, _ in self.roles}}
        # one GPU workload pod per GPU node that runs one: its node and GPUs
        holders: list[tuple[int, int]] = []
        for index, (role, _) in enumerate(self.roles):
            gpus = {"a100-full": 8, "a100-room": rng.randint(0, 6), "h100": rng.randint(0, 8),
                    "maint": rng.randint(0, 8)}.get(role, 0)
            if role == "hami":
                holders += [(index, -slot - 1) for slot in range(len(templates.hami_holders))]
            elif gpus:
                holders.append((index, gpus))
        self._holders = holders
        holder = _pod(templates.holder, "@@namespace@@", "@@name@@", "@@uid@@", "@@node@@")
        for container in holder["spec"]["containers"]:
            for section in ("limits", "requests"):
                container["resources"].setdefault(section, {})["nvidia.com/gpu"] = "@@gpus@@"
        self._holder = self._pod_template(holder)
        self._hami = [self._pod_template(_pod(p, "@@namespace@@", "@@name@@", "@@uid@@",
                                              "@@node@@"))
                      for p in templates.hami_holders]
        daemon = _pod(templates.cpu_pod, "kube-system", "@@name@@", "@@uid@@", "@@node@@")
        daemon["metadata"]["labels"] = {"app.kubernetes.io/name": "@@daemonset@@"}
        daemon["metadata"]["ownerReferences"] = [{
            "apiVersion": "apps/v1", "kind": "DaemonSet", "name": "@@daemonset@@",
            "uid": "daemonset-@@daemonset@@", "controller": True, "blockOwnerDeletion": True}]
        for container in daemon["spec"]["containers"]:
            container["resources"] = {"limits": {"memory": "256Mi"},
                                      "requests": {"cpu": "50m", "memory": "128Mi"}}
        self._daemon = self._pod_template(daemon)
        self._finished = self._pod_template(_pod(templates.done, "ci", "@@name@@", "@@uid@@",
                                                 "@@node@@"))
        each = PAGED_PENDING // len(PAGED_PENDING_KINDS)
        self.pending = {name: _pending_pod(templates, kind, number)
                        for kind in PAGED_PENDING_KINDS for number in range(each)
                        if (name := f"{kind}-{number:03d}")}
        for pod in self.pending.values():
            pod["metadata"]["resourceVersion"] = "1"
        # the scheduler has not spoken about the pods that fit (scheduler-unavailable)
        self.events = {name: _event(templates, pod, nodes, index)
                       for index, (name, pod) in enumerate(self.pending.items())
                       if not name.startswith("any-node")}
        self._pending_encoded = [json.dumps(p, separators=(",", ":")).encode()
                                 for p in self.pending.values()]
        self.daemon_pods = max(0, pods - PAGED_PENDING - FINISHED_PODS - len(holders))
        if self.daemon_pods > nodes * len(DAEMONSETS):
            raise ValueError(f"{pods:,} pods need more than {len(DAEMONSETS)} daemonsets on "
                             f"{nodes:,} nodes")
        teams = [len(holders) * team // TEAMS for team in range(TEAMS + 1)]
        pending_index = {name: index for index, name in enumerate(self.pending)}
        self.blocks = (
            Block(PENDING_NAMESPACE, len(self._pending_encoded),
                  self._pending_encoded.__getitem__, pending_index.get),
            Block("ci", FINISHED_PODS, self._render_finished,
                  partial(_numbered, "done", 0), finished=True),
            Block("kube-system", self.daemon_pods, self._render_daemon, self._locate_daemon),
            *(Block(f"team-{team:02d}", teams[team + 1] - teams[team],
                    partial(self._render_holder, teams[team], team),
                    partial(_numbered, "train", teams[team]))
              for team in range(TEAMS)),
        )
        self._starts = [0]
        for block in self.blocks:
            self._starts.append(self._starts[-1] + block.count)

    def _node_template(self, templates: Templates, role: str) -> Template:
        node = make_node(templates, role, "@@name@@", "@@pool@@", 0)
        node["metadata"].update(uid="@@uid@@", resourceVersion="@@rv@@")
        return Template(node if self._same_times else timed(node, _NODE_TIMES, "created"))

    def _pod_template(self, pod: Obj) -> Template:
        pod = _with_version(pod)
        return Template(pod if self._same_times else timed(pod, _POD_TIMES, "started"))

    def _times(self, index: int, span: int) -> dict[str, str]:
        """An object's times (the holes of ``timed``), seeded by its list position: created
        within ``span`` before NOW, started 1-20 s later, its last heartbeat within
        HEARTBEAT_SPAN."""
        if self._same_times:
            return {}
        spread = (index * 2_654_435_761 + self._seed * 40_503) % (span * HEARTBEAT_SPAN)
        created = NOW - spread // HEARTBEAT_SPAN
        return {"created": _stamp(created), "started": _stamp(created + 1 + index % 20),
                "beat": _stamp(NOW - spread % HEARTBEAT_SPAN)}

    # -- items ------------------------------------------------------------------------

    def render_node(self, index: int) -> bytes:
        role, pool = self.roles[index]
        return self._node_templates[role].render(
            {"name": node_name(index), "pool": pool, "uid": f"node-{index:06d}",
             "rv": 1000 + index, **self._times(index, NODE_AGE_SPAN)})

    def _render_finished(self, index: int) -> bytes:
        return self._finished.render({"name": f"done-{index:06d}", "uid": f"done-{index}",
                                      "node": node_name(index % self.node_count),
                                      **self._times(index, POD_AGE_SPAN)})

    def _render_daemon(self, index: int) -> bytes:
        daemonset, node = divmod(index, self.node_count)
        name = DAEMONSETS[daemonset]
        return self._daemon.render({"name": f"{name}-{node:06d}", "daemonset": name,
                                    "uid": f"ds-{index}", "node": node_name(node),
                                    **self._times(index, POD_AGE_SPAN)})

    def _render_holder(self, first: int, team: int, offset: int) -> bytes:
        index = first + offset
        node, gpus = self._holders[index]
        values = {"namespace": f"team-{team:02d}", "name": f"train-{index:06d}",
                  "uid": f"holder-{index}", "node": node_name(node), "gpus": gpus,
                  **self._times(self.daemon_pods + index, POD_AGE_SPAN)}
        return (self._hami[-gpus - 1] if gpus < 0 else self._holder).render(values)

    @property
    def pod_count(self) -> int:
        return self._starts[-1]

    def pod_page(self, start: int, limit: int, non_terminated: bool) -> tuple[list[bytes], int]:
        """Up to ``limit`` pods from list position ``start`` and the position after the last
        (the pod count at the end)."""
        items: list[bytes] = []
        position = start
        block_index = bisect.bisect_right(self._starts, position) - 1
        while len(items) < limit and block_index < len(self.blocks):
            block, first = self.blocks[block_index], self._starts[block_index]
            if block.finished and non_terminated:
                position = first + block.count
            else:
                end = min(first + block.count, position + limit - len(items))
                items += [block.render(i - first) for i in range(position, end)]
                position = end
            if position >= first + block.count:
                block_index += 1
        while (block_index < len(self.blocks) and non_terminated
               and self.blocks[block_index].finished):  # nothing left but what is left out
            position = self._starts[block_index + 1]
            block_index += 1
        return items, position

    def find_pod(self, namespace: str, name: str) -> bytes | None:
        """One pod by namespace and name, rendered (None: there is no such pod)."""
        for block in self.blocks:
            if block.namespace == namespace:
                index = block.locate(name)
                return None if index is None or not 0 <= index < block.count \
                    else block.render(index)
        return None

    def _locate_daemon(self, name: str) -> int | None:
        daemonset, _, number = name.rpartition("-")
        if daemonset not in DAEMONSETS or not number.isdigit():
            return None
        return DAEMONSETS.index(daemonset) * self.node_count + int(number)


def _numbered(prefix: str, first: int, name: str) -> int | None:
    """The index in its block of a pod named ``<prefix>-<number>`` (numbered from ``first``)."""
    head, _, number = name.rpartition("-")
    return int(number) - first if head == prefix and number.isdigit() else None


def node_name(index: int) -> str:
    return f"node-{index:05d}"


def _with_version(pod: Obj) -> Obj:
    pod["metadata"]["resourceVersion"] = str(LIST_RESOURCE_VERSION - 1)
    return pod


def _token(position: int) -> str:
    return base64.urlsafe_b64encode(json.dumps(
        {"rv": LIST_RESOURCE_VERSION, "start": position}).encode()).decode()


def _position(token: str) -> int | None:
    try:
        document = json.loads(base64.urlsafe_b64decode(token.encode()))
        return int(document["start"])
    except (ValueError, KeyError, TypeError):
        return None


def write_kubeconfig(url: str, path: Path) -> Path:
    """A kubeconfig file pointing at a page server, with a bearer token."""
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "bench",
        "clusters": [{"name": "bench", "cluster": {"server": url}}],
        "users": [{"name": "bench", "user": {"token": "bench-token"}}],
        "contexts": [{"name": "bench", "context": {"cluster": "bench", "user": "bench"}}]}))
    return path


def raw_list(url: str, path: str, query: Mapping[str, str], page_size: int) -> tuple[int, int]:
    """Page through one list as a plain client would, nothing decoded: urllib.request, a new
    connection per page (urlopen), the body read whole as bytes, and the continue token taken
    from the page's head with a regular expression. (pages, bytes)."""
    import urllib.parse
    import urllib.request

    pages = size = 0
    token = ""
    while True:
        asked = {**query, "limit": str(page_size), **({"continue": token} if token else {})}
        request = urllib.request.Request(f"{url}{path}?{urllib.parse.urlencode(asked)}",
                                         headers={"Authorization": "Bearer bench-token",
                                                  "Accept": "application/json"})
        with urllib.request.urlopen(request) as response:
            data = response.read()
        pages, size = pages + 1, size + len(data)
        found = _CONTINUE.search(data, 0, 512)
        if found is None:
            return pages, size
        token = found.group(1).decode()


_CONTINUE = re.compile(rb'"continue":"([^"]+)"')


# -- the API server ----------------------------------------------------------------------

# core lists a triage reads that this cluster keeps nothing of but what is here
_EMPTY_CORE = ("resourcequotas", "persistentvolumeclaims", "limitranges")
_SERVED_GROUPS = ("/api/v1/", "/apis/apps/v1/", "/apis/batch/v1/", "/apis/node.k8s.io/v1/")


class PageServer:
    """GeneratedCluster served over HTTP on 127.0.0.1 (a thread per connection)."""

    def __init__(self, cluster: GeneratedCluster) -> None:
        self.cluster = cluster
        self.stopping = threading.Event()
        self.requests = 0
        server = self

        class Handler(_Handler):
            owner = server

        self._http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._http.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._http.server_address[1]}"
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True,
                                        name="pageserver")

    def start(self) -> PageServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        self._http.shutdown()
        self._http.server_close()

    def answer(self, path: str, query: Mapping[str, str]) -> tuple[int, list[bytes] | None,
                                                                   str]:
        """(status, the body's parts, or None for a watch, and the list kind) of a GET."""
        parts = path.strip("/").split("/")
        if query.get("watch") in ("1", "true"):
            return 200, None, ""
        if path == "/api/v1/nodes":
            start = _start(query)
            if start is None:
                return 410, [_expired()], ""
            end = min(start + _limit(query), self.cluster.node_count)
            items = [self.cluster.render_node(i) for i in range(start, end)]
            return 200, _list("NodeList", items, end < self.cluster.node_count, end), ""
        if path == "/api/v1/pods":
            start = _start(query)
            if start is None:
                return 410, [_expired()], ""
            selector = query.get("fieldSelector", "")
            if selector not in ("", NON_TERMINATED):
                refused = _status(400, "BadRequest", f"unsupported fieldSelector {selector}")
                return 400, [refused], ""
            items, end = self.cluster.pod_page(start, _limit(query), bool(selector))
            return 200, _list("PodList", items, end < self.cluster.pod_count, end), ""
        if len(parts) == 4 and parts[:3] == ["api", "v1", "nodes"]:
            index = _node_index(parts[3], self.cluster.node_count)
            return (404, [_not_found("nodes", parts[3])], "") if index is None else \
                (200, [self.cluster.render_node(index)], "")
        if len(parts) == 6 and parts[:3] == ["api", "v1", "namespaces"] and parts[4] == "pods":
            found = self.cluster.find_pod(parts[3], parts[5])
            return (404, [_not_found("pods", parts[5])], "") if found is None else \
                (200, [found], "")
        if len(parts) == 5 and parts[:3] == ["api", "v1", "namespaces"] and parts[4] == "events":
            wanted = dict(term.split("=", 1) for term in query.get("fieldSelector", "").split(",")
                          if "=" in term)
            event = self.cluster.events.get(wanted.get("involvedObject.name", "")) \
                if parts[3] == PENDING_NAMESPACE else None
            items = [] if event is None else [json.dumps(event, separators=(",", ":")).encode()]
            return 200, _list("EventList", items, False, 0), ""
        if path.startswith(_SERVED_GROUPS) and parts[-1] in (*_EMPTY_CORE, "runtimeclasses"):
            return 200, _list(f"{parts[-1]}List", [], False, 0), ""
        return 404, [_not_found(parts[-1], "")], ""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    owner: PageServer

    def setup(self) -> None:
        super().setup()
        # kube-apiserver (Go) sends with TCP_NODELAY; without it the body, a second write after
        # the headers, waits on the client's delayed ACK: ~40 ms on a small keep-alive reply
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        split = urlsplit(self.path)
        query = dict(parse_qsl(split.query))
        self.owner.requests += 1
        status, body, _ = self.owner.answer(split.path, query)
        if body is None:
            self._watch(float(query.get("timeoutSeconds") or 300))
            return
        data = b"".join(body)  # the body in one write, not a write per item
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _watch(self, seconds: float) -> None:
        """Open and quiet: nothing changes in this cluster; the stream ends at timeoutSeconds
        (or when the server stops), as kube-apiserver ends it."""
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        self.owner.stopping.wait(seconds)
        self.wfile.write(b"0\r\n\r\n")
        self.close_connection = True


def _list(kind: str, items: list[bytes], more: bool, position: int) -> list[bytes]:
    metadata: Obj = {"resourceVersion": str(LIST_RESOURCE_VERSION)}
    if more:
        metadata["continue"] = _token(position)
    head = json.dumps({"kind": kind, "apiVersion": "v1", "metadata": metadata},
                      separators=(",", ":"))[:-1].encode()
    parts = [head, b',"items":[']
    for index, item in enumerate(items):
        parts += [b"," if index else b"", item]
    return [*parts, b"]}"]


def _status(code: int, reason: str, message: str) -> bytes:
    return json.dumps({"kind": "Status", "apiVersion": "v1", "metadata": {},
                       "status": "Failure", "message": message, "reason": reason,
                       "code": code}).encode()


def _not_found(plural: str, name: str) -> bytes:
    return _status(404, "NotFound", f'{plural} "{name}" not found' if name
                   else "the server could not find the requested resource")


def _expired() -> bytes:
    return _status(410, "Expired", "The provided continue parameter is too old")


def _limit(query: Mapping[str, str]) -> int:
    limit = int(query.get("limit") or 0)
    return limit if limit > 0 else sys.maxsize


def _start(query: Mapping[str, str]) -> int | None:
    """The list position a page starts at (None: a continue token this server did not give)."""
    token = query.get("continue")
    return 0 if not token else _position(token)


def _node_index(name: str, count: int) -> int | None:
    head, _, number = name.rpartition("-")
    index = int(number) if head == "node" and number.isdigit() else -1
    return index if 0 <= index < count and node_name(index) == name else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--pods", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=9)
    parser.add_argument("--same-times", action="store_true",
                        help="every object of a kind with its template's times")
    args = parser.parse_args()
    server = PageServer(GeneratedCluster(args.nodes, args.pods, args.seed,
                                         args.same_times)).start()
    print(server.url, flush=True)
    sys.stdin.read()  # serve until the parent closes our stdin (or kills us)
    server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
