"""The index of Kueue's objects a Snapshot keeps, and what the watch cache keeps of a
Workload."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from scoring.objects import K8sObject, object_key
from triage.queues.names import entries, is_kueue, part, text
from triage.queues.rows import (
    ClusterQueueRow,
    CohortRow,
    FlavorRow,
    LocalQueueRow,
    QueueOwner,
    WorkloadRow,
)


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
        """The Workload Kueue made for a Job or a pod (see ``workload_for``)."""
        return self.workload_for(QueueOwner.of(owner))

    def workload_for(self, owner: QueueOwner) -> WorkloadRow | None:
        """The Workload Kueue made for a Job or a pod (its controller owner, or the Workload
        annotation Kueue sets on an admitted workload's pods)."""
        found = self._by_owner.get(owner.uid) if owner.uid else None
        if found is not None:
            return found
        if owner.workload_name:
            return self.workloads.get((owner.namespace, owner.workload_name))
        for uid in owner.controller_uids:
            if (found := self._by_owner.get(uid)) is not None:
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
