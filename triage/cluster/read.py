"""Reading what one triage needs from a live cluster, cold (``gpuwhy triage``), and support
bundles (``gpuwhy snapshot``).

Every request is a raw call through the ``kubernetes`` client with a timeout; the JSON stays
plain dicts, exactly what ``kubectl get -o json`` prints, so a Snapshot read here equals one
read from a dump directory. Failures become a ClusterError whose text is one sentence.
Read only: the single write is the server-side dry-run create of ``gpuwhy check``.

What one triage reads (``read_snapshot``):
- the pod (GET); when absent, the Deployment / ReplicaSet / StatefulSet / DaemonSet / Job of
  that name (GET each), their ReplicaSets and pods (one list per workload, label-selected,
  kept when the ownerReferences say so), the namespace's FailedCreate events (one list;
  they also resolve a generated pod name like ``finetune-2dtfx`` to its Job); when nothing
  has that name, the namespace's workloads (one list per kind: the names a typo was meant
  to be);
- events about the pod / workload / workload pods (field-selected by name);
- nodes (paged with limit/continue) and the non-terminated pods of every namespace, or,
  for a pending pod whose selection matches a few nodes, only those nodes' pods (one
  field-selected list per node; see ``PINNED_SHARE``), more as the answer asks for them;
- the namespace's ResourceQuotas and the cluster's RuntimeClasses.

Finished (Succeeded / Failed) pods are left out of the lists on purpose: they hold nothing,
and on a large cluster finished Job pods can outnumber the running ones. So a live answer
never says which finished pods on a full node "hold nothing" (a dump that has them does);
which nodes matter is only known once classify has run, and classify must get its Snapshot
whole, up front. Lists come back in the API server's order (namespace, name), as in a dump
``kubectl get -o json`` wrote.

``WatchCache`` keeps nodes, non-terminated pods and the DRA objects in memory (list +
watch), so a triage from it costs only the per-ref reads above, whatever the cluster size.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, fields, replace
from datetime import UTC, datetime
from functools import partial
from typing import Any, TypeVar

from kubernetes.client import ApiClient

from scoring.dra import serves_extended
from scoring.nodes import node_name, selector_mismatches
from scoring.objects import K8sObject, object_key
from triage import queues
from triage.admission import ordinal_base
from triage.classify.checks.scheduler import DEFAULT_SCHEDULER
from triage.cluster.limits import DEFAULT_PAGE_SIZE, DEFAULT_TIMEOUT
from triage.cluster.reader import (
    CLAIM_TEMPLATES,
    DEVICE_CLASSES,
    DEVICE_TAINT_RULES,
    EVENTS,
    NODES,
    NON_TERMINATED,
    PODS,
    QUOTAS,
    RESOURCE_CLAIMS,
    RESOURCE_SLICES,
    RUNTIME_CLASSES,
    SCHEDULING_GROUP,
    WORKLOADS,
    ClusterReader,
    NotServed,
    Resource,
    UnknownVersion,
    gang_resources,
    kueue_resource,
)
from triage.dumpfile import bulk_parse
from triage.errors import ClusterError
from triage.gangs import group_name
from triage.pages import slim_nodes, slim_pods
from triage.pods import merge_pods, named_resources
from triage.refs import PodRef
from triage.snapshot import WORKLOAD_KINDS, NodesReadSnapshot, PodsNotRead, Snapshot, rfc3339

Answer = TypeVar("Answer")

log = logging.getLogger(__name__)

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


def _optional(problems: list[str] | None,
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
        found.pods = [pod]
        found.events = _events_about(reader, namespace, [ref.name], page_size, found.problems)
        return found
    failed_creates = _optional(found.problems, lambda: reader.list_all(
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
        # Nothing by that name: the namespace's workloads, for "did you mean …?".
        found.workloads = [w for kind in WORKLOAD_KINDS for w in _optional(
            found.problems, partial(reader.list_all, WORKLOADS[kind], namespace,
                                    page_size=page_size))]
    for workload in workloads:
        children, pods = _children(reader, workload, page_size)
        found.workloads.extend([workload, *children])
        found.pods.extend(pods)
    found.workloads = _unique(found.workloads)
    found.pods = _unique(found.pods)
    names = [ref.name, *(w["metadata"]["name"] for w in workloads),
             *(p["metadata"]["name"] for p in found.pods)]
    found.events = _unique([*_events_about(reader, namespace, names, page_size, found.problems),
                            *failed_creates])
    return found


def _events_about(reader: ClusterReader, namespace: str, names: Sequence[str],
                  page_size: int, problems: list[str]) -> list[K8sObject]:
    wanted = list(dict.fromkeys(names))
    if len(wanted) > MAX_EVENT_QUERIES:
        events = _optional(problems, lambda: reader.list_all(EVENTS, namespace,
                                                             page_size=page_size))
        return [e for e in events if (e.get("involvedObject") or {}).get("name") in wanted]
    found: list[K8sObject] = []
    for name in wanted:
        selector = f"involvedObject.name={name},involvedObject.namespace={namespace}"
        found.extend(_optional(problems, partial(reader.list_all, EVENTS, namespace,
                                                 field_selector=selector, page_size=page_size)))
        if problems:
            break  # the same refusal for every name: say it once
    return found


def _children(reader: ClusterReader, workload: K8sObject,
              page_size: int) -> tuple[list[K8sObject], list[K8sObject]]:
    """(ReplicaSets of a Deployment, pods) owned by the workload, found by its selector."""
    namespace = workload["metadata"].get("namespace", "")
    selector = label_selector(workload.get("spec", {}).get("selector") or {})
    if not selector:
        return [], []
    owners = {workload["metadata"].get("uid")}
    replica_sets: list[K8sObject] = []
    if workload.get("kind") == "Deployment":
        listed, _ = reader.list_all(WORKLOADS["ReplicaSet"], namespace, label_selector=selector,
                                page_size=page_size)
        replica_sets = [rs for rs in listed if _owned_by(rs, owners)]
        owners = {rs["metadata"].get("uid") for rs in replica_sets}
    pods, _ = reader.list_all(PODS, namespace, label_selector=selector, page_size=page_size)
    return replica_sets, [p for p in pods if _owned_by(p, owners)]


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
    return _unique(found)


def _controllers(reader: ClusterReader, workload: K8sObject) -> list[K8sObject]:
    """The workload's controller chain (a ReplicaSet's Deployment)."""
    namespace = workload["metadata"].get("namespace", "")
    for owner in workload["metadata"].get("ownerReferences") or []:
        if owner.get("controller") and owner.get("kind") in WORKLOADS:
            parent = reader.get(WORKLOADS[owner["kind"]], namespace, owner.get("name", ""))
            if parent is not None:
                return [parent, *_controllers(reader, parent)]
    return []


def _owned_by(obj: K8sObject, uids: set[Any]) -> bool:
    return any(o.get("uid") in uids for o in obj["metadata"].get("ownerReferences") or [])


def _unique(objects: Iterable[K8sObject]) -> list[K8sObject]:
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
    quotas = _optional(problems, lambda: reader.list_all(QUOTAS, namespace, page_size=page_size))
    runtime_classes = _optional(problems, lambda: reader.list_all(RUNTIME_CLASSES,
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
        return [], _optional(found.problems, lambda: reader.list_all(RUNTIME_CLASSES,
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
    return _optional(found.problems, lambda: (served(reader, DEVICE_CLASSES,
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
    slices = _optional(found.problems, lambda: (served(reader, RESOURCE_SLICES,
                                                       page_size=page_size), ""))
    classes = read_extended_classes(reader, found, bool(slices), page_size)
    if not serves_extended(classes, extended_names(found)):
        return [*classes, *slices]
    # the devices the pod's extended resources would get: other claims hold some
    claims = _optional(found.problems, lambda: (served(reader, RESOURCE_CLAIMS,
                                                       page_size=page_size), ""))
    return [*classes, *claims, *slices]


def read_gangs(reader: ClusterReader, namespace: str = "",
               page_size: int = DEFAULT_PAGE_SIZE) -> list[K8sObject]:
    """Workloads and PodGroups (scheduling.k8s.io, the version the server prefers); nothing,
    and no list, when the server does not serve the group."""
    version = reader.preferred_version(SCHEDULING_GROUP)
    if version is None:
        return []
    return [item for resource in gang_resources(version)
            for item in served(reader, resource, namespace, page_size)]


def ref_gangs(reader: ClusterReader, found: RefObjects, ref: PodRef,
              page_size: int = DEFAULT_PAGE_SIZE) -> list[K8sObject]:
    """The namespace's gangs, read when the ref's pods join a pod group, or when the ref
    names no pod and no workload (it may name a Workload or PodGroup). A failed read is noted
    in the Verdict: the pods are then judged one by one."""
    named = {object_key(obj)[1] for obj in (*found.pods, *found.workloads)}
    if ref.name in named and not any(group_name(p) for p in found.pods):
        return []
    gangs = _optional(found.problems, lambda: (read_gangs(reader, ref.namespace, page_size), ""))
    read_gang_pods(reader, found, ref, gangs, page_size)
    return gangs


def read_gang_pods(reader: ClusterReader, found: RefObjects, ref: PodRef,
                   gangs: Iterable[K8sObject], page_size: int = DEFAULT_PAGE_SIZE) -> None:
    """A ref naming a Workload or PodGroup: its pods read whole (the lists keep them slim,
    without the nodeSelector the gang is judged by) and the events about them, into
    ``found``."""
    if found.pods:
        return
    groups = {object_key(g)[1] for g in gangs if object_key(g)[0] == ref.namespace and (
        (g.get("kind") == "PodGroup" and object_key(g)[1] == ref.name)
        or (((g.get("spec") or {}).get("podGroupTemplateRef") or {}).get("workload") or {})
        .get("workloadName") == ref.name)}
    if not groups:
        return
    pods, _ = reader.list_all(PODS, ref.namespace, page_size=page_size)
    found.pods = [p for p in pods if group_name(p) in groups]
    found.events = _unique([*found.events, *_events_about(
        reader, ref.namespace, [object_key(p)[1] for p in found.pods], page_size,
        found.problems)])


# What a triage reads of Kueue (Cohorts and WorkloadPriorityClasses decide no answer: the
# ClusterQueues name their cohort, the Workloads carry their priority).
TRIAGE_QUEUE_KINDS = ("ResourceFlavor", "ClusterQueue", "LocalQueue", "Workload")


def read_queues(reader: ClusterReader, found: RefObjects,
                page_size: int = DEFAULT_PAGE_SIZE) -> list[K8sObject]:
    """Kueue's objects, for a ref Kueue still holds (a queue-labelled workload kept
    suspended, a gated pod) or whose pods it admitted but are not bound yet (the flavor may
    decide where they go); any other ref, a running Kueue job's too, costs no request at all.
    A failed read is noted in the Verdict: the answer is still ``queued``, without the
    queue's numbers."""
    held = any(queues.queue_name(w) is not None and (w.get("spec") or {}).get("suspend")
               for w in found.workloads)
    unbound = any(queues.kueue_involved(p) and not (p.get("spec") or {}).get("nodeName")
                  for p in found.pods)
    if not held and not unbound:
        return []
    return _optional(found.problems, lambda: (list_queues(reader, TRIAGE_QUEUE_KINDS,
                                                          page_size), ""))


def read_position(reader: ClusterReader, found: RefObjects,
                  objects: list[K8sObject]) -> dict[str, tuple[int, int]]:
    """Where the ref's pending Workload stands in its ClusterQueue, by Kueue's visibility API:
    one request at most, and never required (not served, refused: the answer works the
    position out of the objects)."""
    index = queues.QueueIndex(objects)
    version = next((str(o.get("apiVersion", "")).partition("/")[2] for o in objects), "")
    for owner in (*found.pods, *found.workloads):
        workload = index.workload_of(owner) if queues.kueue_involved(owner) else None
        if workload is None or queues.admitted_in(workload):
            continue
        cluster_queue = index.cluster_queue_of(workload)
        if index.get("ClusterQueue", "", cluster_queue) is None:
            return {}
        try:
            pending = reader.pending_workloads(version, cluster_queue)
        except ClusterError as exc:
            log.info("Kueue's visibility API: %s", exc)
            return {}
        return {f"{queues.text(metadata, 'namespace')}/{queues.text(metadata, 'name')}":
                (position, len(pending or []))
                for item in pending or [] if (metadata := queues.part(item, "metadata"))
                and isinstance(position := item.get("positionInClusterQueue"), int)}
    return {}


def list_queues(reader: ClusterReader, kinds: Sequence[str],
                page_size: int = DEFAULT_PAGE_SIZE) -> list[K8sObject]:
    """Every object of those Kueue kinds (Workloads slim), in the version the server prefers;
    none where it does not serve kueue.x-k8s.io."""
    version = reader.served_version(queues.GROUP, queues.KNOWN_VERSIONS)
    if version is None:
        return []
    return [obj for kind in kinds for obj in reader.list_all(
        kueue_resource(kind, version), page_size=page_size,
        keep=queues.slim_workload if kind == "Workload" else None)[0]]


# -- which pods a cold triage reads ---------------------------------------------------------

# A pending pod whose nodeSelector / required node affinity leaves at most this share of the
# nodes has only those nodes' pods read, one field-selected list per node (POD_READERS at a
# time); a larger share: the paged list of every non-terminated pod. Measured at 5,000 nodes
# / 150,000 pods against tests/kubeapi.py (which indexes pods by node, as kube-apiserver's
# watch cache does), 2026-12-01, load average 7: the pods of 50 / 250 / 500 / 1,000 nodes
# took 0.08 / 0.65 / 0.83 / 1.67 s (1.5-2.6 ms a node), the paged list 6.8-9.7 s beside
# each: the two cost the same at 59-127 % of the nodes. A quarter stays well below that, as
# each node's list is one more request against the API server's fairness share.
PINNED_SHARE = 0.25
POD_READERS = 8
# Nodes beyond the pinned ones whose pods an answer may still ask for (a node elsewhere with
# room, named as the way out of exhausted) before every pod is listed instead.
MAX_EXTRA_NODES = 16


def may_pin(pod: K8sObject | None) -> bool:
    """Could the pod's answer read only some nodes' pods? A pending pod of the default
    scheduler whose nodeSelector or required node affinity narrows the nodes, without DRA
    claims (whose devices any node's pods may hold), in no gang (judged over every node)."""
    if pod is None:
        return False
    spec = pod.get("spec") or {}
    narrows = bool(spec.get("nodeSelector")) or bool(
        (((spec.get("affinity") or {}).get("nodeAffinity") or {})
         .get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms"))
    return (narrows and not spec.get("nodeName") and not spec.get("resourceClaims")
            and not group_name(pod)
            and spec.get("schedulerName") in (None, "", DEFAULT_SCHEDULER)
            and not (pod.get("status") or {}).get("extendedResourceClaimStatus"))


def pinned_nodes(pod: K8sObject, nodes: Sequence[K8sObject]) -> list[str] | None:
    """The nodes the pod's selection matches (the ones its answer reads pods of, as the
    funnel's selector filter keeps them), or None when they are too many to read one by one."""
    matched = [node_name(node) for node in nodes if not selector_mismatches(pod["spec"], node)]
    nominated = (pod.get("status") or {}).get("nominatedNodeName")
    if nominated and nominated not in matched:
        matched.append(str(nominated))
    return matched if len(matched) <= PINNED_SHARE * len(nodes) else None


def read_pods_on(reader: ClusterReader, nodes: Iterable[str],
                 page_size: int = DEFAULT_PAGE_SIZE) -> list[K8sObject]:
    """The non-terminated pods bound to each node (slim), POD_READERS lists at a time."""
    def on(node: str) -> list[K8sObject]:
        return reader.list_all(PODS, field_selector=f"spec.nodeName={node},{NON_TERMINATED}",
                               page_size=page_size, keep=slim_pods())[0]

    with ThreadPoolExecutor(POD_READERS, "gpuwhy-pods") as readers:
        return [pod for pods in readers.map(on, nodes) for pod in pods]


def _all_pods(reader: ClusterReader, page_size: int) -> list[K8sObject]:
    return reader.list_all(PODS, field_selector=NON_TERMINATED, page_size=page_size,
                           keep=slim_pods())[0]


def read_snapshot(api_client: ApiClient, ref: PodRef, page_size: int = DEFAULT_PAGE_SIZE,
                  timeout: float = DEFAULT_TIMEOUT, cluster: str = "") -> Snapshot:
    """Everything one triage of ``ref`` needs, read cold from the API (``gpuwhy triage``).

    Nodes do not depend on what the ref resolves to: they are listed in another thread while
    this one reads the ref's objects, each page slimmed as it arrives (what the watch cache
    keeps; the ref's own pods are read whole) with the garbage collector held off. Pods: of a
    pod pinned to a few nodes (``may_pin``, ``pinned_nodes``), those nodes' pods only (a
    NodesReadSnapshot); else every non-terminated pod, listed alongside from the start.
    """
    return _read_snapshot(ClusterReader(api_client, timeout), ref, page_size, cluster)


def _read_snapshot(reader: ClusterReader, ref: PodRef, page_size: int,
                   cluster: str) -> Snapshot:
    with bulk_parse(freeze=False), ThreadPoolExecutor(2, "gpuwhy-list") as lists:
        listing_nodes = lists.submit(reader.list_all, NODES, page_size=page_size,
                                     keep=slim_nodes())
        pod = reader.get(PODS, ref.namespace, ref.name)
        listing_pods = None if may_pin(pod) else lists.submit(_all_pods, reader, page_size)
        found = read_ref_objects(reader, ref, page_size, pod=pod)
        quotas, runtime_classes = ref_policy(reader, found, ref.namespace, page_size)
        dra = read_dra(reader, found, ref.namespace, page_size)
        gangs = ref_gangs(reader, found, ref, page_size)
        kueue = read_queues(reader, found, page_size)
        positions = read_position(reader, found, kueue) if kueue else {}
        nodes = listing_nodes.result()[0]
        pinned = None if pod is None or listing_pods is not None else pinned_nodes(pod, nodes)
        if pinned is not None:
            pods = read_pods_on(reader, pinned, page_size)
        else:
            pods = (listing_pods or lists.submit(_all_pods, reader, page_size)).result()
    read: dict[str, Any] = {"nodes": nodes, "pods": merge_pods(pods, found.pods),
                            "events": found.events,
                            "resourcequotas": quotas, "runtimeclasses": runtime_classes,
                            "workloads": found.workloads, "dra": dra, "gangs": gangs,
                            "queues": kueue, "queue_positions": positions,
                            "cluster": cluster or reader.server,
                            "problems": tuple(found.problems),
                            "read_at": rfc3339(datetime.now(UTC))}
    if pinned is None:
        return Snapshot(**read)
    return NodesReadSnapshot(**read, read_on=frozenset(pinned), fetched=tuple(found.pods))


def _read_more(reader: ClusterReader, snapshot: NodesReadSnapshot, missing: PodsNotRead,
               pinned: int, page_size: int) -> Snapshot:
    """The snapshot with the pods an answer asked for: one more node's, or every pod."""
    if missing.node is not None and len(snapshot.read_on) < pinned + MAX_EXTRA_NODES:
        with bulk_parse(freeze=False):
            added = read_pods_on(reader, [missing.node], page_size)
        return replace(snapshot, pods=[*snapshot.pods, *added],
                       read_on=snapshot.read_on | {missing.node})
    with bulk_parse(freeze=False):
        pods = _all_pods(reader, page_size)
    return Snapshot(**{f.name: getattr(snapshot, f.name) for f in fields(Snapshot)}
                    | {"pods": merge_pods(pods, snapshot.fetched)})


def answer_cold(api_client: ApiClient, ref: PodRef, answer: Callable[[Snapshot], Answer],
                page_size: int = DEFAULT_PAGE_SIZE, timeout: float = DEFAULT_TIMEOUT,
                cluster: str = "") -> Answer:
    """``answer`` (a triage) of the snapshot ``read_snapshot`` reads. When it asks a
    NodesReadSnapshot for pods it lacks (PodsNotRead), they are read and it runs again: the
    answer is always the one every pod would give."""
    reader = ClusterReader(api_client, timeout)
    snapshot = _read_snapshot(reader, ref, page_size, cluster)
    pinned = len(snapshot.read_on) if isinstance(snapshot, NodesReadSnapshot) else 0
    while True:
        try:
            return answer(snapshot)
        except PodsNotRead as missing:
            if not isinstance(snapshot, NodesReadSnapshot):
                raise
            snapshot = _read_more(reader, snapshot, missing, pinned, page_size)


def _finished_pods_named(reader: ClusterReader, events: Iterable[K8sObject],
                         workloads: Iterable[K8sObject], page_size: int) -> list[K8sObject]:
    """Succeeded / Failed pods an event is about, or a workload owns (one list per phase)."""
    named = {(str(involved.get("namespace", "")), str(involved.get("name", "")))
             for event in events
             if (involved := event.get("involvedObject") or event.get("regarding") or {})
             .get("kind") == "Pod"}
    owners = {uid for workload in workloads if (uid := workload["metadata"].get("uid"))}
    finished = [pod for phase in ("Succeeded", "Failed")
                for pod in reader.list_all(PODS, field_selector=f"status.phase={phase}",
                                           page_size=page_size)[0]]
    return [pod for pod in finished if object_key(pod) in named or _owned_by(pod, owners)]


def read_bundle(api_client: ApiClient, namespace: str = "", page_size: int = DEFAULT_PAGE_SIZE,
                timeout: float = DEFAULT_TIMEOUT) -> Snapshot:
    """A support bundle (``gpuwhy snapshot``): what any triage in ``namespace`` could read.

    Nodes and RuntimeClasses; the non-terminated pods of every namespace (what a live triage
    reads), plus, with a namespace, that namespace's finished pods (a Job's history); the
    namespace's events, quotas and workloads. Without a namespace: every namespace's events,
    quotas and workloads, and the finished pods that those events or workloads name (a pod an
    event is about, a Job's pods), so a pod someone may ask about is in the bundle, without
    the thousands of finished pods a busy cluster keeps.
    """
    reader = ClusterReader(api_client, timeout)
    nodes, _ = reader.list_all(NODES, page_size=page_size)
    pods, _ = reader.list_all(PODS, field_selector=NON_TERMINATED, page_size=page_size)
    if namespace:
        own, _ = reader.list_all(PODS, namespace, page_size=page_size)
        pods = merge_pods(pods, own)
    events, _ = reader.list_all(EVENTS, namespace, page_size=page_size)
    quotas, runtime_classes = namespace_policy(reader, namespace, page_size)
    workloads = [w for kind in WORKLOAD_KINDS
                 for w in reader.list_all(WORKLOADS[kind], namespace, page_size=page_size)[0]]
    if not namespace:
        pods = merge_pods(pods, _finished_pods_named(reader, events, workloads, page_size))
    # Claims of every namespace: any of them may hold the devices a pod here waits for.
    dra = [*read_dra_policy(reader, namespace, page_size),
           *served(reader, RESOURCE_CLAIMS, page_size=page_size),
           *served(reader, RESOURCE_SLICES, page_size=page_size),
           *served(reader, DEVICE_TAINT_RULES, page_size=page_size)]
    try:
        kueue = list_queues(reader, queues.QUEUE_KINDS, page_size)
    except UnknownVersion as exc:
        log.warning("gpuwhy snapshot: %s", exc)
        kueue = []
    return Snapshot(nodes=nodes, pods=pods, events=events, resourcequotas=quotas,
                    runtimeclasses=runtime_classes, workloads=workloads, dra=dra,
                    gangs=read_gangs(reader, namespace, page_size), queues=kueue,
                    cluster=reader.server)
