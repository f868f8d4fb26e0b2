"""A pod's, a pod spec's and an event's row, from the object's JSON."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from scoring.hami.formats import pod_allocation
from scoring.nodes import required_terms
from scoring.objects import TERMINAL_PHASES, K8sObject
from scoring.quantity import QuantityError, parse_quantity
from scoring.rows import (
    ContainerExit,
    ContainerState,
    EventRow,
    OwnerRef,
    PodCondition,
    PodRow,
    PodSpecFacts,
)
from triage.pods import effective_requests, resource_claims, resource_names
from triage.snapshot import event_time


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
        owners=owner_refs(pod),
        labels=metadata.get("labels") or {},
        requests=pod_requests(spec),
        claims=tuple(resource_claims(spec)),
        gates=_gates(spec),
        scheduling_group=str((spec.get("schedulingGroup") or {}).get("podGroupName") or ""),
        held_since=_held_since(status),
        nominated_node=str(status.get("nominatedNodeName") or ""),
        reason=str(status.get("reason") or ""), message=str(status.get("message") or ""),
        conditions=tuple(pod_condition(c) for c in status.get("conditions") or ()),
        containers=tuple(_container(section, c) for section in (
            "initContainerStatuses", "containerStatuses") for c in status.get(section) or ()),
        hami=pod_allocation(metadata.get("annotations") or {}))


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
        requests=pod_requests(spec), priority_class=str(spec.get("priorityClassName") or ""),
        active_deadline=spec.get("activeDeadlineSeconds") is not None,
        limits={resource: _limit(spec, resource) for resource in QUOTA_LIMITED})


# The resources a ResourceQuota's limits.* keys bound
QUOTA_LIMITED = ("cpu", "memory", "ephemeral-storage")


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


def _gates(spec: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(str(g.get("name", "")) for g in spec.get("schedulingGates") or ())


def owner_refs(obj: Mapping[str, Any]) -> tuple[OwnerRef, ...]:
    return tuple(OwnerRef(str(o.get("kind", "")), str(o.get("name", "")), str(o.get("uid", "")),
                          bool(o.get("controller")))
                 for o in (obj.get("metadata") or {}).get("ownerReferences") or ())


def pod_condition(condition: Mapping[str, Any]) -> PodCondition:
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


