"""The watch cache's list pages of pods and nodes, decoded into the objects it keeps, what
they have alike found by its bytes in the page.

A workload's replicas and a daemonset's pods differ in little but their names, nodes and
times, a pool's nodes in little but their names, labels and times. ``ItemShape`` decodes
every kept field of every item and the store then finds the shared ones by encoding them
again; here msgspec hands over the shared fields undecoded (a ``Raw`` slice of the page), so
a field seen before is one dictionary lookup by those bytes and only a new one is decoded
(and the previous item's, which a list's next item of the same kind has, one comparison).
The items are those the store's ``ItemShape`` keeps (the same fields and values, as
``tests/triage/cluster/test_pages.py`` checks on every recorded scenario); a page whose fields
have other JSON types than these, or than triage reads (``triage.slim.POD_PARTS``,
``NODE_PARTS``: checked once per distinct value), is left to ``ItemShape``.
"""

from __future__ import annotations

import sys
from abc import abstractmethod
from collections.abc import Callable, Hashable, Mapping
from operator import attrgetter
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import msgspec
from msgspec import UNSET, Raw, Struct, UnsetType

from scoring.objects import TERMINAL_PHASES, K8sObject
from triage.pages import ItemShape, finished_pods, kept_type
from triage.slim import (
    NODE_PARTS,
    POD_PARTS,
    SLIM_NODE,
    SLIM_POD,
    device_annotations,
    is_sound,
    scheduled_conditions,
    slim,
    sound,
)

if TYPE_CHECKING:
    from triage.cluster.resources import Resource

MAX_SHARED_SPECS = 10_000  # distinct pod specs (and other shared values) remembered
encode = msgspec.json.Encoder().encode
T = TypeVar("T")
_ABSENT = Raw()  # a shared field the object does not have
_CONTAINER = SLIM_POD["spec"]["containers"]
_CONDITION = SLIM_POD["status"]["conditions"]
_decode = msgspec.json.decode


class Alike(Generic[T]):
    """One object for each distinct value (by its JSON) of the last MAX_SHARED_SPECS: the
    stores' objects share their equal parts (read and never changed)."""

    def __init__(self) -> None:
        self._known: dict[Hashable, T] = {}

    def __call__(self, value: T) -> T:
        key = encode(value)
        known = self._known.get(key)
        return self.put(key, value) if known is None else known

    def get(self, key: Hashable) -> T | None:
        """The value known by this JSON (a list page's own bytes of it: nothing to encode),
        or by another key that tells it apart (a pod's phase and startTime)."""
        return self._known.get(key)

    def put(self, key: Hashable, value: T) -> T:
        if len(self._known) >= MAX_SHARED_SPECS:
            self._known.clear()
        self._known[key] = value
        return value


def odd_part() -> msgspec.ValidationError:
    """A part of another JSON type than triage reads: the page is left to ``ItemShape``."""
    return msgspec.ValidationError("a part of an unexpected JSON type")


class _ByBytes:
    """The values of one kind of field, by their bytes in a page: decoded (and ``cut``) the
    first time, one object for each distinct value (``alike``); a value not of ``part`` (a
    triage.slim parts type) raises ``odd_part``."""

    def __init__(self, alike: Callable[[object], object],
                 cut: Callable[[Any], Any] | None = None, part: Any = None) -> None:
        self._alike, self._cut, self._part = alike, cut, part
        self._known: Alike[object] = Alike()
        self._last: tuple[Raw, object] | None = None

    def __call__(self, raw: Raw) -> object:
        # a list's items of a kind come one after another: most have the one before's
        # value, found by comparing the slices, without copying or hashing the bytes
        if self._last is not None and raw == self._last[0]:
            return self._last[1]
        key = bytes(raw)
        value = self._known.get(key)
        if value is None:
            decoded = _decode(key)
            if self._part is not None and not is_sound(decoded, self._part):
                raise odd_part()
            value = self._known.put(key, self._alike(
                decoded if self._cut is None else self._cut(decoded)))
        self._last = raw, value
        return value

    def forget_page(self) -> None:
        """Let go of the last value's slice, and so of its page."""
        self._last = None


def interned_labels(labels: dict[str, Any]) -> dict[str, Any]:
    """Labels with their keys and values interned (a pool's nodes share most of them)."""
    return {sys.intern(key): sys.intern(value) if isinstance(value, str) else value
            for key, value in labels.items()}


# The kept fields of SLIM_POD and SLIM_NODE (a test holds them to those), in the order kubectl
# prints them. Raw: a field found by its bytes; Any: the object's own.
class _Metadata(Struct):
    annotations: Raw = _ABSENT
    creationTimestamp: Any = UNSET
    deletionTimestamp: Any = UNSET
    labels: Raw = _ABSENT
    name: str | UnsetType = UNSET
    namespace: str | UnsetType = UNSET
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


class _PodPage(Struct):
    metadata: dict[str, Any] | None = None
    items: list[_Pod] | None = None


class _NodeSpec(Struct):
    taints: Raw = _ABSENT
    unschedulable: Raw = _ABSENT


class _NodeStatus(Struct):
    allocatable: Raw = _ABSENT
    capacity: Raw = _ABSENT
    conditions: Raw = _ABSENT
    runtimeHandlers: Raw = _ABSENT


class _Node(Struct):
    apiVersion: Any = UNSET
    kind: Any = UNSET
    metadata: _Metadata | UnsetType = UNSET
    spec: _NodeSpec | UnsetType = UNSET
    status: _NodeStatus | UnsetType = UNSET


class _NodePage(Struct):
    metadata: dict[str, Any] | None = None
    items: list[_Node] | None = None


_pod_spec_fields = attrgetter(*(field for field in _Spec.__struct_fields__
                                if field != "nodeName"))
_node_spec_fields = attrgetter(*_NodeSpec.__struct_fields__)
_CONTAINER_FIELDS = frozenset({"containers", "initContainers"})
# a node's conditions less their times, which differ per node (the kubelet's heartbeat)
_node_conditions = msgspec.json.Decoder(kept_type("NodeCondition",
                                                  SLIM_NODE["status"]["conditions"])).decode


class _SharedItems(ItemShape):
    """An ItemShape whose pages are decoded into ``page`` Structs, each item kept by
    ``_item``; a page they do not fit is cut by the ItemShape."""

    def __init__(self, name: str, keep: dict[str, Any],
                 finish: Callable[[K8sObject], K8sObject | None], page: type[Struct],
                 alike: Callable[[object], object]) -> None:
        super().__init__(name, keep, finish)
        self._alike = alike
        self._pages = msgspec.json.Decoder(page)
        self._values = _ByBytes(alike)  # the fields kept whole
        self._objects = _ByBytes(alike, part=dict)  # those that must be objects
        self._owners = _ByBytes(alike, part=POD_PARTS["metadata"]["ownerReferences"])

    def kept_page(self, resource: Resource, data: bytes,
                  ) -> tuple[Mapping[str, Any], list[K8sObject]] | None:
        try:
            page: Any = self._pages.decode(data)  # a _PodPage or _NodePage
            kept = [item for each in page.items or ()
                    if (item := self._item(resource, each)) is not None]
        except msgspec.ValidationError:
            return super().kept_page(resource, data)
        except msgspec.DecodeError:
            return None
        finally:
            self._forget_page()
        return page.metadata or {}, kept

    def _forget_page(self) -> None:
        """Let go of the slices of the page the fields' last values were found by."""
        for values in (self._values, self._objects, self._owners):
            values.forget_page()

    @abstractmethod
    def _item(self, resource: Resource, item: Any) -> K8sObject | None:
        """What is kept of one decoded item (None: nothing)."""

    def _head(self, resource: Resource, item: _Pod | _Node) -> K8sObject:
        """kind and apiVersion: the list's, as ``with_kind`` gives them, unless the item has
        its own."""
        return {"apiVersion": resource.api_version if item.apiVersion is UNSET
                else self._alike(item.apiVersion),
                "kind": resource.kind if item.kind is UNSET else self._alike(item.kind)}

    def _metadata(self, metadata: _Metadata, labels: Callable[[Raw], object],
                  annotations: Callable[[Raw], object]) -> K8sObject:
        kept: K8sObject = {}
        if metadata.annotations:
            kept["annotations"] = annotations(metadata.annotations)
        if (value := metadata.creationTimestamp) is not UNSET:
            kept["creationTimestamp"] = value
        if (value := metadata.deletionTimestamp) is not UNSET:
            kept["deletionTimestamp"] = value
        if metadata.labels:
            kept["labels"] = labels(metadata.labels)
        if (value := metadata.name) is not UNSET:
            kept["name"] = value
        if (value := metadata.namespace) is not UNSET:
            kept["namespace"] = _interned(value)
        if metadata.ownerReferences:
            kept["ownerReferences"] = self._owners(metadata.ownerReferences)
        if (value := metadata.resourceVersion) is not UNSET:
            kept["resourceVersion"] = value
        if (value := metadata.uid) is not UNSET:
            kept["uid"] = value
        return kept


class SharedPods(_SharedItems):
    """SLIM_POD's ItemShape, each kept pod passed through ``keep``: the items of a page
    decoded into the kept pods, their shared parts (spec less its node, labels, owners,
    annotations) one object each, shared with the pods ``keep`` keeps (``alike``: the
    store's map of them by their JSON)."""

    def __init__(self, keep: Callable[[K8sObject], K8sObject],
                 alike: Callable[[object], object]) -> None:
        super().__init__("Pod", SLIM_POD, finished_pods(keep), _PodPage, alike)
        self._annotations = _ByBytes(alike, device_annotations, dict)
        self._specs: Alike[K8sObject] = Alike()  # less the node, with a slot for it
        self._last_spec: tuple[tuple[object, ...], K8sObject] | None = None  # as _ByBytes
        self._statuses: Alike[K8sObject] = Alike()

    def _forget_page(self) -> None:
        super()._forget_page()
        self._annotations.forget_page()
        self._last_spec = None

    def _item(self, resource: Resource, item: _Pod) -> K8sObject | None:
        status = item.status
        if isinstance(status, _Status) and _is_terminal(status.phase):
            return None
        pod = self._head(resource, item)
        if isinstance(item.metadata, _Metadata):
            pod["metadata"] = self._metadata(item.metadata, self._objects, self._annotations)
        if isinstance(item.spec, _Spec):
            pod["spec"] = self._spec(item.spec)
        if isinstance(status, _Status):
            pod["status"] = self._status(status)
        return pod

    def _spec(self, spec: _Spec) -> K8sObject:
        """The pod's spec: a copy of the one its kind shares, its node filled in."""
        on_node = spec.nodeName is not UNSET
        fields = (*_pod_spec_fields(spec), b"n" if on_node else b"")
        if self._last_spec is not None and fields == self._last_spec[0]:
            shared = self._last_spec[1]
        else:
            key = b"\0".join(fields)
            known = self._specs.get(key)
            shared = self._specs.put(key, self._shared_spec(spec, on_node)) if known is None \
                else known
            self._last_spec = fields, shared
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
        if not is_sound(shared, POD_PARTS["spec"]):
            raise odd_part()
        return shared

    def _status(self, status: _Status) -> K8sObject:
        """phase and startTime; a pod without a startTime keeps its PodScheduled condition
        instead of the others (``trim_pod``). Pods started in the same second share one."""
        phase, started = status.phase, status.startTime
        if started and type(phase) is str and type(started) is str:
            key = phase, started
            known = self._statuses.get(key)
            if known is not None:
                return known
            return self._statuses.put(key, {"phase": phase, "startTime": started})
        kept: K8sObject = {}
        if status.conditions and not started:
            conditions = _decode(status.conditions)
            if not isinstance(conditions, list):  # its items scheduled_conditions checks
                raise odd_part()
            kept["conditions"] = scheduled_conditions(slim(conditions, _CONDITION))
        if phase is not UNSET:
            kept["phase"] = phase
        if started is not UNSET:
            kept["startTime"] = started
        return kept


class SharedNodes(_SharedItems):
    """The nodes of a page as ``keep`` keeps them (NodeStore._kept): a pool's spec,
    capacity, allocatable, conditions, runtime handlers and annotations one object each
    (``alike``: the store's map of them by their JSON), label strings interned."""

    def __init__(self, keep: Callable[[K8sObject], K8sObject],
                 alike: Callable[[object], object]) -> None:
        super().__init__("Node", SLIM_NODE, lambda node: keep(sound(node, NODE_PARTS)),
                         _NodePage, alike)
        self._specs: Alike[K8sObject] = Alike()

    def _item(self, resource: Resource, item: _Node) -> K8sObject:
        node = self._head(resource, item)
        if isinstance(item.metadata, _Metadata):
            node["metadata"] = self._metadata(item.metadata, _labels, self._objects)
        if isinstance(item.spec, _NodeSpec):
            node["spec"] = self._spec(item.spec)
        if isinstance(item.status, _NodeStatus):
            node["status"] = self._status(item.status)
        return node

    def _spec(self, spec: _NodeSpec) -> K8sObject:
        """The spec the nodes of a pool share (taints, unschedulable)."""
        key = b"\0".join(_node_spec_fields(spec))
        shared = self._specs.get(key)
        if shared is None:
            shared = {field: _decode(raw) for field in _NodeSpec.__struct_fields__
                      if (raw := getattr(spec, field))}
            if not is_sound(shared, NODE_PARTS["spec"]):
                raise odd_part()
            shared = self._specs.put(key, shared)
        return shared

    def _status(self, status: _NodeStatus) -> K8sObject:
        kept: K8sObject = {}
        if status.allocatable:
            kept["allocatable"] = self._objects(status.allocatable)
        if status.capacity:
            kept["capacity"] = self._objects(status.capacity)
        if status.conditions:
            conditions = _node_conditions(status.conditions)
            if not is_sound(conditions, NODE_PARTS["status"]["conditions"]):
                raise odd_part()
            kept["conditions"] = self._alike(conditions)
        if status.runtimeHandlers:
            kept["runtimeHandlers"] = self._values(status.runtimeHandlers)
        return kept


def _labels(raw: Raw) -> object:
    """A node's labels (its own: its host name is one of them), their strings interned."""
    labels = _decode(raw)
    if not isinstance(labels, dict):
        raise odd_part()
    return interned_labels(labels)


def _interned(value: Any) -> Any:
    return sys.intern(value) if type(value) is str else value


def _is_terminal(phase: object) -> bool:
    return type(phase) is str and phase in TERMINAL_PHASES
