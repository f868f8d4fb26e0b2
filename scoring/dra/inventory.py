"""The DRA rows of a snapshot (``scoring.dra.build``) indexed once: devices per node, who
holds each device, DeviceClasses and their selectors, and a pod's claims and templates
resolved (the pod's own references are read by the builder too)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from scoring.cel.error import SelectorError
from scoring.dra.build import (
    IMPLICIT_EXTENDED_PREFIX,
    pod_claim_refs,
    template_claim_refs,
)
from scoring.dra.capacity import SharedUsage
from scoring.dra.fit import alternative_outcomes, device_rows, fit_claims
from scoring.dra.gang import gang_pods
from scoring.dra.model import ZERO, Holder, NodeFit, PodClaim
from scoring.dra.rows import (
    Alternative,
    ClaimSpec,
    CounterKey,
    DeviceKey,
    DraRows,
    PodClaimRef,
    Request,
    SliceDevice,
    SliceRow,
)
from scoring.verdict import Device

if TYPE_CHECKING:
    from scoring.cel.selector import Selector
    from scoring.nodetable import NodeInfo


class Inventory:
    """The DRA rows of one Snapshot (``scoring.dra.build.dra_rows``, or the watch cache's
    kept ones) indexed once; selector results memoised per device."""

    def __init__(self, rows: DraRows, gpu_drivers: Iterable[str]) -> None:
        self.gpu_drivers = tuple(gpu_drivers)
        self.classes = rows.classes
        self.claims = rows.claims
        self.templates = rows.templates
        self.slices = rows.slices
        # By spec.nodeName, built once: a 5,000-node answer looks up each node's slices.
        self._slices_by_node: dict[str, list[SliceRow]] = defaultdict(list)
        self._shared_slices: list[SliceRow] = []  # nodeSelector, allNodes, per device
        for resource_slice in self.slices:
            if resource_slice.reach.node_name and not resource_slice.per_device:
                self._slices_by_node[resource_slice.reach.node_name].append(resource_slice)
            else:
                self._shared_slices.append(resource_slice)
        self._devices_by_node: dict[str, list[SliceDevice]] = {}
        self.taken: dict[DeviceKey, Holder] = {}
        for _, claim in sorted(self.claims.items()):
            holder = Holder(claim.label, claim.pods)
            for result in claim.results:
                if not result.admin:
                    self.taken[result.device] = holder
        self.shared_usage = SharedUsage(self.claims.values())
        self._results: dict[tuple[str, DeviceKey], bool | SelectorError] = {}
        self._variables: dict[DeviceKey, Any] = {}
        self._selectors: dict[str, Selector | SelectorError] = {}
        self._device_variable: Callable[[SliceDevice], Any] | None = None
        self._gpu_class: dict[str, bool] = {}
        self._extended: dict[str, str | None] = {}
        self._by_key: dict[DeviceKey, SliceDevice] | None = None
        # Partitionable devices (DRAPartitionableDevices, beta in 1.36): a pool's shared
        # counters, less what its allocated devices consume, and the claims consuming each
        self.counter_sets: Mapping[CounterKey, Mapping[str, Decimal]] = rows.counter_sets
        self.counters_left: dict[CounterKey, dict[str, Decimal]] = {
            key: dict(counters) for key, counters in self.counter_sets.items()}
        self.counter_consumers: dict[CounterKey, list[Holder]] = defaultdict(list)
        if self.counter_sets:
            for device_key, holder in self.taken.items():
                device = self.device(device_key)
                for counter_key, amounts in (device.consumes if device else ()):
                    left = self.counters_left.get(counter_key)
                    if left is not None:
                        for name, amount in amounts.items():
                            left[name] = left.get(name, ZERO) - amount
                        self.counter_consumers[counter_key].append(holder)

    # -- devices per node -------------------------------------------------------------

    def devices_for(self, node: NodeInfo) -> list[SliceDevice]:
        """Devices the node can use: its own slices, and slices selecting it or all nodes."""
        name = node.name
        if name not in self._devices_by_node:
            found = []
            for resource_slice in (*self._slices_by_node.get(name, ()), *self._shared_slices):
                slice_ok = resource_slice.reach.reaches(node)
                for device in resource_slice.devices:
                    reach = device.reach if resource_slice.per_device else None
                    if reach.reaches(node) if reach is not None else slice_ok:
                        found.append(device)
            self._devices_by_node[name] = found
        return self._devices_by_node[name]

    def device(self, key: DeviceKey) -> SliceDevice | None:
        """The published device an allocation result names (driver, pool, device)."""
        if self._by_key is None:
            self._by_key = {d.key: d for s in self.slices for d in s.devices}
        return self._by_key.get(key)

    def selector(self, expression: str) -> Selector | SelectorError:
        """The expression's Selector, looked up once per snapshot (each device asks)."""
        found = self._selectors.get(expression)
        if found is None:
            from scoring.cel.selector import shared_selector  # CEL only once a pod asks

            found = self._selectors[expression] = shared_selector(expression)
        return found

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
        variable = self._variables.get(device.key)
        if variable is None:
            if self._device_variable is None:
                from scoring.cel.selector import device_variable  # loaded by selector() already

                self._device_variable = device_variable
            variable = self._variables[device.key] = self._device_variable(device)
        return variable

    def class_selectors(self, class_name: str) -> tuple[str, ...]:
        device_class = self.classes.get(class_name)
        return device_class.selectors if device_class is not None else ()

    def is_gpu_class(self, class_name: str) -> bool:
        """The class names a configured GPU driver, or selects a device of one."""
        if class_name not in self._gpu_class:
            selectors = self.class_selectors(class_name)
            named = any(f'"{d}"' in s or f"'{d}'" in s for d in self.gpu_drivers
                        for s in selectors)
            self._gpu_class[class_name] = named or any(
                self.selects(selectors, device) is True
                for resource_slice in self.slices if resource_slice.driver in self.gpu_drivers
                for device in resource_slice.devices)
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
            naming = [(c.created, name) for name, c in self.classes.items()
                      if c.extended_resource == resource]
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
        refs = pod_claim_refs(pod)
        claims = {}
        for resource, count in sorted(requests.items()):
            device_class = self.extended_class(resource)
            if device_class is None or count <= 0:
                continue
            label = f"pod {refs.namespace}/{refs.name}"
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
        refs = pod_claim_refs(pod)
        claims = [self._resolve(refs.namespace, entry) for entry in refs.entries]
        if refs.extended:
            claims.append(self._resolve(refs.namespace, PodClaimRef(
                "extended resources", claim=refs.extended)))
        return claims

    def template_claims(self, namespace: str, spec: Mapping[str, Any]) -> list[PodClaim]:
        """A pod template's claims (a workload whose pods do not exist): templates as they are."""
        return [self._resolve(namespace, entry) for entry in template_claim_refs(spec)]

    def _resolve(self, namespace: str, entry: PodClaimRef) -> PodClaim:
        pod_claim, template = entry.name, entry.template
        claim_name = entry.claim or entry.generated
        if claim_name:
            claim = self.claims.get((namespace, claim_name))
            resolved = PodClaim(pod_claim, f"ResourceClaim {namespace}/{claim_name}", claim,
                                template=template)
            if claim is None:
                resolved.problem = (f"ResourceClaim {namespace}/{claim_name} does not exist "
                                    f"(pod claim {pod_claim})")
                resolved.problem_field = ("spec.resourceClaims[].resourceClaimName"
                                          if entry.claim else "status.resourceClaimStatuses")
                return resolved
            self._fill(resolved, claim.spec)
            if claim.allocated:
                resolved.allocated_nodes = claim.allocation_nodes
                resolved.allocated_devices = tuple(r.device for r in claim.results)
            return resolved
        if template:
            found = self.templates.get((namespace, template))
            resolved = PodClaim(pod_claim, f"ResourceClaimTemplate {namespace}/{template}",
                                template=template)
            if found is None:
                resolved.problem = (f"ResourceClaimTemplate {namespace}/{template} does not "
                                    f"exist (pod claim {pod_claim})")
                resolved.problem_field = "spec.resourceClaims[].resourceClaimTemplateName"
                return resolved
            self._fill(resolved, found)
            return resolved
        return PodClaim(pod_claim, f"pod claim {pod_claim}",
                        problem=f"pod claim {pod_claim} names no claim and no template",
                        problem_field="spec.resourceClaims[]")

    def _fill(self, resolved: PodClaim, spec: ClaimSpec) -> None:
        if spec.constrained:
            resolved.unmodelled.append(("spec.devices.constraints",
                                        "constraints between devices (matchAttribute)"))
        for request in spec.requests:
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

    def fit(self, claims: list[PodClaim], node: NodeInfo) -> NodeFit:
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

    def fit(self, node: NodeInfo) -> NodeFit:
        name = node.name
        if name not in self.fits:
            self.fits[name] = self.inventory.fit(self._judged_on(node), node)
        return self.fits[name]

    def gang_pods(self, node: NodeInfo, limit: int) -> tuple[int, int]:
        """Pods asking these claims that the node takes at once, with every device free and
        with what other claims hold now, each at most ``limit`` (``scoring.dra.gang``)."""
        return gang_pods(alternative_outcomes(self.inventory, self._judged_on(node), node),
                         limit)

    def _judged_on(self, node: NodeInfo) -> list[PodClaim]:
        # A claim with a problem (missing claim, template or class) cannot be judged per node.
        return ([c for c in self.claims if c.problem is None]
                + [c for resource, c in self.extended.items() if self.serves(node, resource)])

    def serves(self, node: NodeInfo, resource: str) -> bool:
        """DRA, not a device plugin, meets the pod's ``resource`` on this node.

        kube-scheduler asks DRA where the node's allocatable lacks the resource. A node whose
        device plugin registered it but offers none (capacity > 0, allocatable 0) and that
        publishes no device of the class is the device plugin's to answer for (allocatable-zero).
        """
        claim = self.extended.get(resource)
        if claim is None:
            return False
        key = (node.name, resource)
        if key not in self._serves:
            served = not node.allocatable.get(resource)
            if served and node.capacity.get(resource):
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

    def device_rows(self, node: NodeInfo) -> list[Device]:
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
