"""Resolving a ref (a pod, a workload, a pasted generated pod name) to the subjects the
pipeline runs on, and picking the answer a workload gives: its worst pod. It works on the
Snapshot's rows: what a ref names is found, and read, in ``triage.rows.subjects``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scoring.rows import EventRow, PodRow, WorkloadRow
from scoring.verdict import Verdict
from triage import admission
from triage.classify.pipeline import run_pipeline
from triage.classify.report import assemble
from triage.classify.subject import Finding, Subject, When
from triage.config import DEFAULT_CONFIG, TriageConfig
from triage.gangs import gang_of
from triage.refs import PodRef
from triage.rows import Rows
from triage.rows.subjects import (
    find_workload,
    gang_pods,
    pod_spec_rows,
    template_spec_rows,
    workload_pods,
)
from triage.vocabulary import Cause

if TYPE_CHECKING:  # the public entry point's argument alone: the rest reads rows
    from triage.snapshot import Snapshot

_STATE_RANK = {"not created": 0, "not scheduled": 1, "node error": 2, "scheduled": 3}


def triage(snapshot: Snapshot, ref: PodRef, config: TriageConfig = DEFAULT_CONFIG) -> Verdict:
    """The answer for one ref: a pod, a workload, or a pasted generated pod name."""
    return triage_rows(snapshot.rows, ref, config)  # the Snapshot lives while its rows are read


def triage_rows(rows: Rows, ref: PodRef, config: TriageConfig = DEFAULT_CONFIG) -> Verdict:
    """``triage`` on a Snapshot's rows (read them while the Snapshot lives)."""
    pod = rows.pod(ref.namespace, ref.name)
    if pod is not None:
        return _verdict(pod_subject(rows, config, ref, pod), "Pod")
    workload = find_workload(rows, ref.namespace, ref.name)
    if workload is None:
        return _gang_verdict(rows, config, ref) or _verdict(Subject(rows, config, ref), "Pod")
    pods = workload_pods(rows, workload)
    live = [p for p in pods if not p.terminated] or pods
    subjects = [pod_subject(rows, config, ref, p) for p in live]
    admission_subject = _absent_subject(rows, config, ref, workload)
    results = [(s, run_pipeline(s)) for s in subjects]
    if not live or _admission_pending(rows, workload, pods):
        absent = run_pipeline(admission_subject)
        if absent.cause != Cause.POD_NOT_FOUND or not results:
            results.insert(0, (admission_subject, absent))
    worst_subject, worst = min(results, key=lambda r: (_rank(r[0], r[1]), r[0].label))
    verdict = assemble(worst_subject, worst, workload.kind)
    sharing = [s.label for s, f in results if f.cause == worst.cause and s.row is not None]
    verdict.pods = sharing
    verdict.pods_total = len(live)
    return verdict


def _gang_verdict(rows: Rows, config: TriageConfig, ref: PodRef) -> Verdict | None:
    """A ref naming a scheduling.k8s.io Workload or PodGroup answers for its gang's worst pod
    (the pods name the PodGroup; nothing owns them but what created them)."""
    for kind in ("Workload", "PodGroup"):
        pods = gang_pods(rows, kind, ref.namespace, ref.name)
        if pods:
            results = [(s, run_pipeline(s)) for s in
                       (pod_subject(rows, config, ref, p) for p in pods)]
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


def _admission_pending(rows: Rows, workload: WorkloadRow, pods: list[PodRow]) -> bool:
    """Some pods exist; is creation of the others still failing?

    A ReplicaFailure condition says so now; a FailedCreate event counts only when it is newer
    than the newest pod (events linger for an hour after the cause is gone).
    """
    newest_pod = max((p.created for p in pods), default="")
    for rejection in admission.rejections(rows, workload):
        if rejection.field.startswith("status.conditions"):
            return True
    for owner in (workload, *rows.replicasets_of(workload)):
        for event in rows.events_for(owner.kind, owner.namespace, owner.name):
            # Same second counts: a rejection and its sibling pods are often created together.
            if event.reason == "FailedCreate" and event.time >= newest_pod[:19]:
                return True
    live = [p for p in pods if not p.terminated]
    if len(live) < workload.wanted:
        template = workload.template
        return bool(admission.quota_shortfalls(rows, workload.namespace, template)) or (
            bool(template.runtime_class)
            and template.runtime_class not in admission.runtimeclass_names(rows))
    return False


def pod_subject(rows: Rows, config: TriageConfig, ref: PodRef, pod: PodRow) -> Subject:
    namespace, name = pod.key
    spec = pod_spec_rows(rows, config, pod)
    return Subject(rows, config, PodRef(namespace, name) if ref.name != name else ref,
                   row=pod, facts=spec.facts,
                   events=_own_events(pod, rows.events_for("Pod", namespace, name)),
                   gpu=spec.gpu, hami=spec.hami, dra=spec.dra, gang=gang_of(rows, pod),
                   queue_owner=spec.queue_owner)


def _own_events(row: PodRow, events: tuple[EventRow, ...]) -> tuple[EventRow, ...]:
    """The events about this pod, not about an earlier pod of the same name (a StatefulSet's
    pod made again, a pod deleted and re-applied): those name another uid. An event without
    a uid counts."""
    if not row.uid:
        return events
    return tuple(e for e in events if (e.uid or row.uid) == row.uid)


def _absent_subject(rows: Rows, config: TriageConfig, ref: PodRef,
                    workload: WorkloadRow) -> Subject:
    spec = template_spec_rows(rows, config, workload)
    return Subject(rows, config, ref, workload_row=workload, facts=spec.facts, gpu=spec.gpu,
                   dra=spec.dra, queue_owner=spec.queue_owner)
