"""Reading Kueue's objects (kueue.x-k8s.io), cold: for one ref, only what its answer reads.

A ref Kueue holds reads its Workload (by the ``kueue.x-k8s.io/job-uid`` label Kueue puts on
it, or by name from the ``kueue.x-k8s.io/workload`` annotation of an admitted workload's
pods), its LocalQueue, ClusterQueue and the ResourceFlavors that one names, by GET; the
names of the others only where the answer lists them (a LocalQueue or ResourceFlavor that
does not exist); the ClusterQueues of the cohort only when the ref could borrow; and, for a
Workload waiting for quota, the Workloads of the namespaces whose LocalQueues feed its
ClusterQueue (who holds the quota, who is ahead of it).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from decimal import Decimal

from scoring.objects import K8sObject, object_key
from triage import integrations, queues
from triage.admission import template_spec
from triage.cluster.limits import DEFAULT_PAGE_SIZE
from triage.cluster.reader import ClusterReader
from triage.cluster.refs import RefObjects, optional_read
from triage.cluster.resources import kueue_resource
from triage.errors import ClusterError
from triage.pods import named_resources
from triage.queues import ClusterQueueRow, LocalQueueRow, QueueIndex, WorkloadRow

log = logging.getLogger(__name__)

# What a triage reads of Kueue (Cohorts and WorkloadPriorityClasses decide no answer: the
# ClusterQueues name their cohort, the Workloads carry their priority).
TRIAGE_QUEUE_KINDS = ("ResourceFlavor", "ClusterQueue", "LocalQueue", "Workload")


def held_by_kueue(found: RefObjects) -> bool:
    """A ref Kueue still holds (a queue-labelled workload kept suspended, a gated pod) or
    whose pods it admitted but are not bound yet (the flavor may decide where they go)."""
    held = any(queues.queue_name(w) is not None and (w.get("spec") or {}).get("suspend")
               for w in found.workloads)
    return held or any(queues.kueue_involved(p) and not (p.get("spec") or {}).get("nodeName")
                       for p in found.pods)


def read_queues(reader: ClusterReader, found: RefObjects,
                page_size: int = DEFAULT_PAGE_SIZE) -> list[K8sObject]:
    """Kueue's objects the ref's answer reads; any ref Kueue does not hold, a running Kueue
    job's too, costs no request at all. A failed read is noted in the Verdict: the answer is
    still ``queued``, without the queue's numbers."""
    if not held_by_kueue(found):
        return []

    def read() -> tuple[list[K8sObject], str]:
        version = reader.served_version(queues.GROUP, queues.KNOWN_VERSIONS)
        if version is None:
            return [], ""
        reads = _KueueReads(reader, version, page_size)
        for owner in (*found.workloads, *found.pods):
            if queues.kueue_involved(owner):
                reads.for_owner(owner)
        return reads.objects(), ""

    return optional_read(found.problems, read)


def triage_queues(reader: ClusterReader, problems: list[str],
                  page_size: int = DEFAULT_PAGE_SIZE) -> list[K8sObject]:
    """Every object of the Kueue kinds a triage reads (the whole cluster's view: capacity,
    ``where``); one that cannot be read is noted in ``problems``."""
    return optional_read(problems, lambda: (list_queues(reader, TRIAGE_QUEUE_KINDS,
                                                        page_size), ""))


def list_queues(reader: ClusterReader, kinds: Sequence[str],
                page_size: int = DEFAULT_PAGE_SIZE) -> list[K8sObject]:
    """Every object of those Kueue kinds (Workloads slim), in the version the server prefers;
    none where it does not serve kueue.x-k8s.io."""
    version = reader.served_version(queues.GROUP, queues.KNOWN_VERSIONS)
    if version is None:
        return []
    return [obj for kind in kinds for obj in reader.list_all(
        kueue_resource(kind, version), page_size=page_size,
        keep=queues.slim_workload if kind == "Workload" else None)[0]]


class _KueueReads:
    """The Kueue objects read for one ref, each asked once (a GET that found nothing too)."""

    def __init__(self, reader: ClusterReader, version: str, page_size: int) -> None:
        self.reader = reader
        self.version = version
        self.page_size = page_size
        self._found: dict[tuple[str, str, str], K8sObject | None] = {}
        self._listed: set[tuple[str, str]] = set()

    def objects(self) -> list[K8sObject]:
        return [obj for obj in self._found.values() if obj is not None]

    def get(self, kind: str, namespace: str, name: str) -> K8sObject | None:
        key = (kind, namespace, name)
        if key not in self._found:
            if (kind, namespace) in self._listed or (kind, "*") in self._listed:
                return None  # listed already: it does not exist
            obj = self.reader.get(kueue_resource(kind, self.version), namespace, name)
            self._found[key] = _slim(obj) if obj is not None else None
        return self._found[key]

    def list(self, kind: str, namespace: str = "", *, everywhere: bool = False,
             label_selector: str = "") -> list[K8sObject]:
        """Objects of the kind (in ``namespace``, or cluster-scoped / ``everywhere``)."""
        scope = (kind, "*" if everywhere else namespace)
        if not label_selector and (scope in self._listed or (kind, "*") in self._listed):
            return [o for (k, ns, _), o in self._found.items()
                    if o is not None and k == kind and (everywhere or ns == namespace)]
        items, _ = self.reader.list_all(kueue_resource(kind, self.version), namespace,
                                        label_selector=label_selector,
                                        page_size=self.page_size, keep=_slim)
        if not label_selector:
            self._listed.add(scope)
        for item in items:
            self._found[(kind, *object_key(item))] = item
        return items

    def names(self, kind: str, namespace: str = "") -> None:
        """Read all of a kind's names in the scope (the answer lists them)."""
        self.list(kind, namespace)

    # -- what one owner's answer reads -----------------------------------------------

    def for_owner(self, owner: K8sObject) -> None:
        held = bool(queues.kueue_gates(owner.get("spec") or {})) or (
            queues.queue_name(owner) is not None and bool((owner.get("spec") or {}).get("suspend")))
        usable = self.queue_of(owner) if held else None
        found = self.workload_of(owner)
        if found is None:
            if held and not self.objects():
                self._anything()
            return
        workload = WorkloadRow.of(found)
        if workload.admitted_in:
            for flavor in workload.admitted_flavors:  # the flavor note
                self.get("ResourceFlavor", "", flavor)
        elif usable is not None and workload.condition("QuotaReserved") is not None \
                and not workload.is_true("Admitted"):
            self.quota_of(owner, workload, usable)

    def queue_of(self, owner: K8sObject) -> ClusterQueueRow | None:
        """The held owner's LocalQueue, ClusterQueue and its flavors (or the names the answer
        lists when one is missing); the ClusterQueue when it may admit, with the Workloads
        queued with it read (the ref's namespace is among them)."""
        namespace = object_key(owner)[0]
        queue = queues.queue_name(owner) or ""
        local = self.get("LocalQueue", namespace, queue) if queues.valid_name(queue) else None
        if local is None:
            self.names("LocalQueue", namespace)  # the answer names the ones that exist
            return None
        name = LocalQueueRow.of(local).cluster_queue
        found = self.get("ClusterQueue", "", name) if queues.valid_name(name) else None
        if found is None:
            self.names("ClusterQueue")
            return None
        cluster_queue = ClusterQueueRow.of(found)
        flavors = [self.get("ResourceFlavor", "", flavor) for flavor in cluster_queue.flavors]
        if None in flavors:
            self.names("ResourceFlavor")
            return None
        active = cluster_queue.conditions.get("Active")
        if (cluster_queue.stop_policy != "None" or LocalQueueRow.of(local).stop_policy != "None"
                or (active is not None and active.false)):
            return None  # the answer is said without the queue's numbers
        self.queued_with(name)
        return cluster_queue

    def workload_of(self, owner: K8sObject) -> K8sObject | None:
        """The Workload Kueue made for the owner: among those read already, by the rule the
        answer finds it with; else labelled with its uid, named in its annotation (an
        admitted workload's pods), or its controller's."""
        namespace = object_key(owner)[0]
        if ("Workload", namespace) in self._listed or ("Workload", "*") in self._listed:
            index = QueueIndex(self.objects())
            row = index.workload_of(owner)
            return None if row is None else index.get("Workload", row.namespace, row.name)
        metadata = queues.part(owner, "metadata")
        named = queues.text(queues.part(metadata, "annotations"), queues.WORKLOAD_ANNOTATION)
        if named and (found := self.get("Workload", namespace, named)) is not None:
            return found
        uids = [queues.text(metadata, "uid"),
                *(queues.text(parent, "uid") for parent in queues.entries(
                    metadata, "ownerReferences") if parent.get("controller"))]
        for uid in filter(None, uids):
            labelled = self.list("Workload", namespace,
                                 label_selector=f"{queues.JOB_UID_LABEL}={uid}")
            if labelled:
                return labelled[0]
        return None

    def quota_of(self, owner: K8sObject, workload: WorkloadRow,
                 cluster_queue: ClusterQueueRow) -> None:
        """What the quota answer of a pending Workload reads beyond its queue: the cohort's
        ClusterQueues when it may borrow, the Workloads of another ClusterQueue when its
        LocalQueue was changed since, the preemptor when it is not among those."""
        waits_in = self._cluster_queue_of(workload)
        if waits_in is None:
            return
        if waits_in.name != cluster_queue.name:
            self.queued_with(waits_in.name)
        if _may_borrow(waits_in, owner):
            self.names("ClusterQueue")  # the cohort's members
        if (preemptor := workload.preemptor_uid) and preemptor not in self._workload_uids():
            self.list("Workload", everywhere=True)  # preempted from another ClusterQueue

    def queued_with(self, cluster_queue: str) -> None:
        """The Workloads of every namespace with a LocalQueue feeding the ClusterQueue (and
        those LocalQueues: they say which Workload waits where)."""
        feeding = {object_key(local)[0] for local in self.list("LocalQueue", everywhere=True)
                   if queues.text(queues.part(local, "spec"), "clusterQueue") == cluster_queue}
        for namespace in sorted(feeding):
            self.list("Workload", namespace)

    def _cluster_queue_of(self, workload: WorkloadRow) -> ClusterQueueRow | None:
        """The ClusterQueue a pending Workload waits in: its own LocalQueue's (the queue
        label of the job names the same one, unless it was changed since)."""
        queue = workload.queue_name
        local = (self.get("LocalQueue", workload.namespace, queue) if queues.valid_name(queue)
                 else None)
        name = LocalQueueRow.of(local).cluster_queue if local is not None else ""
        found = self.get("ClusterQueue", "", name) if queues.valid_name(name) else None
        return None if found is None else ClusterQueueRow.of(found)

    def _workload_uids(self) -> set[str]:
        return {WorkloadRow.of(o).uid for (kind, _, _), o in self._found.items()
                if kind == "Workload" and o}

    def _anything(self) -> None:
        """Nothing of Kueue's found for the ref: whether Kueue has any object at all is
        then the answer ("gpuwhy sees no Kueue objects")."""
        for kind in ("ClusterQueue", "ResourceFlavor"):
            if self.list(kind):
                return
        if not self.list("LocalQueue", everywhere=True):
            self.list("Workload", everywhere=True)


def _slim(obj: K8sObject) -> K8sObject:
    return queues.slim_workload(obj) if obj.get("kind") == "Workload" else obj


def _may_borrow(cluster_queue: ClusterQueueRow, owner: K8sObject) -> bool:
    """Could the answer count what the cohort lends: some extended resource the ref asks is
    one the ClusterQueue may borrow (no borrowingLimit, or one above 0)."""
    if not cluster_queue.cohort:
        return False
    spec = owner.get("spec") or {}
    templates = (integrations.pod_templates(owner) if integrations.job_kind(owner)
                 else [spec if owner.get("kind") == "Pod" else template_spec(owner)])
    asked = {name for template in templates for name in named_resources(template)}
    return any(quota.borrowing_limit is None or quota.borrowing_limit > Decimal(0)
               for resource in sorted(asked) if "/" in resource
               for quota in cluster_queue.quotas_for(resource))


def read_position(reader: ClusterReader, found: RefObjects,
                  objects: Iterable[K8sObject]) -> dict[str, tuple[int, int]]:
    """Where the ref's pending Workload stands in its ClusterQueue, by Kueue's visibility API:
    one request at most, and never required (not served, refused: the answer works the
    position out of the objects)."""
    objects = list(objects)
    index = QueueIndex(objects)
    version = next((str(o.get("apiVersion", "")).partition("/")[2] for o in objects), "")
    for owner in (*found.pods, *found.workloads):
        workload = index.workload_of(owner) if queues.kueue_involved(owner) else None
        if workload is None or workload.admitted_in:
            continue
        cluster_queue = index.cluster_queue_of(workload)
        if cluster_queue not in index.cluster_queues:
            return {}
        try:
            pending = reader.pending_workloads(version, cluster_queue)
        except ClusterError as exc:
            log.info("Kueue's visibility API: %s", exc)
            return {}
        return {f"{queues.text(metadata, 'namespace')}/{queues.text(metadata, 'name')}":
                (position, len(pending or []))
                for item in pending or [] if (metadata := queues.part(item, "metadata"))
                and isinstance(position := item.get("positionInClusterQueue"), int)}
    return {}
