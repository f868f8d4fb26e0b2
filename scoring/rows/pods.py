"""A pod as the funnel's checks read it: one row per pod, its facts parsed once.

kube-scheduler's framework hands its plugins a ``PodInfo`` beside each ``NodeInfo`` for the
same reason: the pod's requests and its owner are worked out once, not per plugin. The rows
are built from the raw objects in one place (``triage.rows``); a check that needs a fact no
row has makes the row grow, it does not go back to the object.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

_ZERO = Decimal(0)


@dataclass(frozen=True, slots=True)
class OwnerRef:
    """One metadata.ownerReferences entry."""

    kind: str
    name: str
    uid: str
    controller: bool


@dataclass(frozen=True, slots=True)
class ContainerExit:
    """A container's state.terminated / lastState.terminated."""

    exit_code: int | None
    reason: str


@dataclass(frozen=True, slots=True)
class ContainerState:
    """What the kubelet reports of one container, in status order (init containers first)."""

    section: str  # "initContainerStatuses" or "containerStatuses", as the API names them
    name: str
    waiting_reason: str
    waiting_message: str
    terminated: ContainerExit | None  # state.terminated: it has ended
    last_terminated: ContainerExit | None  # lastState.terminated: how it ended last time
    restarts: int


@dataclass(frozen=True, slots=True)
class PodCondition:
    """One status.conditions entry."""

    type: str
    status: str
    reason: str
    message: str
    last_transition: str


@dataclass(frozen=True, slots=True)
class HamiAllocated:
    """One device HAMi allocated one of the pod's containers."""

    card: str  # the card's UUID (a MIG slice's card)
    memory: int  # MiB
    cores: int


@dataclass(frozen=True, slots=True)
class HamiAllocation:
    """What HAMi allocated the pod: the node it assigned (hami.io/vgpu-node) and the devices of
    every container, init containers first, a card once per container using it."""

    node: str
    devices: tuple[HamiAllocated, ...]


@dataclass(frozen=True, slots=True)
class PodRow:
    """One pod: who it is, where it is, what it holds and asks for."""

    namespace: str
    name: str
    uid: str
    node: str  # spec.nodeName, "" while unbound
    phase: str  # status.phase, "" when unknown
    terminated: bool  # Succeeded or Failed: holds nothing
    terminating: bool  # metadata.deletionTimestamp set: holds what it holds until gone
    created: str  # metadata.creationTimestamp
    scheduler: str  # spec.schedulerName, "" when unset (the default scheduler)
    priority: int | None
    owners: tuple[OwnerRef, ...] = field(repr=False)
    labels: Mapping[str, str] = field(repr=False)
    # the effective request of every resource the pod names, as kube-scheduler counts it
    requests: Mapping[str, Decimal] = field(repr=False)
    claims: tuple[str, ...] = field(repr=False)  # spec.resourceClaims: claim or template names
    gates: tuple[str, ...] = field(repr=False)  # spec.schedulingGates' names
    scheduling_group: str = field(repr=False)  # spec.schedulingGroup.podGroupName, "" for none
    # since when it has held its node's resources: status.startTime, else when the scheduler
    # bound it (PodScheduled=True), else None (a pod written through the API, no kubelet)
    held_since: str | None = field(repr=False)
    nominated_node: str = field(repr=False)  # status.nominatedNodeName
    reason: str = field(repr=False)  # status.reason (the kubelet's admission: OutOfgpu, ...)
    message: str = field(repr=False)
    conditions: tuple[PodCondition, ...] = field(repr=False)
    containers: tuple[ContainerState, ...] = field(repr=False)
    hami: HamiAllocation | None = field(repr=False)  # None: HAMi assigned it no node

    @property
    def key(self) -> tuple[str, str]:
        return self.namespace, self.name

    @property
    def label(self) -> str:
        """namespace/name, as answers name a pod."""
        return f"{self.namespace}/{self.name}"

    def request(self, resource: str) -> Decimal:
        """The effective request of one resource (0 when the pod names none)."""
        return self.requests.get(resource, _ZERO)

    def condition(self, kind: str) -> PodCondition | None:
        return next((c for c in self.conditions if c.type == kind), None)


@dataclass(frozen=True, slots=True)
class PodSpecFacts:
    """What the funnel reads off the spec of the pod it answers for (or of a workload's pod
    template), parsed once per triage."""

    node: str
    scheduler: str
    runtime_class: str
    node_selector: Mapping[str, str]
    # required node affinity's nodeSelectorTerms, the selector's own terms (None: none)
    affinity_terms: tuple[Mapping[str, Any], ...] | None
    tolerations: tuple[Mapping[str, Any], ...]
    gates: tuple[str, ...]
    claims: tuple[str, ...]
    # every resource a container's limits or requests give a readable quantity, and the
    # effective request of each resource the pod names
    resources: frozenset[str]
    requests: Mapping[str, Decimal]
    # what a ResourceQuota's scopes and limits.* keys read
    priority_class: str = ""  # spec.priorityClassName
    active_deadline: bool = False  # spec.activeDeadlineSeconds set (a Terminating scope)
    limits: Mapping[str, Decimal] = field(default_factory=dict)  # cpu, memory, storage

    def request(self, resource: str) -> Decimal:
        return self.requests.get(resource, _ZERO)
