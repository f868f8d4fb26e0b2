"""What a pod asks for, the way kube-scheduler counts it."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from scoring.identity import ByIdentity
from scoring.objects import K8sObject, is_terminated, object_key
from scoring.quantity import QuantityError, parse_quantity
from triage.config import TriageConfig


def pod_name(pod: Mapping[str, Any]) -> str:
    namespace, name = object_key(pod)
    return f"{namespace}/{name}"


def container_resources(container: Mapping[str, Any]) -> dict[str, Decimal]:
    """Limits, falling back to requests: extended resources must have requests == limits."""
    resources = container.get("resources") or {}
    merged: dict[str, Decimal] = {}
    for source in (resources.get("requests") or {}, resources.get("limits") or {}):
        for name, value in source.items():
            try:
                merged[name] = parse_quantity(value)
            except QuantityError:
                continue
    return merged


_ZERO = Decimal(0)


def container_amount(container: Mapping[str, Any], resource: str) -> Decimal:
    """``container_resources(container).get(resource, 0)``, parsing only that resource: a
    triage asks it of every pod on the nodes it describes."""
    resources = container.get("resources") or {}
    for source in (resources.get("limits"), resources.get("requests")):
        value = source.get(resource) if source else None
        if value is not None:
            try:
                return parse_quantity(value)
            except QuantityError:
                continue  # an unparsable limit: the request, as container_resources has it
    return _ZERO


def _is_sidecar(container: Mapping[str, Any]) -> bool:
    return container.get("restartPolicy") == "Always"


def _is_pod_level(resource: str) -> bool:
    """Resources a pod may ask for as a whole in ``spec.resources`` (PodLevelResources)."""
    return resource in ("cpu", "memory") or resource.startswith("hugepages-")


def pod_level_requests(spec: Mapping[str, Any]) -> dict[str, Decimal]:
    """``spec.resources``' requests, which replace the containers' sums where set.

    The API server defaults a missing pod-level request to its limit; a manifest not yet
    defaulted is read the same way. Only cpu, memory and hugepages can be asked per pod.
    """
    resources = spec.get("resources")
    if not resources:
        return {}
    merged: dict[str, Decimal] = {}
    for source in (resources.get("limits") or {}, resources.get("requests") or {}):
        for name, value in source.items():
            if _is_pod_level(name):
                try:
                    merged[name] = parse_quantity(value)
                except QuantityError:
                    continue
    return merged


def effective_request(spec: Mapping[str, Any], resource: str) -> Decimal:
    """max(max over init containers, sum over app containers), sidecars included, plus
    the pod's overhead; a pod-level request (``spec.resources``) replaces the containers'.

    A restartable init container (sidecar) keeps running: it adds to the app containers'
    sum and to every init container that starts after it.
    """
    overhead = (spec.get("overhead") or {}).get(resource)
    extra = parse_quantity(overhead) if overhead is not None else _ZERO
    if spec.get("resources") and resource in (pod_level := pod_level_requests(spec)):
        return pod_level[resource] + extra
    app_sum = sum((container_amount(c, resource) for c in spec.get("containers") or []), _ZERO)
    sidecars = _ZERO
    init_peak = _ZERO
    for container in spec.get("initContainers") or []:
        amount = container_amount(container, resource)
        if _is_sidecar(container):
            sidecars += amount
            init_peak = max(init_peak, sidecars)
        else:
            init_peak = max(init_peak, sidecars + amount)
    return max(init_peak, app_sum + sidecars) + extra


def all_containers(spec: Mapping[str, Any]) -> Iterable[Mapping[str, Any]]:
    yield from spec.get("initContainers") or []
    yield from spec.get("containers") or []


def named_resources(spec: Mapping[str, Any]) -> set[str]:
    """Every resource name the containers' limits or requests mention, values unread."""
    return {name for container in all_containers(spec)
            for section in ("limits", "requests")
            for name in ((container.get("resources") or {}).get(section) or {})}


def resource_names(spec: Mapping[str, Any]) -> set[str]:
    return {name for c in all_containers(spec) for name in container_resources(c)}


def gpu_requests(spec: Mapping[str, Any], config: TriageConfig) -> dict[str, int]:
    """Effective request per schedulable GPU resource the pod names (kube-scheduler's view)."""
    names = sorted({name for c in all_containers(spec) for name in container_resources(c)
                    if config.is_gpu_resource(name)})
    return {name: int(effective_request(spec, name)) for name in names}


def gpu_related_resources(spec: Mapping[str, Any], config: TriageConfig) -> list[str]:
    """GPU resources the pod really asks for: a limit of 0 asks for nothing."""
    names = {name for c in all_containers(spec) for name in container_resources(c)
             if config.is_gpu_related(name)}
    return sorted(name for name in names if effective_request(spec, name) > 0)


def resource_claims(spec: Mapping[str, Any]) -> list[str]:
    """Dynamic Resource Allocation claims: the claim or template each entry names."""
    names = []
    for claim in spec.get("resourceClaims") or []:
        source = claim.get("source") or claim
        names.append(source.get("resourceClaimName") or source.get("resourceClaimTemplateName")
                     or claim.get("name", "?"))
    return names


def names_resource(spec: Mapping[str, Any], resource: str) -> bool:
    """Does any container's limits or requests, or the pod's overhead, name the resource? A
    look at keys: most pods on a GPU node ask for none, and need no quantity parsed."""
    if resource in (spec.get("overhead") or ()):
        return True
    for container in all_containers(spec):
        asked = container.get("resources")
        if asked and (resource in (asked.get("limits") or ())
                      or resource in (asked.get("requests") or ())):
            return True
    return False


def holders(pods: Iterable[K8sObject], resource: str) -> list[tuple[K8sObject, int]]:
    """Non-terminated pods holding the resource, with how much each holds."""
    held = []
    for pod in pods:
        spec = pod.get("spec", {})
        if is_terminated(pod) or not names_resource(spec, resource):
            continue
        amount = int(effective_request(spec, resource))
        if amount:
            held.append((pod, amount))
    return held


def effective_requests(spec: Mapping[str, Any]) -> dict[str, Decimal]:
    """``effective_request`` of every resource the containers name, in one pass over them."""
    zero = _ZERO  # a local: this runs for every pod of a 150,000-pod load
    app: dict[str, Decimal] = {}
    for container in spec.get("containers") or ():
        for name, amount in container_resources(container).items():
            app[name] = app.get(name, zero) + amount
    init_containers = spec.get("initContainers")
    overhead = spec.get("overhead")
    pod_level = spec.get("resources")
    if not init_containers and not overhead and not pod_level:  # most pods: fewer look-ups
        return {name: max(zero, amount + zero) + zero for name, amount in app.items()}
    sidecars: dict[str, Decimal] = {}
    init_peak: dict[str, Decimal] = {}
    for container in init_containers or ():
        sidecar = _is_sidecar(container)
        for name, amount in container_resources(container).items():
            running = sidecars.get(name, zero)
            if sidecar:
                running = sidecars[name] = running + amount
                init_peak[name] = max(init_peak.get(name, zero), running)
            else:
                init_peak[name] = max(init_peak.get(name, zero), running + amount)
    overhead = overhead or {}
    whole_pod = pod_level_requests(spec) if pod_level else {}
    result = {}
    for name in {**app, **init_peak, **whole_pod}:
        extra = parse_quantity(overhead[name]) if overhead.get(name) is not None else zero
        asked = whole_pod.get(name)
        if asked is None:
            asked = max(init_peak.get(name, zero), app.get(name, zero) + sidecars.get(name, zero))
        result[name] = asked + extra
    return result


# What ``effective_requests`` reads of a spec: pods whose fields these are one kind of pod.
REQUEST_FIELDS = ("containers", "initContainers", "overhead", "resources")
# A kind's effective requests, by the identities of its REQUEST_FIELDS
KindRequests = ByIdentity[dict[str, Decimal]]


def request_fields(pod: K8sObject) -> tuple[object, ...]:
    """The spec's fields a pod's requests are worked out from (``sum_requests``)."""
    spec = pod.get("spec") or {}
    return tuple(map(spec.get, REQUEST_FIELDS))


def sum_requests(pods: Iterable[K8sObject], kinds: KindRequests | None = None,
                 ) -> dict[str, Decimal]:
    """Effective requests per resource summed over ``pods``, and their number as "pods".

    With ``kinds``, the pods whose REQUEST_FIELDS are the very same objects have their
    requests worked out once, remembered there across calls: the pods a list read keeps
    share one object of each for their kind (``triage.cache.listpages``), where a dump's pods
    share none and would only fill it.
    """
    totals: dict[str, Decimal] = defaultdict(Decimal)
    count = 0
    for pod in pods:
        count += 1
        spec = pod.get("spec", {})
        if kinds is None:
            requests = effective_requests(spec)
        else:
            parts = request_fields(pod)
            found = kinds.get(parts)
            requests = kinds.put(parts, effective_requests(spec)) if found is None else found
        for name, amount in requests.items():
            totals[name] += amount
    totals["pods"] = Decimal(count)
    return dict(totals)


def merge_pods(listed: Iterable[K8sObject], fetched: Iterable[K8sObject]) -> list[K8sObject]:
    """The listed pods (each once, as a list gives them) with the individually fetched ones
    replacing them in place or joining at the end. Only a listed pod with a fetched one's
    name is keyed: a cold read lists 150,000 pods to merge one."""
    replacing = {object_key(p): p for p in fetched}
    names = {name for _, name in replacing}
    merged = [replacing.pop(object_key(p), p) if p["metadata"].get("name") in names else p
              for p in listed]
    return merged + list(replacing.values())


# namespace -> extended resource -> (summed request, pods asking for some)
Holdings = Mapping[str, Mapping[str, tuple[int, int]]]


def extended_share(requests: Mapping[str, Decimal]) -> dict[str, int]:
    """A pod's whole-unit requests of extended resources (domain-prefixed names: the GPUs,
    nvidia.com/gpu, gpu.intel.com/i915), from its summed requests."""
    return {resource: int(amount) for resource, amount in requests.items()
            if "/" in resource and amount >= 1}


def add_holding(holdings: Holdings, namespace: str, share: Mapping[str, int],
                sign: int = 1) -> dict[str, Mapping[str, tuple[int, int]]]:
    """A new Holdings with one pod's share added (sign -1: taken away); the old one and its
    namespaces' maps stay as they were (a view may hold them)."""
    updated = dict(holdings)
    entry = dict(updated.get(namespace, {}))
    for resource, amount in share.items():
        held, pods = entry.get(resource, (0, 0))
        held, pods = held + sign * amount, pods + sign
        if pods > 0:
            entry[resource] = (held, pods)
        else:
            entry.pop(resource, None)
    if entry:
        updated[namespace] = entry
    else:
        updated.pop(namespace, None)
    return updated


def namespace_holdings(pods: Iterable[K8sObject]) -> Holdings:
    """What the pods hold of extended resources, per namespace (terminated pods: nothing)."""
    holdings: Holdings = {}
    for pod in pods:
        share = extended_share(effective_requests(pod.get("spec", {})))
        if share and not is_terminated(pod):
            holdings = add_holding(holdings, object_key(pod)[0], share)
    return holdings
