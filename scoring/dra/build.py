"""The one step that reads the DRA API objects (resource.k8s.io/v1): DeviceClasses,
ResourceClaims, ResourceClaimTemplates and ResourceSlices (with the taints DeviceTaintRules
add) become rows (``scoring.dra.rows``) once per snapshot, and a pod's ``spec.resourceClaims``
its claim references. Everything after this reads the rows."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from decimal import Decimal
from typing import Any

from scoring.dra.build_devices import (
    counter_amounts,
    device_row,
    node_reach,
    node_selection,
)
from scoring.dra.rows import (
    AllocationResult,
    Alternative,
    ClaimDetails,
    ClaimRow,
    ClaimSpec,
    Condition,
    DeviceClassRow,
    DeviceKey,
    DraRows,
    PodClaimRef,
    PodClaimRefs,
    Request,
    Reservation,
    SliceDevice,
    SliceRow,
)
from scoring.dra.taint_rules import with_rule_taints
from scoring.objects import K8sObject, object_key
from scoring.quantity import quantity_or_none

ZERO = Decimal(0)

# Extended resources backed by DRA (DRAExtendedResource, beta since Kubernetes 1.36): a
# DeviceClass's spec.extendedResourceName, or the name every class has implicitly, lets a pod's
# `limits: nvidia.com/gpu: N` be met by N devices of the class on a node whose allocatable
# lacks the resource. kube-scheduler then allocates a claim of its own for the pod.
IMPLICIT_EXTENDED_PREFIX = "deviceclass.resource.kubernetes.io/"



DraRow = DeviceClassRow | ClaimRow | ClaimSpec | SliceRow
# a row kept from an earlier build of this very object (the watch cache's), or None
KeptRow = Callable[[K8sObject], DraRow | None]


def dra_rows(objects: Iterable[K8sObject], kept: KeptRow | None = None) -> DraRows:
    """The DRA objects among ``objects`` as rows; of each pool only its newest generation.
    ``kept`` hands back the row an object already has (a slice a DeviceTaintRule touches is
    a new copy: its row is built again)."""
    classes: dict[str, DeviceClassRow] = {}
    claims: dict[tuple[str, str], ClaimRow] = {}
    templates: dict[tuple[str, str], ClaimSpec] = {}
    slices: list[K8sObject] = []
    listed = list(objects)
    for obj in listed:
        kind = obj.get("kind")
        if kind == "ResourceSlice":
            slices.append(obj)
        elif kind in ROW_BUILDERS:
            row = _row(obj, kind, kept)
            if isinstance(row, DeviceClassRow):
                classes[object_key(obj)[1]] = row
            elif isinstance(row, ClaimRow):
                claims[object_key(obj)] = row
            elif isinstance(row, ClaimSpec):
                templates[object_key(obj)] = row
    current = with_rule_taints(current_generation(slices), listed)
    counter_sets = {
        (str(spec.get("driver", "")), str((spec.get("pool") or {}).get("name", "")),
         str(counter_set.get("name", ""))): counter_amounts(counter_set.get("counters"))
        for resource_slice in current
        for spec in [resource_slice.get("spec") or {}]
        for counter_set in spec.get("sharedCounters") or [] if isinstance(counter_set, Mapping)}
    return DraRows(classes, claims, templates,
                   tuple(row for s in current
                         if isinstance(row := _row(s, "ResourceSlice", kept), SliceRow)),
                   counter_sets)


def _row(obj: K8sObject, kind: str, kept: KeptRow | None) -> DraRow:
    row = kept(obj) if kept is not None else None
    return row if row is not None else ROW_BUILDERS[kind](obj)


def serves_extended(objects: Iterable[K8sObject], asked: Iterable[str]) -> bool:
    """Some DeviceClass among ``objects`` serves one of the asked extended resources, by
    spec.extendedResourceName or by its implicit ``deviceclass.resource.kubernetes.io/<class>``
    name (a cheap look before the rows are built)."""
    wanted = set(asked)
    return bool(wanted) and any(
        obj.get("kind") == "DeviceClass"
        and ((obj.get("spec") or {}).get("extendedResourceName") in wanted
             or IMPLICIT_EXTENDED_PREFIX + object_key(obj)[1] in wanted) for obj in objects)


# -- ResourceSlices -------------------------------------------------------------------------

def current_generation(slices: list[K8sObject]) -> list[K8sObject]:
    """Only the newest generation of each pool counts (a driver republishing leaves old ones)."""
    newest: dict[tuple[str, str], int] = defaultdict(int)
    keyed = []
    for resource_slice in slices:
        spec = resource_slice.get("spec") or {}
        pool = spec.get("pool") or {}
        key = (str(spec.get("driver", "")), str(pool.get("name", "")))
        generation = _int(pool.get("generation"))
        newest[key] = max(newest[key], generation)
        keyed.append((key, generation, resource_slice))
    return sorted((s for key, generation, s in keyed if generation == newest[key]),
                  key=lambda s: object_key(s)[1])


def slice_row(resource_slice: Mapping[str, Any]) -> SliceRow:
    spec = resource_slice.get("spec") or {}
    name = object_key(resource_slice)[1]
    driver = str(spec.get("driver", ""))
    pool = str((spec.get("pool") or {}).get("name", ""))
    per_device = bool(spec.get("perDeviceNodeSelection"))
    return SliceRow(name, driver, pool, node_reach(spec), per_device,
                    tuple(device_row(raw, driver, pool, name, per_device)
                          for raw in spec.get("devices") or [] if isinstance(raw, dict)))


def slice_devices(resource_slice: Mapping[str, Any]) -> list[SliceDevice]:
    """A ResourceSlice's devices as rows."""
    return list(slice_row(resource_slice).devices)


def _int(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


# -- DeviceClasses, claims and templates ------------------------------------------------------

def device_class_row(obj: K8sObject) -> DeviceClassRow:
    spec = obj.get("spec") or {}
    extended = spec.get("extendedResourceName")
    return DeviceClassRow(object_key(obj)[1], cel_expressions(spec.get("selectors")),
                          extended if isinstance(extended, str) else None,
                          str((obj.get("metadata") or {}).get("creationTimestamp") or ""))


def cel_expressions(selectors: Any) -> tuple[str, ...]:
    return tuple(str((s.get("cel") or {}).get("expression", ""))
                 for s in selectors or [] if isinstance(s, Mapping) and s.get("cel"))


def claim_spec(spec: Mapping[str, Any], label: str) -> ClaimSpec:
    """A claim's spec (a template's ``spec.spec``); ``label`` names it in the requests."""
    devices = spec.get("devices") or {}
    return ClaimSpec(tuple(_request(label, raw) for raw in devices.get("requests") or []
                           if isinstance(raw, Mapping)), bool(devices.get("constraints")))


def _request(claim_label: str, raw: Mapping[str, Any]) -> Request:
    name = str(raw.get("name", ""))
    if raw.get("firstAvailable"):
        alternatives = tuple(_alternative(f"{name}/{sub.get('name', '')}", sub)
                             for sub in raw["firstAvailable"] if isinstance(sub, Mapping))
    else:
        # v1 puts the request under "exactly"; v1beta1 (still served) has it inline.
        alternatives = (_alternative(name, raw.get("exactly") or raw),)
    return Request(claim_label, name, alternatives)


def _alternative(label: str, spec: Mapping[str, Any]) -> Alternative:
    try:
        count = int(spec.get("count", 1) or 1)
    except (TypeError, ValueError):
        count = 1
    return Alternative(label, str(spec.get("deviceClassName", "")),
                       cel_expressions(spec.get("selectors")),
                       str(spec.get("allocationMode") or "ExactCount"), count,
                       bool(spec.get("adminAccess")),
                       tuple(t for t in spec.get("tolerations") or [] if isinstance(t, Mapping)),
                       capacity_requests(spec))


def capacity_requests(spec: Mapping[str, Any]) -> tuple[tuple[str, Decimal], ...]:
    """A request's ``capacity.requests`` (exactly or a firstAvailable entry), by name."""
    requests = ((spec.get("capacity") or {}).get("requests") or {}) if isinstance(
        spec.get("capacity"), Mapping) else {}
    return tuple((str(name), value) for name, raw in sorted(requests.items())
                 if (value := quantity_or_none(raw)) is not None)


def template_row(obj: K8sObject) -> ClaimSpec:
    """A ResourceClaimTemplate's claim spec (its ``spec.spec``)."""
    namespace, name = object_key(obj)
    return claim_spec((obj.get("spec") or {}).get("spec") or {}, f"template {namespace}/{name}")


def claim_row(obj: K8sObject) -> ClaimRow:
    """A ResourceClaim as a row: its allocation and reservations (every fit reads those of
    every claim), the rest (``_ClaimDescription``) when a pod's claims are resolved to it."""
    namespace, name = object_key(obj)
    status = obj.get("status") or {}
    allocation = status.get("allocation") or {}
    return ClaimRow(
        namespace, name, _ClaimDescription(obj, f"{namespace}/{name}"),
        allocated=bool(allocation),
        results=tuple(_result(r) for r in (allocation.get("devices") or {}).get("results")
                      or [] if isinstance(r, Mapping)),
        reserved_for=tuple(Reservation(str(r.get("resource", "pods")), str(r.get("name")),
                                       str(r.get("uid") or ""))
                           for r in status.get("reservedFor") or [] if isinstance(r, Mapping)))


class _ClaimDescription:
    """A claim's spec, allocation node selector and device conditions, read off its JSON
    the first time one is asked: a triage resolves the few claims its pod names, of
    thousands."""

    __slots__ = ("_label", "_obj", "_read")

    def __init__(self, obj: K8sObject, label: str) -> None:
        self._obj, self._label = obj, label
        self._read: ClaimDetails | None = None

    def read(self) -> ClaimDetails:
        if self._read is None:
            status = self._obj.get("status") or {}
            allocation = status.get("allocation") or {}
            self._read = ClaimDetails(
                claim_spec(self._obj.get("spec") or {}, self._label),
                node_selection(allocation.get("nodeSelector") or {}),
                {_device_key(d): {str(c.get("type")): _condition(c)
                                  for c in d.get("conditions") or [] if isinstance(c, Mapping)}
                 for d in status.get("devices") or [] if isinstance(d, Mapping)})
        return self._read


def _device_key(entry: Mapping[str, Any]) -> DeviceKey:
    return (str(entry.get("driver", "")), str(entry.get("pool", "")),
            str(entry.get("device", "")))


def _result(raw: Mapping[str, Any]) -> AllocationResult:
    consumed = ({str(k): v for k, value in (raw.get("consumedCapacity") or {}).items()
                 if (v := quantity_or_none(value)) is not None}
                if "consumedCapacity" in raw else None)
    return AllocationResult(str(raw.get("request", "")), _device_key(raw),
                            bool(raw.get("adminAccess")), consumed)


def _condition(raw: Mapping[str, Any]) -> Condition:
    reason, message = raw.get("reason"), raw.get("message")
    return Condition(str(raw.get("status")), str(reason) if reason else "",
                     str(message) if message else "")


# -- a pod's claims ---------------------------------------------------------------------------

def pod_claim_refs(pod: Mapping[str, Any]) -> PodClaimRefs:
    """The pod's spec.resourceClaims with the claims generated for them, and a bound pod's
    extended-resource claim (status.extendedResourceClaimStatus), which holds its devices."""
    namespace, name = object_key(pod)
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    statuses = {s.get("name"): s for s in status.get("resourceClaimStatuses") or []
                if isinstance(s, Mapping)}
    extended = (status.get("extendedResourceClaimStatus") or {}).get("resourceClaimName")
    return PodClaimRefs(namespace, name, template_claim_refs(spec, statuses),
                        str(extended) if extended and spec.get("nodeName") else None)


def template_claim_refs(spec: Mapping[str, Any],
                        statuses: Mapping[Any, Mapping[str, Any]] | None = None
                        ) -> tuple[PodClaimRef, ...]:
    """A pod spec's (or pod template's) spec.resourceClaims."""
    refs = []
    for entry in spec.get("resourceClaims") or []:
        if not isinstance(entry, Mapping):
            continue
        name = str(entry.get("name", ""))
        claim, template = entry.get("resourceClaimName"), entry.get("resourceClaimTemplateName")
        generated = ((statuses or {}).get(name) or {}).get("resourceClaimName")
        refs.append(PodClaimRef(name, str(claim) if claim else None,
                                str(template) if template else None,
                                str(generated) if generated else None))
    return tuple(refs)


# The row each kind of DRA object becomes (DeviceTaintRules become none: they add taints to
# the slices' devices while the rows are put together).
ROW_BUILDERS: dict[str, Callable[[K8sObject], DraRow]] = {
    "DeviceClass": device_class_row, "ResourceClaim": claim_row,
    "ResourceClaimTemplate": template_row, "ResourceSlice": slice_row}
