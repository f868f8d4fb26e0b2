"""The rows of a Snapshot: its raw objects read once, into what the checks see.

The one place that reads a pod's or an event's JSON shape for the funnel (the Snapshot's own
indexes and the DRA and Kueue objects aside). Built lazily and kept with the Snapshot
(``Snapshot.rows``): a node's pod rows when a check first asks for that node, as the
Snapshot's indexes are, so a warm triage of a 5,000-node cluster builds the rows of the few
nodes its answer describes. Per-node sums (requests, free GPUs, holders, HAMi usage) sit
beside the node table's rows, worked out once per node.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from scoring.hami import HamiNodeFit, HamiRequest, Usage, device_usage, fit_registered
from scoring.nodes import required_terms
from scoring.nodetable import NodeInfo
from scoring.objects import TERMINAL_PHASES, K8sObject, object_key
from scoring.quantity import parse_quantity
from scoring.rows import (
    ContainerExit,
    ContainerState,
    EventRow,
    OwnerRef,
    PodCondition,
    PodRow,
    PodSpecFacts,
)
from triage.pods import Holdings, effective_requests, resource_claims, resource_names
from triage.snapshot import Snapshot, event_time


def pod_row(pod: K8sObject) -> PodRow:
    """One pod's row."""
    metadata = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    phase = str(status.get("phase") or "")
    priority = spec.get("priority")
    return PodRow(
        namespace=str(metadata.get("namespace") or ""), name=str(metadata.get("name") or ""),
        uid=str(metadata.get("uid") or ""), node=str(spec.get("nodeName") or ""),
        phase=phase, terminated=phase in TERMINAL_PHASES,
        terminating=bool(metadata.get("deletionTimestamp")),
        created=str(metadata.get("creationTimestamp") or ""),
        scheduler=str(spec.get("schedulerName") or ""),
        priority=priority if isinstance(priority, int) else None,
        owners=tuple(OwnerRef(str(o.get("kind", "")), str(o.get("name", "")),
                              str(o.get("uid", "")), bool(o.get("controller")))
                     for o in metadata.get("ownerReferences") or ()),
        labels=metadata.get("labels") or {},
        requests=pod_requests(spec),
        claims=tuple(resource_claims(spec)),
        gates=_gates(spec),
        scheduling_group=str((spec.get("schedulingGroup") or {}).get("podGroupName") or ""),
        held_since=_held_since(status),
        nominated_node=str(status.get("nominatedNodeName") or ""),
        reason=str(status.get("reason") or ""), message=str(status.get("message") or ""),
        conditions=tuple(_condition(c) for c in status.get("conditions") or ()),
        containers=tuple(_container(section, c) for section in (
            "initContainerStatuses", "containerStatuses") for c in status.get(section) or ()))


def _held_since(status: Mapping[str, Any]) -> str | None:
    """status.startTime (the kubelet's); a pod written through the API with no kubelet to
    start it has none, and is held from when the scheduler bound it (PodScheduled=True)."""
    if started := status.get("startTime"):
        return str(started)
    return next((str(c["lastTransitionTime"]) for c in status.get("conditions") or ()
                 if c.get("type") == "PodScheduled" and c.get("status") == "True"
                 and c.get("lastTransitionTime")), None)


def pod_requests(spec: Mapping[str, Any]) -> Mapping[str, Decimal]:
    """``triage.pods.effective_request`` of every resource the pod names, its overhead's
    included (a resource only the overhead names is asked for too)."""
    requests = effective_requests(spec)
    for resource, value in (spec.get("overhead") or {}).items():
        if resource not in requests and value is not None:
            requests[resource] = parse_quantity(value)
    return requests


def spec_facts(spec: Mapping[str, Any]) -> PodSpecFacts:
    """The facts of a pod's spec (or a pod template's) the funnel reads."""
    terms = required_terms(spec)
    return PodSpecFacts(
        node=str(spec.get("nodeName") or ""), scheduler=str(spec.get("schedulerName") or ""),
        runtime_class=str(spec.get("runtimeClassName") or ""),
        node_selector=spec.get("nodeSelector") or {},
        affinity_terms=tuple(terms) if terms is not None else None,
        tolerations=tuple(spec.get("tolerations") or ()), gates=_gates(spec),
        claims=tuple(resource_claims(spec)), resources=frozenset(resource_names(spec)),
        requests=pod_requests(spec))


def _gates(spec: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(str(g.get("name", "")) for g in spec.get("schedulingGates") or ())


def _condition(condition: Mapping[str, Any]) -> PodCondition:
    return PodCondition(str(condition.get("type") or ""), str(condition.get("status") or ""),
                        str(condition.get("reason") or ""), str(condition.get("message") or ""),
                        str(condition.get("lastTransitionTime") or ""))


def _container(section: str, container: Mapping[str, Any]) -> ContainerState:
    state = container.get("state") or {}
    waiting = state.get("waiting") or {}
    return ContainerState(
        section=section, name=str(container.get("name") or ""),
        waiting_reason=str(waiting.get("reason") or ""),
        waiting_message=str(waiting.get("message") or ""),
        terminated=_exit(state.get("terminated")),
        last_terminated=_exit((container.get("lastState") or {}).get("terminated")),
        restarts=int(container.get("restartCount") or 0))


def _exit(terminated: Mapping[str, Any] | None) -> ContainerExit | None:
    if not terminated:
        return None
    code = terminated.get("exitCode")
    return ContainerExit(code if isinstance(code, int) else None,
                         str(terminated.get("reason") or ""))


def event_row(event: Mapping[str, Any]) -> EventRow:
    """One event's row, core/v1 and events.k8s.io/v1 alike."""
    involved = event.get("involvedObject") or event.get("regarding") or {}
    count = event.get("count") or (event.get("series") or {}).get("count") or 1
    return EventRow(
        kind=str(involved.get("kind") or ""), namespace=str(involved.get("namespace") or ""),
        name=str(involved.get("name") or ""), uid=str(involved.get("uid") or ""),
        reason=str(event.get("reason") or ""), type=str(event.get("type") or ""),
        message=str(event.get("message") or ""), note=str(event.get("note") or ""),
        component=(event.get("reportingComponent") or "") + " "
        + ((event.get("source") or {}).get("component") or ""),
        time=event_time(event), event_name=str((event.get("metadata") or {}).get("name") or ""),
        count=count if isinstance(count, int) else 1)


class Rows:
    """The rows of one Snapshot, each built the first time a check asks for it."""

    def __init__(self, snapshot: Snapshot) -> None:
        self._snapshot = snapshot
        self._by_object: dict[int, PodRow] = {}  # by the raw pod's id: each pod read once
        self._on_node: dict[str, tuple[PodRow, ...]] = {}
        self._holders: dict[tuple[str, str], tuple[tuple[PodRow, int], ...]] = {}
        self._events: dict[tuple[str, str, str], tuple[EventRow, ...]] = {}
        self._hami_usage: dict[str, Mapping[str, Usage]] = {}
        self._hami_fits: dict[tuple[str, HamiRequest], HamiNodeFit] = {}

    def _row(self, pod: K8sObject) -> PodRow:
        # The Snapshot holds its pods for its whole life, so an id stays theirs.
        row = self._by_object.get(id(pod))
        if row is None:
            row = self._by_object[id(pod)] = pod_row(pod)
        return row

    # -- nodes --------------------------------------------------------------------------

    @property
    def node_table(self) -> tuple[NodeInfo, ...]:
        return self._snapshot.node_table

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

    def requested_on(self, node_name: str) -> Mapping[str, Decimal]:
        """The node's non-terminated pods' effective requests, summed, and their count as
        "pods"."""
        return self._snapshot.requested_on(node_name)

    def free_gpus(self, node: NodeInfo, resource: str) -> int:
        return self._snapshot.free_gpus(node, resource)

    def room_on(self, node: NodeInfo) -> Mapping[str, Decimal]:
        return self._snapshot.room_on(node)

    def holdings_on(self, node_name: str) -> Holdings:
        """What each namespace's non-terminated pods on the node hold of extended resources:
        (summed request, pods)."""
        return self._snapshot.holdings_on(node_name)

    def holders_on(self, node_name: str, resource: str) -> tuple[tuple[PodRow, int], ...]:
        """Non-terminated pods on the node holding the resource, with how much each holds."""
        key = (node_name, resource)
        held = self._holders.get(key)
        if held is None:
            held = self._holders[key] = tuple(
                (row, amount) for row in self.pods_on(node_name)
                if not row.terminated and (amount := int(row.request(resource))))
        return held

    def hami_usage(self, node_name: str, without: tuple[str, str] | None = None
                   ) -> Mapping[str, Usage]:
        """HAMi's device usage on the node (by card UUID), summed once over its pods;
        ``without`` a pod (the bound pod judged with the usage before it: not kept)."""
        if without is not None:
            return device_usage(node_name, (p for p in self._snapshot.pods_on(node_name)
                                            if object_key(p) != without))
        usage = self._hami_usage.get(node_name)
        if usage is None:
            usage = self._hami_usage[node_name] = device_usage(
                node_name, self._snapshot.pods_on(node_name))
        return usage

    def hami_fit(self, node: NodeInfo, request: HamiRequest,
                 without: tuple[str, str] | None = None) -> HamiNodeFit | None:
        """HAMi's fit of a request on the node (None: not registered with HAMi), worked out
        once per snapshot: a job's replicas ask alike, and each of their triages judges
        every node of the HAMi pool."""
        registration = node.hami_registration
        if registration is None:
            return None
        if without is not None:
            return fit_registered(node.raw, registration,
                                  self.hami_usage(node.name, without), request)
        key = (node.name, request)
        fit = self._hami_fits.get(key)
        if fit is None:
            fit = self._hami_fits[key] = fit_registered(node.raw, registration,
                                                        self.hami_usage(node.name), request)
        return fit

    def runtime_handler(self, runtime_class: str) -> str | None:
        """The handler a RuntimeClass names; None when no RuntimeClass has that name."""
        for rc in self._snapshot.runtimeclasses:
            if object_key(rc)[1] == runtime_class:
                return str(rc.get("handler", ""))
        return None

    # -- events -------------------------------------------------------------------------

    def events_for(self, kind: str, namespace: str, name: str) -> tuple[EventRow, ...]:
        """Events about one object, newest first."""
        key = (kind, namespace, name)
        rows = self._events.get(key)
        if rows is None:
            rows = self._events[key] = tuple(
                event_row(e) for e in self._snapshot.events_for(kind, namespace, name))
        return rows
