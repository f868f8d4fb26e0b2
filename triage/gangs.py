"""Gangs: pods that run all together or not at all (scheduling.k8s.io, Kubernetes 1.35+).

In 1.36 (``scheduling.k8s.io/v1alpha2``) a Workload holds ``podGroupTemplates``; the runtime
group is a namespaced PodGroup (``spec.podGroupTemplateRef.workload``, its own
``spec.schedulingPolicy``, which is what kube-scheduler reads), and a pod joins it with
``spec.schedulingGroup.podGroupName``. A ``gang`` policy's ``minCount`` is how many of its pods
must fit at once before the scheduler binds any; a ``basic`` policy is no gang.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scoring.rows import PodCondition, PodGroupRow, PodRow
from triage.rows import Rows

# What kube-scheduler writes on the gang pods it could place when the group as a whole did not
# fit (recorded on 1.36.2): "pod group is unschedulable, waiting for minCount pods from a gang
# to be scheduled, one or more plugins asked to wait and no plugin rejected pod".
GANG_WAIT = "waiting for minCount pods from a gang"


@dataclass(frozen=True)
class Gang:
    """The pod group a pod names, with the pods that name it."""

    namespace: str
    name: str  # the PodGroup's
    pod_group: PodGroupRow | None  # None: the pod names a PodGroup that does not exist
    min_count: int  # 0 when it has no gang policy
    members: tuple[PodRow, ...]  # non-terminated pods naming the group, by name

    @property
    def workload(self) -> str:
        """The Workload the PodGroup was made from ("" when none is named)."""
        return self.pod_group.workload if self.pod_group is not None else ""

    @property
    def object_label(self) -> str:
        return f"PodGroup {self.namespace}/{self.name}"

    @property
    def label(self) -> str:
        workload = f" (Workload {self.workload})" if self.workload else ""
        return f"{self.object_label}{workload}"

    @property
    def bound(self) -> list[PodRow]:
        return [p for p in self.members if p.node]

    @property
    def complete(self) -> bool:
        return len(self.members) >= self.min_count

    @property
    def scheduled_condition(self) -> PodCondition | None:
        """The PodGroup's PodGroupScheduled condition, which kube-scheduler writes."""
        return self.pod_group.scheduled if self.pod_group is not None else None


def group_name(pod: Mapping[str, Any]) -> str:
    """The PodGroup a pod joins (spec.schedulingGroup.podGroupName), "" for none."""
    return str(((pod.get("spec") or {}).get("schedulingGroup") or {}).get("podGroupName") or "")


def gang_of(rows: Rows, pod: PodRow) -> Gang | None:
    """The gang the pod belongs to; None when it joins no pod group."""
    name = pod.scheduling_group
    if not name:
        return None
    pod_group = rows.gang_object("PodGroup", pod.namespace, name)
    return Gang(pod.namespace, name, pod_group, pod_group.min_count if pod_group else 0,
                rows.pod_group_members(pod.namespace, name))
