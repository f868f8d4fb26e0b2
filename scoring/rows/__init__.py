"""The rows the checks read: pods, events, workloads, quotas and pod groups; built once per
snapshot by ``triage.rows``."""

from scoring.rows.events import EventRow
from scoring.rows.objects import PodGroupRow, QuotaRow, WorkloadRow
from scoring.rows.pods import (
    ContainerExit,
    ContainerState,
    HamiAllocated,
    HamiAllocation,
    OwnerRef,
    PodCondition,
    PodRow,
    PodSpecFacts,
)

__all__ = ["ContainerExit", "ContainerState", "EventRow", "HamiAllocated", "HamiAllocation",
           "OwnerRef", "PodCondition", "PodGroupRow", "PodRow", "PodSpecFacts", "QuotaRow",
           "WorkloadRow"]
