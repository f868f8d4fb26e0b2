"""Reading a ref's gangs (scheduling.k8s.io Workloads and PodGroups) and queues (Kueue's
objects), cold, only where they can decide its answer."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence

from scoring.objects import K8sObject, object_key
from triage import queues
from triage.cluster.limits import DEFAULT_PAGE_SIZE
from triage.cluster.reader import ClusterReader
from triage.cluster.refs import RefObjects, events_about, optional_read, served, unique_objects
from triage.cluster.resources import PODS, SCHEDULING_GROUP, gang_resources, kueue_resource
from triage.errors import ClusterError
from triage.gangs import group_name
from triage.refs import PodRef

log = logging.getLogger(__name__)

# More names than this: one list of the namespace's events instead of one request per name.

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
    gangs = optional_read(found.problems,
                          lambda: (read_gangs(reader, ref.namespace, page_size), ""))
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
    found.events = unique_objects([*found.events, *events_about(
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
    return triage_queues(reader, found.problems, page_size)


def triage_queues(reader: ClusterReader, problems: list[str],
                  page_size: int = DEFAULT_PAGE_SIZE) -> list[K8sObject]:
    """The Kueue kinds a triage reads; one that cannot be read is noted in ``problems``."""
    return optional_read(problems, lambda: (list_queues(reader, TRIAGE_QUEUE_KINDS,
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


