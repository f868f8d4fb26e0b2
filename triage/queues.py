"""Kueue's objects (kueue.x-k8s.io) as rows: the facts triage reads off them, in the shapes of
both versions Kueue serves (v1beta1 and v1beta2 differ in a few field names).

The one place that reads Kueue's raw shapes (with the cluster readers, which pick what to
read by them): the checks read only the rows built here. Pure functions only: no I/O. A
Snapshot holds the objects (``queues.json`` of a dump, or what the live reader or the
watch cache read); ``QueueIndex`` builds the rows once and looks them up.
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
from triage.pods import effective_request, named_resources

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


def _amount(value: object) -> Decimal | None:
    try:
        return parse_quantity(value)
    except QuantityError:
        return None


def preemptor_uid(message: str) -> str:
    """The preempting Workload's uid in Kueue's "Preempted to accommodate a workload (UID: …"."""
    match = _UID_IN_MESSAGE.search(message)
    return match["uid"] if match else ""


# -- rows: what triage reads off each Kueue object, built once --------------------------------

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
                    nominal = _amount(entry.get("nominalQuota", "0"))
                    if resource not in covered or nominal is None:
                        continue  # not a quantity: gpuwhy cannot judge it (Kueue's word stands)
                    used, borrowed = reserved.get((name, str(resource)),
                                                  (Decimal(0), Decimal(0)))
                    quotas[str(resource)].append(FlavorQuota(
                        name, nominal,
                        _amount(entry["borrowingLimit"]) if "borrowingLimit" in entry else None,
                        _amount(entry["lendingLimit"]) if "lendingLimit" in entry else None,
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
                _amount(entry.get("total", "0")) or Decimal(0),
                _amount(entry.get("borrowed", "0")) or Decimal(0))
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
                              if (amount := _amount(v)) is not None})
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


# -- the index a Snapshot keeps ---------------------------------------------------------------

class QueueIndex:
    """Kueue's objects of one Snapshot as rows, built once, looked up by what triage asks;
    the raw objects by kind and key as well, for the shell (``gpuwhy check`` applies a
    flavor's node labels to a manifest)."""

    def __init__(self, objects: Iterable[K8sObject]) -> None:
        self.by_kind: dict[str, dict[tuple[str, str], K8sObject]] = defaultdict(dict)
        for obj in objects:
            if isinstance(obj, dict) and is_kueue(obj):
                self.by_kind[str(obj.get("kind", ""))][object_key(obj)] = obj
        kinds = self.by_kind
        self.cluster_queues = {key[1]: ClusterQueueRow.of(obj)
                               for key, obj in sorted(kinds.get("ClusterQueue", {}).items())}
        self.local_queues = {key: LocalQueueRow.of(obj)
                             for key, obj in kinds.get("LocalQueue", {}).items()}
        self.flavors = {key[1]: FlavorRow.of(obj)
                        for key, obj in kinds.get("ResourceFlavor", {}).items()}
        self.cohorts = {key[1]: CohortRow(key[1], text(part(obj, "spec"), "parentName"))
                        for key, obj in kinds.get("Cohort", {}).items()}
        self.workloads = {key: WorkloadRow.of(obj)
                          for key, obj in kinds.get("Workload", {}).items()}
        self._by_owner: dict[str, WorkloadRow] = {}
        self._by_uid: dict[str, WorkloadRow] = {}
        for row in self.workloads.values():
            if row.uid:
                self._by_uid[row.uid] = row
            for owner in row.owner_uids:
                self._by_owner.setdefault(owner, row)

    def __bool__(self) -> bool:
        return bool(self.by_kind)

    def get(self, kind: str, namespace: str, name: str) -> K8sObject | None:
        return self.by_kind.get(kind, {}).get((namespace, name))

    def names(self, kind: str, namespace: str = "") -> list[str]:
        return sorted(name for ns, name in self.by_kind.get(kind, {}) if ns == namespace)

    def local_queue(self, namespace: str, name: str) -> LocalQueueRow | None:
        return self.local_queues.get((namespace, name))

    def workload_by_uid(self, uid: str) -> WorkloadRow | None:
        return self._by_uid.get(uid)

    def workload_of(self, owner: Mapping[str, Any]) -> WorkloadRow | None:
        """The Workload Kueue made for a Job or a pod (its controller owner, or the Workload
        annotation Kueue sets on an admitted workload's pods)."""
        metadata = part(owner, "metadata")
        uid = text(metadata, "uid")
        found = self._by_owner.get(uid) if uid else None
        if found is not None:
            return found
        if named := text(part(metadata, "annotations"), WORKLOAD_ANNOTATION):
            return self.workloads.get((object_key(owner)[0], named))
        for parent in entries(metadata, "ownerReferences"):
            if parent.get("controller") and (found := self._by_owner.get(
                    text(parent, "uid"))) is not None:
                return found
        return None

    def cluster_queue_of(self, workload: WorkloadRow) -> str:
        """The ClusterQueue a Workload is in: where it holds quota, else its LocalQueue's."""
        if held := workload.admitted_in:
            return held
        local = self.local_queue(workload.namespace, workload.queue_name)
        return local.cluster_queue if local is not None else ""

    def workloads_in(self, cluster_queue: str) -> list[WorkloadRow]:
        return [w for w in self.workloads.values() if self.cluster_queue_of(w) == cluster_queue]

    def cohort_members(self, cohort: str) -> list[ClusterQueueRow]:
        return [cq for cq in self.cluster_queues.values() if cohort and cq.cohort == cohort]


def slim_workload(workload: K8sObject) -> K8sObject:
    """What triage reads of a Workload: its pod sets' counts and each pod's resources, not
    their templates (a whole pod spec each), and no managedFields."""
    metadata = {k: v for k, v in part(workload, "metadata").items() if k != "managedFields"}
    spec = dict(part(workload, "spec"))
    if "podSets" in spec:
        spec["podSets"] = [{**{k: v for k, v in pod_set.items() if k != "template"},
                            **_resources_only(part(pod_set, "template"))}
                           for pod_set in entries(spec, "podSets")]
    return {**workload, "metadata": metadata, "spec": spec}


def _resources_only(template: Mapping[str, Any]) -> dict[str, Any]:
    """The template's containers with their resources alone (what a pod set's requests are
    worked out from), "" of it when it has none."""
    spec = part(template, "spec")
    kept: dict[str, Any] = {
        kind: [{key: c[key] for key in ("name", "resources", "restartPolicy") if key in c}
               for c in entries(spec, kind)]
        for kind in ("initContainers", "containers") if kind in spec}
    if "overhead" in spec:
        kept["overhead"] = spec["overhead"]
    return {"template": {"spec": kept}} if kept else {}
