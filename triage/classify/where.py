"""Where could a pod asking N GPUs run now (pure: no I/O)?

The question is answered by the funnel itself: a would-be pod asking N (its selector,
tolerations and scheduler as given, never guessed from a namespace's pods) is put into a
Snapshot of its own (``triage.rows.would_be``) and triaged like any pod, so the word is the
one a real pod would get. Nobody has scheduled the would-be pod, so "no scheduler has said
anything" (scheduler-unavailable) means it fits, as in a pre-flight (``gpuwhy check``). On top
of the Verdict: the nodes it fits on now, the nodes that would fit behind a taint, and when
none fits the nodes closest to having N free, with who holds them and for how long.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from scoring.nodes import UNSCHEDULABLE_TAINT, taint_text, tolerates
from scoring.rows import PodRow
from scoring.times import parse_rfc3339
from scoring.verdict import Verdict
from triage.classify.checks.queue_quota import preview_admission
from triage.classify.checks.scheduler import DEFAULT_SCHEDULER, scheduler_serves
from triage.classify.resolve import triage_rows
from triage.config import TriageConfig
from triage.refs import PodRef
from triage.rows import Rows
from triage.rows.would_be import WOULD_BE_POD, with_would_be_pod
from triage.vocabulary import FIT, Cause

MAX_NODES_NAMED = 5
MAX_HOLDERS_NAMED = 3


class WhereError(ValueError):
    """An ask gpuwhy cannot build a pod for; the message says why, in one line."""


@dataclass(frozen=True)
class WhereAsk:
    count: int
    resource: str
    namespace: str = "default"
    selector: Mapping[str, str] = field(default_factory=dict)
    tolerations: tuple[Mapping[str, Any], ...] = ()
    scheduler: str = DEFAULT_SCHEDULER

    @property
    def text(self) -> str:
        return f"{self.count} × {self.resource} on one node"


@dataclass(frozen=True)
class HeldBy:
    pod: str  # ns/name
    count: int
    running: int | None  # seconds since status.startTime; None when unknown


@dataclass(frozen=True)
class NodeChance:
    """A node the pod does not fit on now, and what would have to happen there."""

    name: str
    free: int | None  # of the resource; None where it is not counted per node (DRA, HAMi)
    why: str  # the funnel's reason for the node
    held: tuple[HeldBy, ...] = ()
    taints: tuple[str, ...] = ()  # the taints the pod would need to tolerate


@dataclass(frozen=True)
class WhereAnswer:
    ask: WhereAsk
    fits: bool  # the funnel leaves a node and a scheduler of that name runs
    verdict: Verdict  # the would-be pod's triage
    fit_nodes: tuple[str, ...] = ()
    behind_taints: tuple[NodeChance, ...] = ()  # would fit with a toleration (not cordoned)
    nearest: tuple[NodeChance, ...] = ()  # closest to N free, when nothing fits
    # On a Kueue cluster: what each of the namespace's LocalQueues would do with a Job asking
    # N (admitted in a flavor, or queued and why), one sentence each.
    queues: tuple[str, ...] = ()

    @property
    def cause(self) -> str:
        return self.verdict.cause


def parse_toleration(text: str) -> dict[str, str]:
    """``key=value:Effect``, ``key:Effect``, ``key`` or ``key=value`` as a toleration."""
    spec, _, effect = text.partition(":")
    key, equals, value = spec.partition("=")
    if not key or (effect and effect not in ("NoSchedule", "NoExecute", "PreferNoSchedule")):
        raise WhereError(f"--toleration {text}: give KEY[=VALUE][:EFFECT], EFFECT one of "
                         "NoSchedule, NoExecute, PreferNoSchedule")
    toleration = {"key": key, "operator": "Equal" if equals else "Exists"}
    if equals:
        toleration["value"] = value
    if effect:
        toleration["effect"] = effect
    return toleration


def parse_selector(text: str) -> dict[str, str]:
    """``k=v,k2=v2`` as a nodeSelector."""
    selector = {}
    for term in filter(None, (t.strip() for t in text.split(","))):
        key, equals, value = term.partition("=")
        if not equals or not key:
            raise WhereError(f"--selector {text}: give KEY=VALUE[,KEY=VALUE...]")
        selector[key] = value
    return selector


def gpu_resource_names(rows: Rows, config: TriageConfig) -> list[str]:
    """What ``where`` can ask for here: extended GPU resources nodes report, GPU DeviceClasses
    (most capacity first)."""
    totals: dict[str, int] = {}
    for node in rows.node_table:
        for resource, amount in node.capacity.items():
            if amount > 0 and config.is_gpu_resource(resource):
                totals[resource] = totals.get(resource, 0) + amount
    inventory = rows.dra_inventory(config.gpu_drivers)
    classes = [name for name in sorted(inventory.classes) if inventory.is_gpu_class(name)]
    return sorted(totals, key=lambda r: (-totals[r], r)) + classes


def where(rows: Rows, ask: WhereAsk, config: TriageConfig) -> WhereAnswer:
    """The would-be pod's triage and what it means for someone about to submit it."""
    if ask.count < 1:
        raise WhereError(f"ask for at least 1 GPU, not {ask.count}")
    inventory = rows.dra_inventory(config.gpu_drivers)
    by_class = ask.resource in inventory.classes and not config.is_gpu_resource(ask.resource)
    if not by_class and not config.is_gpu_resource(ask.resource):
        known = ", ".join(gpu_resource_names(rows, config)) or "none"
        raise WhereError(f"{ask.resource} is neither a GPU resource (triage.gpu_resources) nor "
                         f"a DeviceClass here; this cluster has: {known}")
    would_be = with_would_be_pod(rows, ask.namespace, ask.resource, ask.count, ask.scheduler,
                                 ask.selector, ask.tolerations, by_class)
    with_pod = would_be.rows
    verdict = triage_rows(with_pod, PodRef(ask.namespace, WOULD_BE_POD), config)
    fit_nodes = tuple(r.name for r in verdict.nodes if r.outcome == FIT)
    fits = verdict.cause == Cause.SCHEDULER_UNAVAILABLE and scheduler_serves(with_pod,
                                                                             ask.scheduler)
    behind = tuple(_behind_taint(with_pod, ask, name) for name in _outcome(
        verdict, Cause.TAINT_UNTOLERATED) if not by_class and not _cordoned(with_pod, name)
        and _free(with_pod, ask, name) >= ask.count)
    nearest = () if fit_nodes else _nearest(with_pod, ask, verdict, by_class)
    return WhereAnswer(ask, fits, verdict, fit_nodes, behind[:MAX_NODES_NAMED], nearest,
                       queue_quota(rows, ask))


def queue_quota(rows: Rows, ask: WhereAsk) -> tuple[str, ...]:
    """The namespace's LocalQueues and what each would do with a Job asking N now, by the
    same quota arithmetic as a queued answer; nothing where the cluster has no Kueue."""
    index = rows.queue_index
    if not index:
        return ()
    local_queues = index.names("LocalQueue", ask.namespace)
    if not local_queues:
        elsewhere = ", ".join(sorted(f"{namespace}/{name}" for namespace, name
                                     in index.by_kind.get("LocalQueue", {}))) or "none"
        return (f"Kueue: namespace {ask.namespace} has no LocalQueue, so a Job there with "
                f"kueue.x-k8s.io/queue-name would wait for one (LocalQueues: {elsewhere}).",)
    return tuple(f"Kueue, LocalQueue {ask.namespace}/{queue}: "
                 + ("admitted now: " if flavor else "queued: ") + sentence
                 for queue in local_queues
                 for flavor, sentence in [preview_admission(
                     index, "it", ask.namespace, queue, ask.resource, Decimal(ask.count))])


def _outcome(verdict: Verdict, cause: Cause) -> list[str]:
    return [r.name for r in verdict.nodes if r.outcome == cause.value]


def _free(rows: Rows, ask: WhereAsk, name: str) -> int:
    node = rows.node(name)
    return rows.free_gpus(node, ask.resource) if node is not None else 0


def _cordoned(rows: Rows, name: str) -> bool:
    """Taken out of service: no toleration is the way in, so never offered as one."""
    node = rows.node(name)
    return node is not None and any(t.get("key") == UNSCHEDULABLE_TAINT["key"]
                                    for t in node.taints)


def _behind_taint(rows: Rows, ask: WhereAsk, name: str) -> NodeChance:
    node = rows.node(name)
    taints = tuple(taint_text(t) for t in (node.taints if node is not None else ())
                   if not tolerates(list(ask.tolerations), t))
    return NodeChance(name, _free(rows, ask, name), "untolerated taint", taints=taints)


def _nearest(rows: Rows, ask: WhereAsk, verdict: Verdict,
             by_class: bool) -> tuple[NodeChance, ...]:
    """The nodes held full, closest to N free first (then longest-running holders first)."""
    reports = [r for r in verdict.nodes if r.outcome == Cause.EXHAUSTED.value]
    if by_class or ask.resource not in (verdict.resource or ""):
        return tuple(NodeChance(r.name, None, r.detail) for r in reports[:MAX_NODES_NAMED])
    chances = []
    for report in reports:
        held = sorted((_held(rows.read_at, pod, count) for pod, count in
                       rows.holders_on(report.name, ask.resource)),
                      key=lambda h: (-h[0], h[1].pod))
        chances.append((ask.count - _free(rows, ask, report.name),
                        -(held[0][0] if held else 0), report.name,
                        NodeChance(report.name, _free(rows, ask, report.name), report.detail,
                                   tuple(h for _, h in held[:MAX_HOLDERS_NAMED]))))
    chances.sort(key=lambda c: c[:3])
    return tuple(chance for *_, chance in chances[:MAX_NODES_NAMED])


def _held(read_at: str, pod: PodRow, count: int) -> tuple[float, HeldBy]:
    """(seconds running, the holding): how long a holder has held is read off its
    ``held_since`` against the time the snapshot was read."""
    seconds = _seconds_between(pod.held_since or "", read_at)
    return (seconds or 0.0), HeldBy(pod.label, count, None if seconds is None else int(seconds))


def _seconds_between(start: str, end: str) -> float | None:
    if not start or not end:
        return None
    try:
        first, last = parse_rfc3339(start), parse_rfc3339(end)
    except ValueError:
        return None
    return max(0.0, (last - first).total_seconds())
