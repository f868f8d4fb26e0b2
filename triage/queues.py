"""Kueue's objects (kueue.x-k8s.io) as plain dicts: the facts triage reads off them, in the
shapes of both versions Kueue serves (v1beta1 and v1beta2 differ in a few field names).

Pure functions only: no I/O. A Snapshot holds the objects (``queues.json`` of a dump, or
what the live reader or the watch cache read); ``QueueIndex`` looks them up.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from scoring.objects import K8sObject, object_key
from scoring.quantity import QuantityError, parse_quantity

GROUP = "kueue.x-k8s.io"
# The versions gpuwhy reads, most preferred first (v1beta2 is stored by recent releases).
KNOWN_VERSIONS = ("v1beta2", "v1beta1")
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
CLUSTER_QUEUE_LABEL = "kueue.x-k8s.io/cluster-queue-name"
WORKLOAD_ANNOTATION = "kueue.x-k8s.io/workload"
JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"
# Kueue gates a plain pod until admission (recent releases add a topology gate as well).
GATE_PREFIX = "kueue.x-k8s.io/"
# The kinds of a dump's queues.json, in the order `kubectl get` lists them.
QUEUE_KINDS = ("ResourceFlavor", "ClusterQueue", "LocalQueue", "Workload", "Cohort",
               "WorkloadPriorityClass")
# What a Kubernetes object name may be (a DNS subdomain); a label that is not one names no queue.
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
_UID_IN_MESSAGE = re.compile(r"\(UID: (?P<uid>[0-9a-fA-F-]+)")


def part(obj: object, key: str) -> Mapping[str, Any]:
    """``obj[key]`` when both are mappings, else {}: a Kueue object of an odd shape (a newer
    version, a hand-edited dump) gives an answer, never a traceback."""
    value = obj.get(key) if isinstance(obj, Mapping) else None
    return value if isinstance(value, Mapping) else {}


def entries(obj: object, key: str) -> list[Mapping[str, Any]]:
    """The mappings of the list ``obj[key]`` (anything else in it, or in its place, skipped)."""
    value = obj.get(key) if isinstance(obj, Mapping) else None
    return [item for item in value if isinstance(item, Mapping)] if isinstance(value, list) else []


def text(obj: object, key: str) -> str:
    """``obj[key]`` as a name: "" unless a string."""
    value = obj.get(key) if isinstance(obj, Mapping) else None
    return value if isinstance(value, str) else ""


def is_kueue(obj: Mapping[str, Any]) -> bool:
    return str(obj.get("apiVersion", "")).partition("/")[0] == GROUP


def queue_name(obj: Mapping[str, Any]) -> str | None:
    """The LocalQueue the object asks for (label kueue.x-k8s.io/queue-name), or None."""
    value = part(part(obj, "metadata"), "labels").get(QUEUE_LABEL)
    return None if value is None else str(value)


def valid_name(name: str) -> bool:
    return bool(_NAME.match(name))


def kueue_gates(spec: Mapping[str, Any]) -> list[str]:
    """The pod's scheduling gates Kueue owns (it removes them at admission)."""
    return [name for gate in entries(spec, "schedulingGates")
            if (name := text(gate, "name")).startswith(GATE_PREFIX)]


def kueue_involved(obj: Mapping[str, Any]) -> bool:
    """Queued or admitted by Kueue: the queue label, a Kueue gate, or the labels and
    annotation Kueue puts on the pods of a workload it admitted."""
    metadata = part(obj, "metadata")
    labels = part(metadata, "labels")
    return (QUEUE_LABEL in labels or CLUSTER_QUEUE_LABEL in labels
            or WORKLOAD_ANNOTATION in part(metadata, "annotations")
            or bool(kueue_gates(part(obj, "spec"))))


def condition(obj: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    return next((item for item in entries(part(obj, "status"), "conditions")
                 if item.get("type") == kind), None)


def is_true(obj: Mapping[str, Any], kind: str) -> bool:
    found = condition(obj, kind)
    return found is not None and found.get("status") == "True"


def cohort_name(cluster_queue: Mapping[str, Any]) -> str:
    """spec.cohortName (v1beta2) or spec.cohort (v1beta1)."""
    spec = part(cluster_queue, "spec")
    return text(spec, "cohortName") or text(spec, "cohort")


def stop_policy(queue: Mapping[str, Any]) -> str:
    return text(part(queue, "spec"), "stopPolicy") or "None"


def priority_class(workload: Mapping[str, Any]) -> str:
    """spec.priorityClassRef.name (v1beta2) or spec.priorityClassName (v1beta1)."""
    spec = part(workload, "spec")
    return text(part(spec, "priorityClassRef"), "name") or text(spec, "priorityClassName")


def priority(workload: Mapping[str, Any]) -> int:
    value = part(workload, "spec").get("priority")
    return value if isinstance(value, int) else 0


def owner_name(workload: Mapping[str, Any]) -> str:
    """"ns/name" of the Job (or pod) a Workload stands for, else the Workload's own."""
    namespace, name = object_key(workload)
    for owner in entries(part(workload, "metadata"), "ownerReferences"):
        if owner.get("controller") and text(owner, "name"):
            return f"{namespace}/{owner['name']}"
    return f"{namespace}/{name}"


def _amount(value: object) -> Decimal | None:
    try:
        return parse_quantity(value)
    except QuantityError:
        return None


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


def flavor_quotas(cluster_queue: Mapping[str, Any], resource: str) -> list[FlavorQuota]:
    """The flavors that cover ``resource`` in the ClusterQueue, in the order Kueue tries them."""
    reserved = _reservations(cluster_queue, resource)
    quotas = []
    for group in entries(part(cluster_queue, "spec"), "resourceGroups"):
        covered = group.get("coveredResources")
        if not isinstance(covered, list) or resource not in covered:
            continue
        for flavor in entries(group, "flavors"):
            for entry in entries(flavor, "resources"):
                if entry.get("name") != resource:
                    continue
                name = text(flavor, "name")
                nominal = _amount(entry.get("nominalQuota", "0"))
                if nominal is None:
                    continue  # not a quantity: gpuwhy cannot judge it (Kueue's word stands)
                used, borrowed = reserved.get(name, (Decimal(0), Decimal(0)))
                quotas.append(FlavorQuota(
                    name, nominal,
                    _amount(entry["borrowingLimit"]) if "borrowingLimit" in entry else None,
                    _amount(entry["lendingLimit"]) if "lendingLimit" in entry else None,
                    used, borrowed))
    return quotas


def _reservations(cluster_queue: Mapping[str, Any],
                  resource: str) -> dict[str, tuple[Decimal, Decimal]]:
    status = part(cluster_queue, "status")
    found: dict[str, tuple[Decimal, Decimal]] = {}
    for flavor in entries(status, "flavorsReservation") or entries(status, "flavorsUsage"):
        for entry in entries(flavor, "resources"):
            if entry.get("name") == resource:
                found[text(flavor, "name")] = (
                    _amount(entry.get("total", "0")) or Decimal(0),
                    _amount(entry.get("borrowed", "0")) or Decimal(0))
    return found


def flavors_named(cluster_queue: Mapping[str, Any]) -> list[str]:
    return list(dict.fromkeys(
        text(flavor, "name") for group in entries(part(cluster_queue, "spec"), "resourceGroups")
        for flavor in entries(group, "flavors")))


def assigned(workload: Mapping[str, Any], resource: str) -> list[tuple[str, Decimal]]:
    """(flavor, amount) of ``resource`` the Workload's admission reserves, per pod set."""
    found = []
    for pod_set in entries(part(part(workload, "status"), "admission"), "podSetAssignments"):
        flavor = text(part(pod_set, "flavors"), resource)
        amount = _amount(part(pod_set, "resourceUsage").get(resource, "0"))
        if flavor and amount:
            found.append((str(flavor), amount))
    return found


def admitted_flavors(workload: Mapping[str, Any]) -> list[str]:
    admission = part(part(workload, "status"), "admission")
    return list(dict.fromkeys(flavor for pod_set in entries(admission, "podSetAssignments")
                              for flavor in part(pod_set, "flavors").values()
                              if isinstance(flavor, str)))


def admitted_in(workload: Mapping[str, Any]) -> str:
    """The ClusterQueue holding quota for the Workload, "" when none does."""
    if not is_true(workload, "QuotaReserved"):
        return ""
    return text(part(part(workload, "status"), "admission"), "clusterQueue")


def ran_before(workload: Mapping[str, Any]) -> bool:
    """Kueue admitted the Workload once and took it back (evicted, preempted, re-queued): its
    job may have run, and left events, since."""
    return (condition(workload, "Evicted") is not None
            or condition(workload, "Requeued") is not None
            or bool(entries(part(part(workload, "status"), "schedulingStats"), "evictions")))


def pod_count(workload: Mapping[str, Any]) -> int:
    return sum(count for pod_set in entries(part(workload, "spec"), "podSets")
               if isinstance(count := pod_set.get("count"), int) and count > 0)


def preemptor_uid(message: str) -> str:
    """The preempting Workload's uid in Kueue's "Preempted to accommodate a workload (UID: …"."""
    match = _UID_IN_MESSAGE.search(message)
    return match["uid"] if match else ""


# -- the index a Snapshot keeps ---------------------------------------------------------------

class QueueIndex:
    """Kueue's objects of one Snapshot, looked up by what triage asks."""

    def __init__(self, objects: Iterable[K8sObject]) -> None:
        self.by_kind: dict[str, dict[tuple[str, str], K8sObject]] = defaultdict(dict)
        self.workloads_by_owner: dict[str, K8sObject] = {}
        self.workloads_by_uid: dict[str, K8sObject] = {}
        for obj in objects:
            if not isinstance(obj, dict) or not is_kueue(obj):
                continue
            kind = str(obj.get("kind", ""))
            self.by_kind[kind][object_key(obj)] = obj
            if kind != "Workload":
                continue
            metadata = part(obj, "metadata")
            if uid := text(metadata, "uid"):
                self.workloads_by_uid[uid] = obj
            owners = [text(o, "uid") for o in entries(metadata, "ownerReferences")
                      if o.get("controller")]
            owners.append(text(part(metadata, "labels"), JOB_UID_LABEL))
            for owner in owners:
                if owner:
                    self.workloads_by_owner.setdefault(str(owner), obj)

    def __bool__(self) -> bool:
        return bool(self.by_kind)

    def get(self, kind: str, namespace: str, name: str) -> K8sObject | None:
        return self.by_kind.get(kind, {}).get((namespace, name))

    def names(self, kind: str, namespace: str = "") -> list[str]:
        return sorted(name for ns, name in self.by_kind.get(kind, {}) if ns == namespace)

    def workload_of(self, owner: Mapping[str, Any]) -> K8sObject | None:
        """The Workload Kueue made for a Job or a pod (its controller owner, or the Workload
        annotation Kueue sets on an admitted workload's pods)."""
        metadata = part(owner, "metadata")
        uid = text(metadata, "uid")
        found = self.workloads_by_owner.get(uid) if uid else None
        if found is not None:
            return found
        if named := text(part(metadata, "annotations"), WORKLOAD_ANNOTATION):
            return self.get("Workload", object_key(owner)[0], named)
        for parent in entries(metadata, "ownerReferences"):
            if parent.get("controller") and (found := self.workloads_by_owner.get(
                    text(parent, "uid"))) is not None:
                return found
        return None

    def cluster_queue_of(self, workload: Mapping[str, Any]) -> str:
        """The ClusterQueue a Workload is in: where it holds quota, else its LocalQueue's."""
        if held := admitted_in(workload):
            return held
        queue = text(part(workload, "spec"), "queueName")
        local = self.get("LocalQueue", object_key(workload)[0], queue)
        return text(part(local, "spec"), "clusterQueue")

    def workloads_in(self, cluster_queue: str) -> list[K8sObject]:
        return [w for w in self.by_kind.get("Workload", {}).values()
                if self.cluster_queue_of(w) == cluster_queue]

    def cohort_members(self, cohort: str) -> list[K8sObject]:
        return [cq for (_, _), cq in sorted(self.by_kind.get("ClusterQueue", {}).items())
                if cohort and cohort_name(cq) == cohort]


def slim_workload(workload: K8sObject) -> K8sObject:
    """What triage reads of a Workload that is not the ref's: its pod sets' counts, not their
    templates (a whole pod spec each), and no managedFields."""
    metadata = {k: v for k, v in part(workload, "metadata").items() if k != "managedFields"}
    spec = dict(part(workload, "spec"))
    if "podSets" in spec:
        spec["podSets"] = [{k: v for k, v in pod_set.items() if k != "template"}
                           for pod_set in entries(spec, "podSets")]
    return {**workload, "metadata": metadata, "spec": spec}
