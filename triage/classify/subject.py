"""What the funnel's checks look at and what they return; the shapes every check shares.

A check is a PodCheck (looks at the pod alone: a Finding or None) or a NodeFilter (drops
nodes, one at a time, with a reason; the cause holds when no node is left). A family of
checks lives in one module of ``triage.classify.checks``; ``triage.classify.pipeline``
puts them in the vocabulary's order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from enum import Enum
from functools import cached_property
from itertools import islice
from typing import Any

from scoring.dra import ClaimSet, Inventory
from scoring.gang import GangPlacement
from scoring.hami import HamiNodeFit, HamiRequest
from scoring.nodetable import HOSTNAME_LABEL, NodeInfo
from scoring.rows import EventRow, PodRow, PodSpecFacts, WorkloadRow
from scoring.verdict import Evidence, NodeOutcomes
from triage.config import TriageConfig
from triage.gangs import Gang
from triage.messages import latest_scheduling_failure
from triage.queues import QueueIndex, QueueOwner
from triage.refs import PodRef
from triage.rows import Rows, spec_facts
from triage.vocabulary import Cause


class When(Enum):
    ABSENT = "pod object absent"
    PRESENT = "pod exists"
    UNBOUND = "spec.nodeName empty"
    BOUND = "spec.nodeName set"


@dataclass
class Finding:
    cause: Cause
    action: str
    evidence: list[Evidence] = field(default_factory=list)


@dataclass
class Subject:
    """What one run of the pipeline looks at: a pod, or a workload whose pod does not exist."""

    rows: Rows  # the Snapshot's rows and indexes: all a check reads of the cluster
    config: TriageConfig
    ref: PodRef
    # the pod's row (None when it does not exist), its spec's (or its template's) facts
    row: PodRow | None = None
    workload_row: WorkloadRow | None = None
    facts: PodSpecFacts = field(default_factory=lambda: spec_facts({}))
    events: Sequence[EventRow] = ()  # about this pod, newest first
    gpu: dict[str, int] = field(default_factory=dict)
    hami: HamiRequest | None = None
    # Dynamic Resource Allocation: the pod's claims resolved, None when it has none
    dra: ClaimSet | None = None
    # The pod group (scheduling.k8s.io) the pod joins, None when it joins none
    gang: Gang | None = None
    gang_placement: GangPlacement | None = None  # the gang's view of the nodes, computed once
    # The pod (or, absent, the workload) as Kueue sees it: None when there is neither
    queue_owner: QueueOwner | None = None
    # Node outcomes, filled as node filters run: name -> report
    reports: NodeOutcomes = field(default_factory=NodeOutcomes.none)
    # per node of the node table, in its order: the summed requests the funnel read, for the
    # nodes its sums-reading filters judged (None for the others; empty: none read)
    node_sums: Sequence[Mapping[str, Decimal] | None] = ()
    hami_fits: dict[str, HamiNodeFit | None] = field(default_factory=dict)  # computed once
    # The checks this subject runs through, in order (set by the pipeline).
    checks: Sequence[Check] = ()
    # drop_selector's answers when labels alone decide, by the node's values of those keys
    selector_drops: dict[tuple[str | None, ...], str | None] = field(default_factory=dict)

    @property
    def queue_index(self) -> QueueIndex:
        """Kueue's objects as rows, indexed once per Snapshot."""
        return self.rows.queue_index

    @property
    def queue_positions(self) -> Mapping[str, tuple[int, int]]:
        """Each pending Workload's place in its queue, by key, as Kueue's visibility API
        told it (empty when not read)."""
        return self.rows.queue_positions

    @property
    def node_table(self) -> tuple[NodeInfo, ...]:
        return self.rows.node_table

    def holders_on(self, node_name: str, resource: str) -> list[tuple[QueueOwner, int]]:
        """The pods on the node holding the resource, as Kueue sees them, with how much."""
        return self.rows.queue_holders_on(node_name, resource)

    def request(self, resource: str) -> Decimal:
        """The pod's effective request of a resource."""
        return self.facts.request(resource)

    @cached_property
    def other_requests(self) -> tuple[tuple[str, Decimal], ...]:
        """The pod's non-zero effective requests of cpu, memory and ephemeral storage (the
        rest of NodeResourcesFit), in that order."""
        return tuple((resource, asked) for resource in ("cpu", "memory", "ephemeral-storage")
                     if (asked := self.request(resource)))

    @property
    def dra_inventory(self) -> Inventory:
        """The DRA objects, indexed once per Snapshot."""
        return self.rows.dra_inventory(self.config.gpu_drivers)

    @cached_property
    def extended_dra(self) -> bool:
        """Some GPU limit of the pod is one a DeviceClass serves through DRA on some nodes:
        the device-plugin filters must leave those (node, resource) pairs to the DRA ones."""
        return self.dra is not None and bool(self.dra.extended)

    @property
    def affinity_terms(self) -> tuple[Mapping[str, Any], ...] | None:
        """Required node affinity's nodeSelectorTerms (None when there is none)."""
        return self.facts.affinity_terms

    @cached_property
    def selector_keys(self) -> tuple[str, ...] | None:
        """The node labels nodeSelector and required node affinity read, when labels alone
        decide (None when a term also matches fields, such as metadata.name)."""
        keys = list(self.facts.node_selector)
        for term in self.affinity_terms or []:
            if not isinstance(term, dict) or term.get("matchFields"):
                return None
            for expression in term.get("matchExpressions") or []:
                if not isinstance(expression, dict):
                    return None
                keys.append(str(expression.get("key", "")))
        return tuple(dict.fromkeys(keys))

    @cached_property
    def selects_nodes(self) -> bool:
        """A nodeSelector or required node affinity narrows the nodes at all."""
        return bool(self.facts.node_selector) or self.affinity_terms is not None

    @cached_property
    def selection_names_nodes(self) -> bool:
        """The nodeSelector or required node affinity reads a node's name (the hostname
        label, matchFields metadata.name): its answer differs between nodes of one shape."""
        if HOSTNAME_LABEL in self.facts.node_selector:
            return True
        return any(term.get("matchFields") or any(
            expression.get("key") == HOSTNAME_LABEL
            for expression in term.get("matchExpressions") or ())
            for term in self.affinity_terms or ())

    @property
    def label(self) -> str:
        if self.row is not None:
            return self.row.label
        if self.workload_row is not None:
            return self.workload_row.label
        return str(self.ref)

    @property
    def state(self) -> set[When]:
        if self.row is None:
            return {When.ABSENT}
        if self.facts.node:
            return {When.PRESENT, When.BOUND}
        return {When.PRESENT, When.UNBOUND}


PodCheckFn = Callable[[Subject], Finding | None]
NodeFilterFn = Callable[[Subject, NodeInfo], str | None]
Dropped = list[tuple[NodeInfo, str]]  # the nodes a filter dropped, with why
ExplainFn = Callable[[Subject, Dropped], Finding]
LeftoverFn = Callable[[Subject, list[NodeInfo]], Finding | None]


@dataclass(frozen=True)
class PodCheck:
    cause: Cause
    when: When
    check: PodCheckFn
    # Whether the check can hold for this subject at all (None: always). One that cannot is
    # skipped before the node reports it would read are brought up to date.
    applies: Callable[[Subject], bool] | None = None


@dataclass(frozen=True)
class NodeFilter:
    """Drops nodes; holds when no node is left. ``leftover`` may still hold with nodes left.

    Several filters may share a cause (e.g. an extended-resource filter and a Dynamic
    Resource Allocation one): each drops nodes in turn, and the one that leaves no node
    explains the answer.
    """

    cause: Cause
    when: When
    drop: NodeFilterFn
    explain: ExplainFn
    leftover: LeftoverFn | None = None
    # The word a dropped node gets, when it is not the step's cause (DRA's device-unfit).
    outcome: Cause | None = None
    # A HAMi device code summary ("2/4 CardInsufficientMemory") is the node's outcome itself.
    outcome_is_reason: bool = False
    # Whether the filter can drop any node for this subject at all (None: always). A filter
    # that cannot is not asked per node: the funnel visits every node, so it pays to skip it.
    applies: Callable[[Subject], bool] | None = None
    # Whether, for this subject, the filter reads only the node's shape (NodeInfo.shape):
    # then the funnel asks it once per shape, not per node (None: never).
    by_shape: Callable[[Subject], bool] | None = None
    # Whether, for this subject, it reads only the node's capacity and allocatable
    # (NodeInfo.resources) and its summed requests (the one mapping Snapshot.requested_on
    # gives): then it is asked once per resources and mapping.
    by_sums: Callable[[Subject], bool] | None = None


Check = PodCheck | NodeFilter


def asks_gpus(subject: Subject) -> bool:
    """The pod asks for a GPU as an extended resource (the extended-resource filters apply)."""
    return bool(subject.gpu)


def asks_hami(subject: Subject) -> bool:
    return subject.hami is not None


def asks_dra(subject: Subject) -> bool:
    return subject.dra is not None


def in_gang(subject: Subject) -> bool:
    return subject.gang is not None


def selects_nodes(subject: Subject) -> bool:
    return subject.selects_nodes


def always(subject: Subject) -> bool:
    return True


def selection_ignores_names(subject: Subject) -> bool:
    return not subject.selection_names_nodes


def device_plugin_only(subject: Subject) -> bool:
    """No GPU resource of the pod is one DRA may serve on some nodes (then the
    extended-resource filters read only the node's capacity and allocatable)."""
    return not subject.extended_dra


def primary(subject: Subject) -> str:
    """The GPU resource the answer speaks of: the pod's first, else the usual one."""
    return next(iter(subject.gpu), "nvidia.com/gpu")


def scheduler_evidence(subject: Subject) -> list[Evidence]:
    message = latest_scheduling_failure(subject.row, subject.events)
    if message is None:
        return []
    return [Evidence(f"Pod {subject.label}", "scheduler message", message)]


def first_four(texts: Iterable[str], total: int) -> str:
    """The first four of ``total`` texts, joined, and how many more there are."""
    return ", ".join(islice(texts, 4)) + (f" +{total - 4} more" if total > 4 else "")


def num(value: Decimal) -> str:
    return str(value.normalize()) if value != value.to_integral() else str(int(value))


def capital(text: str) -> str:
    return text[:1].upper() + text[1:]
