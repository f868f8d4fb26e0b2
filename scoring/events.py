"""HAMi's scheduler events, of every era, and kube-scheduler's messages that quote HAMi.

hami-scheduler writes ``FilteringFailed`` / ``FilteringSucceed`` / ``BindingFailed`` /
``BindingSucceed`` events about the pod; kube-scheduler's ``FailedScheduling`` then carries
the extender's per-node text (``node unregistered``, ``node not fit pod``, ``NodeUnfitPod``,
or since v2.10 the full reason string). Parsers return None for text they do not know.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from scoring.hami import ALL_CODES, NODE_UNREGISTERED
from scoring.rows import EventRow

FILTERING_FAILED = "FilteringFailed"
FILTERING_SUCCEED = "FilteringSucceed"
BINDING_FAILED = "BindingFailed"
BINDING_SUCCEED = "BindingSucceed"
HAMI_EVENT_REASONS = (FILTERING_FAILED, FILTERING_SUCCEED, BINDING_FAILED, BINDING_SUCCEED)

# What kube-scheduler shows per node for a HAMi rejection, by HAMi era.
NODE_NOT_FIT_POD = "node not fit pod"  # v2.5
NODE_UNFIT_POD = "NodeUnfitPod"  # v2.6–2.9
HAMI_NODE_TEXTS = (NODE_UNREGISTERED, NODE_NOT_FIT_POD, NODE_UNFIT_POD)

_SUCCEED = re.compile(r"^find fit node\((?P<chosen>[^)]*)\), (?P<not_fit>\d+) nodes not fit, "
                      r"(?P<fit>\d+) nodes fit\((?P<scores>[^)]*)\)$")
_NO_NODE_OLD = "no available node, all node scores do not meet"
_NO_NODE = re.compile(r"^no available node, (?P<nodes>\d+) nodes do not meet$")
_CODE_ON_NODES = re.compile(r"^(?P<count>\d+) nodes (?P<code>\w+)\((?P<nodes>[^)]*)\)$")
_LOCKED = re.compile(r"node (?P<node>\S+) has been locked within (?P<window>.+)$")
_BOUND = re.compile(r"^Successfully binding node \[(?P<nodes>[^\]]*)\] to (?P<pod>\S+)$")
_DEVICE_ENTRY = re.compile(r"^(?P<cards>\d+)/(?P<total>\d+) (?P<code>\w+)$")


@dataclass(frozen=True)
class FilteringSucceeded:
    """v2.6+: ``find fit node(n3), 7 nodes not fit, 2 nodes fit(n4:12.50,n3:18.75)``."""

    chosen: str
    not_fit: int
    fit: int
    scores: dict[str, float]  # in the event's order: sorted by policy, chosen node last


@dataclass(frozen=True)
class NoNodeFits:
    """The summary ``FilteringFailed``; ``nodes`` is None in the v2.4–2.5 wording."""

    nodes: int | None


@dataclass(frozen=True)
class CodeOnNodes:
    """v2.7+, one per code when nothing fits: ``3 nodes CardInsufficientMemory(n1,n2,n5)``."""

    code: str
    count: int
    nodes: list[str]


@dataclass(frozen=True)
class BindingFailure:
    message: str
    node: str | None = None  # the node HAMi could not lock
    lock_window: str | None = None  # "5m0s" (or "300.000000 seconds" in old releases)

    @property
    def locked(self) -> bool:
        return self.lock_window is not None


@dataclass(frozen=True)
class BindingSuccess:
    nodes: list[str]
    pod: str  # "ns/name"


@dataclass(frozen=True)
class HamiEvents:
    """The HAMi events about one pod, newest of each kind."""

    newest: str | None = None  # reason of the newest HAMi event
    succeeded: FilteringSucceeded | None = None
    no_fit: NoNodeFits | None = None
    codes: list[CodeOnNodes] = field(default_factory=list)  # newest per code
    binding_failure: BindingFailure | None = None
    binding_success: BindingSuccess | None = None


def parse_filtering_succeeded(message: str) -> FilteringSucceeded | None:
    match = _SUCCEED.match(message.strip())
    if match is None:
        return None
    scores: dict[str, float] = {}
    for entry in filter(None, match["scores"].split(",")):
        node, _, score = entry.rpartition(":")
        try:
            scores[node] = float(score)
        except ValueError:
            return None
    return FilteringSucceeded(chosen=match["chosen"], not_fit=int(match["not_fit"]),
                              fit=int(match["fit"]), scores=scores)


def parse_filtering_failed(message: str) -> NoNodeFits | CodeOnNodes | None:
    text = message.strip()
    if text == _NO_NODE_OLD:
        return NoNodeFits(nodes=None)
    summary = _NO_NODE.match(text)
    if summary is not None:
        return NoNodeFits(nodes=int(summary["nodes"]))
    per_code = _CODE_ON_NODES.match(text)
    if per_code is not None:
        return CodeOnNodes(code=per_code["code"], count=int(per_code["count"]),
                           nodes=[n for n in per_code["nodes"].split(",") if n])
    return None


def parse_binding_failed(message: str) -> BindingFailure:
    text = message.strip()
    locked = _LOCKED.search(text)
    if locked is None:
        return BindingFailure(message=text)
    return BindingFailure(message=text, node=locked["node"], lock_window=locked["window"])


def parse_binding_succeeded(message: str) -> BindingSuccess | None:
    match = _BOUND.match(message.strip())
    if match is None:
        return None
    return BindingSuccess(nodes=match["nodes"].split(), pod=match["pod"])


def parse_node_reason(reason: str) -> list[tuple[int, int, str]]:
    """HAMi's node reason ``1/4 CardNotHealth, 3/4 CardTypeMismatch`` as (cards, of, code);
    the bare ``NodeInsufficientDevice`` gives (0, 0, code). Empty for any other text."""
    text = reason.strip()
    if text in ALL_CODES:
        return [(0, 0, text)]
    entries = [_DEVICE_ENTRY.match(part.strip()) for part in text.split(",")]
    if not text or any(e is None or e["code"] not in ALL_CODES for e in entries):
        return []
    return [(int(e["cards"]), int(e["total"]), e["code"]) for e in entries if e is not None]


def is_hami_node_text(reason: str) -> bool:
    return reason.strip() in HAMI_NODE_TEXTS or bool(parse_node_reason(reason))


def read_hami_events(events: Iterable[EventRow]) -> HamiEvents:
    """The HAMi events about one pod; ``events`` newest first (``Snapshot.events_for``)."""
    newest: str | None = None
    succeeded: FilteringSucceeded | None = None
    no_fit: NoNodeFits | None = None
    codes: dict[str, CodeOnNodes] = {}
    binding_failure: BindingFailure | None = None
    binding_success: BindingSuccess | None = None
    for event in events:
        reason = event.reason
        if reason not in HAMI_EVENT_REASONS:
            continue
        newest = newest or reason
        message = event.text
        if reason == FILTERING_SUCCEED:
            succeeded = succeeded or parse_filtering_succeeded(message)
        elif reason == FILTERING_FAILED:
            parsed = parse_filtering_failed(message)
            if isinstance(parsed, NoNodeFits):
                no_fit = no_fit or parsed
            elif isinstance(parsed, CodeOnNodes):
                codes.setdefault(parsed.code, parsed)
        elif reason == BINDING_FAILED:
            binding_failure = binding_failure or parse_binding_failed(message)
        else:
            binding_success = binding_success or parse_binding_succeeded(message)
    return HamiEvents(newest=newest, succeeded=succeeded, no_fit=no_fit,
                      codes=list(codes.values()), binding_failure=binding_failure,
                      binding_success=binding_success)


def scheduler_scores(events: Iterable[EventRow]) -> dict[str, float] | None:
    """The node scores of the newest ``FilteringSucceed`` (the scheduler's own), or None.

    A newer ``FilteringFailed`` makes them stale: the cluster has changed since.
    """
    hami = read_hami_events(events)
    if hami.succeeded is None or hami.newest == FILTERING_FAILED:
        return None
    return dict(hami.succeeded.scores)

