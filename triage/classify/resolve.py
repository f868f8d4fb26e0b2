"""Resolving a ref (a pod, a workload, a pasted generated pod name) to the subjects the
pipeline runs on, and picking the answer a workload gives: its worst pod."""

from __future__ import annotations

from typing import Any

from scoring.objects import K8sObject, is_terminated, object_key
from scoring.rows import EventRow, PodRow, PodSpecFacts
from scoring.verdict import Verdict
from triage import admission, integrations
from triage.classify.pipeline import run_pipeline
from triage.classify.report import assemble
from triage.classify.subject import Finding, Subject, When
from triage.config import DEFAULT_CONFIG, TriageConfig
from triage.gangs import gang_of, gang_pods
from triage.pods import gpu_requests
from triage.queues import QueueOwner
from triage.refs import PodRef
from triage.rows import claim_set, hami_request, pod_spec, spec_facts
from triage.snapshot import WORKLOAD_KINDS, Snapshot
from triage.vocabulary import Cause

_STATE_RANK = {"not created": 0, "not scheduled": 1, "node error": 2, "scheduled": 3}


def triage(snapshot: Snapshot, ref: PodRef, config: TriageConfig = DEFAULT_CONFIG) -> Verdict:
    """The answer for one ref: a pod, a workload, or a pasted generated pod name."""
    pod = snapshot.pod(ref.namespace, ref.name)
    if pod is not None:
        return _verdict(pod_subject(snapshot, config, ref, pod), "Pod")
    workload = _find_workload(snapshot, ref)
    if workload is None:
        return _gang_verdict(snapshot, config, ref) or _verdict(
            Subject(snapshot, config, ref), "Pod")
    kind = str(workload.get("kind"))
    pods = (integrations.pods_of(workload, snapshot.pods_in(ref.namespace))
            if integrations.job_kind(workload)
            else admission.workload_pods(snapshot, snapshot.rows.workload_of(workload)))
    live = [p for p in pods if not is_terminated(p)] or pods
    subjects = [pod_subject(snapshot, config, ref, p) for p in live]
    admission_subject = _absent_subject(snapshot, config, ref, workload)
    results = [(s, run_pipeline(s)) for s in subjects]
    if not live or _admission_pending(snapshot, workload, pods):
        absent = run_pipeline(admission_subject)
        if absent.cause != Cause.POD_NOT_FOUND or not results:
            results.insert(0, (admission_subject, absent))
    worst_subject, worst = min(results, key=lambda r: (_rank(r[0], r[1]), r[0].label))
    verdict = assemble(worst_subject, worst, kind)
    sharing = [s.label for s, f in results if f.cause == worst.cause and s.row is not None]
    verdict.pods = sharing
    verdict.pods_total = len(live)
    return verdict


def _gang_verdict(snapshot: Snapshot, config: TriageConfig, ref: PodRef) -> Verdict | None:
    """A ref naming a scheduling.k8s.io Workload or PodGroup answers for its gang's worst pod
    (the pods name the PodGroup; nothing owns them but what created them)."""
    for kind in ("Workload", "PodGroup"):
        pods = gang_pods(snapshot, kind, ref.namespace, ref.name)
        if pods:
            results = [(s, run_pipeline(s)) for s in
                       (pod_subject(snapshot, config, ref, p) for p in pods)]
            worst_subject, worst = min(results, key=lambda r: (_rank(r[0], r[1]), r[0].label))
            verdict = assemble(worst_subject, worst, kind)
            verdict.pods = [s.label for s, f in results if f.cause == worst.cause]
            verdict.pods_total = len(pods)
            return verdict
    return None


def _verdict(subject: Subject, kind: str) -> Verdict:
    return assemble(subject, run_pipeline(subject), kind)


def _rank(subject: Subject, finding: Finding) -> int:
    if subject.row is None:
        return _STATE_RANK["not created"]
    if When.UNBOUND in subject.state:
        return _STATE_RANK["not scheduled"]
    if finding.cause == Cause.NODE_RUNTIME_ERROR:
        return _STATE_RANK["node error"]
    return _STATE_RANK["scheduled"]


def _find_workload(snapshot: Snapshot, ref: PodRef) -> K8sObject | None:
    for kind in (*WORKLOAD_KINDS, *integrations.BY_KIND):  # a JobSet, a RayJob last
        found = snapshot.workload(kind, ref.namespace, ref.name)
        if found is not None:
            return found
    rejecting = next(admission.owners_rejecting(snapshot, ref.namespace, ref.name), None)
    return rejecting or admission.statefulset_of_ordinal(snapshot, ref.namespace, ref.name)


def _admission_pending(snapshot: Snapshot, workload: K8sObject, pods: list[K8sObject]) -> bool:
    """Some pods exist; is creation of the others still failing?

    A ReplicaFailure condition says so now; a FailedCreate event counts only when it is newer
    than the newest pod (events linger for an hour after the cause is gone).
    """
    rows = snapshot.rows
    row = rows.workload_of(workload)
    newest_pod = max((rows.row_of(p).created for p in pods), default="")
    for rejection in admission.rejections(rows, row):
        if rejection.field.startswith("status.conditions"):
            return True
    for owner in (row, *rows.replicasets_of(row)):
        for event in rows.events_for(owner.kind, owner.namespace, owner.name):
            # Same second counts: a rejection and its sibling pods are often created together.
            if event.reason == "FailedCreate" and event.time >= newest_pod[:19]:
                return True
    live = [p for p in pods if not is_terminated(p)]
    if len(live) < row.wanted:
        template = row.template
        return bool(admission.quota_shortfalls(rows, row.namespace, template)) or (
            bool(template.runtime_class)
            and template.runtime_class not in admission.runtimeclass_names(rows))
    return False


def pod_subject(snapshot: Snapshot, config: TriageConfig, ref: PodRef,
                 pod: K8sObject) -> Subject:
    row = snapshot.rows.row_of(pod)
    namespace, name = row.key
    spec = pod_spec(pod)
    facts = spec_facts(spec)
    events = _own_events(row, snapshot.rows.events_for("Pod", namespace, name))
    gpu = _gpu_requests(facts, config)
    return Subject(snapshot, config, PodRef(namespace, name) if ref.name != name else ref,
                   row=row, facts=facts, events=events, gpu=gpu,
                   hami=hami_request(pod),
                   dra=claim_set(snapshot, config.gpu_drivers, namespace, spec, pod, gpu),
                   gang=gang_of(snapshot.rows, row), queue_owner=QueueOwner.of(pod))


def _gpu_requests(facts: PodSpecFacts, config: TriageConfig) -> dict[str, int]:
    """The effective request of each schedulable GPU resource the pod asks some of, by name
    (kube-scheduler's view)."""
    return {name: count for name in sorted(facts.resources) if config.is_gpu_resource(name)
            and (count := int(facts.request(name))) > 0}


def _own_events(row: PodRow, events: tuple[EventRow, ...]) -> tuple[EventRow, ...]:
    """The events about this pod, not about an earlier pod of the same name (a StatefulSet's
    pod made again, a pod deleted and re-applied): those name another uid. An event without
    a uid counts."""
    if not row.uid:
        return events
    return tuple(e for e in events if (e.uid or row.uid) == row.uid)


def _absent_subject(snapshot: Snapshot, config: TriageConfig, ref: PodRef,
                    workload: K8sObject) -> Subject:
    spec = _template_spec(workload, config)
    facts = spec_facts(spec)
    return Subject(snapshot, config, ref,
                   workload_row=snapshot.rows.workload_of(workload), facts=facts,
                   gpu=_gpu_requests(facts, config),
                   dra=claim_set(snapshot, config.gpu_drivers, object_key(workload)[0],
                                 spec),
                   queue_owner=QueueOwner.of(workload))


def _template_spec(workload: K8sObject, config: TriageConfig) -> dict[str, Any]:
    """The pod template a workload's absent pods are judged by: of a JobSet or RayJob, its
    first template asking a GPU (a Ray head often asks none), else its first."""
    templates = integrations.pod_templates(workload)
    if not integrations.job_kind(workload):
        return admission.template_spec(workload)
    asking = [t for t in templates if any(n > 0 for n in gpu_requests(t, config).values())]
    return dict(next(iter(asking or templates), {}))
