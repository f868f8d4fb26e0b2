"""The other objects the checks read, as rows: workloads, ResourceQuotas and pod groups."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from scoring.rows.pods import OwnerRef, PodCondition, PodSpecFacts


@dataclass(frozen=True, slots=True)
class WorkloadRow:
    """A Deployment, Job, StatefulSet, DaemonSet or ReplicaSet: what makes pods."""

    kind: str
    namespace: str
    name: str
    uid: str
    label: str  # "Job ml/finetune", as answers name it
    wanted: int  # how many live pods its controller is trying to have
    suspended: bool  # spec.suspend
    # status.conditions' ReplicaFailure=True messages: the pods it could not create
    replica_failures: tuple[str, ...] = field(repr=False)
    template: PodSpecFacts = field(repr=False)  # its pod template's


@dataclass(frozen=True, slots=True)
class QuotaRow:
    """A ResourceQuota, its hard limits and usage as written."""

    namespace: str
    name: str
    hard: Mapping[str, object] = field(repr=False)  # status.hard, else spec.hard
    used: Mapping[str, object] = field(repr=False)  # status.used
    # spec.scopes and the scopeSelector's scope names other than PriorityClass
    scopes: tuple[str, ...] = field(repr=False)
    # the scopeSelector's PriorityClass expressions: (operator, values)
    priority_classes: tuple[tuple[str, tuple[str, ...]], ...] = field(repr=False)


@dataclass(frozen=True, slots=True)
class PodGroupRow:
    """A scheduling.k8s.io PodGroup (a gang's runtime group) or the Workload it was made
    from."""

    kind: str  # "PodGroup" or "Workload"
    namespace: str
    name: str
    owners: tuple[OwnerRef, ...] = field(repr=False)
    min_count: int = field(repr=False)  # the gang policy's; 0 for a basic policy or none
    workload: str = field(repr=False)  # spec.podGroupTemplateRef.workload.workloadName
    # status.conditions' PodGroupScheduled, which kube-scheduler writes
    scheduled: PodCondition | None = field(repr=False)
