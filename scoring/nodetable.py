"""The node table of a Snapshot: one row per node, what the funnel's checks read off a node.

Built once per Snapshot (lazily) and kept with it, in the API server's order (by name), so
an answer never depends on the order the nodes were listed in. Each row holds the node's
facts pre-parsed (labels, blocking taints, capacity and allocatable as integers) and its
shape: a GPU pool's nodes are alike but for their names, so the funnel judges the checks that
read only these facts once per shape. What depends on the node's pods (summed requests, HAMi
usage) stays with the Snapshot, which the watch cache keeps current per event.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from functools import cached_property
from typing import Any

from scoring.hami import Registration, parse_registration
from scoring.identity import ByIdentity
from scoring.nodes import blocking_taints, labels, node_name, not_ready
from scoring.objects import K8sObject
from scoring.quantity import QuantityError, parse_quantity, quantity_int

# The kubelet's own label: every node's differs, and it is only its name again.
HOSTNAME_LABEL = "kubernetes.io/hostname"


@dataclass(frozen=True)
class NodeInfo:
    """One node as the funnel sees it; ``raw`` is the Node object itself."""

    name: str
    raw: K8sObject = field(repr=False)
    labels: Mapping[str, str] = field(repr=False)
    # NoSchedule / NoExecute taints, a cordon counted as the unschedulable taint
    taints: tuple[dict[str, Any], ...] = field(repr=False)
    # status.capacity / status.allocatable as integers, only the resources the node lists
    # (an unparsable value counts 0, as ``scoring.nodes.status_amount`` reads it)
    capacity: Mapping[str, int] = field(repr=False)
    allocatable: Mapping[str, int] = field(repr=False)
    # capacity and allocatable (as integers and as written) as one interned string: nodes of
    # one kind give the same answer to a check reading only those and the node's pods' sums
    resources: str = field(repr=False)
    # labels but the hostname, blocking taints and ``resources`` as one interned string:
    # nodes of one shape give the same answer to a check reading only those
    shape: str = field(repr=False)

    @cached_property
    def allocatable_exact(self) -> Mapping[str, Decimal]:
        """Allocatable as exact quantities (cpu "63500m", memory "500Gi"); unparsable ones
        left out."""
        exact = {}
        for resource, value in (self.raw.get("status", {}).get("allocatable") or {}).items():
            try:
                exact[resource] = parse_quantity(value)
            except QuantityError:
                continue
        return exact

    @cached_property
    def allocatable_text(self) -> Mapping[str, str]:
        """status.allocatable as the node writes it (a value that does not parse stays)."""
        found: Mapping[str, str] = self.raw.get("status", {}).get("allocatable") or {}
        return found

    @cached_property
    def not_ready(self) -> str | None:
        """The Ready condition when it is not True (``scoring.nodes.not_ready``)."""
        return not_ready(self.raw)

    @cached_property
    def runtime_handlers(self) -> tuple[str, ...]:
        """status.runtimeHandlers' names: the container runtime's handlers."""
        return tuple(h.get("name") or "" for h in
                     self.raw.get("status", {}).get("runtimeHandlers") or ())

    @cached_property
    def hami_registration(self) -> Registration | None:
        """HAMi's device registration annotation, decoded once."""
        return parse_registration((self.raw.get("metadata") or {}).get("annotations") or {})


def _amounts(node: K8sObject, section: str) -> dict[str, int]:
    return {resource: quantity_int(value)
            for resource, value in (node.get("status", {}).get(section) or {}).items()
            if value is not None}


@dataclass(frozen=True)
class NodeResources:
    """A node's ``NodeInfo.capacity``, ``allocatable`` and ``resources``: read off its
    status.capacity and status.allocatable alone, so nodes that share those (a pool's, in
    the watch cache) can share one."""

    capacity: Mapping[str, int]
    allocatable: Mapping[str, int]
    resources: str


def node_resources(node: K8sObject) -> NodeResources:
    capacity, allocatable = _amounts(node, "capacity"), _amounts(node, "allocatable")
    # allocatable as written too: cpu "63500m" and "63" are one integer, not one room
    return NodeResources(capacity, allocatable, sys.intern(_json(
        (capacity, allocatable, node.get("status", {}).get("allocatable")))))


def shared_resources() -> Callable[[K8sObject], NodeResources]:
    """``node_resources``, worked out once for the nodes that share their capacity and
    allocatable objects (a list read keeps a pool's so: triage.cache.listpages)."""
    known: ByIdentity[NodeResources] = ByIdentity()

    def resources_of(node: K8sObject) -> NodeResources:
        status = node.get("status", {})
        parts = (status.get("capacity"), status.get("allocatable"))
        found = known.get(parts)
        return known.put(parts, node_resources(node)) if found is None else found

    return resources_of


def node_info(node: K8sObject,
              resources_of: Callable[[K8sObject], NodeResources] = node_resources) -> NodeInfo:
    node_labels, taints = labels(node), tuple(blocking_taints(node))
    found = resources_of(node)
    # a taint's timeAdded is left out (no check reads it)
    facts = ({k: v for k, v in node_labels.items() if k != HOSTNAME_LABEL},
             [{k: v for k, v in taint.items() if k != "timeAdded"} for taint in taints])
    return NodeInfo(name=node_name(node), raw=node, labels=node_labels, taints=taints,
                    capacity=found.capacity, allocatable=found.allocatable,
                    resources=found.resources, shape=sys.intern(_json(facts) + found.resources))


def _json(facts: object) -> str:
    """Interned by the caller, so the funnel's lookups by shape compare pointers."""
    return json.dumps(facts, sort_keys=True, separators=(",", ":"), default=str)


@dataclass(frozen=True)
class NodeColumns:
    """The node table's names, shapes and resources, each one tuple in the table's order: the
    funnel reads them of every node, and one pass over a tuple is far cheaper than one over
    100,000 objects scattered in memory."""

    names: tuple[str, ...]
    shapes: tuple[str, ...]
    resources: tuple[str, ...]
    position: Mapping[str, int]  # name -> place in the table


def node_columns(rows: Sequence[NodeInfo]) -> NodeColumns:
    names = tuple(row.name for row in rows)
    return NodeColumns(names, tuple(row.shape for row in rows),
                       tuple(row.resources for row in rows),
                       dict(zip(names, range(len(names)), strict=True)))


def node_table(nodes: list[K8sObject]) -> tuple[NodeInfo, ...]:
    """The nodes' rows by name. At 5,000 listed nodes, reading each pool's capacity and
    allocatable once halves the time (0.10 s -> 0.05 s of CPU)."""
    resources_of = shared_resources()
    return tuple(node_info(node, resources_of) for node in sorted(nodes, key=node_name))
