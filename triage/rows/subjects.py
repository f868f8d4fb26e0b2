"""What a ref names, found among the Snapshot's raw objects, and the rows of a Subject read off
its pod's JSON (or off the template of a workload's absent pod): the one place resolving a ref
reads them. ``triage.classify.resolve`` works on the rows these hand back."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from scoring.dra import ClaimSet
from scoring.hami import HamiRequest
from scoring.objects import K8sObject, object_key
from scoring.rows import PodRow, PodSpecFacts, WorkloadRow
from triage import integrations
from triage.admission import ordinal_base
from triage.config import TriageConfig
from triage.pods import gpu_requests
from triage.queues import QueueOwner
from triage.rows.build import spec_facts
from triage.rows.claims import claim_set, pod_spec
from triage.rows.hami import hami_request
from triage.rows.objects import template_spec
from triage.rows.table import Rows
from triage.snapshot import WORKLOAD_KINDS, Snapshot

_FORBIDDEN_POD = re.compile(r'pods "(?P<name>[^"]*)" is forbidden')


@dataclass(frozen=True)
class SpecRows:
    """What a Subject reads of its pod's spec, or of the template its absent pod would have."""

    facts: PodSpecFacts
    # the effective request of each schedulable GPU resource asked some of, by name
    # (kube-scheduler's view)
    gpu: dict[str, int]
    dra: ClaimSet | None  # the claims resolved; None when DRA has no part in the answer
    queue_owner: QueueOwner  # the pod, or the workload, as Kueue sees it
    hami: HamiRequest | None = None  # a template asks HAMi nothing: it has no annotations


def pod_spec_rows(rows: Rows, config: TriageConfig, pod: PodRow) -> SpecRows:
    """The rows of one pod's spec, its claims and its Kueue view."""
    raw = rows.object_of(pod)
    spec = pod_spec(raw)
    facts = spec_facts(spec)
    gpu = _gpu_requests(facts, config)
    return SpecRows(facts, gpu, hami=hami_request(raw),
                    dra=claim_set(rows.snapshot, config.gpu_drivers, pod.namespace, spec, raw,
                                  gpu),
                    queue_owner=QueueOwner.of(raw))


def template_spec_rows(rows: Rows, config: TriageConfig, workload: WorkloadRow) -> SpecRows:
    """The rows of the pod template a workload's absent pods are judged by."""
    raw = rows.object_of(workload)
    spec = _template_spec(raw, config)
    facts = spec_facts(spec)
    return SpecRows(facts, _gpu_requests(facts, config),
                    dra=claim_set(rows.snapshot, config.gpu_drivers, workload.namespace, spec),
                    queue_owner=QueueOwner.of(raw))


def _gpu_requests(facts: PodSpecFacts, config: TriageConfig) -> dict[str, int]:
    return {name: count for name in sorted(facts.resources) if config.is_gpu_resource(name)
            and (count := int(facts.request(name))) > 0}


def _template_spec(workload: K8sObject, config: TriageConfig) -> dict[str, Any]:
    """Of a JobSet or RayJob, its first template asking a GPU (a Ray head often asks none),
    else its first."""
    templates = integrations.pod_templates(workload)
    if not integrations.job_kind(workload):
        return template_spec(workload)
    asking = [t for t in templates if any(n > 0 for n in gpu_requests(t, config).values())]
    return dict(next(iter(asking or templates), {}))


# -- what a ref names, when no pod has its name ------------------------------------------

def find_workload(rows: Rows, namespace: str, name: str) -> WorkloadRow | None:
    """The workload of that name (the kinds in the order a person most likely created them;
    a JobSet, a RayJob last), else one whose FailedCreate events name the pod, else the
    StatefulSet whose ordinal it is."""
    snapshot = rows.snapshot
    for kind in (*WORKLOAD_KINDS, *integrations.BY_KIND):
        found = snapshot.workload(kind, namespace, name)
        if found is not None:
            return rows.workload_of(found)
    rejecting = next(_owners_rejecting(snapshot, namespace, name), None)
    found = rejecting or _statefulset_of_ordinal(snapshot, namespace, name)
    return rows.workload_of(found) if found is not None else None


def workload_pods(rows: Rows, workload: WorkloadRow) -> list[PodRow]:
    """The workload's pods, terminated included: a Job kind's by the labels its controller
    sets, any other's by owner (through its ReplicaSets for a Deployment)."""
    raw = rows.object_of(workload)
    snapshot = rows.snapshot
    if integrations.job_kind(raw):
        pods = integrations.pods_of(raw, snapshot.pods_in(workload.namespace))
    else:
        pods = [c for owner in (workload, *rows.replicasets_of(workload))
                for c in snapshot.children_of(owner.uid) if c.get("kind") == "Pod"]
    return [rows.row_of(pod) for pod in pods]


def gang_pods(rows: Rows, kind: str, namespace: str, name: str) -> list[PodRow]:
    """The non-terminated pods of a scheduling.k8s.io Workload (through its PodGroups) or of
    a PodGroup a ref names."""
    snapshot = rows.snapshot
    if snapshot.gang_object(kind, namespace, name) is None:
        return []
    groups = ([name] if kind == "PodGroup" else
              [object_key(g)[1] for g in snapshot.pod_groups_of(namespace, name)])
    return [pod for group in groups for pod in rows.pod_group_members(namespace, group)]


def _owners_rejecting(snapshot: Snapshot, namespace: str, name: str) -> Iterator[K8sObject]:
    """Workloads whose FailedCreate events name the pod `name` or a prefix of it
    (`finetune-2dtfx`, `vllm-79f7bb9f55-`): a person may paste the name from an event."""
    for event in snapshot.namespace_objects(snapshot.events, namespace):
        if event.get("reason") != "FailedCreate":
            continue
        match = _FORBIDDEN_POD.search(str(event.get("message", "")))
        if not match:
            continue
        named = match["name"]
        if named == name or (named.endswith("-") and name.startswith(named)) or (
                named.rstrip("-") == name):
            involved = event.get("involvedObject") or {}
            owner = snapshot.workload(str(involved.get("kind", "")), namespace,
                                      str(involved.get("name", "")))
            if owner is not None:
                yield owner


def _statefulset_of_ordinal(snapshot: Snapshot, namespace: str, name: str) -> K8sObject | None:
    """The StatefulSet whose pod ``name`` (``db-0``) would be, when that ordinal is wanted.

    A StatefulSet's pods are named <set>-<ordinal>; a pod never created leaves no object, and
    its FailedCreate event expires, but the StatefulSet still says it wants that pod.
    """
    parsed = ordinal_base(name)
    if parsed is None:
        return None
    workload = snapshot.workload("StatefulSet", namespace, parsed[0])
    if workload is None:
        return None
    spec = workload.get("spec") or {}
    start = int((spec.get("ordinals") or {}).get("start") or 0)
    replicas = spec.get("replicas")
    wanted = 1 if replicas is None else int(replicas)
    return workload if start <= parsed[1] < start + wanted else None
