"""The DRA objects of a snapshot indexed once: devices per node, DeviceClasses and their
selectors, claims and templates resolved per pod, and who holds each device."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from scoring.cel.error import SelectorError
from scoring.dra.capacity import (
    SharedUsage,
)
from scoring.dra.fit import device_rows, fit_claims
from scoring.dra.model import (
    IMPLICIT_EXTENDED_PREFIX,
    ZERO,
    Alternative,
    CounterKey,
    DeviceKey,
    Holder,
    NodeFit,
    PodClaim,
    Request,
    SliceDevice,
    allocation_results,
    cel_expressions,
    counter_amounts,
    counter_consumption,
    current_generation,
    parse_request,
    reserved_pods,
    result_key,
    slice_devices,
    slice_reaches,
)
from scoring.dra.taint_rules import with_rule_taints
from scoring.nodes import (
    node_name,
    status_amount,
)
from scoring.objects import K8sObject, object_key
from scoring.verdict import Device

if TYPE_CHECKING:
    from scoring.cel.selector import Selector

# Per-node stages, in funnel order. CLAIM_ELSEWHERE: an allocated claim of the pod is bound
# to other nodes (the scheduler: "resourceclaim not available on the node").


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
        self.slices = with_rule_taints(current_generation(slices), listed)
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
            holder = Holder(f"{key[0]}/{key[1]}", reserved_pods(claim))
            for result in allocation_results(claim):
                if not result.get("adminAccess"):
                    self.taken[result_key(result)] = holder
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
             str(counter_set.get("name", ""))): counter_amounts(counter_set.get("counters"))
            for resource_slice in self.slices
            for spec in [resource_slice.get("spec") or {}]
            for counter_set in spec.get("sharedCounters") or [] if isinstance(counter_set, Mapping)}
        self.counters_left: dict[CounterKey, dict[str, Decimal]] = {
            key: dict(counters) for key, counters in self.counter_sets.items()}
        self.counter_consumers: dict[CounterKey, list[Holder]] = defaultdict(list)
        if self.counter_sets:
            for device_key, holder in self.taken.items():
                device = self.device(device_key)
                for counter_key, amounts in (counter_consumption(device) if device else []):
                    left = self.counters_left.get(counter_key)
                    if left is not None:
                        for name, amount in amounts.items():
                            left[name] = left.get(name, ZERO) - amount
                        self.counter_consumers[counter_key].append(holder)

    # -- devices per node -------------------------------------------------------------

    def devices_for(self, node: K8sObject) -> list[SliceDevice]:
        """Devices the node can use: its own slices, and slices selecting it or all nodes."""
        name = node_name(node)
        if name not in self._devices_by_node:
            found = []
            for resource_slice in (*self._slices_by_node.get(name, ()), *self._shared_slices):
                spec = resource_slice.get("spec") or {}
                slice_ok = slice_reaches(spec, node, name)
                for device in slice_devices(resource_slice):
                    reaches = (slice_reaches(device.raw, node, name)
                               if spec.get("perDeviceNodeSelection") else slice_ok)
                    if reaches:
                        found.append(device)
            self._devices_by_node[name] = found
        return self._devices_by_node[name]

    def device(self, key: DeviceKey) -> SliceDevice | None:
        """The published device an allocation result names (driver, pool, device)."""
        if self._by_key is None:
            self._by_key = {d.key: d for s in self.slices for d in slice_devices(s)}
        return self._by_key.get(key)

    def selector(self, expression: str) -> Selector | SelectorError:
        from scoring.cel.selector import shared_selector  # the CEL interpreter only once a pod asks

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
            from scoring.cel.selector import device_variable  # loaded by selector() already

            self._variables[device.key] = device_variable(device.driver, device.raw)
        return self._variables[device.key]

    def class_selectors(self, class_name: str) -> tuple[str, ...]:
        device_class = self.classes.get(class_name) or {}
        return cel_expressions((device_class.get("spec") or {}).get("selectors"))

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
                for device in slice_devices(resource_slice))
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
                    result_key(r) for r in allocation_results(claim))
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
            request = parse_request(claim_label, raw)
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

    def fit(self, claims: list[PodClaim], node: K8sObject) -> NodeFit:
        """The first failing stage for all the claims together on this node."""
        return fit_claims(self, claims, node)

    def device_rows(self, fit: NodeFit) -> list[Device]:
        """The node's devices of the pod's classes, as "show devices" lists them."""
        return device_rows(self, fit)


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
