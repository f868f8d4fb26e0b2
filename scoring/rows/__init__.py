"""The rows the checks read: a pod, an event; built once per snapshot by ``triage.rows``."""

from scoring.rows.events import EventRow
from scoring.rows.pods import (
    ContainerExit,
    ContainerState,
    OwnerRef,
    PodCondition,
    PodRow,
    PodSpecFacts,
)

__all__ = ["ContainerExit", "ContainerState", "EventRow", "OwnerRef",
           "PodCondition", "PodRow", "PodSpecFacts"]
