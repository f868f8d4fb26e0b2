"""The watch cache's pod list pages, decoded into the pods it keeps, what pods have alike
found by its bytes in the page.

A workload's replicas and a daemonset's pods differ in little but their names, nodes and
times. ``ItemShape`` decodes every kept field of every pod and the store then finds the
shared ones by encoding them again; here msgspec hands over the shared fields undecoded (a
``Raw`` slice of the page), so a field seen before is one dictionary lookup by those bytes and
only a new one is decoded. The pods are those ``kept_pods`` keeps (the same fields and values,
as ``tests/triage/cluster/test_pages.py`` checks on every recorded scenario); a page whose
fields have other JSON types than these is left to ``ItemShape``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from operator import attrgetter
from typing import TYPE_CHECKING, Any

import msgspec
from msgspec import UNSET, Raw, Struct, UnsetType

from scoring.objects import TERMINAL_PHASES, K8sObject
from triage.cache.stores import Alike
from triage.pages import ItemShape, finished_pods
from triage.slim import SLIM_POD, device_annotations, scheduled_conditions, slim

if TYPE_CHECKING:
    from triage.cluster.resources import Resource

_ABSENT = Raw()  # a shared field the pod does not have
_CONTAINER = SLIM_POD["spec"]["containers"]
_CONDITION = SLIM_POD["status"]["conditions"]
_decode = msgspec.json.decode


# The kept fields of SLIM_POD (a test holds them to it), in the order kubectl prints them.
# Raw: a field pods share, found by its bytes; Any: the pod's own.
class _Metadata(Struct):
    annotations: Raw = _ABSENT
    creationTimestamp: Any = UNSET
    deletionTimestamp: Any = UNSET
    labels: Raw = _ABSENT
    name: Any = UNSET
    namespace: Any = UNSET
    ownerReferences: Raw = _ABSENT
    resourceVersion: Any = UNSET
    uid: Any = UNSET


class _Spec(Struct):
    containers: Raw = _ABSENT
    initContainers: Raw = _ABSENT
    nodeName: Any = UNSET
    overhead: Raw = _ABSENT
    priority: Raw = _ABSENT
    resourceClaims: Raw = _ABSENT
    resources: Raw = _ABSENT
    schedulerName: Raw = _ABSENT
    schedulingGroup: Raw = _ABSENT


class _Status(Struct):
    conditions: Raw = _ABSENT
    phase: Any = UNSET
    startTime: Any = UNSET


class _Pod(Struct):
    apiVersion: Any = UNSET
    kind: Any = UNSET
    metadata: _Metadata | UnsetType = UNSET
    spec: _Spec | UnsetType = UNSET
    status: _Status | UnsetType = UNSET


class _Page(Struct):
    metadata: dict[str, Any] | None = None
    items: list[_Pod] | None = None


_shared_fields = attrgetter(*(field for field in _Spec.__struct_fields__ if field != "nodeName"))
_CONTAINER_FIELDS = frozenset({"containers", "initContainers"})


class SharedPods(ItemShape):
    """``kept_pods(keep)``: the items of a page decoded into the kept pods, their shared parts
    (spec less its node, labels, owners, annotations) one object each, shared with the pods
    ``keep`` keeps (``alike``: the store's map of them by their JSON)."""

    def __init__(self, keep: Callable[[K8sObject], K8sObject],
                 alike: Callable[[object], object]) -> None:
        super().__init__("Pod", SLIM_POD, finished_pods(keep))
        self._alike = alike
        self._pages = msgspec.json.Decoder(_Page)
        # by their bytes in a page: specs (less the node, with a slot for it), then values
        self._specs: Alike[K8sObject] = Alike()
        self._values: Alike[object] = Alike()
        self._annotations: Alike[object] = Alike()
        self._statuses: Alike[K8sObject] = Alike()

    def kept_page(self, resource: Resource, data: bytes,
                  ) -> tuple[Mapping[str, Any], list[K8sObject]] | None:
        try:
            page = self._pages.decode(data)
        except msgspec.ValidationError:
            return super().kept_page(resource, data)
        except msgspec.DecodeError:
            return None
        kept = [pod for item in page.items or () if (pod := self._pod(resource, item)) is not None]
        return page.metadata or {}, kept

    def _pod(self, resource: Resource, item: _Pod) -> K8sObject | None:
        status = item.status
        if isinstance(status, _Status) and _is_terminal(status.phase):
            return None
        pod: K8sObject = {
            "apiVersion": resource.api_version if item.apiVersion is UNSET
            else self._alike(item.apiVersion),
            "kind": resource.kind if item.kind is UNSET else self._alike(item.kind)}
        if isinstance(item.metadata, _Metadata):
            pod["metadata"] = self._metadata(item.metadata)
        if isinstance(item.spec, _Spec):
            pod["spec"] = self._spec(item.spec)
        if isinstance(status, _Status):
            pod["status"] = self._status(status)
        return pod

    def _metadata(self, metadata: _Metadata) -> K8sObject:
        kept: K8sObject = {}
        if metadata.annotations:
            kept["annotations"] = self._value(metadata.annotations, self._annotations,
                                              device_annotations)
        if (value := metadata.creationTimestamp) is not UNSET:
            kept["creationTimestamp"] = value
        if (value := metadata.deletionTimestamp) is not UNSET:
            kept["deletionTimestamp"] = value
        if metadata.labels:
            kept["labels"] = self._value(metadata.labels)
        if (value := metadata.name) is not UNSET:
            kept["name"] = value
        if (value := metadata.namespace) is not UNSET:
            kept["namespace"] = _interned(value)
        if metadata.ownerReferences:
            kept["ownerReferences"] = self._value(metadata.ownerReferences)
        if (value := metadata.resourceVersion) is not UNSET:
            kept["resourceVersion"] = value
        if (value := metadata.uid) is not UNSET:
            kept["uid"] = value
        return kept

    def _spec(self, spec: _Spec) -> K8sObject:
        """The pod's spec: a copy of the one its kind shares, its node filled in."""
        on_node = spec.nodeName is not UNSET
        key = b"\0".join((*_shared_fields(spec), b"n" if on_node else b""))
        shared = self._specs.get(key)
        if shared is None:
            shared = self._specs.put(key, self._shared_spec(spec, on_node))
        if not on_node:
            return shared.copy()
        kept = shared.copy()
        kept["nodeName"] = _interned(spec.nodeName)  # a node's pods share its name
        return kept

    def _shared_spec(self, spec: _Spec, on_node: bool) -> K8sObject:
        """A kind's spec: its fields in order, each one object (``alike``); the node's slot
        holds None until a pod's copy fills it."""
        shared: K8sObject = {}
        for field in _Spec.__struct_fields__:
            if field == "nodeName":
                if on_node:
                    shared[field] = None
            elif raw := getattr(spec, field):
                value = _decode(raw)
                shared[field] = self._alike(slim(value, _CONTAINER) if field in _CONTAINER_FIELDS
                                            else value)
        return shared

    def _status(self, status: _Status) -> K8sObject:
        """phase and startTime; a pod without a startTime keeps its PodScheduled condition
        instead of the others (``trim_pod``). Pods started in the same second share one."""
        phase, started = status.phase, status.startTime
        if started and type(phase) is str and type(started) is str:
            key = f"{phase}\0{started}".encode()
            known = self._statuses.get(key)
            if known is not None:
                return known
            return self._statuses.put(key, {"phase": phase, "startTime": started})
        kept: K8sObject = {}
        if status.conditions and not started:
            kept["conditions"] = scheduled_conditions(slim(_decode(status.conditions),
                                                           _CONDITION))
        if phase is not UNSET:
            kept["phase"] = phase
        if started is not UNSET:
            kept["startTime"] = started
        return kept

    def _value(self, raw: Raw, known: Alike[object] | None = None,
               cut: Callable[[Any], Any] | None = None) -> object:
        """A field kept whole, or as ``cut`` cuts it (its values in ``known``): one object for
        each distinct value."""
        table = self._values if known is None else known
        key = bytes(raw)
        value = table.get(key)
        if value is None:
            decoded = _decode(key)
            value = table.put(key, self._alike(decoded if cut is None else cut(decoded)))
        return value


def _interned(value: Any) -> Any:
    return sys.intern(value) if type(value) is str else value


def _is_terminal(phase: object) -> bool:
    return type(phase) is str and phase in TERMINAL_PHASES

