"""The one step that reads the DRA API objects (resource.k8s.io/v1): DeviceClasses,
ResourceClaims, ResourceClaimTemplates and ResourceSlices (with the taints DeviceTaintRules
add) become rows (``scoring.dra.rows``) once per snapshot, and a pod's ``spec.resourceClaims``
its claim references. Everything after this reads the rows."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from decimal import Decimal
from typing import Any

from scoring.cel.values import AttributeValue, Version
from scoring.dra.capacity import Capacity, RequestPolicy
from scoring.dra.rows import (
    AllocationResult,
    Alternative,
    ClaimDetails,
    ClaimRow,
    ClaimSpec,
    Condition,
    DeviceClassRow,
    DeviceDetails,
    DeviceKey,
    DraRows,
    NodeReach,
    NodeSelection,
    PodClaimRef,
    PodClaimRefs,
    Request,
    Reservation,
    SliceDevice,
    SliceRow,
)
from scoring.dra.taint_rules import with_rule_taints
from scoring.objects import K8sObject, object_key
from scoring.quantity import QuantityError, parse_quantity, quantity_or_none

ZERO = Decimal(0)

# Extended resources backed by DRA (DRAExtendedResource, beta since Kubernetes 1.36): a
# DeviceClass's spec.extendedResourceName, or the name every class has implicitly, lets a pod's
# `limits: nvidia.com/gpu: N` be met by N devices of the class on a node whose allocatable
# lacks the resource. kube-scheduler then allocates a claim of its own for the pod.
IMPLICIT_EXTENDED_PREFIX = "deviceclass.resource.kubernetes.io/"

# Device taint effects that keep the allocator off a device ("None" only informs).
BLOCKING_DEVICE_EFFECTS = ("NoSchedule", "NoExecute")


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
    return SliceRow(name, driver, pool, _reach(spec), per_device,
                    tuple(device_row(raw, driver, pool, name, per_device)
                          for raw in spec.get("devices") or [] if isinstance(raw, dict)))


def slice_devices(resource_slice: Mapping[str, Any]) -> list[SliceDevice]:
    """A ResourceSlice's devices as rows."""
    return list(slice_row(resource_slice).devices)


def _reach(spec: Mapping[str, Any]) -> NodeReach:
    selector = spec.get("nodeSelector")
    return NodeReach(str(spec["nodeName"]) if spec.get("nodeName") else "",
                     bool(spec.get("allNodes")),
                     node_selection(selector) if selector and isinstance(selector, Mapping)
                     else None)


def node_selection(node_selector: Mapping[str, Any]) -> NodeSelection:
    terms = tuple(t for t in node_selector.get("nodeSelectorTerms") or []
                  if isinstance(t, Mapping))
    return NodeSelection(terms, tuple(
        str(v) for term in terms for f in term.get("matchFields") or []
        if isinstance(f, Mapping) and f.get("key") == "metadata.name"
        for v in f.get("values") or []))


def device_row(raw: Mapping[str, Any], driver: str, pool: str = "", slice_name: str = "",
               per_device: bool = False) -> SliceDevice:
    """One published device (``spec.devices[]``) as a row: what every fit reads of it (its
    attributes typed as read), the rest (``_Description``) when first asked. (JSON objects
    are dicts: the plain type check, not Mapping's, and no work for the lists a GPU mostly
    leaves out, for tens of thousands of devices.)"""
    found = raw.get("attributes")
    attributes: Mapping[str, Any] = found if isinstance(found, dict) else {}
    found = raw.get("capacity")
    published: Mapping[str, Any] = found if isinstance(found, dict) else {}
    name = str(raw.get("name", ""))
    taints, consumes = raw.get("taints"), raw.get("consumesCounters")
    binding, failure = raw.get("bindingConditions"), raw.get("bindingFailureConditions")
    return SliceDevice(
        slice_name, driver, pool, name, (driver, pool, name),
        _Description(name, driver, attributes, published),
        _Attributes(attributes),
        {str(key): str(value.get("value", "")) if isinstance(value, dict) else str(value)
         for key, value in published.items()},
        taints=tuple(t for t in taints if isinstance(t, dict)
                     and t.get("effect") in BLOCKING_DEVICE_EFFECTS) if taints else (),
        consumes=tuple(((driver, pool, str(entry.get("counterSet", ""))),
                        counter_amounts(entry.get("counters")))
                       for entry in consumes if isinstance(entry, dict)) if consumes else (),
        shared=raw.get("allowMultipleAllocations") is True,
        binding_conditions=tuple(str(c) for c in binding) if binding else (),
        binding_failure_conditions=tuple(str(c) for c in failure) if failure else (),
        reach=_reach(raw) if per_device else None)


class _Description:
    """A device's product, memory, uuid, index and readable capacities, read off its JSON
    the first time one is asked: an answer describes the devices of a few nodes, and only a
    request asking capacity (or a shared device) judges it, of tens of thousands of GPUs."""

    __slots__ = ("_attributes", "_driver", "_name", "_published", "_read")

    def __init__(self, name: str, driver: str, attributes: Mapping[str, Any],
                 published: Mapping[str, Any]) -> None:
        self._name, self._driver = name, driver
        self._attributes, self._published = attributes, published
        self._read: DeviceDetails | None = None

    def read(self) -> DeviceDetails:
        if self._read is None:
            attributes, published, driver = self._attributes, self._published, self._driver
            memory = published.get("memory") or published.get(f"{driver}/memory")
            uuid, index = attributes.get("uuid"), attributes.get("index")
            self._read = DeviceDetails(
                _product(attributes, driver),
                str(memory.get("value")) if isinstance(memory, dict) else None,
                (str(uuid["string"]) if isinstance(uuid, dict)
                 and isinstance(uuid.get("string"), str) and uuid["string"] else self._name),
                (int(index["int"]) if isinstance(index, dict)
                 and isinstance(index.get("int"), int) else None),
                {str(key): readable for key, value in published.items()
                 if isinstance(value, dict)
                 and (readable := _capacity(str(key), value)) is not None})
        return self._read


def _product(attributes: Mapping[str, Any], driver: str) -> str:
    for name in ("productName", f"{driver}/productName", "model", "type"):
        value = attributes.get(name)
        if isinstance(value, dict) and value.get("string"):
            return str(value["string"])
    return driver


class _Attributes(Mapping[str, AttributeValue]):
    """A device's attributes, each typed the first time it is read: a selector reads one or
    two of a GPU's dozen, and a cluster publishes tens of thousands of GPUs."""

    __slots__ = ("_published", "_typed")

    def __init__(self, published: Mapping[str, Any]) -> None:
        self._published = published
        self._typed: dict[str, AttributeValue] | None = None

    def __getitem__(self, name: str) -> AttributeValue:
        if self._typed is None:
            self._typed = {}
        if name not in self._typed:
            self._typed[name] = _attribute(self._published[name])
        return self._typed[name]

    def __iter__(self) -> Iterator[str]:
        return (str(name) for name in self._published)

    def __len__(self) -> int:
        return len(self._published)


def _attribute(value: Any) -> AttributeValue:
    """``{int: 3}``, ``{bool: true}``, ``{version: "8.0.0"}`` or ``{string: "x"}`` typed."""
    if not isinstance(value, dict):
        return str(value)
    if "int" in value:
        try:
            return int(value["int"])
        except (TypeError, ValueError):
            return str(value["int"])  # kept as text: a selector comparing it is not evaluated
    if "bool" in value:
        return bool(value["bool"])
    if "version" in value:
        return Version(str(value["version"]))
    return str(value.get("string", ""))


def _capacity(name: str, raw: Mapping[str, Any]) -> Capacity | None:
    total = quantity_or_none(raw.get("value"))
    return None if total is None else Capacity(name, total,
                                               request_policy(raw.get("requestPolicy")))


def request_policy(raw: Any) -> RequestPolicy | None:
    """A capacity's requestPolicy (default, validRange {min, max, step}, validValues); None
    when there is none or it is not an object."""
    if not isinstance(raw, Mapping):
        return None
    found = raw.get("validRange")
    valid_range: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    values = tuple(sorted(v for v in (quantity_or_none(x) for x in raw.get("validValues") or [])
                          if v is not None))
    return RequestPolicy(quantity_or_none(raw["default"]) if "default" in raw else None,
                         quantity_or_none(valid_range.get("min")) if "min" in valid_range else None,
                         quantity_or_none(valid_range.get("max")) if "max" in valid_range else None,
                         quantity_or_none(valid_range.get("step"))
                         if "step" in valid_range else None,
                         values)


def counter_amounts(counters: Any) -> dict[str, Decimal]:
    """``{name: {value: quantity}}`` as numbers; an unreadable value counts as 0."""
    found = {}
    for name, counter in (counters or {}).items() if isinstance(counters, Mapping) else ():
        try:
            found[str(name)] = parse_quantity((counter or {}).get("value", 0))
        except (QuantityError, AttributeError):
            found[str(name)] = ZERO
    return found


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
