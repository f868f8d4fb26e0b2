"""The watch cache's stores of nodes and of whole objects (DRA's, Kueue's), kept current
per event and viewed in the API server's list order."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable

from scoring.nodetable import (
    NodeColumns,
    NodeInfo,
    node_columns,
    node_info,
    shared_resources,
)
from scoring.objects import K8sObject, object_key
from triage.cache.listpages import Alike, SharedNodes, interned_labels
from triage.slim import slim_node

# the nodes, their node table, its rows by name and its columns (NodeStore.table)
NodeTable = tuple[list[K8sObject], tuple[NodeInfo, ...], dict[str, NodeInfo], NodeColumns]


class NodeStore:
    """Nodes by name with their node-table rows (kept current per event), viewed in the API
    server's list order (by name) like a cold list."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._alike: Alike[object] = Alike()
        # kept of a node as its page arrives
        self.slim = SharedNodes(self._kept, self._alike)
        self._nodes: dict[str, NodeInfo] = {}
        self._in_order = True
        self._view: NodeTable | None = None
        self._resources_of = shared_resources()

    def listing(self) -> list[K8sObject]:
        """Where a list puts its nodes (``list_into``)."""
        return []

    def replace(self, items: Iterable[K8sObject]) -> None:
        """A full list's nodes, slim already; their table built here, in the reflector's
        thread, so the first answer after a list does not (a third of that answer's CPU time
        at 20,000 nodes: README "Performance")."""
        fresh = {(row := node_info(node, self._resources_of)).name: row for node in items}
        with self._lock:
            self._nodes, self._in_order, self._view = fresh, False, None
        self.table()

    def _kept(self, node: K8sObject) -> K8sObject:
        """The slim node as kept: the nodes of a pool differ in little but their names; their
        spec, capacity, allocatable, conditions, runtime handlers and annotations, where
        alike, are one object shared by all of them (read and never changed), and their
        labels' strings too."""
        kept = {field: value if field in ("metadata", "status") else self._alike(value)
                for field, value in node.items()}
        status, metadata = node.get("status"), node.get("metadata")
        if isinstance(status, dict):
            kept["status"] = {field: self._alike(value) for field, value in status.items()}
        if isinstance(metadata, dict):
            kept["metadata"] = {field: interned_labels(value) if field == "labels" else
                                self._alike(value) if field == "annotations" else value
                                for field, value in metadata.items()}
        return kept

    def upsert(self, node: K8sObject) -> None:
        kept = self._kept(slim_node(node))
        with self._lock:
            known = self._nodes.get(str(kept.get("metadata", {}).get("name", "")))
        if known is not None and _same_but_version(known.raw, kept):
            # the kubelet's status report (every few minutes, from every node: hundreds of
            # events a second at 100,000 nodes) changes only times gpuwhy does not keep: the
            # table stays built
            return
        row = node_info(kept, self._resources_of)
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
        nodes, rows, _, _ = self.table()
        return nodes, rows

    def table(self) -> NodeTable:
        """``view``, the node table's rows by name and its columns, of one moment (shared until
        the next change: a triage reads them of 100,000 nodes, which takes ms to index)."""
        with self._lock:
            if self._view is None:
                if not self._in_order:
                    self._nodes, self._in_order = dict(sorted(self._nodes.items())), True
                rows = tuple(self._nodes.values())
                self._view = [row.raw for row in rows], rows, dict(self._nodes), node_columns(rows)
            return self._view

    def __len__(self) -> int:
        return len(self._nodes)


class ObjectStore:
    """Whole objects by namespace and name (ResourceSlices, ResourceClaims: small, and read
    in full by the DRA checks; Kueue's objects, Workloads slim); viewed in the API server's
    order."""

    def __init__(self, slim: Callable[[K8sObject], K8sObject] | None = None) -> None:
        self._lock = threading.Lock()
        self._objects: dict[tuple[str, str], K8sObject] = {}
        self.slim: Callable[[K8sObject], K8sObject] = slim or without_managed_fields

    def listing(self) -> list[K8sObject]:
        """Where a list puts its objects (``list_into``)."""
        return []

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


def without_managed_fields(obj: K8sObject) -> K8sObject:
    metadata = {k: v for k, v in (obj.get("metadata") or {}).items() if k != "managedFields"}
    return {**obj, "metadata": metadata}


def _same_but_version(kept: K8sObject, fresh: K8sObject) -> bool:
    """The two kept copies of a node say the same but for their resourceVersion (what they
    share of their pool is one object, so most parts compare by identity)."""
    if kept.keys() != fresh.keys():
        return False
    old, new = kept.get("metadata", {}), fresh.get("metadata", {})
    return (all(kept[part] == fresh[part] for part in kept if part != "metadata")
            and old.keys() == new.keys()
            and all(old[field] == new[field] for field in old if field != "resourceVersion"))
