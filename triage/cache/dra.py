"""The watch cache's DRA objects with their rows, as kube-scheduler's cache keeps its
ResourceSlices' devices: an object's row (a slice's devices, a claim, a class, a template)
is built when its event comes and kept for every triage after; the snapshot's DraRows are
put together from the kept rows once after a change, and shared until the next."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from scoring.dra import DraRows, dra_rows
from scoring.dra.build import ROW_BUILDERS, DraRow
from scoring.objects import K8sObject, object_key
from triage.cache.stores import ObjectStore


class RowStore(ObjectStore):
    """An ObjectStore whose objects each have their row (``build``; a kind without rows:
    none), built on ADDED or MODIFIED, dropped on DELETED; a re-list drops them all and
    builds each the first time it is asked. ``version`` counts the changes."""

    def __init__(self, build: Callable[[K8sObject], DraRow] | None = None) -> None:
        super().__init__()
        self._build = build
        self._rows: dict[tuple[str, str], tuple[K8sObject, DraRow]] = {}
        self.version = 0

    def replace(self, items: Iterable[K8sObject]) -> None:
        super().replace(items)
        with self._lock:
            self._rows = {}  # a new list: new copies, their rows built as asked for
            self.version += 1

    def upsert(self, obj: K8sObject) -> None:
        kept = self.slim(obj)
        row = self._build(kept) if self._build is not None else None  # off the triage's path
        key = object_key(obj)
        with self._lock:
            self._objects[key] = kept
            if row is None:
                self._rows.pop(key, None)
            else:
                self._rows[key] = (kept, row)
            self.version += 1

    def remove(self, obj: K8sObject) -> None:
        key = object_key(obj)
        with self._lock:
            self._objects.pop(key, None)
            self._rows.pop(key, None)
            self.version += 1

    def row_of(self, obj: K8sObject) -> DraRow | None:
        """The row of an object the store holds (this very copy), built the first time it is
        asked after a re-list; None for any other copy."""
        if self._build is None:
            return None
        key = object_key(obj)
        with self._lock:
            if self._objects.get(key) is not obj:
                return None
            kept = self._rows.get(key)
            if kept is not None and kept[0] is obj:
                return kept[1]
        row = self._build(obj)
        with self._lock:
            if self._objects.get(key) is obj:  # not replaced while it was built
                self._rows[key] = (obj, row)
        return row


@dataclass(frozen=True)
class DraView:
    """The cached DRA objects in list order and their rows, as one triage sees them."""

    objects: list[K8sObject]
    rows: DraRows
    # the row an object of ``objects`` has (a Snapshot that adds objects to them builds
    # rows of its own for those alone)
    row_of: Callable[[K8sObject], DraRow | None]


class DraStores:
    """The five DRA kinds the cache watches, each in a RowStore, and their DraView."""

    def __init__(self) -> None:
        self.classes = RowStore(ROW_BUILDERS["DeviceClass"])
        self.templates = RowStore(ROW_BUILDERS["ResourceClaimTemplate"])
        self.claims = RowStore(ROW_BUILDERS["ResourceClaim"])
        self.slices = RowStore(ROW_BUILDERS["ResourceSlice"])
        self.taint_rules = RowStore()  # DeviceTaintRules: taints on the slices' rows
        self._by_kind = {"DeviceClass": self.classes, "ResourceClaimTemplate": self.templates,
                         "ResourceClaim": self.claims, "ResourceSlice": self.slices}
        self._lock = threading.Lock()
        self._view: tuple[tuple[int, ...], DraView] | None = None

    @property
    def _stores(self) -> tuple[RowStore, ...]:
        return self.classes, self.templates, self.claims, self.slices, self.taint_rules

    def view(self) -> DraView:
        """The objects and their DraRows, put together again only after a change."""
        # the versions before the objects: a change in between makes the next view new
        versions = tuple(store.version for store in self._stores)
        with self._lock:
            if self._view is not None and self._view[0] == versions:
                return self._view[1]
        objects = [obj for store in self._stores for obj in store.view()]
        view = DraView(objects, dra_rows(objects, self.row_of), self.row_of)
        with self._lock:
            self._view = versions, view
        return view

    def row_of(self, obj: K8sObject) -> DraRow | None:
        store = self._by_kind.get(str(obj.get("kind")))
        return store.row_of(obj) if store is not None else None
