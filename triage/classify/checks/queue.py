"""Kueue holds the workload before the scheduler sees it (``queued``): a queue-labelled Job
Kueue keeps suspended, or a pod it keeps gated, until its Workload is admitted.

The answer comes from the objects (the Workload's conditions, the LocalQueue, the
ClusterQueue's quota and reservations, the ResourceFlavors, the cohort), read as the rows
``triage.queues`` builds; Kueue's own message is quoted as evidence, never the only source
of a number.
"""

from __future__ import annotations

from decimal import Decimal

from scoring.verdict import Evidence
from triage import queues
from triage.classify.checks.queue_blockers import cluster_queue_unusable, local_queue_missing
from triage.classify.checks.queue_quota import quota_answer
from triage.classify.subject import Finding, Subject, num, primary
from triage.queues import QueueIndex, QueueOwner, WorkloadRow
from triage.vocabulary import Cause

QUOTA = "status.conditions[QuotaReserved]"


def check_queued_workload(subject: Subject) -> Finding | None:
    """A queue-labelled workload with no pods, suspended: Kueue has not admitted it."""
    workload = subject.queue_owner
    if workload is None or workload.kind == "Pod" or not workload.suspended:
        return None
    if workload.queue is None:
        return None  # suspended by hand or by another controller: pod-not-found says so
    what = workload.label
    return _queued(subject, workload, what, workload.queue,
                   [Evidence(what, "spec.suspend", "true")])


def check_queued_pod(subject: Subject) -> Finding | None:
    """A pod Kueue gates (kueue.x-k8s.io/admission, /topology) until its Workload is admitted:
    the scheduler has not seen it, and Kueue may still set its nodeSelector."""
    pod = subject.queue_owner
    if pod is None or pod.kind != "Pod" or not pod.gates:
        return None
    what = f"Pod {subject.label}"
    return _queued(subject, pod, what, pod.queue or "",
                   [Evidence(what, "spec.schedulingGates", ", ".join(pod.gates))])


def _queued(subject: Subject, owner: QueueOwner, what: str, queue: str,
            evidence: list[Evidence]) -> Finding:
    index = subject.queue_index
    namespace = owner.namespace
    evidence.insert(0, Evidence(what, f"metadata.labels[{queues.QUEUE_LABEL}]",
                                queue or "(none)"))
    workload = index.workload_for(owner)
    if workload is not None:
        evidence.append(_quota_condition(workload))
    if not index:
        return Finding(Cause.QUEUED, (
            f"{what} waits for Kueue (queue {queue or 'unnamed'}), but gpuwhy sees no Kueue "
            "objects in this cluster (kueue.x-k8s.io not served or not readable): if Kueue is "
            "not installed nothing will admit it; remove the label and recreate it, or "
            "install Kueue."), evidence)
    reason = (local_queue_missing(index, what, namespace, queue, evidence)
              or cluster_queue_unusable(index, what, namespace, queue, evidence)
              or _not_evaluated(what, workload)
              or _admitted_not_started(what, workload))
    if reason is not None:
        return Finding(Cause.QUEUED, reason, evidence)
    assert workload is not None  # _not_evaluated answers when there is none
    preempted = _preempted(index, workload, evidence)
    waiting = _quota(subject, index, what, owner, workload, evidence)
    return Finding(Cause.QUEUED, " ".join(part for part in (preempted, waiting) if part),
                   evidence)


def _quota_condition(workload: WorkloadRow) -> Evidence:
    label = f"Workload {workload.key}"
    found = workload.condition("QuotaReserved")
    if found is None:
        return Evidence(label, "status", "no QuotaReserved condition (not evaluated yet)")
    return Evidence(label, QUOTA, f"{found.status} {found.reason}: {found.message}")


def _not_evaluated(what: str, workload: WorkloadRow | None) -> str | None:
    if workload is None:
        return (f"{what} waits for Kueue, but no Kueue Workload exists for it yet: Kueue "
                "creates one as soon as it sees the object. If none appears, check that "
                "Kueue's controller manager is running and its integrations include this kind.")
    if workload.condition("QuotaReserved") is None:
        return (f"{what} waits for Kueue: its Workload {workload.key} has no status yet (Kueue "
                "has not evaluated it). If it stays so, check that Kueue's controller manager "
                "is running.")
    return None


def _admitted_not_started(what: str, workload: WorkloadRow | None) -> str | None:
    if workload is None or not workload.is_true("Admitted"):
        return None
    flavors = ", ".join(workload.admitted_flavors) or "?"
    return (f"Kueue admitted {what} in ClusterQueue {workload.admitted_in or '?'} "
            f"(flavor {flavors}), but it is not started yet: Kueue unsuspends it (or removes "
            "its gates) next. If it stays so, check Kueue's controller manager.")


def _preempted(index: QueueIndex, workload: WorkloadRow, evidence: list[Evidence]) -> str:
    evicted = workload.condition("Evicted")
    if evicted is None or not evicted.true:
        return ""
    evidence.append(Evidence(f"Workload {workload.key}", "status.conditions[Evicted]",
                             f"{evicted.reason}: {evicted.message}"))
    when = evicted.since or "?"
    requeued = " and re-queued it" if workload.is_true("Requeued") else ""
    preemptor = index.workload_by_uid(workload.preemptor_uid)
    if preemptor is None:
        return f"Kueue evicted it at {when} ({evicted.reason or 'no reason given'}){requeued}."
    return (f"Kueue preempted it at {when} to admit {preemptor.owner} (priority "
            f"{_priority(preemptor)} > {_priority(workload)}){requeued}.")


def _priority(workload: WorkloadRow) -> str:
    name = workload.priority_class
    return f"{workload.priority} {name}" if name else str(workload.priority)


def _quota(subject: Subject, index: QueueIndex, what: str, owner: QueueOwner,
           workload: WorkloadRow, evidence: list[Evidence]) -> str:
    """Why the quota does not fit it now, or ever (the numbers, per flavor), in the
    ClusterQueue it waits in."""
    name = index.cluster_queue_of(workload)
    cluster_queue = index.cluster_queues.get(name)
    resource = primary(subject)
    if cluster_queue is None or not subject.gpu or not cluster_queue.quotas_for(resource):
        reserved = workload.condition("QuotaReserved")
        said = (reserved.message or reserved.reason) if reserved is not None else ""
        label = (cluster_queue.name if cluster_queue is not None else "") or "?"
        return (f"{what} waits for admission in ClusterQueue {label}: "
                f"{said or 'no reason given'}.")
    need, how = _demand(subject, owner, workload, resource)
    return quota_answer(index, what, workload, cluster_queue, resource, need, how,
                        subject.queue_positions.get(workload.key), evidence)


def _demand(subject: Subject, owner: QueueOwner, workload: WorkloadRow,
            resource: str) -> tuple[Decimal, str]:
    """What the workload asks of ``resource`` in all (as Kueue counts it), and how: of a
    workload of several pod sets (a JobSet's replicated jobs, a RayJob's head and worker
    groups), each pod set's pods times what each of them asks."""
    asking = [(pod_set.name, pod_set.count, int(pod_set.requests.get(resource, 0)))
              for pod_set in workload.pod_sets if pod_set.count]
    if len(workload.pod_sets) > 1 and any(per_pod for _, _, per_pod in asking):
        shares = [share for share in asking if share[2]]
        return (Decimal(sum(count * per_pod for _, count, per_pod in shares)),
                " + ".join(f"{name}: {count} {'pod' if count == 1 else 'pods'} × {per_pod}"
                           for name, count, per_pod in shares))
    per_pod = Decimal(subject.gpu.get(resource, 0))
    # a pod counts once; a Job's absent pods, as many as run at once
    count = workload.pod_count or (1 if owner.kind == "Pod" else owner.parallelism)
    return per_pod * count, f"{count} {'pod' if count == 1 else 'pods'} × {num(per_pod)}"
