"""The rows of a Snapshot, built as the checks ask for them and kept with it.

Built lazily (``Snapshot.rows``): a node's pod rows when a check first asks for that node, as
the Snapshot's indexes are, so a warm triage of a 5,000-node cluster builds the rows of the
few nodes its answer describes. Per-node sums (requests, free GPUs, holders, HAMi usage) sit
beside the node table's rows, worked out once per node.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable, Mapping
from decimal import Decimal
from functools import cached_property

from scoring.dra import Inventory
from scoring.hami import HamiNodeFit, HamiRequest, Usage, device_usage, fit_registered
from scoring.nodetable import NodeColumns, NodeInfo
from scoring.objects import K8sObject, is_terminated, object_key
from scoring.rows import EventRow, PodGroupRow, PodRow, QuotaRow, WorkloadRow
from triage.pods import Holdings, names_resource
from triage.queues import QueueIndex, QueueOwner
from triage.rows.build import event_row, pod_row
from triage.rows.hami import hami_placed_on
from triage.rows.objects import pod_group_row, quota_row, workload_row
from triage.snapshot import Snapshot


class Rows:
    """The rows of one Snapshot, each built the first time a check asks for it; read them
    while the Snapshot lives (they refer to it weakly)."""

    def __init__(self, snapshot: Snapshot,
                 cached: Callable[[K8sObject], PodRow | None] | None = None,
                 cached_hami: Callable[[str], Mapping[str, Usage] | None] | None = None
                 ) -> None:
        # The Snapshot keeps its Rows (``Snapshot.rows``); a strong reference back would make
        # the pair a cycle, freed only by the garbage collector, and each answer's per-node
        # dicts with it (a young collection of them all at the end of every answer).
        self._snapshot: Snapshot = weakref.proxy(snapshot)
        # the watch cache's rows (kept current per event), for the pods it holds; a pod
        # fetched for this triage alone gets a row built here
        self._cached = cached
        # the watch cache's HAMi usage of a node (None where a fetched pod touches it)
        self._cached_hami = cached_hami
        self._by_object: dict[int, PodRow] = {}  # by the raw pod's id: each pod read once
        # the raw pod or workload each row was read from, by the row's id (the rows live as
        # long as this), for the builders of a Subject's rows (triage/rows/subjects.py)
        self._objects: dict[int, K8sObject] = {}
        self._on_node: dict[str, tuple[PodRow, ...]] = {}
        self._holders: dict[tuple[str, str], tuple[tuple[PodRow, int], ...]] = {}
        self._events: dict[tuple[str, str, str], tuple[EventRow, ...]] = {}
        self._hami_usage: dict[str, Mapping[str, Usage]] = {}
        self._hami_fits: dict[tuple[str, HamiRequest], HamiNodeFit] = {}
        self._workloads: dict[int, WorkloadRow] = {}  # by the raw object's id, as pods
        self._quotas: dict[str, tuple[QuotaRow, ...]] = {}
        self._scheduler_bound: dict[str, bool] = {}

    # The per-node sums are the Snapshot's own indexes (the watch cache keeps them current per
    # event), handed on as they are: the funnel asks them of every node. requested_on: the
    # node's non-terminated pods' effective requests summed, their count as "pods"; free_gpus:
    # allocatable less that, in whole GPUs; room_on: the same for every resource whose
    # allocatable parses; holdings_on: per namespace, (summed request, pods) of each extended
    # resource.

    @property
    def requested_on(self) -> Callable[[str], Mapping[str, Decimal]]:
        return self._snapshot.requested_on

    @property
    def requested_of(self) -> Callable[[Iterable[str]], list[Mapping[str, Decimal]]]:
        """requested_on of many nodes at once, in order (the funnel asks it of every node)."""
        return self._snapshot.requested_of

    @property
    def free_gpus(self) -> Callable[[NodeInfo, str], int]:
        return self._snapshot.free_gpus

    @property
    def room_on(self) -> Callable[[NodeInfo], Mapping[str, Decimal]]:
        return self._snapshot.room_on

    @property
    def holdings_on(self) -> Callable[[str], Holdings]:
        return self._snapshot.holdings_on

    def _row(self, pod: K8sObject) -> PodRow:
        # The Snapshot holds its pods for its whole life, so an id stays theirs.
        row = self._by_object.get(id(pod))
        if row is None:
            cached = self._cached(pod) if self._cached is not None else None
            row = self._by_object[id(pod)] = cached if cached is not None else pod_row(pod)
            self._objects[id(row)] = pod
        return row

    @property
    def snapshot(self) -> Snapshot:
        """The Snapshot the rows are read from, for the row builders of triage/rows/ alone
        (tests/test_layout.py keeps the checks off it)."""
        return self._snapshot

    def object_of(self, row: PodRow | WorkloadRow) -> K8sObject:
        """The raw pod or workload a row of these Rows was read from (for the row builders)."""
        return self._objects[id(row)]

    # -- nodes --------------------------------------------------------------------------

    @property
    def node_table(self) -> tuple[NodeInfo, ...]:
        return self._snapshot.node_table

    @property
    def node_columns(self) -> NodeColumns:
        return self._snapshot.node_columns

    def node(self, name: str) -> NodeInfo | None:
        return self._snapshot.node_info(name)

    @property
    def has_nodes(self) -> bool:
        return bool(self._snapshot.nodes)

    @property
    def read_at(self) -> str:
        """When the objects were read (RFC 3339), "" when unknown."""
        return self._snapshot.read_at

    @property
    def problems(self) -> tuple[str, ...]:
        """Reads that failed but did not stop the triage, one sentence each."""
        return self._snapshot.problems

    @property
    def cluster(self) -> str:
        return self._snapshot.cluster

    # -- the indexes of Kueue's and DRA's objects, built once per Snapshot ----------------

    @property
    def queue_index(self) -> QueueIndex:
        """Kueue's objects as rows."""
        return self._snapshot.queue_index

    @property
    def queue_positions(self) -> Mapping[str, tuple[int, int]]:
        """Each pending Workload's place in its queue, by key, as Kueue's visibility API
        told it (empty when not read)."""
        return self._snapshot.queue_positions

    @property
    def has_dra(self) -> bool:
        """The cluster has DRA objects (DeviceClasses, ResourceSlices, claims) at all."""
        return bool(self._snapshot.dra)

    def dra_inventory(self, gpu_drivers: tuple[str, ...]) -> Inventory:
        """The DRA rows, indexed once per set of GPU drivers."""
        return self._snapshot.dra_inventory(gpu_drivers)

    # -- pods ---------------------------------------------------------------------------

    def pod(self, namespace: str, name: str) -> PodRow | None:
        found = self._snapshot.pod(namespace, name)
        return self._row(found) if found is not None else None

    def row_of(self, pod: K8sObject) -> PodRow:
        """The row of a pod the Snapshot holds (a ref's own, read whole)."""
        return self._row(pod)

    def pods_on(self, node_name: str) -> tuple[PodRow, ...]:
        """Every pod bound to the node, terminated ones included, by namespace and name."""
        rows = self._on_node.get(node_name)
        if rows is None:
            rows = self._on_node[node_name] = tuple(
                self._row(p) for p in self._snapshot.pods_on(node_name))
        return rows

    def pods_in(self, namespace: str) -> list[PodRow]:
        return [self._row(p) for p in self._snapshot.pods_in(namespace)]

    # -- per node, beside the node's row ------------------------------------------------

    def holders_on(self, node_name: str, resource: str) -> tuple[tuple[PodRow, int], ...]:
        """Non-terminated pods on the node holding the resource, with how much each holds."""
        key = (node_name, resource)
        held = self._holders.get(key)
        if held is None:
            # rows only for the pods naming the resource (a look at keys): an answer describes
            # up to 50 nodes, most of whose pods ask for no GPU
            found = []
            for pod in self._snapshot.pods_on(node_name):
                if not is_terminated(pod) and names_resource(pod.get("spec") or {}, resource):
                    row = self._row(pod)
                    if amount := int(row.request(resource)):
                        found.append((row, amount))
            held = self._holders[key] = tuple(found)
        return held

    def queue_holders_on(self, node_name: str, resource: str) -> list[tuple[QueueOwner, int]]:
        """The pods on the node holding the resource, as Kueue sees them, with how much."""
        return [(QueueOwner.of(pod), amount)
                for pod, amount in self._snapshot.holders_on(node_name, resource)]

    def has_bound_pods(self, scheduler: str) -> bool:
        """Has a scheduler of that name bound a non-terminated pod (then it runs)? Worked out
        once per name, stopping at the first such pod: a watch cache's Snapshot is one
        triage's, and walking every pod of it would cost every triage of a HAMi pod (its
        scheduler is HAMi's) a pass over the cluster. (By node: a watch cache's Snapshot
        holds the bound pods in its per-node lists only.)"""
        bound = self._scheduler_bound.get(scheduler)
        if bound is None:
            bound = self._scheduler_bound[scheduler] = any(
                (pod.get("spec") or {}).get("schedulerName") == scheduler
                and not is_terminated(pod)
                for node in self.node_table for pod in self._snapshot.pods_on(node.name))
        return bound

    def hami_usage(self, node_name: str, without: tuple[str, str] | None = None
                   ) -> Mapping[str, Usage]:
        """HAMi's device usage on the node (by card UUID), summed once over its pods' rows;
        ``without`` a pod (the bound pod judged with the usage before it: not kept)."""
        if without is not None:
            return device_usage(node_name, (row for row in self._hami_placed(node_name)
                                            if row.key != without))
        usage = self._hami_usage.get(node_name)
        if usage is None:
            kept = self._cached_hami(node_name) if self._cached_hami is not None else None
            usage = self._hami_usage[node_name] = kept if kept is not None else device_usage(
                node_name, self._hami_placed(node_name))
        return usage

    def _hami_placed(self, node_name: str) -> list[PodRow]:
        """The rows of the node's pods HAMi assigned it: rows only for those (a look at one
        annotation), as ``holders_on`` builds them only for the pods naming its resource."""
        return [self._row(pod) for pod in self._snapshot.pods_on(node_name)
                if hami_placed_on(pod, node_name)]

    def hami_fit(self, node: NodeInfo, request: HamiRequest,
                 without: tuple[str, str] | None = None) -> HamiNodeFit | None:
        """HAMi's fit of a request on the node (None: not registered with HAMi), worked out
        once per snapshot: a job's replicas ask alike, and each of their triages judges
        every node of the HAMi pool."""
        registration = node.hami_registration
        if registration is None:
            return None
        if without is not None:
            return fit_registered(registration, self.hami_usage(node.name, without), request)
        key = (node.name, request)
        fit = self._hami_fits.get(key)
        if fit is None:
            fit = self._hami_fits[key] = fit_registered(registration,
                                                        self.hami_usage(node.name), request)
        return fit

    # -- what makes pods and limits them -----------------------------------------------

    def workload(self, kind: str, namespace: str, name: str) -> WorkloadRow | None:
        found = self._snapshot.workload(kind, namespace, name)
        return self.workload_of(found) if found is not None else None

    def workload_of(self, workload: K8sObject) -> WorkloadRow:
        """The row of a workload the Snapshot holds."""
        row = self._workloads.get(id(workload))
        if row is None:
            row = self._workloads[id(workload)] = workload_row(workload)
            self._objects[id(row)] = workload
        return row

    def replicasets_of(self, workload: WorkloadRow) -> list[WorkloadRow]:
        """A Deployment's ReplicaSets (none for any other kind)."""
        if workload.kind != "Deployment" or not workload.uid:
            return []
        return [self.workload_of(c) for c in self._snapshot.children_of(workload.uid)
                if c.get("kind") == "ReplicaSet"]

    def quotas_in(self, namespace: str) -> tuple[QuotaRow, ...]:
        quotas = self._quotas.get(namespace)
        if quotas is None:
            quotas = self._quotas[namespace] = tuple(quota_row(q) for q in (
                self._snapshot.namespace_objects(self._snapshot.resourcequotas, namespace)))
        return quotas

    @cached_property
    def runtime_classes(self) -> Mapping[str, str]:
        """Each RuntimeClass's name, with the handler it names (the first of a name)."""
        handlers: dict[str, str] = {}
        for rc in self._snapshot.runtimeclasses:
            handlers.setdefault(object_key(rc)[1], str(rc.get("handler", "")))
        return handlers

    def names_in(self, namespace: str) -> set[str]:
        """The names of the namespace's pods and workloads."""
        snapshot = self._snapshot
        return {object_key(o)[1] for o in (*snapshot.pods_in(namespace), *(
            snapshot.namespace_objects(snapshot.workloads, namespace)))}

    def gang_object(self, kind: str, namespace: str, name: str) -> PodGroupRow | None:
        """A scheduling.k8s.io PodGroup or Workload."""
        found = self._snapshot.gang_object(kind, namespace, name)
        return pod_group_row(found) if found is not None else None

    def pod_group_members(self, namespace: str, group: str) -> tuple[PodRow, ...]:
        """The non-terminated pods joining the PodGroup, by name."""
        return tuple(self._row(p) for p in self._snapshot.pod_group_members(namespace, group))

    # -- events -------------------------------------------------------------------------

    def events_for(self, kind: str, namespace: str, name: str) -> tuple[EventRow, ...]:
        """Events about one object, newest first."""
        key = (kind, namespace, name)
        rows = self._events.get(key)
        if rows is None:
            rows = self._events[key] = tuple(
                event_row(e) for e in self._snapshot.events_for(kind, namespace, name))
        return rows
