"""The rows of Kueue's objects: what triage reads off each, built once from the raw object
(the ``of`` constructors: with ``names``' accessors, the only reads of Kueue's shapes)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from scoring.objects import object_key
from scoring.quantity import QuantityError, quantity_or_none
from triage.pods import effective_request, named_resources
from triage.queues.names import (
    JOB_UID_LABEL,
    WORKLOAD_ANNOTATION,
    entries,
    kueue_gates,
    kueue_involved,
    part,
    preemptor_uid,
    queue_name,
    text,
)


@dataclass(frozen=True)
class Condition:
    """One entry of an object's status.conditions."""

    type: str
    status: str
    reason: str
    message: str
    since: str  # lastTransitionTime

    @property
    def true(self) -> bool:
        return self.status == "True"

    @property
    def false(self) -> bool:
        return self.status == "False"


def _conditions(obj: object) -> Mapping[str, Condition]:
    found: dict[str, Condition] = {}
    for item in entries(part(obj, "status"), "conditions"):
        kind = text(item, "type")
        if kind and kind not in found:
            found[kind] = Condition(kind, text(item, "status") or "?", text(item, "reason"),
                                    text(item, "message"), text(item, "lastTransitionTime"))
    return found


@dataclass(frozen=True)
class FlavorQuota:
    """One flavor's quota of one resource in a ClusterQueue, with what is reserved of it."""

    flavor: str
    nominal: Decimal
    borrowing_limit: Decimal | None  # None: no limit (the cohort decides)
    lending_limit: Decimal | None
    reserved: Decimal
    borrowed: Decimal

    @property
    def most(self) -> Decimal | None:
        """The most the ClusterQueue can ever give (None: as much as the cohort lends)."""
        if self.borrowing_limit is None:
            return None
        return self.nominal + self.borrowing_limit

    @property
    def unused(self) -> Decimal:
        return max(self.nominal - self.reserved, Decimal(0))


@dataclass(frozen=True)
class ClusterQueueRow:
    """A ClusterQueue: its flavors and quotas per resource (in the order Kueue tries the
    flavors), what is reserved of each, its cohort, stop policy and conditions."""

    name: str
    cohort: str  # spec.cohortName (v1beta2) or spec.cohort (v1beta1); "" for none
    stop_policy: str
    flavors: tuple[str, ...]  # every flavor named, in order
    quotas: Mapping[str, tuple[FlavorQuota, ...]]  # by resource
    conditions: Mapping[str, Condition]

    @classmethod
    def of(cls, obj: Mapping[str, Any]) -> ClusterQueueRow:
        spec = part(obj, "spec")
        groups = entries(spec, "resourceGroups")
        reserved = _reservations(obj)
        quotas: dict[str, list[FlavorQuota]] = defaultdict(list)
        for group in groups:
            covered = group.get("coveredResources")
            if not isinstance(covered, list):
                continue
            for flavor in entries(group, "flavors"):
                name = text(flavor, "name")
                for entry in entries(flavor, "resources"):
                    resource = entry.get("name")
                    nominal = quantity_or_none(entry.get("nominalQuota", "0"))
                    if resource not in covered or nominal is None:
                        continue  # not a quantity: gpuwhy cannot judge it (Kueue's word stands)
                    used, borrowed = reserved.get((name, str(resource)),
                                                  (Decimal(0), Decimal(0)))
                    quotas[str(resource)].append(FlavorQuota(
                        name, nominal,
                        quantity_or_none(entry["borrowingLimit"])
                        if "borrowingLimit" in entry else None,
                        quantity_or_none(entry["lendingLimit"])
                        if "lendingLimit" in entry else None,
                        used, borrowed))
        return cls(text(part(obj, "metadata"), "name"),
                   text(spec, "cohortName") or text(spec, "cohort"),
                   text(spec, "stopPolicy") or "None",
                   tuple(dict.fromkeys(text(flavor, "name") for group in groups
                                       for flavor in entries(group, "flavors"))),
                   {resource: tuple(found) for resource, found in quotas.items()},
                   _conditions(obj))

    def quotas_for(self, resource: str) -> tuple[FlavorQuota, ...]:
        return self.quotas.get(resource, ())


def _reservations(cluster_queue: Mapping[str, Any]) -> dict[tuple[str, str],
                                                             tuple[Decimal, Decimal]]:
    status = part(cluster_queue, "status")
    found: dict[tuple[str, str], tuple[Decimal, Decimal]] = {}
    for flavor in entries(status, "flavorsReservation") or entries(status, "flavorsUsage"):
        for entry in entries(flavor, "resources"):
            found[(text(flavor, "name"), str(entry.get("name")))] = (
                quantity_or_none(entry.get("total", "0")) or Decimal(0),
                quantity_or_none(entry.get("borrowed", "0")) or Decimal(0))
    return found


@dataclass(frozen=True)
class LocalQueueRow:
    namespace: str
    name: str
    cluster_queue: str  # "" when unset
    stop_policy: str
    conditions: Mapping[str, Condition]

    @classmethod
    def of(cls, obj: Mapping[str, Any]) -> LocalQueueRow:
        namespace, name = object_key(obj)
        spec = part(obj, "spec")
        return cls(namespace, name, text(spec, "clusterQueue"),
                   text(spec, "stopPolicy") or "None", _conditions(obj))


@dataclass(frozen=True)
class FlavorRow:
    """A ResourceFlavor: the node labels and tolerations Kueue injects into the pods it admits
    in it, and the taints of its nodes."""

    name: str
    node_labels: Mapping[str, str]
    node_taints: tuple[Mapping[str, Any], ...]
    tolerations: tuple[Mapping[str, Any], ...]

    @classmethod
    def of(cls, obj: Mapping[str, Any]) -> FlavorRow:
        spec = part(obj, "spec")
        return cls(text(part(obj, "metadata"), "name"),
                   {str(k): v for k, v in part(spec, "nodeLabels").items() if isinstance(v, str)},
                   tuple(entries(spec, "nodeTaints")), tuple(entries(spec, "tolerations")))


@dataclass(frozen=True)
class PodSet:
    name: str
    count: int  # 0 when not a positive number
    requests: Mapping[str, Decimal]  # per pod, where the template (or its slim copy) says


@dataclass(frozen=True)
class Assignment:
    """What an admission gave one pod set: the flavor per resource, and the usage."""

    flavors: Mapping[str, str]
    usage: Mapping[str, Decimal]


@dataclass(frozen=True)
class WorkloadRow:
    """A Workload: what it stands for (its controller owner), its queue, priority, pod sets,
    admission and conditions."""

    namespace: str
    name: str
    uid: str
    owner_kind: str  # the controller owner reference: "" when none
    owner_api_version: str
    owner_name: str
    owner_uids: tuple[str, ...]  # the controller owner's uid and the job-uid label's
    queue_name: str
    priority: int
    priority_class: str  # spec.priorityClassRef.name (v1beta2) or spec.priorityClassName
    created: str
    pod_sets: tuple[PodSet, ...]
    admitted_to: str  # status.admission.clusterQueue
    assignments: tuple[Assignment, ...]
    conditions: Mapping[str, Condition]
    evictions: int  # status.schedulingStats.evictions entries

    @classmethod
    def of(cls, obj: Mapping[str, Any]) -> WorkloadRow:
        namespace, name = object_key(obj)
        metadata, spec, status = part(obj, "metadata"), part(obj, "spec"), part(obj, "status")
        controller = next((o for o in entries(metadata, "ownerReferences")
                           if o.get("controller") and text(o, "name")), {})
        priority = spec.get("priority")
        admission = part(status, "admission")
        return cls(
            namespace, name, text(metadata, "uid"), text(controller, "kind"),
            text(controller, "apiVersion"), text(controller, "name"),
            tuple(uid for uid in (*(text(o, "uid") for o in entries(metadata, "ownerReferences")
                                    if o.get("controller")),
                                  text(part(metadata, "labels"), JOB_UID_LABEL)) if uid),
            text(spec, "queueName"), priority if isinstance(priority, int) else 0,
            text(part(spec, "priorityClassRef"), "name") or text(spec, "priorityClassName"),
            text(metadata, "creationTimestamp"),
            tuple(_pod_set(pod_set) for pod_set in entries(spec, "podSets")),
            text(admission, "clusterQueue"),
            tuple(Assignment({str(k): v for k, v in part(a, "flavors").items()
                              if isinstance(v, str)},
                             {str(k): amount for k, v in part(a, "resourceUsage").items()
                              if (amount := quantity_or_none(v)) is not None})
                  for a in entries(admission, "podSetAssignments")),
            _conditions(obj),
            len(entries(part(status, "schedulingStats"), "evictions")))

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def owner(self) -> str:
        """"ns/name" of the Job (or pod) the Workload stands for, else its own."""
        return f"{self.namespace}/{self.owner_name or self.name}"

    def condition(self, kind: str) -> Condition | None:
        return self.conditions.get(kind)

    def is_true(self, kind: str) -> bool:
        found = self.conditions.get(kind)
        return found is not None and found.true

    @property
    def admitted_in(self) -> str:
        """The ClusterQueue holding quota for the Workload, "" when none does."""
        return self.admitted_to if self.is_true("QuotaReserved") else ""

    @property
    def admitted_flavors(self) -> list[str]:
        return list(dict.fromkeys(flavor for a in self.assignments
                                  for flavor in a.flavors.values()))

    def assigned(self, resource: str) -> list[tuple[str, Decimal]]:
        """(flavor, amount) of ``resource`` the admission reserves, per pod set."""
        return [(flavor, amount) for a in self.assignments
                if (flavor := a.flavors.get(resource, "")) and (amount := a.usage.get(
                    resource, Decimal(0)))]

    @property
    def pod_count(self) -> int:
        return sum(pod_set.count for pod_set in self.pod_sets)

    @property
    def ran_before(self) -> bool:
        """Kueue admitted it once and took it back (evicted, preempted, re-queued): its job
        may have run, and left events, since."""
        return ("Evicted" in self.conditions or "Requeued" in self.conditions
                or self.evictions > 0)

    @property
    def preemptor_uid(self) -> str:
        """The uid of the Workload that preempted this one, "" when none did."""
        evicted = self.conditions.get("Evicted")
        if evicted is None or not evicted.true or evicted.reason != "Preempted":
            return ""
        return preemptor_uid(evicted.message)


def _pod_set(pod_set: Mapping[str, Any]) -> PodSet:
    count = pod_set.get("count")
    return PodSet(text(pod_set, "name"), count if isinstance(count, int) and count > 0 else 0,
                  _requests(part(part(pod_set, "template"), "spec")))


def _requests(spec: Mapping[str, Any]) -> dict[str, Decimal]:
    """Each pod's effective requests; none from a template of an odd shape (containers that
    are not a list of mappings, amounts that are not quantities)."""
    try:
        return {name: effective_request(spec, name) for name in sorted(named_resources(spec))}
    except (AttributeError, TypeError, QuantityError):
        return {}


@dataclass(frozen=True)
class CohortRow:
    name: str
    parent: str  # spec.parentName: "" at the root


@dataclass(frozen=True)
class QueueOwner:
    """A Job (or a JobSet, a RayJob, ...) or a pod as Kueue sees it: what it asks of Kueue
    (its queue label, Kueue's gates) and how Kueue's Workload names it."""

    kind: str
    namespace: str
    name: str
    uid: str
    queue: str | None  # the kueue.x-k8s.io/queue-name label, None without one
    suspended: bool  # spec.suspend
    parallelism: int  # spec.parallelism, 1 when unset or not a positive number
    gates: tuple[str, ...]  # the scheduling gates Kueue owns
    involved: bool  # queued or admitted by Kueue (its label, gate or annotation)
    workload_name: str  # the Workload annotation Kueue sets on an admitted workload's pods
    controller_uids: tuple[str, ...]  # the controller owner references' uids

    @classmethod
    def of(cls, obj: Mapping[str, Any]) -> QueueOwner:
        namespace, name = object_key(obj)
        metadata, spec = part(obj, "metadata"), part(obj, "spec")
        parallelism = spec.get("parallelism", 1)
        return cls(
            str(obj.get("kind", "?")), namespace, name, text(metadata, "uid"), queue_name(obj),
            bool(spec.get("suspend")),
            parallelism if isinstance(parallelism, int) and parallelism > 0 else 1,
            tuple(kueue_gates(spec)), kueue_involved(obj),
            text(part(metadata, "annotations"), WORKLOAD_ANNOTATION),
            tuple(text(o, "uid") for o in entries(metadata, "ownerReferences")
                  if o.get("controller")))

    @property
    def label(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"
