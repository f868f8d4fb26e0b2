"""DRA as data: devices published in ResourceSlices, the claims and requests a pod makes, and
how far a request gets on a node; with the helpers that read them off the API objects.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from scoring.dra.capacity import (
    CapacityFit,
    capacity_requests,
)
from scoring.dra.taint_rules import RULE_FIELD
from scoring.nodes import (
    selector_mismatches,
    taint_text,
    tolerates,
)
from scoring.objects import K8sObject, object_key
from scoring.quantity import QuantityError, parse_quantity

if TYPE_CHECKING:
    pass

# Per-node stages, in funnel order. CLAIM_ELSEWHERE: an allocated claim of the pod is bound
# to other nodes (the scheduler: "resourceclaim not available on the node").


CLAIM_ELSEWHERE = "claim-elsewhere"
NO_DEVICE = "no-gpu-node"
DEVICE_UNFIT = "device-unfit"
TOO_LARGE = "too-large"
EXHAUSTED = "exhausted"
UNEVALUATED = "unevaluated"
STAGES = (CLAIM_ELSEWHERE, NO_DEVICE, DEVICE_UNFIT, TOO_LARGE, EXHAUSTED)

DeviceKey = tuple[str, str, str]  # driver, pool, device: how allocation results name a device
CounterKey = tuple[str, str, str]  # driver, pool, counter set
ZERO = Decimal(0)

# Device.holder_source of DRA devices: claims' allocations say who holds each device.
DRA_HOLDERS = "dra"

# Extended resources backed by DRA (DRAExtendedResource, beta since Kubernetes 1.36): a
# DeviceClass's spec.extendedResourceName, or the name every class has implicitly, lets a pod's
# `limits: nvidia.com/gpu: N` be met by N devices of the class on a node whose allocatable
# lacks the resource. kube-scheduler then allocates a claim of its own for the pod.
IMPLICIT_EXTENDED_PREFIX = "deviceclass.resource.kubernetes.io/"


def serves_extended(objects: Iterable[K8sObject], asked: Iterable[str]) -> bool:
    """Some DeviceClass among ``objects`` serves one of the asked extended resources, by
    spec.extendedResourceName or by its implicit ``deviceclass.resource.kubernetes.io/<class>``
    name (a cheap look before an Inventory is built)."""
    wanted = set(asked)
    return bool(wanted) and any(
        obj.get("kind") == "DeviceClass"
        and ((obj.get("spec") or {}).get("extendedResourceName") in wanted
             or IMPLICIT_EXTENDED_PREFIX + object_key(obj)[1] in wanted) for obj in objects)


@dataclass(frozen=True)


class SliceDevice:
    slice: str
    driver: str
    pool: str
    name: str
    raw: Mapping[str, Any]

    @property
    def key(self) -> DeviceKey:
        return self.driver, self.pool, self.name

    @property
    def product(self) -> str:
        attributes = self.raw.get("attributes") or {}
        for name in ("productName", f"{self.driver}/productName", "model", "type"):
            value = attributes.get(name)
            if isinstance(value, Mapping) and value.get("string"):
                return str(value["string"])
        return self.driver

    @property
    def memory(self) -> str | None:
        capacity = self.raw.get("capacity") or {}
        value = capacity.get("memory") or capacity.get(f"{self.driver}/memory")
        return str(value.get("value")) if isinstance(value, Mapping) else None


@dataclass(frozen=True)


class Holder:
    """A claim that holds a device: its ``ns/name`` and the pods in its reservedFor."""

    claim: str
    pods: tuple[str, ...]

    @property
    def text(self) -> str:
        return f"claim {self.claim}" + (f" (pod {', '.join(self.pods)})" if self.pods else "")


@dataclass(frozen=True)


class Alternative:
    """One way to satisfy a request: ``exactly``, or one entry of ``firstAvailable``."""

    label: str  # "gpu" or "gpu/a100" for a firstAvailable subrequest
    device_class: str
    selectors: tuple[str, ...]
    mode: str  # ExactCount or All
    count: int
    admin: bool = False
    # the request's device taint tolerations (as a pod's tolerations read)
    tolerations: tuple[Mapping[str, Any], ...] = ()
    # capacity.requests (consumable capacity of shared devices), by name
    capacity: tuple[tuple[str, Decimal], ...] = ()

    @property
    def asked(self) -> str:
        amount = "all" if self.mode == "All" else str(self.count)
        return f"{amount} × {self.device_class}"


@dataclass(frozen=True)


class Request:
    claim: str  # "ns/name" of the claim, or "template ns/name" when not generated yet
    name: str
    alternatives: tuple[Alternative, ...]


@dataclass


class PodClaim:
    """One entry of the pod's spec.resourceClaims, resolved."""

    pod_claim: str  # the entry's name
    source: str  # "ResourceClaim ns/x", "ResourceClaimTemplate ns/t" (claim not generated yet)
    claim: K8sObject | None = None
    template: str | None = None
    requests: list[Request] = field(default_factory=list)
    problem: str | None = None  # missing claim / template / DeviceClass, one sentence
    problem_field: str = ""
    allocated_nodes: Mapping[str, Any] | None = None  # status.allocation.nodeSelector
    allocated_devices: tuple[DeviceKey, ...] = ()
    # What the claim asks that gpuwhy does not judge: (field, what), e.g. claim constraints.
    unmodelled: list[tuple[str, str]] = field(default_factory=list)
    # The pod's extended resource this claim stands for (the claim kube-scheduler would make
    # for a limit a DeviceClass serves); None for the pod's own claims.
    extended_resource: str | None = None

    @property
    def label(self) -> str:
        return self.source.split(" ", 1)[1] if " " in self.source else self.source


@dataclass


class RequestOutcome:
    request: Request
    stage: str | None  # a STAGES word, UNEVALUATED, or None when it fits
    detail: str = ""
    alternative: Alternative | None = None
    candidates: list[SliceDevice] = field(default_factory=list)  # of the class
    matching: list[SliceDevice] = field(default_factory=list)  # of the class, meeting selectors
    holders: list[tuple[SliceDevice, Holder]] = field(default_factory=list)
    # matching devices a taint keeps the request off, with the taints
    tainted: list[tuple[SliceDevice, list[str]]] = field(default_factory=list)
    # matching devices judged for the request's capacity (see scoring.dra.capacity)
    capacity: list[tuple[SliceDevice, CapacityFit]] = field(default_factory=list)
    # every alternative tried on the node, in order, up to the first that fits
    tried: list[RequestOutcome] = field(default_factory=list)


@dataclass


class NodeFit:
    """How far the pod's claims get on one node, with what "show devices" lists."""

    node: str
    stage: str | None  # first failing stage of all requests; None = fits
    detail: str = ""
    gpu: bool = True  # False when only non-GPU requests fail there
    requests: list[RequestOutcome] = field(default_factory=list)
    published: list[SliceDevice] = field(default_factory=list)  # the devices the node can use
    unevaluated: list[str] = field(default_factory=list)


def assign(outcomes: list[RequestOutcome],
            usable: Any) -> tuple[int, int] | None:
    """Kuhn's matching of request units to distinct devices; (needed, got) when short."""
    units = []
    for outcome in outcomes:
        alternative = outcome.alternative
        eligible = [d.key for d in outcome.matching if usable(outcome, d)]
        count = len(outcome.matching) if alternative and alternative.mode == "All" else (
            alternative.count if alternative else 0)
        units += [eligible] * count
    owner: dict[DeviceKey, int] = {}

    def place(unit: int, seen: set[DeviceKey]) -> bool:
        for key in units[unit]:
            if key in seen:
                continue
            seen.add(key)
            if key not in owner or place(owner[key], seen):
                owner[key] = unit
                return True
        return False

    placed = sum(place(unit, set()) for unit in range(len(units)))
    return None if placed == len(units) else (len(units), placed)


def parse_request(claim_label: str, raw: Mapping[str, Any]) -> Request:
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


# Device taint effects that keep the allocator off a device ("None" only informs).
BLOCKING_DEVICE_EFFECTS = ("NoSchedule", "NoExecute")


def blocking_device_taints(device: SliceDevice) -> list[Mapping[str, Any]]:
    """The device's taints that keep the allocator off it unless tolerated (DRADeviceTaints,
    beta in 1.36)."""
    return [t for t in device.raw.get("taints") or []
            if isinstance(t, Mapping) and t.get("effect") in BLOCKING_DEVICE_EFFECTS]


def untolerated_device_taints(device: SliceDevice, alternative: Alternative) -> list[str]:
    """The device's blocking taints this request does not tolerate, as ``key=value:effect``;
    a toleration matches as a pod's does a node taint."""
    tolerations = list(alternative.tolerations)
    return [taint_text(t) + (f" (DeviceTaintRule {t[RULE_FIELD]})" if t.get(RULE_FIELD) else "")
            for t in blocking_device_taints(device) if not tolerates(tolerations, t)]


def cel_expressions(selectors: Any) -> tuple[str, ...]:
    return tuple(str((s.get("cel") or {}).get("expression", ""))
                 for s in selectors or [] if isinstance(s, Mapping) and s.get("cel"))


def current_generation(slices: list[K8sObject]) -> list[K8sObject]:
    """Only the newest generation of each pool counts (a driver republishing leaves old ones)."""
    newest: dict[tuple[str, str], int] = defaultdict(int)
    for resource_slice in slices:
        spec = resource_slice.get("spec") or {}
        pool = spec.get("pool") or {}
        key = (str(spec.get("driver", "")), str(pool.get("name", "")))
        newest[key] = max(newest[key], _int(pool.get("generation")))
    return sorted((s for s in slices
                   if _int(((s.get("spec") or {}).get("pool") or {}).get("generation"))
                   == newest[(str((s.get("spec") or {}).get("driver", "")),
                              str(((s.get("spec") or {}).get("pool") or {}).get("name", "")))]),
                  key=lambda s: object_key(s)[1])


def _int(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


def counter_amounts(counters: Any) -> dict[str, Decimal]:
    """``{name: {value: quantity}}`` as numbers; an unreadable value counts as 0."""
    found = {}
    for name, counter in (counters or {}).items() if isinstance(counters, Mapping) else ():
        try:
            found[str(name)] = parse_quantity((counter or {}).get("value", 0))
        except (QuantityError, AttributeError):
            found[str(name)] = ZERO
    return found


def counter_consumption(device: SliceDevice) -> list[tuple[CounterKey, dict[str, Decimal]]]:
    """The shared counters a device uses up when allocated (consumesCounters)."""
    return [((device.driver, device.pool, str(entry.get("counterSet", ""))),
             counter_amounts(entry.get("counters")))
            for entry in device.raw.get("consumesCounters") or [] if isinstance(entry, Mapping)]


def slice_devices(resource_slice: Mapping[str, Any]) -> list[SliceDevice]:
    spec = resource_slice.get("spec") or {}
    return [SliceDevice(object_key(resource_slice)[1], str(spec.get("driver", "")),
                        str((spec.get("pool") or {}).get("name", "")), str(d.get("name", "")), d)
            for d in spec.get("devices") or [] if isinstance(d, dict)]


def slice_reaches(spec: Mapping[str, Any], node: K8sObject, name: str) -> bool:
    if spec.get("nodeName"):
        return bool(spec["nodeName"] == name)
    if spec.get("allNodes"):
        return True
    if spec.get("nodeSelector"):
        return node_selected(spec["nodeSelector"], node)
    return False


def node_selected(node_selector: Mapping[str, Any], node: K8sObject) -> bool:
    if not node_selector.get("nodeSelectorTerms"):
        return True  # an allocation without a node selector is usable anywhere
    as_affinity = {"affinity": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": node_selector}}}
    return not selector_mismatches(as_affinity, node)


def allocated_node_names(claim: PodClaim) -> list[str]:
    """The nodes an allocated claim is bound to, when its node selector names them."""
    return [str(v) for term in (claim.allocated_nodes or {}).get("nodeSelectorTerms") or []
            for f in term.get("matchFields") or [] if f.get("key") == "metadata.name"
            for v in f.get("values") or []]


def allocation_results(claim: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    allocation = (claim.get("status") or {}).get("allocation") or {}
    return [r for r in (allocation.get("devices") or {}).get("results") or []
            if isinstance(r, Mapping)]


def result_key(result: Mapping[str, Any]) -> DeviceKey:
    return (str(result.get("driver", "")), str(result.get("pool", "")),
            str(result.get("device", "")))


def reserved_pods(claim: Mapping[str, Any]) -> tuple[str, ...]:
    namespace = object_key(claim)[0]
    return tuple(f"{namespace}/{r.get('name')}"
                 for r in (claim.get("status") or {}).get("reservedFor") or []
                 if isinstance(r, Mapping) and r.get("resource", "pods") == "pods")


def holders_text(held: list[tuple[SliceDevice, Holder]]) -> str:
    by_holder: dict[Holder, list[str]] = defaultdict(list)
    for device, holder in held:
        by_holder[holder].append(device.name)
    return ", ".join(f"{holder.text}: {','.join(names)}" for holder, names in by_holder.items())


def products(devices: list[SliceDevice]) -> str:
    seen: dict[str, list[SliceDevice]] = defaultdict(list)
    for device in devices:
        seen[f"{device.product}{', memory ' + device.memory if device.memory else ''}"].append(
            device)
    return "; ".join(f"{len(d)} × {text}" for text, d in seen.items())


def device_uuid(device: SliceDevice) -> str:
    """The GPU's UUID as the driver publishes it (NVIDIA's: attribute ``uuid``, the same
    GPU-… DCGM names), else the slice's device name."""
    value = (device.raw.get("attributes") or {}).get("uuid")
    if isinstance(value, Mapping) and isinstance(value.get("string"), str) and value["string"]:
        return str(value["string"])
    return device.name


def device_index(device: SliceDevice, position: int) -> int:
    value = (device.raw.get("attributes") or {}).get("index")
    if isinstance(value, Mapping) and isinstance(value.get("int"), int):
        return int(value["int"])
    return position


def mib(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        return int(parse_quantity(text) / Decimal(2 ** 20))
    except QuantityError:
        return None
