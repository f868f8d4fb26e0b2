"""The pod was never created: read the owner's FailedCreate events, ReplicaFailure conditions,
and, when events have expired, the ResourceQuotas and RuntimeClasses themselves."""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal

from scoring.quantity import QuantityError, parse_quantity
from scoring.rows import PodSpecFacts, QuotaRow, WorkloadRow
from triage.rows import Rows
from triage.rows import template_spec as template_spec
from triage.rows import wanted_pods as wanted_pods
from triage.rows import workload_label as workload_label
from triage.rows.build import QUOTA_LIMITED

_QUOTA_TEXT = re.compile(
    r"(?:exceeded quota|Exceeded quota): (?P<quota>[^,]+), requested: (?P<requested>[^ ]+?),?"
    r" used: (?P<used>[^ ]+?),? limited: (?P<limited>[^ ]+)$")
_FAILED_QUOTA = re.compile(r"failed quota: (?P<quota>[^:]+): (?P<detail>.+)$")
_RUNTIMECLASS_TEXT = re.compile(r'RuntimeClass "(?P<name>[^"]+)" not found')


@dataclass(frozen=True)
class Rejection:
    """One admission rejection the controllers recorded."""

    source: str  # "Job ml/finetune", "ReplicaSet infer/vllm-7f9", ...
    field: str  # "event FailedCreate" or "status.conditions[ReplicaFailure]"
    message: str


def rejections(rows: Rows, workload: WorkloadRow) -> list[Rejection]:
    """FailedCreate events and ReplicaFailure conditions on the workload and its ReplicaSets,
    newest event first."""
    found: list[Rejection] = []
    for owner in (workload, *rows.replicasets_of(workload)):
        for event in rows.events_for(owner.kind, owner.namespace, owner.name):
            if event.reason == "FailedCreate" and event.message:
                found.append(Rejection(owner.label, "event FailedCreate", event.message))
        found += [Rejection(owner.label, "status.conditions[ReplicaFailure]", message)
                  for message in owner.replica_failures]
    return found


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


def quota_shortfalls(rows: Rows, namespace: str, spec: PodSpecFacts) -> list[QuotaShortfall]:
    """Quotas whose hard − used is smaller than what one more pod of this template asks."""
    shortfalls = []
    for quota in rows.quotas_in(namespace):
        if not _quota_applies(quota, spec):
            continue
        for key, hard_value in quota.hard.items():
            asked = _demand(key, spec)
            if asked is None or asked == 0:
                continue
            try:
                limit = parse_quantity(hard_value)
                in_use = parse_quantity(quota.used.get(key, "0"))
            except QuantityError:
                continue
            if in_use + asked > limit:
                shortfalls.append(QuotaShortfall(f"{namespace}/{quota.name}", key,
                                                 limit, in_use, asked))
    return shortfalls


def _demand(key: str, spec: PodSpecFacts) -> Decimal | None:
    """What one pod adds to a quota key; None for keys gpuwhy does not evaluate.

    Extended resources are quota'd only through `requests.<name>`.
    """
    if key in ("pods", "count/pods"):
        return Decimal(1)
    prefix, _, resource = key.partition(".")
    if prefix in ("requests", "limits") and resource:
        if prefix == "limits" and resource not in QUOTA_LIMITED:
            return None
        return spec.request(resource) if prefix == "requests" else spec.limits[resource]
    if key in QUOTA_LIMITED:
        return spec.request(key)
    return None


def _quota_applies(quota: QuotaRow, spec: PodSpecFacts) -> bool:
    """Scopes gpuwhy can evaluate from a template; an unknown scope means "don't judge"."""
    present = bool(spec.priority_class)
    for operator, values in quota.priority_classes:
        holds = {"In": present and spec.priority_class in values,
                 "NotIn": not present or spec.priority_class not in values,
                 "Exists": present, "DoesNotExist": not present}.get(operator)
        if not holds:
            return False
    terminating = spec.active_deadline
    for scope in quota.scopes:
        if scope == "Terminating" and not terminating:
            return False
        if scope == "NotTerminating" and terminating:
            return False
        if scope not in ("Terminating", "NotTerminating"):
            return False
    return True


def quota_holders(rows: Rows, namespace: str, key: str) -> list[str]:
    resource = key.split(".", 1)[1] if key.startswith("requests.") else key
    return [p.label for p in rows.pods_in(namespace)
            if not p.terminated and p.request(resource) > 0]


# -- runtime class ---------------------------------------------------------------------------

def runtimeclass_rejection(found: list[Rejection]) -> tuple[Rejection, str] | None:
    for rejection in found:
        match = _RUNTIMECLASS_TEXT.search(rejection.message)
        if match:
            return rejection, match["name"]
    return None


def runtimeclass_names(rows: Rows) -> list[str]:
    return sorted(rows.runtime_classes)


# -- a pod name of a StatefulSet ------------------------------------------------------------

_ORDINAL = re.compile(r"^(?P<set>.+)-(?P<ordinal>0|[1-9][0-9]*)$")


def ordinal_base(name: str) -> tuple[str, int] | None:
    """``db-0`` → ("db", 0): the StatefulSet a pod name would belong to, and its ordinal."""
    match = _ORDINAL.match(name)
    return (match["set"], int(match["ordinal"])) if match else None
