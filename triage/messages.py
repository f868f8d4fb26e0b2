"""kube-scheduler's FailedScheduling text, parsed into structured reasons (every era)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from scoring.events import is_hami_node_text
from scoring.rows import EventRow, PodCondition, PodRow

_HEAD = re.compile(r"^\s*0/(?P<total>\d+) nodes are available:\s*(?P<body>.*)$", re.S)
_COUNTED = re.compile(r"^(?P<count>\d+)\s+(?P<text>.+)$")
_PREEMPTION = re.compile(r"\s*(?:no new claims to deallocate,\s*)?preemption:\s*", re.S)

SCHEDULING_FAILURES = ("FailedScheduling", "FilteringFailed")
SCHEDULER_REASONS = (*SCHEDULING_FAILURES, "Scheduled", "FilteringSucceed", "BindingSucceed",
                     "BindingFailed")


@dataclass(frozen=True)
class Reason:
    count: int | None  # None for PreFilter rejections, which name no nodes
    text: str

    @property
    def kind(self) -> str:
        return classify_reason(self.text)


@dataclass(frozen=True)
class SchedulingMessage:
    raw: str
    total: int | None = None
    reasons: tuple[Reason, ...] = ()
    preemption: tuple[Reason, ...] = field(default=())


def parse_failed_scheduling(message: str) -> SchedulingMessage:
    """Split `0/N nodes are available: 3 reason, 1 reason. preemption: 0/N ...` into reasons.

    Entries are sorted as strings by the scheduler, counts may sum past N, a PreFilter
    rejection has no count, and the text may end in `..`.
    """
    head = _HEAD.match(message)
    if head is None:
        return SchedulingMessage(raw=message)
    body = head["body"]
    preemption: tuple[Reason, ...] = ()
    parts = _PREEMPTION.split(body, maxsplit=1)
    if len(parts) == 2:
        body = parts[0]
        tail = _HEAD.match(parts[1])
        preemption = _reasons(tail["body"]) if tail else _reasons(parts[1])
    return SchedulingMessage(raw=message, total=int(head["total"]), reasons=_reasons(body),
                             preemption=preemption)


def _reasons(body: str) -> tuple[Reason, ...]:
    text = body.strip().rstrip(".").strip()
    if not text:
        return ()
    reasons = []
    for entry in _split_entries(text):
        counted = _COUNTED.match(entry)
        if counted:
            reasons.append(Reason(int(counted["count"]), counted["text"].strip()))
        else:
            reasons.append(Reason(None, entry))
    return tuple(reasons)


def _split_entries(text: str) -> list[str]:
    # Commas inside `{key: value}` or `[Plugin, Plugin]` do not separate entries.
    entries: list[str] = []
    current: list[str] = []
    depth = 0
    for char in text:
        if char in "{[(":
            depth += 1
        elif char in "}])":
            depth = max(0, depth - 1)
        if char == "," and depth == 0:
            entries.append("".join(current).strip())
            current = []
        else:
            current.append(char)
    entries.append("".join(current).strip())
    merged: list[str] = []
    for entry in entries:
        # Every entry starts with its node count; a piece without one continues the entry
        # before it: 1.18-1.24's "had taint {k: v}, that the pod didn't tolerate", HAMi
        # v2.10's "1 1/4 CardNotHealth, 3/4 CardTypeMismatch".
        if merged and not _COUNTED.match(entry):
            merged[-1] += ", " + entry
        elif entry:
            merged.append(entry)
    return merged


def classify_reason(text: str) -> str:
    """A reason's kind: taint, unschedulable, selector, insufficient:<resource>, ... or other."""
    lowered = text.lower()
    if lowered.startswith("insufficient "):
        return "insufficient:" + text.split(None, 1)[1].strip()
    if "were unschedulable" in lowered:
        return "unschedulable"
    if "taint" in lowered:
        return "taint"
    if "node affinity/selector" in lowered or "didn't match node selector" in lowered or (
            "[nodeaffinity]" in lowered):
        return "selector"
    if "cannot allocate all claims" in lowered or "resourceclaim not available" in lowered:
        return "dra"
    if "too many pods" in lowered:
        return "pods"
    if "preemption" in lowered:
        return "preemption"
    if is_hami_node_text(text):
        return "extender"
    return "other"


def is_scheduler_event(event: EventRow) -> bool:
    return event.reason in SCHEDULER_REASONS or "scheduler" in event.component


# The reason the API server (not a scheduler) gives PodScheduled=False on a gated pod.
SCHEDULING_GATED = "SchedulingGated"


def latest_scheduling_failure(pod: PodRow | None, pod_events: Sequence[EventRow]) -> str | None:
    """The scheduler's newest complaint: a FailedScheduling / FilteringFailed event, else the
    PodScheduled=False condition (which does not expire) unless the API server wrote it for
    scheduling gates: no scheduler has seen a gated pod."""
    for event in pod_events:  # newest first
        if event.reason in SCHEDULING_FAILURES and event.message:
            return event.message
    condition = pod_scheduled_false(pod)
    if condition is not None and condition.reason != SCHEDULING_GATED:
        return condition.message
    return None


def pod_scheduled_false(pod: PodRow | None) -> PodCondition | None:
    """The pod's PodScheduled=False condition, when it carries a message."""
    for condition in pod.conditions if pod is not None else ():
        if condition.type == "PodScheduled" and condition.status == "False" and condition.message:
            return condition
    return None


def scheduler_spoke(pod: PodRow | None, pod_events: Sequence[EventRow]) -> bool:
    """A scheduler has looked at the pod: its event, or a PodScheduled condition other than
    the API server's SchedulingGated (which stays after the gates are removed, until a
    scheduler picks the pod up)."""
    return any(c.type == "PodScheduled" and c.reason != SCHEDULING_GATED
               for c in (pod.conditions if pod is not None else ())) or any(
        is_scheduler_event(e) for e in pod_events)
