"""Dynamic Resource Allocation, as kube-scheduler's DynamicResources plugin sees it (pure).

From a cluster's DeviceClasses, ResourceClaims, ResourceClaimTemplates and ResourceSlices
(``resource.k8s.io/v1``) this module builds a per-node device inventory with the devices other
claims hold, resolves a pod's ``spec.resourceClaims`` to claims or templates, and says per
node how far the pod's requests get: the first failing stage of

    claim-elsewhere → no-gpu-node → device-unfit → too-large → exhausted → fit

for all requests of all the pod's claims together (they must fit on one node, on distinct
devices). A selector that cannot be evaluated leaves the node ``unevaluated``: never a guess.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from scoring.cel_error import SelectorError
from scoring.dra_capacity import (
    LACKS,
    REFUSED,
    TOO_SMALL,
    USED_UP,
    CapacityFit,
    SharedUsage,
    capacity_requests,
    judge,
    shared,
    shared_device_row,
)
from scoring.dra_taint_rules import RULE_FIELD, with_rule_taints
from scoring.nodes import (
    node_name,
    selector_mismatches,
    status_amount,
    taint_text,
    tolerates,
)
from scoring.objects import K8sObject, object_key
from scoring.quantity import QuantityError, parse_quantity
from scoring.verdict import Device

if TYPE_CHECKING:
    from scoring.cel import Selector

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
_ZERO = Decimal(0)

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
    # matching devices judged for the request's capacity (see scoring.dra_capacity)
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


class Inventory:
    """The DRA objects of one Snapshot, indexed once; selector results memoised per device."""

    def __init__(self, objects: Iterable[K8sObject], gpu_drivers: Iterable[str]) -> None:
        self.gpu_drivers = tuple(gpu_drivers)
        self.classes: dict[str, K8sObject] = {}
        self.claims: dict[tuple[str, str], K8sObject] = {}
        self.templates: dict[tuple[str, str], K8sObject] = {}
        slices: list[K8sObject] = []
        listed = list(objects)
        for obj in listed:
            kind = obj.get("kind")
            if kind == "DeviceClass":
                self.classes[object_key(obj)[1]] = obj
            elif kind == "ResourceClaim":
                self.claims[object_key(obj)] = obj
            elif kind == "ResourceClaimTemplate":
                self.templates[object_key(obj)] = obj
            elif kind == "ResourceSlice":
                slices.append(obj)
        self.slices = with_rule_taints(_current_generation(slices), listed)
        # By spec.nodeName, built once: a 5,000-node answer looks up each node's slices.
        self._slices_by_node: dict[str, list[K8sObject]] = defaultdict(list)
        self._shared_slices: list[K8sObject] = []  # nodeSelector, allNodes, per device
        for resource_slice in self.slices:
            spec = resource_slice.get("spec") or {}
            if spec.get("nodeName") and not spec.get("perDeviceNodeSelection"):
                self._slices_by_node[str(spec["nodeName"])].append(resource_slice)
            else:
                self._shared_slices.append(resource_slice)
        self._devices_by_node: dict[str, list[SliceDevice]] = {}
        self.taken: dict[DeviceKey, Holder] = {}
        for key, claim in sorted(self.claims.items()):
            holder = Holder(f"{key[0]}/{key[1]}", _reserved_pods(claim))
            for result in _allocation_results(claim):
                if not result.get("adminAccess"):
                    self.taken[_result_key(result)] = holder
        self.shared_usage = SharedUsage(self.claims.values())
        self._results: dict[tuple[str, DeviceKey], bool | SelectorError] = {}
        self._variables: dict[DeviceKey, Any] = {}
        self._gpu_class: dict[str, bool] = {}
        self._extended: dict[str, str | None] = {}
        self._by_key: dict[DeviceKey, SliceDevice] | None = None
        # Partitionable devices (DRAPartitionableDevices, beta in 1.36): a pool's shared
        # counters, less what its allocated devices consume, and the claims consuming each
        self.counter_sets: dict[CounterKey, dict[str, Decimal]] = {
            (str(spec.get("driver", "")), str((spec.get("pool") or {}).get("name", "")),
             str(counter_set.get("name", ""))): _amounts(counter_set.get("counters"))
            for resource_slice in self.slices
            for spec in [resource_slice.get("spec") or {}]
            for counter_set in spec.get("sharedCounters") or [] if isinstance(counter_set, Mapping)}
        self._left: dict[CounterKey, dict[str, Decimal]] = {
            key: dict(counters) for key, counters in self.counter_sets.items()}
        self._consumers: dict[CounterKey, list[Holder]] = defaultdict(list)
        if self.counter_sets:
            for device_key, holder in self.taken.items():
                device = self.device(device_key)
                for counter_key, amounts in (_consumption(device) if device else []):
                    left = self._left.get(counter_key)
                    if left is not None:
                        for name, amount in amounts.items():
                            left[name] = left.get(name, _ZERO) - amount
                        self._consumers[counter_key].append(holder)

    # -- devices per node -------------------------------------------------------------

    def devices_for(self, node: K8sObject) -> list[SliceDevice]:
        """Devices the node can use: its own slices, and slices selecting it or all nodes."""
        name = node_name(node)
        if name not in self._devices_by_node:
            found = []
            for resource_slice in (*self._slices_by_node.get(name, ()), *self._shared_slices):
                spec = resource_slice.get("spec") or {}
                slice_ok = _slice_reaches(spec, node, name)
                for device in _slice_devices(resource_slice):
                    reaches = (_slice_reaches(device.raw, node, name)
                               if spec.get("perDeviceNodeSelection") else slice_ok)
                    if reaches:
                        found.append(device)
            self._devices_by_node[name] = found
        return self._devices_by_node[name]

    def device(self, key: DeviceKey) -> SliceDevice | None:
        """The published device an allocation result names (driver, pool, device)."""
        if self._by_key is None:
            self._by_key = {d.key: d for s in self.slices for d in _slice_devices(s)}
        return self._by_key.get(key)

    def _counted_out(self, free: list[SliceDevice], needed: int
                     ) -> list[tuple[SliceDevice, Holder]]:
        """Of devices no claim holds, those the shared counters they consume leave no room
        for once ``needed`` are taken, smallest consumers first (the most that can fit); each
        is held by a claim that consumes its counters (the partitions of one physical GPU)."""
        left = {key: dict(counters) for key, counters in self._left.items()}
        out, fitted = [], 0
        consuming = [(device, _consumption(device)) for device in free]
        consuming.sort(key=lambda pair: sum(
            (amount for _, amounts in pair[1] for amount in amounts.values()), _ZERO))
        for device, consumption in consuming:
            if fitted == needed:
                break  # enough fit: the rest are not looked at, as the allocator stops
            short = [key for key, amounts in consumption if key in left and any(
                left[key].get(name, _ZERO) < amount for name, amount in amounts.items())]
            if short:
                holders = self._consumers.get(short[0]) or [
                    Holder(f"counter set {short[0][2]} of pool {short[0][1]}", ())]
                out.append((device, holders[0]))
                continue
            fitted += 1
            for key, amounts in consumption:
                if key in left:
                    for name, amount in amounts.items():
                        left[key][name] = left[key].get(name, _ZERO) - amount
        return out

    # -- selectors --------------------------------------------------------------------

    def selector(self, expression: str) -> Selector | SelectorError:
        from scoring.cel import shared_selector  # the CEL interpreter only once a pod asks

        return shared_selector(expression)

    def matches(self, expression: str, device: SliceDevice) -> bool:
        """Raises SelectorError when the expression cannot be evaluated on the device."""
        memo = (expression, device.key)
        if memo not in self._results:
            selector = self.selector(expression)
            if isinstance(selector, SelectorError):
                self._results[memo] = selector
            else:
                try:
                    self._results[memo] = selector.matches(self._variable(device))
                except SelectorError as exc:
                    self._results[memo] = exc
        result = self._results[memo]
        if isinstance(result, SelectorError):
            raise result
        return result

    def _variable(self, device: SliceDevice) -> Any:
        if device.key not in self._variables:
            from scoring.cel import device_variable  # loaded by selector() already

            self._variables[device.key] = device_variable(device.driver, device.raw)
        return self._variables[device.key]

    def class_selectors(self, class_name: str) -> tuple[str, ...]:
        device_class = self.classes.get(class_name) or {}
        return _cel_expressions((device_class.get("spec") or {}).get("selectors"))

    def is_gpu_class(self, class_name: str) -> bool:
        """The class names a configured GPU driver, or selects a device of one."""
        if class_name not in self._gpu_class:
            selectors = self.class_selectors(class_name)
            named = any(f'"{d}"' in s or f"'{d}'" in s for d in self.gpu_drivers
                        for s in selectors)
            self._gpu_class[class_name] = named or any(
                self.selects(selectors, device) is True
                for resource_slice in self.slices
                if (resource_slice.get("spec") or {}).get("driver") in self.gpu_drivers
                for device in _slice_devices(resource_slice))
        return self._gpu_class[class_name]

    def selects(self, selectors: Iterable[str], device: SliceDevice) -> bool | SelectorError:
        """All selectors hold, in order, stopping at the first false (as the allocator does)."""
        for expression in selectors:
            try:
                if not self.matches(expression, device):
                    return False
            except SelectorError as exc:
                return SelectorError(f"{expression}: {exc}")
        return True

    # -- extended resources backed by DRA -----------------------------------------------

    def extended_class(self, resource: str) -> str | None:
        """The DeviceClass that serves an extended resource: the one naming it in
        spec.extendedResourceName (the newest if several, then the first by name, as
        kube-scheduler picks), else the class a ``deviceclass.resource.kubernetes.io/<class>``
        name stands for."""
        if resource not in self._extended:
            naming = [(str((c.get("metadata") or {}).get("creationTimestamp") or ""), name)
                      for name, c in self.classes.items()
                      if (c.get("spec") or {}).get("extendedResourceName") == resource]
            implicit = resource.removeprefix(IMPLICIT_EXTENDED_PREFIX)
            if naming:
                newest = max(created for created, _ in naming)
                self._extended[resource] = min(name for created, name in naming
                                               if created == newest)
            elif resource.startswith(IMPLICIT_EXTENDED_PREFIX) and implicit in self.classes:
                self._extended[resource] = implicit
            else:
                self._extended[resource] = None
        return self._extended[resource]

    def extended_claims(self, pod: Mapping[str, Any],
                        requests: Mapping[str, int]) -> dict[str, PodClaim]:
        """For each extended resource the pod asks that a DeviceClass serves, the claim
        kube-scheduler allocates for it where a node's allocatable lacks the resource: one
        request of that many devices of the class."""
        namespace, name = object_key(pod)
        claims = {}
        for resource, count in sorted(requests.items()):
            device_class = self.extended_class(resource)
            if device_class is None or count <= 0:
                continue
            label = f"pod {namespace}/{name}"
            claims[resource] = PodClaim(
                resource, f"the pod's {resource} limit (served through DeviceClass "
                f"{device_class})",
                requests=[Request(label, resource, (Alternative(
                    resource, device_class, (), "ExactCount", count),))],
                extended_resource=resource)
        return claims

    # -- a pod's claims -----------------------------------------------------------------

    def pod_claims(self, pod: Mapping[str, Any]) -> list[PodClaim]:
        """The pod's spec.resourceClaims resolved; a bound pod's extended-resource claim too
        (status.extendedResourceClaimStatus), which holds its devices."""
        namespace = object_key(pod)[0]
        spec = pod.get("spec") or {}
        status = pod.get("status") or {}
        statuses = {s.get("name"): s for s in status.get("resourceClaimStatuses") or []
                    if isinstance(s, Mapping)}
        claims = [self._resolve(namespace, entry, statuses)
                  for entry in spec.get("resourceClaims") or [] if isinstance(entry, Mapping)]
        extended = (status.get("extendedResourceClaimStatus") or {}).get("resourceClaimName")
        if extended and spec.get("nodeName"):
            claims.append(self._resolve(namespace, {"name": "extended resources",
                                                    "resourceClaimName": extended}, {}))
        return claims

    def template_claims(self, namespace: str, spec: Mapping[str, Any]) -> list[PodClaim]:
        """A pod template's claims (a workload whose pods do not exist): templates as they are."""
        return [self._resolve(namespace, entry, {})
                for entry in spec.get("resourceClaims") or [] if isinstance(entry, Mapping)]

    def _resolve(self, namespace: str, entry: Mapping[str, Any],
                 statuses: Mapping[Any, Mapping[str, Any]]) -> PodClaim:
        pod_claim = str(entry.get("name", ""))
        shared = entry.get("resourceClaimName")
        template = entry.get("resourceClaimTemplateName")
        generated = (statuses.get(pod_claim) or {}).get("resourceClaimName")
        claim_name = shared or generated
        if claim_name:
            claim = self.claims.get((namespace, str(claim_name)))
            resolved = PodClaim(pod_claim, f"ResourceClaim {namespace}/{claim_name}", claim,
                                template=str(template) if template else None)
            if claim is None:
                resolved.problem = (f"ResourceClaim {namespace}/{claim_name} does not exist "
                                    f"(pod claim {pod_claim})")
                resolved.problem_field = ("spec.resourceClaims[].resourceClaimName" if shared
                                          else "status.resourceClaimStatuses")
                return resolved
            self._fill(resolved, claim.get("spec") or {}, f"{namespace}/{claim_name}")
            status = claim.get("status") or {}
            if status.get("allocation"):
                resolved.allocated_nodes = status["allocation"].get("nodeSelector") or {}
                resolved.allocated_devices = tuple(
                    _result_key(r) for r in _allocation_results(claim))
            return resolved
        if template:
            found = self.templates.get((namespace, str(template)))
            resolved = PodClaim(pod_claim, f"ResourceClaimTemplate {namespace}/{template}",
                                template=str(template))
            if found is None:
                resolved.problem = (f"ResourceClaimTemplate {namespace}/{template} does not "
                                    f"exist (pod claim {pod_claim})")
                resolved.problem_field = "spec.resourceClaims[].resourceClaimTemplateName"
                return resolved
            self._fill(resolved, ((found.get("spec") or {}).get("spec") or {}),
                       f"template {namespace}/{template}")
            return resolved
        return PodClaim(pod_claim, f"pod claim {pod_claim}",
                        problem=f"pod claim {pod_claim} names no claim and no template",
                        problem_field="spec.resourceClaims[]")

    def _fill(self, resolved: PodClaim, claim_spec: Mapping[str, Any], claim_label: str) -> None:
        devices = claim_spec.get("devices") or {}
        if devices.get("constraints"):
            resolved.unmodelled.append(("spec.devices.constraints",
                                        "constraints between devices (matchAttribute)"))
        for raw in devices.get("requests") or []:
            if not isinstance(raw, Mapping):
                continue
            request = _request(claim_label, raw)
            resolved.requests.append(request)
            for alternative in request.alternatives:
                if alternative.device_class not in self.classes and resolved.problem is None:
                    resolved.problem = (f"request {request.name}: device class "
                                        f"{alternative.device_class} does not exist")
                    where = ("spec.spec" if resolved.claim is None else "spec")
                    step = (f"firstAvailable[{alternative.label.split('/', 1)[1]}]"
                            if "/" in alternative.label else "exactly")
                    resolved.problem_field = (f"{where}.devices.requests[{request.name}]."
                                              f"{step}.deviceClassName")

    def is_gpu_request(self, request: Request) -> bool:
        return any(a.device_class not in self.classes or self.is_gpu_class(a.device_class)
                   for a in request.alternatives)

    # -- one node --------------------------------------------------------------------------

    def fit(self, claims: list[PodClaim], node: K8sObject) -> NodeFit:
        """The first failing stage for all the claims together on this node."""
        name = node_name(node)
        devices = self.devices_for(node)
        for claim in claims:
            if claim.allocated_nodes is not None and _node_selected(claim.allocated_nodes, node):
                continue
            if claim.allocated_nodes is not None:
                where = ", ".join(allocated_node_names(claim)) or (
                    "other nodes (status.allocation.nodeSelector)")
                return NodeFit(name, CLAIM_ELSEWHERE,
                               f"claim {claim.label} is allocated for {where}, not {name}",
                               published=devices)
        own = {key for claim in claims for key in claim.allocated_devices}
        pending = [r for c in claims if c.allocated_nodes is None for r in c.requests]
        outcomes = [self._request_outcome(r, devices, own) for r in pending]
        if any(o.stage == UNEVALUATED for o in outcomes):
            unevaluated = [o.detail for o in outcomes if o.stage == UNEVALUATED]
            return NodeFit(name, UNEVALUATED, "; ".join(unevaluated), requests=outcomes,
                           published=devices, unevaluated=unevaluated)
        failing = [o for o in outcomes if o.stage is not None]
        if not failing:
            joint = self._joint(outcomes, own)
            if joint is not None:
                failing = [joint]
        if not failing:
            return NodeFit(name, None, "claims fit", requests=outcomes,
                           published=devices)
        first = min(failing, key=lambda o: STAGES.index(o.stage or EXHAUSTED))
        gpu = any(self.is_gpu_request(o.request) for o in failing if o.stage == first.stage)
        return NodeFit(name, first.stage, first.detail, gpu=gpu, requests=outcomes,
                       published=devices)

    def _request_outcome(self, request: Request, devices: list[SliceDevice],
                         own: set[DeviceKey]) -> RequestOutcome:
        best: RequestOutcome | None = None
        tried: list[RequestOutcome] = []
        for alternative in request.alternatives:
            outcome = self._alternative_outcome(request, alternative, devices, own)
            tried.append(outcome)
            if outcome.stage in (None, UNEVALUATED):
                outcome.tried = tried
                return outcome
            if best is None or STAGES.index(outcome.stage or EXHAUSTED) > STAGES.index(
                    best.stage or EXHAUSTED):
                best = outcome
        if best is None:
            return RequestOutcome(request, NO_DEVICE, f"request {request.name} has no device "
                                  "request")
        best.tried = tried
        return best

    def _alternative_outcome(self, request: Request, alternative: Alternative,
                             devices: list[SliceDevice], own: set[DeviceKey]) -> RequestOutcome:
        label = f"{request.claim} request {alternative.label}"
        if alternative.device_class not in self.classes:
            return RequestOutcome(request, NO_DEVICE, f"device class {alternative.device_class} "
                                  "does not exist", alternative)
        class_selectors = self.class_selectors(alternative.device_class)
        of_class, matching = [], []
        for device in devices:
            in_class = self.selects(class_selectors, device)
            if isinstance(in_class, SelectorError):
                return RequestOutcome(request, UNEVALUATED, f"DeviceClass "
                                      f"{alternative.device_class} selector {in_class}",
                                      alternative)
            if not in_class:
                continue
            of_class.append(device)
            wanted = self.selects(alternative.selectors, device)
            if isinstance(wanted, SelectorError):
                return RequestOutcome(request, UNEVALUATED, f"{label} selector {wanted}",
                                      alternative)
            if wanted:
                matching.append(device)
        if not of_class:
            return RequestOutcome(request, NO_DEVICE, f"no {alternative.device_class} device "
                                  "published for the node (no ResourceSlice of that class)",
                                  alternative)
        if not matching:
            return RequestOutcome(request, DEVICE_UNFIT, f"{len(of_class)} "
                                  f"{alternative.device_class} device(s) "
                                  f"({_products(of_class)}), none meets {label}'s selectors "
                                  f"({' && '.join(alternative.selectors)})", alternative,
                                  of_class)
        capacity: list[tuple[SliceDevice, CapacityFit]] = []
        if alternative.capacity or any(shared(d.raw) for d in matching):
            capacity = [(d, judge(d.raw, d.driver, dict(alternative.capacity),
                                  self.shared_usage.shares(d.key))) for d in matching]
            eligible = [(d, f) for d, f in capacity if f.failure not in (LACKS, REFUSED)]
            large = [d for d, f in eligible if f.failure != TOO_SMALL]
            short = not eligible or (alternative.mode != "All" and len(large) < alternative.count)
            if short:
                return RequestOutcome(
                    request, TOO_LARGE if eligible else DEVICE_UNFIT, f"{label} capacity: "
                    + "; ".join(f"{d.pool}/{d.name} {f.detail}" for d, f in
                                (eligible or capacity)[:4]), alternative, of_class, large,
                    capacity=capacity)
            matching = large
        if alternative.mode != "All" and len(matching) < alternative.count:
            return RequestOutcome(request, TOO_LARGE, f"{label} asks {alternative.count}, the "
                                  f"node has {len(matching)} matching device(s)", alternative,
                                  of_class, matching)
        tainted = [(d, taints) for d in matching
                   if (taints := untolerated_device_taints(d, alternative))]
        if tainted:
            skipped = {d.key for d, _ in tainted}
            usable = [d for d in matching if d.key not in skipped]
            if not usable or (alternative.mode != "All" and len(usable) < alternative.count):
                texts = ", ".join(f"{d.name} {' '.join(t)}" for d, t in tainted[:4])
                return RequestOutcome(request, DEVICE_UNFIT, f"{len(tainted)}/{len(matching)} "
                                      f"matching device(s) are tainted and {label} does not "
                                      f"tolerate it: {texts}", alternative, of_class, matching,
                                      tainted=tainted)
            matching = usable
        held = [(d, self.taken[d.key]) for d in matching
                if d.key in self.taken and d.key not in own and not alternative.admin
                and not d.raw.get("allowMultipleAllocations")]
        held += [(d, Holder(", ".join(s.claim for s in f.shares),
                            tuple(p for s in f.shares for p in s.pods)))
                 for d, f in capacity if f.failure == USED_UP and d in matching]
        if self.counter_sets and not alternative.admin:
            held += self._counted_out([d for d in matching if d.key not in self.taken],
                                      len(matching) if alternative.mode == "All"
                                      else alternative.count)
        free = len(matching) - len(held)
        needed = len(matching) if alternative.mode == "All" else alternative.count
        if free < needed:
            used_up = [f"{d.pool}/{d.name} {f.detail}" for d, f in capacity
                       if f.failure == USED_UP and d in matching]
            return RequestOutcome(request, EXHAUSTED, f"{label} needs {needed}, "
                                  + ("; ".join(used_up[:3]) if used_up else
                                     f"{len(held)}/{len(matching)} matching device(s) allocated "
                                     f"to {_holders_text(held)}"), alternative, of_class, matching,
                                  held, capacity=capacity)
        return RequestOutcome(request, None, "fits", alternative, of_class, matching, held,
                              capacity=capacity)

    def _joint(self, outcomes: list[RequestOutcome], own: set[DeviceKey]) -> RequestOutcome | None:
        """Each request fits alone; do they fit together on distinct devices?"""
        if len(outcomes) < 2:
            return None
        everything = _assign(outcomes, lambda o, d: True)
        if everything is not None:
            return RequestOutcome(outcomes[0].request, TOO_LARGE, "the requests together need "
                                  f"{everything[0]} devices, the node has {everything[1]} "
                                  "that match them", outcomes[0].alternative)
        held = {d.key for o in outcomes for d, _ in o.holders}
        free = _assign(outcomes, lambda o, d: d.key not in held)
        if free is not None:
            holders = [h for o in outcomes for h in o.holders]
            return RequestOutcome(outcomes[0].request, EXHAUSTED, "the requests together need "
                                  f"{free[0]} free devices, {free[1]} are free; the others are "
                                  f"allocated to {_holders_text(holders)}",
                                  outcomes[0].alternative, holders=holders)
        return None

    def device_rows(self, fit: NodeFit) -> list[Device]:
        """The node's devices of the pod's classes (all GPU devices when none of its class),
        as "show devices" lists them: only for the nodes an answer shows."""
        devices, outcomes = fit.published, fit.requests
        classes = {o.alternative.device_class for o in outcomes if o.alternative is not None}
        shown = [d for d in devices if any(self.selects(self.class_selectors(c), d) is True
                                           for c in classes)]
        if not shown:
            shown = [d for d in devices if d.driver in self.gpu_drivers]
        # devices no claim names but whose shared counters a claim's devices use up
        counted_out = {d.key: h for o in outcomes for d, h in o.holders if d.key not in self.taken}
        rows = []
        for position, device in enumerate(shown):
            holder = self.taken.get(device.key) or counted_out.get(device.key)
            code = None
            for outcome in outcomes:
                alternative = outcome.alternative
                if alternative is None or self.selects(
                        self.class_selectors(alternative.device_class), device) is not True:
                    continue
                for expression in alternative.selectors:
                    verdict = self.selects((expression,), device)
                    if verdict is not True:
                        code = (f"selector not evaluated: {verdict}"
                                if isinstance(verdict, SelectorError)
                                else f"fails {expression}")
                        break
            if code is None:
                taints = [taint_text(t) for t in blocking_device_taints(device)]
                code = f"tainted {', '.join(taints)}" if taints else None
            if shared(device.raw):
                failed = next((f for o in outcomes for d, f in o.capacity
                               if d.key == device.key and f.failure is not None), None)
                rows.append(shared_device_row(
                    device.raw, self.shared_usage.shares(device.key), failed, code,
                    Device(uuid=_uuid(device), index=_index(device, position), type=device.product,
                           memory_total=_mib(device.memory), holder_source=DRA_HOLDERS)))
                continue
            if code is None and holder is not None:
                code = (f"its shared counters are used by {holder.claim}"
                        if device.key in counted_out else f"allocated to {holder.claim}")
            rows.append(Device(uuid=_uuid(device), index=_index(device, position),
                               type=device.product, memory_total=_mib(device.memory),
                               holders=list(holder.pods or (f"claim {holder.claim}",))
                               if holder else [], code=code, holder_source=DRA_HOLDERS))
        return rows


def _assign(outcomes: list[RequestOutcome],
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
                       _cel_expressions(spec.get("selectors")),
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



def _cel_expressions(selectors: Any) -> tuple[str, ...]:
    return tuple(str((s.get("cel") or {}).get("expression", ""))
                 for s in selectors or [] if isinstance(s, Mapping) and s.get("cel"))


def _current_generation(slices: list[K8sObject]) -> list[K8sObject]:
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


def _amounts(counters: Any) -> dict[str, Decimal]:
    """``{name: {value: quantity}}`` as numbers; an unreadable value counts as 0."""
    found = {}
    for name, counter in (counters or {}).items() if isinstance(counters, Mapping) else ():
        try:
            found[str(name)] = parse_quantity((counter or {}).get("value", 0))
        except (QuantityError, AttributeError):
            found[str(name)] = _ZERO
    return found


def _consumption(device: SliceDevice) -> list[tuple[CounterKey, dict[str, Decimal]]]:
    """The shared counters a device uses up when allocated (consumesCounters)."""
    return [((device.driver, device.pool, str(entry.get("counterSet", ""))),
             _amounts(entry.get("counters")))
            for entry in device.raw.get("consumesCounters") or [] if isinstance(entry, Mapping)]


def _slice_devices(resource_slice: Mapping[str, Any]) -> list[SliceDevice]:
    spec = resource_slice.get("spec") or {}
    return [SliceDevice(object_key(resource_slice)[1], str(spec.get("driver", "")),
                        str((spec.get("pool") or {}).get("name", "")), str(d.get("name", "")), d)
            for d in spec.get("devices") or [] if isinstance(d, dict)]


def _slice_reaches(spec: Mapping[str, Any], node: K8sObject, name: str) -> bool:
    if spec.get("nodeName"):
        return bool(spec["nodeName"] == name)
    if spec.get("allNodes"):
        return True
    if spec.get("nodeSelector"):
        return _node_selected(spec["nodeSelector"], node)
    return False


def _node_selected(node_selector: Mapping[str, Any], node: K8sObject) -> bool:
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


def _allocation_results(claim: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    allocation = (claim.get("status") or {}).get("allocation") or {}
    return [r for r in (allocation.get("devices") or {}).get("results") or []
            if isinstance(r, Mapping)]


def _result_key(result: Mapping[str, Any]) -> DeviceKey:
    return (str(result.get("driver", "")), str(result.get("pool", "")),
            str(result.get("device", "")))


def _reserved_pods(claim: Mapping[str, Any]) -> tuple[str, ...]:
    namespace = object_key(claim)[0]
    return tuple(f"{namespace}/{r.get('name')}"
                 for r in (claim.get("status") or {}).get("reservedFor") or []
                 if isinstance(r, Mapping) and r.get("resource", "pods") == "pods")


def _holders_text(held: list[tuple[SliceDevice, Holder]]) -> str:
    by_holder: dict[Holder, list[str]] = defaultdict(list)
    for device, holder in held:
        by_holder[holder].append(device.name)
    return ", ".join(f"{holder.text}: {','.join(names)}" for holder, names in by_holder.items())


def _products(devices: list[SliceDevice]) -> str:
    seen: dict[str, list[SliceDevice]] = defaultdict(list)
    for device in devices:
        seen[f"{device.product}{', memory ' + device.memory if device.memory else ''}"].append(
            device)
    return "; ".join(f"{len(d)} × {text}" for text, d in seen.items())


def _uuid(device: SliceDevice) -> str:
    """The GPU's UUID as the driver publishes it (NVIDIA's: attribute ``uuid``, the same
    GPU-… DCGM names), else the slice's device name."""
    value = (device.raw.get("attributes") or {}).get("uuid")
    if isinstance(value, Mapping) and isinstance(value.get("string"), str) and value["string"]:
        return str(value["string"])
    return device.name


def _index(device: SliceDevice, position: int) -> int:
    value = (device.raw.get("attributes") or {}).get("index")
    if isinstance(value, Mapping) and isinstance(value.get("int"), int):
        return int(value["int"])
    return position


def _mib(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        return int(parse_quantity(text) / Decimal(2 ** 20))
    except QuantityError:
        return None


@dataclass
class ClaimSet:
    """A pod's (or pod template's) claims with the inventory they are judged on; one fit per
    node, computed once."""

    inventory: Inventory
    claims: list[PodClaim]
    # The pod's extended resources a DeviceClass serves, by resource (see extended_claims)
    extended: dict[str, PodClaim] = field(default_factory=dict)
    fits: dict[str, NodeFit] = field(default_factory=dict)
    _serves: dict[tuple[str, str], bool] = field(default_factory=dict)

    def fit(self, node: K8sObject) -> NodeFit:
        name = node_name(node)
        if name not in self.fits:
            # A claim with a problem (missing claim, template or class) cannot be judged per node.
            self.fits[name] = self.inventory.fit(
                [c for c in self.claims if c.problem is None]
                + [c for resource, c in self.extended.items() if self.serves(node, resource)],
                node)
        return self.fits[name]

    def serves(self, node: K8sObject, resource: str) -> bool:
        """DRA, not a device plugin, meets the pod's ``resource`` on this node.

        kube-scheduler asks DRA where the node's allocatable lacks the resource. A node whose
        device plugin registered it but offers none (capacity > 0, allocatable 0) and that
        publishes no device of the class is the device plugin's to answer for (allocatable-zero).
        """
        claim = self.extended.get(resource)
        if claim is None:
            return False
        key = (node_name(node), resource)
        if key not in self._serves:
            served = not status_amount(node, "allocatable", resource)
            if served and status_amount(node, "capacity", resource):
                device_class = claim.requests[0].alternatives[0].device_class
                selectors = self.inventory.class_selectors(device_class)
                served = any(self.inventory.selects(selectors, device) is True
                             for device in self.inventory.devices_for(node))
            self._serves[key] = served
        return self._serves[key]

    @property
    def all_claims(self) -> list[PodClaim]:
        """The pod's claims and the ones standing for its DRA-served extended resources."""
        return [*self.claims, *self.extended.values()]

    def device_rows(self, node: K8sObject) -> list[Device]:
        return self.inventory.device_rows(self.fit(node))

    @property
    def problems(self) -> list[PodClaim]:
        return [c for c in self.claims if c.problem is not None]

    @property
    def unmodelled(self) -> list[tuple[str, str, str]]:
        """(object, field, what) the fit did not judge: then the scheduler's word stands."""
        return [(c.source, where, what) for c in self.claims for where, what in c.unmodelled]

    @property
    def asks_gpu(self) -> bool:
        """Some request is of a GPU class, or cannot be told (a claim or class is missing)."""
        return bool(self.problems) or any(self.inventory.is_gpu_request(r)
                                          for c in self.all_claims for r in c.requests)
