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

The ref's own objects are read by ``triage.cluster.refs``, its gangs by
``triage.cluster.groups``, Kueue's objects by ``triage.cluster.kueue``; this module puts them
together with the nodes and pods.

``WatchCache`` keeps nodes, non-terminated pods and the DRA objects in memory (list +
watch), so a triage from it costs only the per-ref reads above, whatever the cluster size.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import fields, replace
from datetime import UTC, datetime
from itertools import islice
from typing import Any, TypeVar

from kubernetes.client import ApiClient

from scoring.nodes import node_name, selector_mismatches
from scoring.objects import K8sObject, object_key
from triage import queues
from triage.cache.listpages import Alike, SharedNodes, SharedPods
from triage.classify.checks.scheduler import DEFAULT_SCHEDULER
from triage.cluster.groups import read_gangs, ref_gangs
from triage.cluster.kueue import list_queues, read_position, read_queues, triage_queues
from triage.cluster.limits import DEFAULT_PAGE_SIZE, DEFAULT_TIMEOUT
from triage.cluster.reader import ClusterReader, UnknownVersion
from triage.cluster.refs import (
    namespace_policy,
    owned_by,
    read_dra,
    read_dra_policy,
    read_ref_objects,
    ref_policy,
    served,
)
from triage.cluster.resources import (
    DEVICE_CLASSES,
    DEVICE_TAINT_RULES,
    EVENTS,
    JOB_RESOURCES,
    NODES,
    NON_TERMINATED,
    PODS,
    RESOURCE_CLAIMS,
    RESOURCE_SLICES,
    WORKLOADS,
)
from triage.dumpfile import bulk_parse
from triage.gangs import group_name
from triage.pods import merge_pods
from triage.refs import PodRef
from triage.snapshot import WORKLOAD_KINDS, NodesReadSnapshot, PodsNotRead, Snapshot, rfc3339

Answer = TypeVar("Answer")

log = logging.getLogger(__name__)

# More names than this: one list of the namespace's events instead of one request per name.

# -- which pods a cold triage reads ---------------------------------------------------------

# A pending pod whose nodeSelector / required node affinity leaves at most this share of the
# nodes has only those nodes' pods read, one field-selected list per node (POD_READERS at a
# time); a larger share: the paged list of every non-terminated pod. Measured at 5,000 nodes
# / 150,000 pods against tests/kubeapi.py (which indexes pods by node, as kube-apiserver's
# watch cache does), in one process, two rounds, 2026-12-02, load average 8.9-9.3, pages
# kept as the watch cache keeps them (``kept_pods``): the pods of 250 / 500 / 1,000 / 2,500
# nodes took 0.24-0.26 / 0.48-0.49 / 1.4-1.6 / 2.2-3.0 s (0.15 / 0.28-0.30 / 0.58-0.62 /
# 1.29-1.46 s of CPU, about 0.55 ms a node), the paged list 2.8-3.3 s (1.19-1.20 s of CPU):
# the two cost the same CPU at about 41-46 % of the nodes, the same time at 50-65 %. A
# quarter stays well below that, as each node's list is one more request against the API
# server's fairness share.
PINNED_SHARE = 0.25
POD_READERS = 8
# Times an answer may still ask for pods beyond the pinned nodes' (a node elsewhere with room,
# named as the way out of exhausted) before every pod is listed instead. Each time, the node
# asked for and the unread ones after it in the node list are read (POD_READERS in all).
MAX_EXTRA_READS = 16


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


def kept_pods() -> SharedPods:
    """What a cold read keeps of each listed pod: what the watch cache keeps (``slim_pod``),
    decoded from the page as the cache decodes it, the parts the pods of a kind have alike
    (spec less its node, labels, owners, annotations) one object for the pods of one read.
    The 288 pages of 150,000 pods took 1.0 s of CPU so against 2.7-3.0 s to decode every
    pod's kept fields (``triage.pages.ItemShape``) and trim each one after."""
    alike: Alike[object] = Alike()
    return SharedPods(lambda pod: pod, alike)


def read_pods_on(reader: ClusterReader, nodes: Iterable[str],
                 page_size: int = DEFAULT_PAGE_SIZE) -> list[K8sObject]:
    """The non-terminated pods bound to each node (slim), POD_READERS lists at a time."""
    keep = kept_pods()

    def on(node: str) -> list[K8sObject]:
        return reader.list_all(PODS, field_selector=f"spec.nodeName={node},{NON_TERMINATED}",
                               page_size=page_size, keep=keep)[0]

    with ThreadPoolExecutor(POD_READERS, "gpuwhy-pods") as readers:
        return [pod for pods in readers.map(on, nodes) for pod in pods]


def _all_pods(reader: ClusterReader, page_size: int) -> list[K8sObject]:
    """Every non-terminated pod, slim; each page asked for while the one before is decoded
    (at 150,000 pods the client's decoding, 1.0 s of CPU, and the API server's rendering,
    1.5 s, then overlap instead of adding up)."""
    return reader.list_all(PODS, field_selector=NON_TERMINATED, page_size=page_size,
                           keep=kept_pods(), ahead=True)[0]


def _all_nodes(reader: ClusterReader, page_size: int) -> list[K8sObject]:
    """Every node, slim, its pages read ahead as the pods' are, kept as the watch cache
    keeps them: what a pool's nodes have alike (spec, capacity, allocatable, conditions,
    runtime handlers, annotations) one object, which the node table reads once."""
    alike: Alike[object] = Alike()
    return reader.list_all(NODES, page_size=page_size, keep=SharedNodes(lambda node: node, alike),
                           ahead=True)[0]


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
        listing_nodes = lists.submit(_all_nodes, reader, page_size)
        pod = reader.get(PODS, ref.namespace, ref.name)
        listing_pods = None if may_pin(pod) else lists.submit(_all_pods, reader, page_size)
        found = read_ref_objects(reader, ref, page_size, pod=pod)
        quotas, runtime_classes = ref_policy(reader, found, ref.namespace, page_size)
        dra = read_dra(reader, found, ref.namespace, page_size)
        gangs = ref_gangs(reader, found, ref, page_size)
        kueue = read_queues(reader, found, page_size)
        positions = read_position(reader, found, kueue) if kueue else {}
        nodes = listing_nodes.result()
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
        return Snapshot(**read).summing_by_kind()
    return NodesReadSnapshot(**read, read_on=frozenset(pinned), fetched=tuple(found.pods)
                             ).summing_by_kind()


def nodes_from(snapshot: NodesReadSnapshot, asked: str) -> list[str]:
    """The node an answer asked for and the unread ones after it in the node list,
    POD_READERS in all. An answer looking beyond the pinned nodes goes through them in list
    order (exhausted's way out: the first node elsewhere with room), and POD_READERS lists
    cost one round trip where one list at a time costs one each."""
    names = [node_name(node) for node in snapshot.nodes]
    after = names[names.index(asked) + 1:] if asked in names else []
    return [asked, *islice((name for name in after if name not in snapshot.read_on),
                           POD_READERS - 1)]


def _read_more(reader: ClusterReader, snapshot: NodesReadSnapshot, missing: PodsNotRead,
               reads: int, page_size: int) -> Snapshot:
    """The snapshot with the pods an answer asked for (``reads`` times before): those of
    the node it named and the next ones (``nodes_from``), or every pod."""
    if missing.node is not None and reads < MAX_EXTRA_READS:
        more = nodes_from(snapshot, missing.node)
        with bulk_parse(freeze=False):
            added = read_pods_on(reader, more, page_size)
        return replace(snapshot, pods=[*snapshot.pods, *added],
                       read_on=snapshot.read_on | set(more)
                       ).keeping_pod_free_indexes(snapshot).summing_by_kind()
    with bulk_parse(freeze=False):
        pods = _all_pods(reader, page_size)
    return Snapshot(**{f.name: getattr(snapshot, f.name) for f in fields(Snapshot)}
                    | {"pods": merge_pods(pods, snapshot.fetched)}
                    ).keeping_pod_free_indexes(snapshot).summing_by_kind()


def answer_cold(api_client: ApiClient, ref: PodRef, answer: Callable[[Snapshot], Answer],
                page_size: int = DEFAULT_PAGE_SIZE, timeout: float = DEFAULT_TIMEOUT,
                cluster: str = "") -> Answer:
    """``answer`` (a triage) of the snapshot ``read_snapshot`` reads. When it asks a
    NodesReadSnapshot for pods it lacks (PodsNotRead), they are read and it runs again: the
    answer is always the one every pod would give."""
    reader = ClusterReader(api_client, timeout)
    snapshot = _read_snapshot(reader, ref, page_size, cluster)
    reads = 0
    while True:
        try:
            return answer(snapshot)
        except PodsNotRead as missing:
            if not isinstance(snapshot, NodesReadSnapshot):
                raise
            snapshot = _read_more(reader, snapshot, missing, reads, page_size)
            reads += 1


def read_cluster(api_client: ApiClient, page_size: int = DEFAULT_PAGE_SIZE,
                 timeout: float = DEFAULT_TIMEOUT, cluster: str = "") -> Snapshot:
    """The whole cluster as the capacity view and ``where`` read it, cold: nodes and
    non-terminated pods (listed in two threads, slimmed as they arrive), DeviceClasses,
    ResourceClaims and ResourceSlices, and Kueue's queues where the cluster serves them (a
    queue that cannot be read is said in the snapshot's problems, not raised)."""
    reader = ClusterReader(api_client, timeout)
    problems: list[str] = []
    with bulk_parse(freeze=False), ThreadPoolExecutor(2, "gpuwhy-list") as lists:
        listing_nodes = lists.submit(_all_nodes, reader, page_size)
        listing_pods = lists.submit(_all_pods, reader, page_size)
        dra = [*served(reader, DEVICE_CLASSES, page_size=page_size),
               *served(reader, RESOURCE_CLAIMS, page_size=page_size),
               *served(reader, RESOURCE_SLICES, page_size=page_size)]
        kueue = triage_queues(reader, problems, page_size)
        nodes, pods = listing_nodes.result(), listing_pods.result()
    return Snapshot(nodes=nodes, pods=pods, dra=dra, queues=kueue,
                    cluster=cluster or reader.server, problems=tuple(problems),
                    read_at=rfc3339(datetime.now(UTC))).summing_by_kind()


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
    return [pod for pod in finished if object_key(pod) in named or owned_by(pod, owners)]


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
    # JobSets and RayJobs, where the cluster serves them (Kueue admits them whole)
    workloads += [w for resource in JOB_RESOURCES.values()
                  for w in served(reader, resource, namespace, page_size)]
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
