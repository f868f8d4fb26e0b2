"""An Event as the checks read it: whom it is about, who wrote it, what it says, and when."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class EventRow:
    """One core/v1 or events.k8s.io/v1 Event, both read alike."""

    kind: str  # the involved object's (involvedObject, or events.k8s.io's regarding)
    namespace: str
    name: str
    uid: str  # "" when the event names none
    reason: str
    type: str  # Normal / Warning
    message: str  # core/v1's message
    note: str  # events.k8s.io/v1's message
    component: str  # reportingComponent and source.component, space-separated
    time: str  # the newest of its times, cut to the second (``triage.snapshot.event_time``)
    event_name: str  # metadata.name: breaks ties in time
    count: int  # how many times it was seen (1 when the event does not say)

    @property
    def text(self) -> str:
        """What it says, whichever API wrote it."""
        return self.message or self.note
