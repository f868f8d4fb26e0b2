"""The pod object is absent: rejected at creation (quota, RuntimeClass), or never there."""

from __future__ import annotations

from scoring.verdict import Evidence
from triage import admission
from triage.classify.subject import Finding, Subject, num
from triage.vocabulary import Cause


def check_quota(subject: Subject) -> Finding | None:
    workload = subject.workload_row
    if workload is None:
        return None
    label = workload.label
    rejected = admission.quota_rejection(admission.rejections(subject.rows, workload))
    # From state only while the controller is trying to create pods (not suspended, not done).
    shortfalls = admission.quota_shortfalls(subject.rows, subject.ref.namespace,
                                            subject.facts) if workload.wanted else []
    if rejected is None and not shortfalls:
        return None
    evidence = []
    action_parts = []
    for short in shortfalls:
        holders_text = ", ".join(admission.quota_holders(subject.rows, subject.ref.namespace,
                                                         short.key)[:5]) or "no running pod"
        evidence.append(Evidence(f"ResourceQuota {short.quota}",
                                 f"status.hard/used[{short.key}]",
                                 f"hard {num(short.hard)}, used {num(short.used)}, "
                                 f"one pod asks {num(short.asked)}"))
        action_parts.append(f"quota {short.quota} is full: {short.key} "
                            f"{num(short.used)}/{num(short.hard)} used ({holders_text}). "
                            f"The {workload.kind} asks {num(short.asked)} per pod")
    if rejected is not None:
        rejection, parts = rejected
        evidence.append(Evidence(rejection.source, rejection.field, rejection.message))
        if not action_parts:
            quota = parts.get("quota", "?")
            detail = parts.get("detail") or (f"requested {parts.get('requested')}, used "
                                             f"{parts.get('used')}, limited {parts.get('limited')}")
            action_parts.append(f"quota {subject.ref.namespace}/{quota} rejects the pods: {detail}")
    action = ("; ".join(action_parts)
              + f"; its pods are rejected at creation (FailedCreate on {label}). "
              "Raise the quota or free usage.")
    return Finding(Cause.QUOTA_EXCEEDED, action, evidence)


def check_runtimeclass(subject: Subject) -> Finding | None:
    workload = subject.workload_row
    if workload is None:
        return None
    label = workload.label
    rejected = admission.runtimeclass_rejection(admission.rejections(subject.rows, workload))
    wanted = subject.facts.runtime_class
    existing = admission.runtimeclass_names(subject.rows)
    missing_now = bool(wanted) and wanted not in existing and workload.wanted > 0
    if rejected is None and not missing_now:
        return None
    name = rejected[1] if rejected is not None and not missing_now else str(wanted)
    evidence = [Evidence(label, "spec.template.spec.runtimeClassName", str(wanted or "(unset)")),
                Evidence("RuntimeClasses", "metadata.name", ", ".join(existing) or "none")]
    if rejected is not None:
        evidence.append(Evidence(rejected[0].source, rejected[0].field, rejected[0].message))
    others = f" (existing: {', '.join(existing)})" if existing else " (the cluster has none)"
    action = (f"{label} uses runtimeClassName {name}, but no RuntimeClass {name} exists{others}. "
              f"Create RuntimeClass {name} or fix the name in the template.")
    return Finding(Cause.RUNTIMECLASS_MISSING, action, evidence)


def check_pod_not_found(subject: Subject) -> Finding:
    if (workload := subject.workload_row) is not None:
        label = workload.label
        if workload.suspended:
            why, field, value = (f"{label} is suspended, so it has no pods: resume it, or wait "
                                 "for the queue controller that suspended it (e.g. Kueue) to "
                                 "admit it."), "spec.suspend", "true"
        elif workload.wanted == 0:
            why, field, value = (f"{label} wants no pods now (finished, or scaled to 0): "
                                 "check its status."), "spec / status", "0 pods wanted"
        elif refused := admission.rejections(subject.rows, workload):
            # Neither quota nor RuntimeClass (checked before): PodSecurity, a webhook, a
            # LimitRange ... The API server's own words say what to change.
            rejection = refused[0]
            text = rejection.message.removeprefix("Error creating: ")
            return Finding(Cause.POD_NOT_FOUND,
                           f"{label} has no pods: the API server refuses them at creation: "
                           f"{text}. Change the pod template to meet that, or the policy "
                           "that refuses it (PodSecurity level, admission webhook, LimitRange).",
                           [Evidence(rejection.source, rejection.field, rejection.message)])
        else:
            why, field, value = (f"{label} exists but has no pods and no admission error on "
                                 "record. Check its status and events."), "pods", "none"
        return Finding(Cause.POD_NOT_FOUND, why, [Evidence(label, field, value)])
    from triage.suggest import closest_names  # the edit-distance library only for a typo

    ref = subject.ref
    suggestions = closest_names(subject.rows, ref)
    meant = f"Did you mean {' or '.join(suggestions)}? " if suggestions else ""
    events = subject.rows.events_for("Pod", ref.namespace, ref.name)
    if events:
        latest = events[0]
        reason, when = latest.reason or "?", latest.time or "?"
        remain = ("1 event about it remains" if len(events) == 1 else
                  f"{len(events)} events about it remain")
        return Finding(Cause.POD_NOT_FOUND,
                       f"no pod or workload named {ref} exists now, but {remain} (latest: "
                       f"{reason} at {when}): it was deleted, or finished and cleaned up. "
                       f"{meant}Check who deletes it (kubectl -n {ref.namespace} get events "
                       f"--field-selector involvedObject.name={ref.name}).",
                       [Evidence(f"namespace {ref.namespace}", "pods, workloads",
                                 f"nothing named {ref.name}"),
                        Evidence(f"Pod {ref}", f"event {reason}",
                                 latest.message)])
    return Finding(Cause.POD_NOT_FOUND,
                   f"no pod, workload or event named {ref} exists. {meant}Check the name and "
                   f"namespace (kubectl -n {ref.namespace} get pods,jobs,deployments); "
                   "events expire after an hour, so an old rejection leaves no trace.",
                   [Evidence(f"namespace {ref.namespace}", "pods, workloads, events",
                             f"nothing named {ref.name}")])
