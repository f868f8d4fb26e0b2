"""Reading a ref's gangs (scheduling.k8s.io Workloads and PodGroups), cold, only where they
can decide its answer (Kueue's objects: ``triage.cluster.kueue``)."""

from __future__ import annotations

from collections.abc import Iterable

from scoring.objects import K8sObject, object_key
from triage.cluster.limits import DEFAULT_PAGE_SIZE
from triage.cluster.reader import ClusterReader
from triage.cluster.refs import RefObjects, events_about, optional_read, served, unique_objects
from triage.cluster.resources import PODS, SCHEDULING_GROUP, gang_resources
from triage.gangs import group_name
from triage.refs import PodRef


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
