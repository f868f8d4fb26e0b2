"""The pod was never created: read the owner's FailedCreate events, ReplicaFailure conditions,
and, when events have expired, the ResourceQuotas and RuntimeClasses themselves."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from scoring.objects import K8sObject, is_terminated, object_key
from scoring.quantity import QuantityError, parse_quantity
from triage.pods import effective_request, pod_name
from triage.snapshot import Snapshot

_QUOTA_TEXT = re.compile(
    r"(?:exceeded quota|Exceeded quota): (?P<quota>[^,]+), requested: (?P<requested>[^ ]+?),?"
    r" used: (?P<used>[^ ]+?),? limited: (?P<limited>[^ ]+)$")
_FAILED_QUOTA = re.compile(r"failed quota: (?P<quota>[^:]+): (?P<detail>.+)$")
_RUNTIMECLASS_TEXT = re.compile(r'RuntimeClass "(?P<name>[^"]+)" not found')
_FORBIDDEN_POD = re.compile(r'pods "(?P<name>[^"]*)" is forbidden')


@dataclass(frozen=True)
class Rejection:
    """One admission rejection the controllers recorded."""

    source: str  # "Job ml/finetune", "ReplicaSet infer/vllm-7f9", ...
    field: str  # "event FailedCreate" or "status.conditions[ReplicaFailure]"
    message: str


def workload_label(workload: Mapping[str, Any]) -> str:
    namespace, name = object_key(workload)
    return f"{workload.get('kind', '?')} {namespace}/{name}"


def rejections(snapshot: Snapshot, workload: K8sObject) -> list[Rejection]:
    """FailedCreate events and ReplicaFailure conditions on the workload and its ReplicaSets,
    newest event first."""
    found: list[Rejection] = []
    for owner in (workload, *_replicasets(snapshot, workload)):
        namespace, name = object_key(owner)
        label = workload_label(owner)
        for event in snapshot.events_for(str(owner.get("kind", "")), namespace, name):
            if event.get("reason") == "FailedCreate" and event.get("message"):
                found.append(Rejection(label, "event FailedCreate", str(event["message"])))
        for condition in owner.get("status", {}).get("conditions") or []:
            if (condition.get("type") == "ReplicaFailure" and condition.get("status") == "True"
                    and condition.get("message")):
                found.append(Rejection(label, "status.conditions[ReplicaFailure]",
                                       str(condition["message"])))
    return found


def _replicasets(snapshot: Snapshot, workload: K8sObject) -> list[K8sObject]:
    if workload.get("kind") != "Deployment":
        return []
    return [c for c in snapshot.children(workload) if c.get("kind") == "ReplicaSet"]


def workload_pods(snapshot: Snapshot, workload: K8sObject) -> list[K8sObject]:
    """The workload's pods (through its ReplicaSets for a Deployment), terminated included."""
    owners = [workload, *_replicasets(snapshot, workload)]
    return [c for owner in owners for c in snapshot.children(owner) if c.get("kind") == "Pod"]


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


# -- quota -------------------------------------------------------------------------------

@dataclass(frozen=True)
class QuotaShortfall:
    quota: str  # "ns/name"
    key: str  # "requests.nvidia.com/gpu"
    hard: Decimal
    used: Decimal
    asked: Decimal


def quota_rejection(found: list[Rejection]) -> tuple[Rejection, dict[str, str]] | None:
    """The newest rejection by a ResourceQuota, with its parsed parts."""
    for rejection in found:
        match = _QUOTA_TEXT.search(rejection.message)
        if match:
            return rejection, match.groupdict()
        failed = _FAILED_QUOTA.search(rejection.message)
        if failed:
            return rejection, {"quota": failed["quota"], "detail": failed["detail"]}
    return None


def quota_shortfalls(snapshot: Snapshot, namespace: str,
                     spec: Mapping[str, Any]) -> list[QuotaShortfall]:
    """Quotas whose hard − used is smaller than what one more pod of this template asks."""
    shortfalls = []
    for quota in snapshot.namespace_objects(snapshot.resourcequotas, namespace):
        if not _quota_applies(quota, spec):
            continue
        status = quota.get("status") or {}
        hard = status.get("hard") or (quota.get("spec") or {}).get("hard") or {}
        used = status.get("used") or {}
        for key, hard_value in hard.items():
            asked = _demand(key, spec)
            if asked is None or asked == 0:
                continue
            try:
                limit, in_use = parse_quantity(hard_value), parse_quantity(used.get(key, "0"))
            except QuantityError:
                continue
            if in_use + asked > limit:
                shortfalls.append(QuotaShortfall(f"{namespace}/{object_key(quota)[1]}", key,
                                                 limit, in_use, asked))
    return shortfalls


_STANDARD = ("cpu", "memory", "ephemeral-storage")


def _demand(key: str, spec: Mapping[str, Any]) -> Decimal | None:
    """What one pod adds to a quota key; None for keys gpuwhy does not evaluate.

    Extended resources are quota'd only through `requests.<name>`.
    """
    if key in ("pods", "count/pods"):
        return Decimal(1)
    prefix, _, resource = key.partition(".")
    if prefix in ("requests", "limits") and resource:
        if prefix == "limits" and resource not in _STANDARD:
            return None
        return effective_request(spec, resource) if prefix == "requests" else _limit(spec, resource)
    if key in _STANDARD:
        return effective_request(spec, key)
    return None


def _limit(spec: Mapping[str, Any], resource: str) -> Decimal:
    pod_level = ((spec.get("resources") or {}).get("limits") or {}).get(resource)
    if pod_level is not None:  # a pod-level limit (spec.resources) bounds the whole pod
        try:
            return parse_quantity(pod_level)
        except QuantityError:
            pass
    total = Decimal(0)
    for container in spec.get("containers") or []:
        value = ((container.get("resources") or {}).get("limits") or {}).get(resource)
        if value is not None:
            try:
                total += parse_quantity(value)
            except QuantityError:
                continue
    return total


def _quota_applies(quota: Mapping[str, Any], spec: Mapping[str, Any]) -> bool:
    """Scopes gpuwhy can evaluate from a template; an unknown scope means "don't judge"."""
    quota_spec = quota.get("spec") or {}
    scopes = list(quota_spec.get("scopes") or [])
    for expression in (quota_spec.get("scopeSelector") or {}).get("matchExpressions") or []:
        scope, operator = expression.get("scopeName"), expression.get("operator")
        if scope == "PriorityClass":
            present = bool(spec.get("priorityClassName"))
            values = expression.get("values") or []
            holds = {"In": spec.get("priorityClassName") in values,
                     "NotIn": spec.get("priorityClassName") not in values,
                     "Exists": present, "DoesNotExist": not present}.get(str(operator))
            if not holds:
                return False
        else:
            scopes.append(scope)
    terminating = spec.get("activeDeadlineSeconds") is not None
    for scope in scopes:
        if scope == "Terminating" and not terminating:
            return False
        if scope == "NotTerminating" and terminating:
            return False
        if scope not in ("Terminating", "NotTerminating"):
            return False
    return True


def quota_holders(snapshot: Snapshot, namespace: str, key: str) -> list[str]:
    resource = key.split(".", 1)[1] if key.startswith("requests.") else key
    return [pod_name(p) for p in snapshot.pods_in(namespace)
            if not is_terminated(p) and effective_request(p.get("spec", {}), resource) > 0]


# -- runtime class ---------------------------------------------------------------------------

def runtimeclass_rejection(found: list[Rejection]) -> tuple[Rejection, str] | None:
    for rejection in found:
        match = _RUNTIMECLASS_TEXT.search(rejection.message)
        if match:
            return rejection, match["name"]
    return None


def runtimeclass_names(snapshot: Snapshot) -> list[str]:
    return sorted(object_key(rc)[1] for rc in snapshot.runtimeclasses)


# -- names that match no object -------------------------------------------------------------

def owners_rejecting(snapshot: Snapshot, namespace: str, name: str) -> Iterator[K8sObject]:
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


_ORDINAL = re.compile(r"^(?P<set>.+)-(?P<ordinal>0|[1-9][0-9]*)$")


def ordinal_base(name: str) -> tuple[str, int] | None:
    """``db-0`` → ("db", 0): the StatefulSet a pod name would belong to, and its ordinal."""
    match = _ORDINAL.match(name)
    return (match["set"], int(match["ordinal"])) if match else None


def statefulset_of_ordinal(snapshot: Snapshot, namespace: str, name: str) -> K8sObject | None:
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
