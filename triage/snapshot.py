"""A Snapshot: the cluster as plain Kubernetes JSON dicts, as `kubectl get -o json` prints it.

Built from a dump directory (``Snapshot.from_dir``) or from the live API
(``triage.cluster``); both give the same dicts, so both give the same Verdict.
Indexes are built once per Snapshot, so one triage never rescans every pod.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from decimal import Decimal
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scoring.dra import DraRows, Inventory, dra_rows
from scoring.nodetable import NodeColumns, NodeInfo, node_columns, node_table
from scoring.objects import K8sObject, is_terminated, object_key

# re-exported: the readers stamp and parse times through the Snapshot's module
from scoring.times import parse_rfc3339 as parse_rfc3339
from scoring.times import rfc3339 as rfc3339
from triage.dumpfile import DumpFileError, bulk_parse, read_list
from triage.pods import Holdings, KindRequests, holders, namespace_holdings, sum_requests
from triage.queues import QueueIndex
from triage.slim import NODE_PARTS, POD_PARTS, sound

if TYPE_CHECKING:
    from triage.rows import Rows

# file name -> Snapshot attribute; the dump format of `gpuwhy snapshot` and of the scenarios
DUMP_FILES: dict[str, str] = {
    "nodes.json": "nodes",
    "pods.json": "pods",
    "events.json": "events",
    "resourcequotas.json": "resourcequotas",
    "runtimeclasses.json": "runtimeclasses",
    "workloads.json": "workloads",
    # Dynamic Resource Allocation: ResourceClaims, ResourceClaimTemplates, DeviceClasses and
    # ResourceSlices (resource.k8s.io/v1) in one List, as `kubectl get` of the four prints it.
    "dra.json": "dra",
    # Gangs: Workloads and PodGroups (scheduling.k8s.io) in one List, as `kubectl get
    # workloads.scheduling.k8s.io,podgroups.scheduling.k8s.io -A -o json` prints them.
    "gangs.json": "gangs",
    # Kueue (kueue.x-k8s.io): ResourceFlavors, ClusterQueues, LocalQueues, Workloads, Cohorts
    # and WorkloadPriorityClasses in one List; absent where the cluster does not serve Kueue.
    "queues.json": "queues",
}

# Written only when they hold something (Kueue's objects: only where Kueue is served).
OPTIONAL_DUMP_LISTS = frozenset({"queues"})
_NONE = Decimal(0)

# In the order a bare name is resolved: the object a person most likely created first.
WORKLOAD_KINDS = ("Deployment", "Job", "StatefulSet", "DaemonSet", "ReplicaSet")


class SnapshotError(Exception):
    """A dump directory that cannot be read; the message names the file."""


@dataclass(frozen=True)
class Snapshot:
    nodes: list[K8sObject] = field(default_factory=list)
    pods: list[K8sObject] = field(default_factory=list)
    events: list[K8sObject] = field(default_factory=list)
    resourcequotas: list[K8sObject] = field(default_factory=list)
    runtimeclasses: list[K8sObject] = field(default_factory=list)
    workloads: list[K8sObject] = field(default_factory=list)
    dra: list[K8sObject] = field(default_factory=list)
    gangs: list[K8sObject] = field(default_factory=list)
    queues: list[K8sObject] = field(default_factory=list)
    # Kueue's visibility API, read live where served: "ns/workload" -> (position from 0, how
    # many wait) in its ClusterQueue. A dump has none: positions are then worked out.
    queue_positions: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    cluster: str = ""
    # Reads that failed but did not stop the triage (events, quotas, RuntimeClasses), one
    # sentence each; the Verdict carries them as its ``error``.
    problems: tuple[str, ...] = ()
    # When the objects were read (RFC 3339, UTC; a dump: when its newest file was written);
    # "" when unknown. Classify has no clock: it compares object times with this.
    read_at: str = ""

    # -- reading and writing dump directories ---------------------------------------

    @classmethod
    def from_dir(cls, path: str | Path, cluster: str = "", *,
                 keep_pod: Callable[[K8sObject], K8sObject] | None = None) -> Snapshot:
        """Read a dump directory, each file one item at a time with GC held off.

        ``keep_pod`` may slim each pod as it is read (``gpuwhy triage`` keeps in full only
        the pods of the namespace it answers for), so a large dump never sits in memory
        whole.
        """
        directory = Path(path)
        if not directory.is_dir():
            raise SnapshotError(f"{directory}: not a directory")
        lists: dict[str, Any] = {}
        with bulk_parse():
            for filename, attribute in DUMP_FILES.items():
                lists[attribute] = _read_list(directory / filename, _kept(attribute, keep_pod))
            written = [path.stat().st_mtime for name in DUMP_FILES
                       if (path := directory / name).is_file()]
            snapshot = cls(**lists, cluster=cluster or directory.name,
                           read_at=rfc3339(datetime.fromtimestamp(max(written), UTC))
                           if written else "")
            snapshot.index_nodes()
        return snapshot

    def index_nodes(self) -> None:
        """Build the node table, every node's summed requests and the pod and event lookups
        now (a load does, with GC held off), so the first triage of a fresh snapshot does not
        pay for them."""
        for name in (row.name for row in self.node_table):
            self.requested_on(name)
        self.pod("", "")
        self.events_for("", "", "")

    # -- indexes, built once ----------------------------------------------------------

    @cached_property
    def _pods_by_key(self) -> dict[tuple[str, str], K8sObject]:
        return {object_key(pod): pod for pod in self.pods}

    @cached_property
    def _pods_by_node(self) -> dict[str, list[K8sObject]]:
        index: dict[str, list[K8sObject]] = defaultdict(list)
        for pod in self.pods:
            node_name = pod.get("spec", {}).get("nodeName")
            if node_name:
                index[node_name].append(pod)
        for pods in index.values():
            pods.sort(key=object_key)  # the API server's order, whatever the source's
        return index

    @cached_property
    def _pods_by_namespace(self) -> dict[str, list[K8sObject]]:
        index: dict[str, list[K8sObject]] = defaultdict(list)
        for pod in self.pods:
            index[object_key(pod)[0]].append(pod)
        return index

    @cached_property
    def _requested_by_node(self) -> dict[str, dict[str, Decimal]]:
        # Filled lazily per node by ``requested_on``; only nodes a triage looks at are summed.
        return {}

    @cached_property
    def _requests_by_kind(self) -> KindRequests | None:
        return None  # each pod's requests worked out on its own, unless ``summing_by_kind``

    @cached_property
    def _free_gpus_by_node(self) -> dict[tuple[str, str], int]:
        return {}  # filled lazily by ``free_gpus``

    @cached_property
    def _room_by_node(self) -> dict[str, dict[str, Decimal]]:
        return {}  # filled lazily by ``room_on``

    @cached_property
    def _holdings_by_node(self) -> dict[str, Holdings]:
        return {}  # filled lazily by ``holdings_on``

    @cached_property
    def _holders_by_node(self) -> dict[tuple[str, str], list[tuple[K8sObject, int]]]:
        return {}  # filled lazily by ``holders_on``

    @cached_property
    def _events_by_object(self) -> dict[tuple[str, str, str], list[K8sObject]]:
        index: dict[tuple[str, str, str], list[K8sObject]] = defaultdict(list)
        for event in self.events:
            involved = event.get("involvedObject") or event.get("regarding") or {}
            key = (involved.get("kind", ""), involved.get("namespace", "") or "",
                   involved.get("name", ""))
            index[key].append(event)
        return index

    @cached_property
    def _workloads_by_key(self) -> dict[tuple[str, str, str], K8sObject]:
        return {(w.get("kind", ""), *object_key(w)): w for w in self.workloads}

    @cached_property
    def _children_by_owner_uid(self) -> dict[str, list[K8sObject]]:
        index: dict[str, list[K8sObject]] = defaultdict(list)
        for obj in (*self.workloads, *self.pods):
            for owner in obj.get("metadata", {}).get("ownerReferences", []) or []:
                index[owner.get("uid", "")].append(obj)
        return index

    @cached_property
    def _nodes_by_name(self) -> dict[str, K8sObject]:
        return {node["metadata"]["name"]: node for node in self.nodes}

    @cached_property
    def node_table(self) -> tuple[NodeInfo, ...]:
        """One row per node, by name: what the funnel reads off each node."""
        return node_table(self.nodes)

    @cached_property
    def node_columns(self) -> NodeColumns:
        """The node table's names, shapes and resources as columns (the funnel's per-node
        reads)."""
        return node_columns(self.node_table)

    @cached_property
    def _node_infos_by_name(self) -> dict[str, NodeInfo]:
        return {info.name: info for info in self.node_table}

    @cached_property
    def _dra_inventories(self) -> dict[tuple[str, ...], Inventory]:
        return {}  # filled lazily by ``dra_inventory``, one per set of GPU drivers

    @cached_property
    def rows(self) -> Rows:
        """What the checks read: the pods and events as rows, built as they are asked for."""
        from triage.rows import Rows  # the rows are built from a Snapshot: imported late

        return Rows(self)

    @cached_property
    def queue_index(self) -> QueueIndex:
        """Kueue's objects, indexed once."""
        return QueueIndex(self.queues)

    def adding(self, pods: Iterable[K8sObject], dra: Iterable[K8sObject] = ()) -> Snapshot:
        """This Snapshot with more pods and DRA objects (``where``'s would-be pod): a new one,
        its indexes built anew (its DRA list is this one's where nothing is added to it)."""
        added = list(dra)
        return replace(self, pods=[*self.pods, *pods],
                       dra=[*self.dra, *added] if added else self.dra)

    def keeping_pod_free_indexes(self, source: Snapshot) -> Snapshot:
        """This Snapshot with the indexes ``source`` built of the same nodes, DRA and Kueue
        objects (none depends on a pod): a cold read that reads more pods and answers again
        does not parse 5,000 nodes again."""
        for name in _POD_FREE_INDEXES:
            if name in source.__dict__:
                self.__dict__[name] = source.__dict__[name]  # a cached_property's own slot
        return self

    def summing_by_kind(self) -> Snapshot:
        """This Snapshot, its pods' requests worked out once per kind of pod (``sum_requests``
        with kinds): for pods a list read keeps, whose kind's parts are one object each. At
        143,602 listed pods the sums of every node took 0.21 s of CPU instead of 0.49-0.58 s."""
        self.__dict__["_requests_by_kind"] = KindRequests()  # a cached_property's own slot
        return self

    @cached_property
    def dra_rows(self) -> DraRows:
        """The DRA objects as rows, built once."""
        with bulk_parse(freeze=False):  # the rows made here all live on: no collection
            return dra_rows(self.dra)

    def dra_inventory(self, gpu_drivers: tuple[str, ...]) -> Inventory:
        """The DRA rows indexed once, selector results memoised for this Snapshot."""
        inventory = self._dra_inventories.get(gpu_drivers)
        if inventory is None:
            with bulk_parse(freeze=False):  # the indexes made here live on: no collection
                inventory = Inventory(self.dra_rows, gpu_drivers)
            self._dra_inventories[gpu_drivers] = inventory
        return inventory

    @cached_property
    def _gang_members(self) -> dict[tuple[str, str], list[K8sObject]]:
        return {}  # filled lazily by ``pod_group_members``

    @cached_property
    def _gangs_by_key(self) -> dict[tuple[str, str, str], K8sObject]:
        return {(g.get("kind", ""), *object_key(g)): g for g in self.gangs}

    # -- lookups --------------------------------------------------------------------

    def gang_object(self, kind: str, namespace: str, name: str) -> K8sObject | None:
        """A scheduling.k8s.io Workload or PodGroup."""
        return self._gangs_by_key.get((kind, namespace, name))

    def pod_group_members(self, namespace: str, group: str) -> list[K8sObject]:
        """The non-terminated pods whose spec.schedulingGroup names the PodGroup (a PodGroup
        is namespaced, and so are the pods joining it), by name; found once per snapshot:
        every pod of a gang asks."""
        key = (namespace, group)
        members = self._gang_members.get(key)
        if members is None:
            members = self._gang_members[key] = sorted(
                (pod for pod in self.pods_in(namespace)
                 if (pod.get("spec", {}).get("schedulingGroup") or {}).get("podGroupName")
                 == group and not is_terminated(pod)), key=object_key)
        return members

    def pod_groups_of(self, namespace: str, workload: str) -> list[K8sObject]:
        """The PodGroups made from a Workload's templates."""
        return [g for g in self.gangs if g.get("kind") == "PodGroup"
                and object_key(g)[0] == namespace
                and (((g.get("spec") or {}).get("podGroupTemplateRef") or {}).get("workload")
                     or {}).get("workloadName") == workload]

    def pod(self, namespace: str, name: str) -> K8sObject | None:
        return self._pods_by_key.get((namespace, name))

    def node(self, name: str) -> K8sObject | None:
        return self._nodes_by_name.get(name)

    def node_info(self, name: str) -> NodeInfo | None:
        return self._node_infos_by_name.get(name)

    def pods_on(self, node_name: str) -> list[K8sObject]:
        """Every pod bound to the node, terminated ones included (callers filter)."""
        return self._pods_by_node.get(node_name, [])

    def pods_in(self, namespace: str) -> list[K8sObject]:
        return self._pods_by_namespace.get(namespace, [])

    def requested_on(self, node_name: str) -> dict[str, Decimal]:
        """Sum of effective requests per resource over the node's non-terminated pods."""
        cached = self._requested_by_node.get(node_name)
        if cached is None:
            cached = sum_requests((p for p in self.pods_on(node_name) if not is_terminated(p)),
                                  self._requests_by_kind)
            self._requested_by_node[node_name] = cached
        return cached

    def requested_of(self, node_names: Iterable[str]) -> list[Mapping[str, Decimal]]:
        """``requested_on`` of each node, in order."""
        return [self.requested_on(name) for name in node_names]

    def free_gpus(self, node: NodeInfo, resource: str) -> int:
        """The node's allocatable of a GPU resource (whole GPUs) less what its pods request,
        worked out once per node: every triage of a GPU pod asks it of most nodes."""
        key = (node.name, resource)
        free = self._free_gpus_by_node.get(key)
        if free is None:
            used = self.requested_on(node.name).get(resource)
            free = self._free_gpus_by_node[key] = node.allocatable.get(resource, 0) - (
                0 if used is None else int(used))
        return free

    def room_on(self, node: NodeInfo) -> Mapping[str, Decimal]:
        """The node's allocatable less what its pods request, for every resource whose
        allocatable parses (exact quantities), worked out once per node: an any-node pod's
        triage asks it of every node that fits GPU-wise."""
        room = self._room_by_node.get(node.name)
        if room is None:
            requested = self.requested_on(node.name)
            room = self._room_by_node[node.name] = {
                resource: amount - requested.get(resource, _NONE)
                for resource, amount in node.allocatable_exact.items()}
        return room

    def holders_on(self, node_name: str, resource: str) -> list[tuple[K8sObject, int]]:
        """Non-terminated pods on the node holding the resource, with how much each holds."""
        key = (node_name, resource)
        cached = self._holders_by_node.get(key)
        if cached is None:
            cached = holders(self.pods_on(node_name), resource)
            self._holders_by_node[key] = cached
        return cached

    def holdings_on(self, node_name: str) -> Holdings:
        """What each namespace's non-terminated pods on the node hold of extended resources:
        (summed request, pods), worked out once per node (the capacity view asks it of
        every node)."""
        cached = self._holdings_by_node.get(node_name)
        if cached is None:
            cached = self._holdings_by_node[node_name] = namespace_holdings(
                self.pods_on(node_name))
        return cached

    def events_for(self, kind: str, namespace: str, name: str) -> list[K8sObject]:
        """Events about one object, newest first (see ``event_time``)."""
        return sorted(self._events_by_object.get((kind, namespace, name), []),
                      key=_event_order, reverse=True)

    def workload(self, kind: str, namespace: str, name: str) -> K8sObject | None:
        return self._workloads_by_key.get((kind, namespace, name))

    def children_of(self, uid: str) -> list[K8sObject]:
        """Workloads and pods whose ownerReferences name the object of this uid."""
        return self._children_by_owner_uid.get(uid, []) if uid else []

    def namespace_objects(self, objects: Iterable[K8sObject], namespace: str) -> list[K8sObject]:
        return [o for o in objects if o.get("metadata", {}).get("namespace") == namespace]


# Snapshot's cached indexes of what no pod changes (see ``keeping_pod_free_indexes``)
_POD_FREE_INDEXES = ("_nodes_by_name", "node_table", "node_columns", "_node_infos_by_name",
                     "dra_rows", "_dra_inventories", "queue_index")


class PodsNotRead(Exception):
    """A triage asked a NodesReadSnapshot for pods it does not hold: those of ``node``, or
    (None) pods other than by node. The reader reads them and the triage runs again."""

    def __init__(self, node: str | None) -> None:
        super().__init__(f"pods on {node} not read" if node else "pods not read")
        self.node = node


@dataclass(frozen=True)
class NodesReadSnapshot(Snapshot):
    """A Snapshot holding the pods of some nodes only (``read_on``), besides the ref's own:
    a cold read of a pod its selector pins to a few nodes. Asked for anything else about
    pods, it raises PodsNotRead, so an answer is never worked out from pods it lacks."""

    read_on: frozenset[str] = frozenset()
    fetched: tuple[K8sObject, ...] = ()  # the ref's own pods, read whole

    def pods_on(self, node_name: str) -> list[K8sObject]:
        if node_name not in self.read_on:
            raise PodsNotRead(node_name)
        return super().pods_on(node_name)

    def pods_in(self, namespace: str) -> list[K8sObject]:
        raise PodsNotRead(None)

    def children_of(self, uid: str) -> list[K8sObject]:
        raise PodsNotRead(None)


def _event_order(event: Mapping[str, Any]) -> tuple[str, str]:
    # Ties within a second go by name, so the list order of the source does not matter.
    return event_time(event), str(event.get("metadata", {}).get("name", ""))


def event_time(event: Mapping[str, Any]) -> str:
    """The newest of eventTime, lastTimestamp, firstTimestamp, creationTimestamp.

    Scheduler events written through events.k8s.io/v1 carry only eventTime; sorting on
    lastTimestamp alone would lose them. RFC 3339 strings in UTC compare as text once the
    fractional part is cut.
    """
    stamps = (event.get("eventTime"), event.get("lastTimestamp"),
              (event.get("series") or {}).get("lastObservedTime"),
              event.get("firstTimestamp"), event.get("metadata", {}).get("creationTimestamp"))
    return max((str(s)[:19] for s in stamps if s), default="")


def _kept(attribute: str, keep_pod: Callable[[K8sObject], K8sObject] | None,
          ) -> Callable[[K8sObject], K8sObject] | None:
    """What a dump keeps of each item: of a pod or a node, its parts of the wrong JSON type
    left out (``triage.slim.sound``), of a pod what ``keep_pod`` keeps (a slim copy has
    them left out already)."""
    if attribute == "nodes":
        return lambda node: sound(node, NODE_PARTS)
    if attribute != "pods":
        return None
    if keep_pod is None:
        return lambda pod: sound(pod, POD_PARTS)
    return lambda pod: sound(pod, POD_PARTS) if (kept := keep_pod(pod)) is pod else kept


def _read_list(path: Path, keep: Callable[[K8sObject], K8sObject] | None) -> list[K8sObject]:
    try:
        return read_list(path, keep)
    except (OSError, UnicodeDecodeError) as exc:
        raise SnapshotError(f"{path}: cannot read: {exc}") from exc
    except DumpFileError as exc:
        raise SnapshotError(f"{path}: {exc}") from exc
