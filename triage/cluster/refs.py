"""Reading what one ref needs, cold: the pod or workload itself, its owners and children, the
events about them, the namespace's quotas and RuntimeClasses where they can decide, and the
DRA objects its claims name."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from scoring.dra import serves_extended
from scoring.objects import K8sObject, object_key
from triage import integrations
from triage.admission import ordinal_base
from triage.cluster.limits import DEFAULT_PAGE_SIZE
from triage.cluster.reader import ClusterReader, NotServed
from triage.cluster.resources import (
    CLAIM_TEMPLATES,
    DEVICE_CLASSES,
    DEVICE_TAINT_RULES,
    EVENTS,
    JOB_RESOURCES,
    PODS,
    QUOTAS,
    RESOURCE_CLAIMS,
    RESOURCE_SLICES,
    RUNTIME_CLASSES,
    WORKLOADS,
    Resource,
)
from triage.errors import ClusterError
from triage.pods import named_resources
from triage.refs import PodRef
from triage.slim import POD_PARTS, sound
from triage.snapshot import WORKLOAD_KINDS

# More names than this: one list of the namespace's events instead of one request per name.

MAX_EVENT_QUERIES = 8


# -- reading what one ref needs ----------------------------------------------------------------

@dataclass
class RefObjects:
    """The objects a ref resolves to: its pod(s), workloads and the events about them."""

    pods: list[K8sObject] = field(default_factory=list)
    workloads: list[K8sObject] = field(default_factory=list)
    events: list[K8sObject] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # corroborating reads that failed


def optional_read(problems: list[str] | None,
                  read: Callable[[], tuple[list[K8sObject], str]]) -> list[K8sObject]:
    """Events, quotas and RuntimeClasses only corroborate or refine an answer: when one of
    them cannot be read, the triage goes on and the Verdict says what it lacked."""
    if problems is None:
        return read()[0]
    try:
        return read()[0]
    except ClusterError as exc:
        problems.append(str(exc))
        return []


class _Unread:
    """The ref's pod not read yet (None is a pod that is not there)."""


UNREAD = _Unread()


def read_ref_objects(reader: ClusterReader, ref: PodRef, page_size: int = DEFAULT_PAGE_SIZE,
                     *, pod: K8sObject | _Unread | None = UNREAD) -> RefObjects:
    """What the ref resolves to; ``pod``: the GET of the ref's pod, when made already."""
    namespace = ref.namespace
    if isinstance(pod, _Unread):
        pod = reader.get(PODS, namespace, ref.name)
    found = RefObjects()
    if pod is not None:
        found.pods = [sound(pod, POD_PARTS)]
        found.events = events_about(reader, namespace, [ref.name], page_size, found.problems)
        return found
    failed_creates = optional_read(found.problems, lambda: reader.list_all(
        EVENTS, namespace, field_selector="reason=FailedCreate", page_size=page_size))
    workloads = [w for kind in WORKLOAD_KINDS
                 if (w := reader.get(WORKLOADS[kind], namespace, ref.name)) is not None]
    if not workloads:
        workloads = _workloads_named_by(reader, namespace, ref.name, failed_creates)
    if not workloads and (ordinal := ordinal_base(ref.name)) is not None:
        # db-0, never created, its FailedCreate expired: the StatefulSet db still wants it.
        statefulset = reader.get(WORKLOADS["StatefulSet"], namespace, ordinal[0])
        workloads = [statefulset] if statefulset is not None else []
    if not workloads:
        # a JobSet or RayJob (404 too where the cluster does not serve the kind)
        workloads = [w for resource in JOB_RESOURCES.values()
                     if (w := reader.get(resource, namespace, ref.name)) is not None]
    if not workloads:
        # Nothing by that name: the namespace's workloads, for "did you mean …?".
        found.workloads = [w for kind in WORKLOAD_KINDS for w in optional_read(
            found.problems, partial(reader.list_all, WORKLOADS[kind], namespace,
                                    page_size=page_size))]
    for workload in workloads:
        children, pods = _children(reader, workload, page_size)
        found.workloads.extend([workload, *children])
        found.pods.extend(pods)
    found.workloads = unique_objects(found.workloads)
    found.pods = [sound(pod, POD_PARTS) for pod in unique_objects(found.pods)]
    names = [ref.name, *(w["metadata"]["name"] for w in workloads),
             *(p["metadata"]["name"] for p in found.pods)]
    found.events = unique_objects([
        *events_about(reader, namespace, names, page_size, found.problems), *failed_creates])
    return found


def events_about(reader: ClusterReader, namespace: str, names: Sequence[str],
                  page_size: int, problems: list[str]) -> list[K8sObject]:
    wanted = list(dict.fromkeys(names))
    if len(wanted) > MAX_EVENT_QUERIES:
        events = optional_read(problems, lambda: reader.list_all(EVENTS, namespace,
                                                             page_size=page_size))
        return [e for e in events if (e.get("involvedObject") or {}).get("name") in wanted]
    found: list[K8sObject] = []
    for name in wanted:
        selector = f"involvedObject.name={name},involvedObject.namespace={namespace}"
        found.extend(optional_read(problems, partial(reader.list_all, EVENTS, namespace,
                                                 field_selector=selector, page_size=page_size)))
        if problems:
            break  # the same refusal for every name: say it once
    return found


def _children(reader: ClusterReader, workload: K8sObject,
              page_size: int) -> tuple[list[K8sObject], list[K8sObject]]:
    """(ReplicaSets of a Deployment, pods) owned by the workload, found by its selector; of a
    JobSet or RayJob, the pods its controllers label with its name."""
    namespace = workload["metadata"].get("namespace", "")
    if selector := integrations.pod_selector(workload):
        pods, _ = reader.list_all(PODS, namespace, label_selector=selector, page_size=page_size)
        return [], pods
    selector = label_selector(workload.get("spec", {}).get("selector") or {})
    if not selector:
        return [], []
    owners = {workload["metadata"].get("uid")}
    replica_sets: list[K8sObject] = []
    if workload.get("kind") == "Deployment":
        listed, _ = reader.list_all(WORKLOADS["ReplicaSet"], namespace, label_selector=selector,
                                page_size=page_size)
        replica_sets = [rs for rs in listed if owned_by(rs, owners)]
        owners = {rs["metadata"].get("uid") for rs in replica_sets}
    pods, _ = reader.list_all(PODS, namespace, label_selector=selector, page_size=page_size)
    return replica_sets, [p for p in pods if owned_by(p, owners)]


def _workloads_named_by(reader: ClusterReader, namespace: str, name: str,
                        failed_creates: Iterable[K8sObject]) -> list[K8sObject]:
    """Workloads whose FailedCreate events name the ref as the pod (or pod prefix) refused."""
    found: list[K8sObject] = []
    for event in failed_creates:
        involved = event.get("involvedObject") or {}
        pod_names = re.findall(r'pods "([^"]+)"', str(event.get("message") or ""))
        names_ref = any(p == name or (p.endswith("-") and name.startswith(p)) for p in pod_names)
        if names_ref and involved.get("kind") in WORKLOADS:
            workload = reader.get(WORKLOADS[involved["kind"]], namespace, involved.get("name", ""))
            if workload is not None:
                found.append(workload)
                found.extend(_controllers(reader, workload))
    return unique_objects(found)


def _controllers(reader: ClusterReader, workload: K8sObject) -> list[K8sObject]:
    """The workload's controller chain (a ReplicaSet's Deployment)."""
    namespace = workload["metadata"].get("namespace", "")
    for owner in workload["metadata"].get("ownerReferences") or []:
        if owner.get("controller") and owner.get("kind") in WORKLOADS:
            parent = reader.get(WORKLOADS[owner["kind"]], namespace, owner.get("name", ""))
            if parent is not None:
                return [parent, *_controllers(reader, parent)]
    return []


def owned_by(obj: K8sObject, uids: set[Any]) -> bool:
    return any(o.get("uid") in uids for o in obj["metadata"].get("ownerReferences") or [])


def unique_objects(objects: Iterable[K8sObject]) -> list[K8sObject]:
    by_identity: dict[tuple[str, str, str], K8sObject] = {}
    for obj in objects:
        meta = obj.get("metadata", {})
        by_identity.setdefault((obj.get("kind", ""), meta.get("uid", ""),
                                "/".join(object_key(obj))), obj)
    return list(by_identity.values())


def label_selector(selector: Mapping[str, Any]) -> str:
    """A LabelSelector object as the ``labelSelector`` query string."""
    terms = [f"{key}={value}" for key, value in sorted((selector.get("matchLabels") or {}).items())]
    for expression in selector.get("matchExpressions") or []:
        key, operator = expression.get("key", ""), expression.get("operator", "")
        values = ",".join(expression.get("values") or [])
        terms.append({"In": f"{key} in ({values})", "NotIn": f"{key} notin ({values})",
                      "Exists": key, "DoesNotExist": f"!{key}"}.get(operator, key))
    return ",".join(terms)


def namespace_policy(reader: ClusterReader, namespace: str, page_size: int,
                      problems: list[str] | None = None,
                      ) -> tuple[list[K8sObject], list[K8sObject]]:
    quotas = optional_read(problems,
                           lambda: reader.list_all(QUOTAS, namespace, page_size=page_size))
    runtime_classes = optional_read(problems, lambda: reader.list_all(RUNTIME_CLASSES,
                                                                  page_size=page_size))
    return quotas, runtime_classes


def ref_policy(reader: ClusterReader, found: RefObjects, namespace: str, page_size: int,
               ) -> tuple[list[K8sObject], list[K8sObject]]:
    """The namespace's ResourceQuotas and the cluster's RuntimeClasses, read only when the
    triage of what the ref resolved to looks at them: a workload (its pods' admission) needs
    both; a bound pod with a runtimeClassName the RuntimeClasses (its node's handler); any
    other pod neither."""
    if found.workloads:
        return namespace_policy(reader, namespace, page_size, found.problems)
    if any(p.get("spec", {}).get("nodeName") and p.get("spec", {}).get("runtimeClassName")
           for p in found.pods):
        return [], optional_read(found.problems, lambda: reader.list_all(RUNTIME_CLASSES,
                                                                     page_size=page_size))
    return [], []


def asks_dra(found: RefObjects) -> bool:
    """Some pod (or pod template) of the ref names ResourceClaims, or holds devices through
    the claim kube-scheduler made for its extended resources."""
    specs = [p.get("spec") or {} for p in found.pods] + [
        ((w.get("spec") or {}).get("template") or {}).get("spec") or {} for w in found.workloads]
    return any(spec.get("resourceClaims") for spec in specs) or any(
        (p.get("status") or {}).get("extendedResourceClaimStatus") for p in found.pods)


def extended_names(found: RefObjects) -> set[str]:
    """The extended resources (domain-prefixed names) the ref's pending pods ask for: a
    DeviceClass may serve them through DRA."""
    return {name for pod in found.pods if not (spec := pod.get("spec") or {}).get("nodeName")
            for name in named_resources(spec) if "/" in name}


def read_extended_classes(reader: ClusterReader, found: RefObjects, publishes: bool,
                          page_size: int = DEFAULT_PAGE_SIZE) -> list[K8sObject]:
    """The DeviceClasses, for a pending pod asking an extended resource on a cluster that
    publishes ResourceSlices (``publishes``): a class may serve that resource through DRA."""
    if not publishes or not extended_names(found):
        return []
    return optional_read(found.problems, lambda: (served(reader, DEVICE_CLASSES,
                                                     page_size=page_size), ""))


def served(reader: ClusterReader, resource: Resource, namespace: str = "",
           page_size: int = DEFAULT_PAGE_SIZE) -> list[K8sObject]:
    """A list, empty when the cluster does not serve the resource (no DRA API group)."""
    try:
        return reader.list_all(resource, namespace, page_size=page_size)[0]
    except NotServed:
        return []


def read_dra_policy(reader: ClusterReader, namespace: str,
                    page_size: int = DEFAULT_PAGE_SIZE) -> list[K8sObject]:
    """DeviceClasses and the namespace's ResourceClaimTemplates: read for a DRA pod only."""
    return [*served(reader, DEVICE_CLASSES, page_size=page_size),
            *served(reader, CLAIM_TEMPLATES, namespace, page_size=page_size)]


def read_dra(reader: ClusterReader, found: RefObjects, namespace: str,
             page_size: int = DEFAULT_PAGE_SIZE) -> list[K8sObject]:
    """The DRA objects one triage needs, read cold.

    A DRA pod needs them all (they decide its answer: a failed read is the answer); any other
    pod only the ResourceSlices, which say whether its node publishes GPUs as DRA devices
    (corroboration: a failed read is noted in the Verdict).
    """
    if asks_dra(found):
        return [*read_dra_policy(reader, namespace, page_size),
                *served(reader, RESOURCE_CLAIMS, page_size=page_size),
                *served(reader, RESOURCE_SLICES, page_size=page_size),
                *served(reader, DEVICE_TAINT_RULES, page_size=page_size)]
    slices = optional_read(found.problems, lambda: (served(reader, RESOURCE_SLICES,
                                                       page_size=page_size), ""))
    classes = read_extended_classes(reader, found, bool(slices), page_size)
    if not serves_extended(classes, extended_names(found)):
        return [*classes, *slices]
    # the devices the pod's extended resources would get: other claims hold some
    claims = optional_read(found.problems, lambda: (served(reader, RESOURCE_CLAIMS,
                                                       page_size=page_size), ""))
    return [*classes, *claims, *slices]


