"""Rows of the objects that make pods and limit them: workloads, ResourceQuotas, pod groups."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scoring.objects import K8sObject, object_key
from scoring.rows import PodGroupRow, QuotaRow, WorkloadRow
from triage.rows.build import owner_refs, pod_condition, spec_facts

POD_GROUP_SCHEDULED = "PodGroupScheduled"


def workload_label(workload: Mapping[str, Any]) -> str:
    namespace, name = object_key(workload)
    return f"{workload.get('kind', '?')} {namespace}/{name}"


def wanted_pods(workload: Mapping[str, Any]) -> int:
    """How many live pods the workload's controller is trying to have."""
    spec = workload.get("spec") or {}
    status = workload.get("status") or {}
    if spec.get("suspend"):  # a Job, a JobSet, a RayJob: its controller makes no pods
        return 0
    if workload.get("kind") == "Job":
        if any(c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
               for c in status.get("conditions") or []):
            return 0
        parallelism = int(spec.get("parallelism", 1))
        completions = spec.get("completions")
        remaining = (int(completions) - int(status.get("succeeded", 0))
                     if completions is not None else parallelism)
        return max(0, min(parallelism, remaining))
    if workload.get("kind") == "DaemonSet":
        return int(status.get("desiredNumberScheduled", 0))
    return int(spec.get("replicas", 1))


def template_spec(workload: Mapping[str, Any]) -> dict[str, Any]:
    spec = workload.get("spec") or {}
    template = spec.get("template") or (spec.get("jobTemplate") or {}).get("spec", {}).get(
        "template") or {}
    return dict(template.get("spec") or {})


def workload_row(workload: K8sObject) -> WorkloadRow:
    namespace, name = object_key(workload)
    return WorkloadRow(
        kind=str(workload.get("kind") or ""), namespace=namespace, name=name,
        uid=str((workload.get("metadata") or {}).get("uid") or ""),
        label=workload_label(workload), wanted=wanted_pods(workload),
        suspended=bool((workload.get("spec") or {}).get("suspend")),
        replica_failures=tuple(
            str(c["message"]) for c in (workload.get("status") or {}).get("conditions") or ()
            if c.get("type") == "ReplicaFailure" and c.get("status") == "True"
            and c.get("message")),
        template=spec_facts(template_spec(workload)))


def quota_row(quota: K8sObject) -> QuotaRow:
    namespace, name = object_key(quota)
    spec = quota.get("spec") or {}
    status = quota.get("status") or {}
    expressions = (spec.get("scopeSelector") or {}).get("matchExpressions") or ()
    return QuotaRow(
        namespace=namespace, name=name, hard=status.get("hard") or spec.get("hard") or {},
        used=status.get("used") or {},
        scopes=(*(str(s) for s in spec.get("scopes") or ()),
                *(str(e.get("scopeName")) for e in expressions
                  if e.get("scopeName") != "PriorityClass")),
        priority_classes=tuple((str(e.get("operator")), tuple(e.get("values") or ()))
                               for e in expressions if e.get("scopeName") == "PriorityClass"))


def pod_group_row(group: K8sObject) -> PodGroupRow:
    """A PodGroup, or a scheduling.k8s.io Workload (of which only the owners are read)."""
    namespace, name = object_key(group)
    spec = group.get("spec") or {}
    return PodGroupRow(
        kind=str(group.get("kind") or ""), namespace=namespace, name=name,
        owners=owner_refs(group), min_count=_min_count(spec),
        workload=str(((spec.get("podGroupTemplateRef") or {}).get("workload") or {})
                     .get("workloadName") or ""),
        scheduled=next((pod_condition(c) for c in (group.get("status") or {}).get("conditions")
                        or () if isinstance(c, Mapping) and c.get("type") == POD_GROUP_SCHEDULED),
                       None))


def _min_count(spec: Mapping[str, Any]) -> int:
    """The gang policy's minCount; 0 for a basic policy or none."""
    gang = (spec.get("schedulingPolicy") or {}).get("gang")
    if not isinstance(gang, Mapping):
        return 0
    try:
        return max(0, int(gang.get("minCount") or 0))
    except (TypeError, ValueError):
        return 0
