"""Kueue holds the workload before the scheduler sees it (``queued``): a queue-labelled Job
Kueue keeps suspended, or a pod it keeps gated, until its Workload is admitted.

The answer comes from the objects (the Workload's conditions, the LocalQueue, the
ClusterQueue's quota and reservations, the ResourceFlavors, the cohort); Kueue's own message
is quoted as evidence, never the only source of a number.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from scoring.objects import K8sObject, object_key
from scoring.verdict import Evidence
from triage import admission, queues
from triage.classify.subject import Finding, Subject, num, primary
from triage.pods import pod_name
from triage.queues import FlavorQuota, QueueIndex, entries, part, text
from triage.vocabulary import Cause

QUOTA = "status.conditions[QuotaReserved]"


def check_queued_workload(subject: Subject) -> Finding | None:
    """A queue-labelled workload with no pods, suspended: Kueue has not admitted it."""
    workload = subject.workload
    if workload is None or not (workload.get("spec") or {}).get("suspend"):
        return None
    queue = queues.queue_name(workload)
    if queue is None:
        return None  # suspended by hand or by another controller: pod-not-found says so
    what = admission.workload_label(workload)
    return _queued(subject, workload, what, queue, [Evidence(what, "spec.suspend", "true")])


def check_queued_pod(subject: Subject) -> Finding | None:
    """A pod Kueue gates (kueue.x-k8s.io/admission, /topology) until its Workload is admitted:
    the scheduler has not seen it, and Kueue may still set its nodeSelector."""
    gates = queues.kueue_gates(subject.spec)
    if subject.pod is None or not gates:
        return None
    what = f"Pod {subject.label}"
    return _queued(subject, subject.pod, what, queues.queue_name(subject.pod) or "",
                   [Evidence(what, "spec.schedulingGates", ", ".join(gates))])


def _queued(subject: Subject, owner: K8sObject, what: str, queue: str,
            evidence: list[Evidence]) -> Finding:
    index = subject.snapshot.queue_index
    namespace = object_key(owner)[0]
    evidence.insert(0, Evidence(what, f"metadata.labels[{queues.QUEUE_LABEL}]",
                                queue or "(none)"))
    workload = index.workload_of(owner)
    if workload is not None:
        evidence.append(_quota_condition(workload))
    if not index:
        return Finding(Cause.QUEUED, (
            f"{what} waits for Kueue (queue {queue or 'unnamed'}), but gpuwhy sees no Kueue "
            "objects in this cluster (kueue.x-k8s.io not served or not readable): if Kueue is "
            "not installed nothing will admit it; remove the label and recreate it, or "
            "install Kueue."), evidence)
    reason = (_local_queue_missing(index, what, namespace, queue, evidence)
              or _cluster_queue_unusable(index, what, namespace, queue, evidence)
              or _not_evaluated(what, workload)
              or _admitted_not_started(what, workload))
    if reason is not None:
        return Finding(Cause.QUEUED, reason, evidence)
    assert workload is not None  # _not_evaluated answers when there is none
    cluster_queue = index.get("ClusterQueue", "", index.cluster_queue_of(workload)) or {}
    preempted = _preempted(index, workload, evidence)
    waiting = _quota(subject, index, what, owner, workload, cluster_queue, evidence)
    return Finding(Cause.QUEUED, " ".join(part for part in (preempted, waiting) if part),
                   evidence)


def _quota_condition(workload: Mapping[str, Any]) -> Evidence:
    label = f"Workload {'/'.join(object_key(workload))}"
    found = queues.condition(workload, "QuotaReserved")
    if found is None:
        return Evidence(label, "status", "no QuotaReserved condition (not evaluated yet)")
    return Evidence(label, QUOTA, f"{found.get('status', '?')} {found.get('reason', '')}: "
                                  f"{found.get('message', '')}")


def _local_queue_missing(index: QueueIndex, what: str, namespace: str, queue: str,
                         evidence: list[Evidence]) -> str | None:
    if index.get("LocalQueue", namespace, queue) is not None:
        return None
    existing = index.names("LocalQueue", namespace)
    evidence.append(Evidence(f"namespace {namespace}", "LocalQueues",
                             ", ".join(existing) or "none"))
    odd = "" if queues.valid_name(queue) else " (not even a valid object name)"
    named = f"LocalQueue {queue!r}{odd}" if queue else "no LocalQueue"
    if existing:
        fix = (f"the namespace has {', '.join(f'LocalQueue {q}' for q in existing)}. Fix the "
               f"label ({queues.QUEUE_LABEL}: {existing[0]}) and recreate it.")
    else:
        fix = ("the namespace has no LocalQueue at all. Ask the cluster's admins for one, "
               "or remove the label to run it outside Kueue.")
    label = (f"names {named} in label {queues.QUEUE_LABEL}, which does not exist in namespace "
             f"{namespace}" if queue else f"has no {queues.QUEUE_LABEL} label")
    return (f"{what} waits forever as things are: it {label}, so Kueue admits nothing of it; "
            + fix)


def _cluster_queue_unusable(index: QueueIndex, what: str, namespace: str, queue: str,
                            evidence: list[Evidence]) -> str | None:
    local = index.get("LocalQueue", namespace, queue) or {}
    name = text(part(local, "spec"), "clusterQueue")
    cluster_queue = index.get("ClusterQueue", "", name)
    if cluster_queue is None:
        evidence.append(Evidence(f"LocalQueue {namespace}/{queue}", "spec.clusterQueue",
                                 name or "(unset)"))
        return (f"{what} waits forever as things are: LocalQueue {namespace}/{queue} points "
                f"to ClusterQueue {name or '(unset)'}, which does not exist (existing: "
                f"{', '.join(index.names('ClusterQueue')) or 'none'}). Create it, or point "
                "the LocalQueue at one that exists.")
    why: list[str] = []
    existing = set(index.names("ResourceFlavor"))
    missing = [f for f in queues.flavors_named(cluster_queue) if f not in existing]
    if missing:
        why.append(f"it names ResourceFlavor {', '.join(missing)}, which does not exist "
                   f"(existing: {', '.join(sorted(existing)) or 'none'})")
    for obj, label in ((cluster_queue, f"ClusterQueue {name}"),
                       (local, f"LocalQueue {namespace}/{queue}")):
        if (policy := queues.stop_policy(obj)) != "None":
            why.append(f"{label} is stopped (stopPolicy {policy})")
    active = queues.condition(cluster_queue, "Active")
    if active is not None and active.get("status") == "False":
        evidence.append(Evidence(f"ClusterQueue {name}", "status.conditions[Active]",
                                 f"False {active.get('reason', '')}: {active.get('message', '')}"))
        if not why:
            why.append(str(active.get("message") or active.get("reason") or "inactive"))
    if not why:
        return None
    fix = ("Create the ResourceFlavor (or fix the name in the ClusterQueue)" if missing
           else "Set stopPolicy to None when the queue may admit again")
    return (f"{what} waits in LocalQueue {namespace}/{queue}, but ClusterQueue {name} is "
            f"inactive: {'; '.join(why)}. Nothing in it is admitted until that is fixed. "
            f"{fix}.")


def _not_evaluated(what: str, workload: K8sObject | None) -> str | None:
    if workload is None:
        return (f"{what} waits for Kueue, but no Kueue Workload exists for it yet: Kueue "
                "creates one as soon as it sees the object. If none appears, check that "
                "Kueue's controller manager is running and its integrations include this kind.")
    if queues.condition(workload, "QuotaReserved") is None:
        return (f"{what} waits for Kueue: its Workload {'/'.join(object_key(workload))} has "
                "no status yet (Kueue has not evaluated it). If it stays so, check that "
                "Kueue's controller manager is running.")
    return None


def _admitted_not_started(what: str, workload: K8sObject | None) -> str | None:
    if workload is None or not queues.is_true(workload, "Admitted"):
        return None
    flavors = ", ".join(queues.admitted_flavors(workload)) or "?"
    return (f"Kueue admitted {what} in ClusterQueue {queues.admitted_in(workload) or '?'} "
            f"(flavor {flavors}), but it is not started yet: Kueue unsuspends it (or removes "
            "its gates) next. If it stays so, check Kueue's controller manager.")


def _preempted(index: QueueIndex, workload: K8sObject, evidence: list[Evidence]) -> str:
    evicted = queues.condition(workload, "Evicted")
    if evicted is None or evicted.get("status") != "True":
        return ""
    message = str(evicted.get("message") or "")
    label = f"Workload {'/'.join(object_key(workload))}"
    evidence.append(Evidence(label, "status.conditions[Evicted]",
                             f"{evicted.get('reason', '')}: {message}"))
    when = str(evicted.get("lastTransitionTime") or "?")
    reason = str(evicted.get("reason") or "")
    requeued = (" and re-queued it" if queues.is_true(workload, "Requeued") else "")
    preemptor = index.workloads_by_uid.get(queues.preemptor_uid(message))
    if reason != "Preempted" or preemptor is None:
        return f"Kueue evicted it at {when} ({reason or 'no reason given'}){requeued}."
    mine, theirs = queues.priority(workload), queues.priority(preemptor)
    return (f"Kueue preempted it at {when} to admit {queues.owner_name(preemptor)} "
            f"(priority {_priority(preemptor, theirs)} > {_priority(workload, mine)}){requeued}.")


def _priority(workload: Mapping[str, Any], value: int) -> str:
    name = queues.priority_class(workload)
    return f"{value} {name}" if name else str(value)


def _demand(subject: Subject, owner: K8sObject, workload: K8sObject,
            resource: str) -> tuple[Decimal, str]:
    """What the workload asks of ``resource`` in all (as Kueue counts it), and how."""
    per_pod = Decimal(subject.gpu.get(resource, 0))
    count = queues.pod_count(workload) or (1 if subject.pod is not None
                                           else _parallelism(owner))
    return per_pod * count, f"{count} {'pod' if count == 1 else 'pods'} × {num(per_pod)}"


def _parallelism(owner: Mapping[str, Any]) -> int:
    spec = owner.get("spec") or {}
    parallelism = spec.get("parallelism", 1)
    return parallelism if isinstance(parallelism, int) and parallelism > 0 else 1


@dataclass(frozen=True)
class FlavorRoom:
    """One flavor of a ClusterQueue for one resource: its quota, what the cohort lends now,
    what is free now, and the most it can ever hold."""

    quota: FlavorQuota
    lendable: Decimal
    free: Decimal
    ceiling: Decimal


def flavor_rooms(index: QueueIndex, cluster_queue: Mapping[str, Any],
                 resource: str) -> list[FlavorRoom]:
    """The flavors covering ``resource``, in the order Kueue tries them."""
    name = text(part(cluster_queue, "metadata"), "name")
    cohort = queues.cohort_name(cluster_queue)
    members = [cq for cq in index.cohort_members(cohort)
               if text(part(cq, "metadata"), "name") != name]
    rooms = []
    for quota in queues.flavor_quotas(cluster_queue, resource):
        lendable = _lendable(members, quota.flavor, resource)
        borrowable = (lendable if quota.borrowing_limit is None
                      else min(lendable, quota.borrowing_limit))
        rooms.append(FlavorRoom(quota, lendable, quota.unused + borrowable,
                                _ceiling(quota, cohort, members, resource)))
    return rooms


def _quota(subject: Subject, index: QueueIndex, what: str, owner: K8sObject,
           workload: K8sObject, cluster_queue: Mapping[str, Any],
           evidence: list[Evidence]) -> str:
    """Why the quota does not fit it now, or ever: the numbers, per flavor."""
    name = text(part(cluster_queue, "metadata"), "name") or "?"
    resource = primary(subject)
    rooms = flavor_rooms(index, cluster_queue, resource) if subject.gpu else []
    condition = queues.condition(workload, "QuotaReserved") or {}
    if not rooms:
        return (f"{what} waits for admission in ClusterQueue {name}: "
                f"{condition.get('message') or condition.get('reason') or 'no reason given'}.")
    need, how = _demand(subject, owner, workload, resource)
    cohort = queues.cohort_name(cluster_queue)
    for room in rooms:  # the digest's "Queues" section reads these back
        quota = room.quota
        evidence.append(Evidence(
            f"ClusterQueue {name}", f"flavor {quota.flavor} [{resource}]",
            f"nominal {num(quota.nominal)}, reserved {num(quota.reserved)}"
            + (f", borrowingLimit {num(quota.borrowing_limit)}"
               if quota.borrowing_limit is not None else "") + f", needs {num(need)}"))
    if all(need > room.ceiling for room in rooms):
        return (f"{what} needs {num(need)} {resource} ({how}), "
                + _never(name, cohort, rooms) + " It will wait forever: split it into "
                f"smaller jobs, or ask for quota in {name}.")
    parts = []
    for room in rooms:
        quota = room.quota
        holders = _holders(index, name, quota.flavor, resource)
        parts.append(f"flavor {quota.flavor} has {num(quota.nominal)} {resource}"
                     f"{_borrowing(quota, cohort, room.lendable)}, {num(quota.reserved)} "
                     f"reserved ({holders or 'by no workload gpuwhy sees'}): "
                     f"{num(room.free)} free, {num(max(need - room.free, Decimal(0)))} short")
    position = subject.snapshot.queue_positions.get("/".join(object_key(workload)))
    if position is not None:  # Kueue's own word (its visibility API), read live
        queue_word = f"{_ordinal(position[0] + 1)} of {position[1]} pending in {name}"
    elif ahead := _ahead(index, name, workload):
        queue_word = f"{ahead} pending ahead of it in {name}"
    else:
        queue_word = f"first in line in {name}"
    asks = ("ask for quota / borrowing in cohort " + cohort) if cohort else "ask for quota"
    return (f"ClusterQueue {name}: {'; '.join(parts)}. {what} needs {num(need)} "
            f"({how}): wait ({queue_word}), lower the request, or {asks}.")


def _ordinal(number: int) -> str:
    suffix = "th" if 10 <= number % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(number % 10,
                                                                                 "th")
    return f"{number}{suffix}"


def _never(name: str, cohort: str, rooms: list[FlavorRoom]) -> str:
    most = "; ".join(f"{num(room.ceiling)} in flavor {room.quota.flavor} "
                     f"({_ceiling_how(room.quota, cohort)})" for room in rooms)
    return f"more than ClusterQueue {name} can ever give: at most {most}."


def preview_admission(index: QueueIndex, what: str, namespace: str, queue: str,
                      resource: str, need: Decimal) -> tuple[str | None, str]:
    """Would Kueue admit a new workload asking ``need`` of ``resource`` in LocalQueue
    ``namespace/queue`` now (``gpuwhy check``)? The flavor it would get (None: it would be
    queued), and the sentence that says why."""
    ignored: list[Evidence] = []
    if not index:
        return None, ("gpuwhy sees no Kueue objects in this cluster (kueue.x-k8s.io not "
                      "served or not readable): nothing would admit it.")
    blocked = (_local_queue_missing(index, what, namespace, queue, ignored)
               or _cluster_queue_unusable(index, what, namespace, queue, ignored))
    if blocked is not None:
        return None, blocked
    local = index.get("LocalQueue", namespace, queue) or {}
    name = text(part(local, "spec"), "clusterQueue")
    cluster_queue = index.get("ClusterQueue", "", name) or {}
    rooms = flavor_rooms(index, cluster_queue, resource)
    if not rooms:
        return None, f"ClusterQueue {name} has no quota for {resource}."
    if all(need > room.ceiling for room in rooms):
        return None, (f"{what} needs {num(need)} {resource}, "
                      + _never(name, queues.cohort_name(cluster_queue), rooms)
                      + " It would wait forever.")
    fits = next((room for room in rooms if need <= room.free), None)
    if fits is not None:
        return fits.quota.flavor, (f"ClusterQueue {name}, flavor {fits.quota.flavor}: "
                                   f"{num(fits.free)} of {num(fits.quota.nominal)} {resource} "
                                   f"free, it needs {num(need)}.")
    return None, ("; ".join(f"flavor {room.quota.flavor} has {num(room.free)} of "
                            f"{num(room.quota.nominal)} {resource} free"
                            for room in rooms) + f"; it needs {num(need)}.")


def _ceiling(quota: FlavorQuota, cohort: str, members: list[K8sObject],
             resource: str) -> Decimal:
    """The most the ClusterQueue can hold of the flavor, with everything free."""
    if quota.most is not None or not cohort:
        return quota.most if quota.most is not None else quota.nominal
    lent = Decimal(0)
    for member in members:
        for theirs in queues.flavor_quotas(member, resource):
            if theirs.flavor == quota.flavor:
                lent += (theirs.nominal if theirs.lending_limit is None
                         else min(theirs.nominal, theirs.lending_limit))
    return quota.nominal + lent


def _ceiling_how(quota: FlavorQuota, cohort: str) -> str:
    if quota.borrowing_limit is not None:
        return f"nominal {num(quota.nominal)} + borrowingLimit {num(quota.borrowing_limit)}"
    return (f"nominal {num(quota.nominal)} + what cohort {cohort} can lend" if cohort
            else f"nominal {num(quota.nominal)}, no cohort to borrow from")


def _lendable(members: list[K8sObject], flavor: str, resource: str) -> Decimal:
    """What the other ClusterQueues of the cohort leave unused of the flavor now."""
    total = Decimal(0)
    for member in members:
        for theirs in queues.flavor_quotas(member, resource):
            if theirs.flavor == flavor:
                spare = theirs.unused
                total += spare if theirs.lending_limit is None else min(spare,
                                                                        theirs.lending_limit)
    return total


def _borrowing(quota: FlavorQuota, cohort: str, lendable: Decimal) -> str:
    if not cohort:
        return " (no cohort to borrow from)"
    if quota.borrowing_limit is not None and quota.borrowing_limit == 0:
        return f" (borrowingLimit 0: it cannot borrow from cohort {cohort})"
    limit = (f", borrowingLimit {num(quota.borrowing_limit)}"
             if quota.borrowing_limit is not None else "")
    return f" (cohort {cohort} has {num(lendable)} unused to lend{limit})"


def _holders(index: QueueIndex, cluster_queue: str, flavor: str, resource: str) -> str:
    held = []
    for workload in index.workloads_in(cluster_queue):
        if queues.admitted_in(workload) != cluster_queue:
            continue
        amount = sum((a for f, a in queues.assigned(workload, resource) if f == flavor),
                     Decimal(0))
        if amount:
            since = str((queues.condition(workload, "QuotaReserved") or {})
                        .get("lastTransitionTime") or "")
            held.append((since, queues.owner_name(workload), amount))
    return ", ".join(f"{owner} {num(amount)}" for _, owner, amount in sorted(held))


def _ahead(index: QueueIndex, cluster_queue: str, workload: K8sObject) -> int:
    """Pending workloads of the ClusterQueue Kueue tries first: higher priority, or the same
    and created earlier (its BestEffortFIFO / StrictFIFO order)."""
    mine = (-queues.priority(workload),
            text(part(workload, "metadata"), "creationTimestamp"),
            object_key(workload))
    return sum(1 for other in index.workloads_in(cluster_queue)
               if other is not workload and not queues.admitted_in(other)
               and (-queues.priority(other),
                    text(part(other, "metadata"), "creationTimestamp"),
                    object_key(other)) < mine)


# The funnel's answers where the nodes a pod may use decide: a flavor's nodeLabels and
# tolerations, which Kueue put on the pod at admission, are among what decides them.
_NODE_CAUSES = frozenset({Cause.SELECTOR_MISMATCH, Cause.TAINT_UNTOLERATED, Cause.NO_GPU_NODE,
                          Cause.ALLOCATABLE_ZERO, Cause.TOO_LARGE, Cause.EXHAUSTED,
                          Cause.DEVICE_UNFIT, Cause.OTHER_CONSTRAINT})


def flavor_note(subject: Subject, finding: Finding) -> Finding:
    """Kueue admitted the pod's workload: say which flavor set the nodeSelector and
    tolerations the funnel judged (the Job's own template does not hold them)."""
    pod = subject.pod
    if pod is None or finding.cause not in _NODE_CAUSES or not queues.kueue_involved(pod):
        return finding
    index = subject.snapshot.queue_index
    workload = index.workload_of(pod)
    if workload is None or not queues.admitted_in(workload):
        return finding
    selector = subject.spec.get("nodeSelector") or {}
    tolerations = subject.spec.get("tolerations") or []
    injected: list[tuple[str, str]] = []
    pools: list[Mapping[str, Any]] = []  # the node labels each flavor sends it to
    for name in queues.admitted_flavors(workload):
        flavor = index.get("ResourceFlavor", "", name)
        spec = part(flavor, "spec")
        labels = {k: v for k, v in part(spec, "nodeLabels").items() if selector.get(k) == v}
        tolerated = [t for t in entries(spec, "tolerations") if t in tolerations]
        if not labels and not tolerated:
            continue
        pools.append(labels)
        sets = [f"nodeSelector {', '.join(f'{k}={v}' for k, v in sorted(labels.items()))}"
                if labels else "",
                "toleration " + ", ".join(_toleration(t) for t in tolerated) if tolerated else ""]
        injected.append((name, " and ".join(s for s in sets if s)))
    if not injected:
        return finding
    cluster_queue = queues.admitted_in(workload)
    said = "; ".join(f"flavor {name} set {sets}" for name, sets in injected)
    action = (f"{finding.action} Kueue admitted it in ClusterQueue {cluster_queue} and {said}: "
              "to use other nodes, change the flavors of the ClusterQueue, not the pod's "
              "template." + _outside_kueue(subject, finding, pools))
    evidence = [*finding.evidence,
                Evidence(f"Workload {'/'.join(object_key(workload))}",
                         "status.admission.podSetAssignments[*].flavors",
                         f"{cluster_queue}: {', '.join(name for name, _ in injected)}")]
    return Finding(finding.cause, action, evidence)


def _outside_kueue(subject: Subject, finding: Finding,
                   pools: list[Mapping[str, Any]]) -> str:
    """Kueue's quota had room, the flavor's nodes have none: name the GPUs held there by
    pods Kueue did not admit (its quota does not count them)."""
    if finding.cause != Cause.EXHAUSTED or not subject.gpu:
        return ""
    resource = primary(subject)
    snapshot = subject.snapshot
    outside = [f"{pod_name(holder)} {amount}" for node in snapshot.node_table
               if any(pool and all(node.labels.get(k) == v for k, v in pool.items())
                      for pool in pools)
               for holder, amount in snapshot.holders_on(node.name, resource)
               if not queues.kueue_involved(holder)]
    if not outside:
        return ""
    return (f" Outside Kueue, {', '.join(outside)} {'holds' if len(outside) == 1 else 'hold'} "
            f"{resource} on the flavor's nodes: Kueue's quota does not count "
            f"{'it' if len(outside) == 1 else 'them'}.")


def _toleration(toleration: Mapping[str, Any]) -> str:
    value = f"={toleration['value']}" if toleration.get("value") else ""
    effect = f":{toleration['effect']}" if toleration.get("effect") else ""
    return f"{toleration.get('key', '*')}{value}{effect}"
