"""GPU-wise a node fits, yet the pod waits: cpu / memory / pod count (the rest of
NodeResourcesFit), a DRA claim, or something the scheduler names."""

from __future__ import annotations

from scoring.nodetable import NodeInfo
from scoring.verdict import Evidence
from triage.classify.checks.dra import binding_in_progress
from triage.classify.checks.dra_alternatives import fitting_alternatives
from triage.classify.subject import Dropped, Finding, Subject, scheduler_evidence
from triage.config import TriageConfig
from triage.gangs import GANG_WAIT
from triage.messages import (
    SCHEDULING_GATED,
    latest_scheduling_failure,
    parse_failed_scheduling,
    pod_scheduled_false,
    scheduler_spoke,
)
from triage.vocabulary import Cause

UNREADABLE = "could not be read"


def drop_other_resources(subject: Subject, node: NodeInfo) -> str | None:
    """NodeResourcesFit for cpu, memory, ephemeral storage and the pod count."""
    room = subject.rows.room_on(node)  # unparsable allocatable values: not checked
    short = [f"Insufficient {resource}" for resource, asked in subject.other_requests
             if resource in room and room[resource] < asked]
    left = room.get("pods")
    if left is None and (pods := node.allocatable_text.get("pods")) is not None:
        # Only a hand-edited dump has one: the pod count is unknown, so the node cannot be
        # shown to have a slot (the scheduler reads a pod count it lacks as none).
        short.append(f"status.allocatable.pods {pods!r} {UNREADABLE}")
    elif left is not None and left < 1:
        short.append("Too many pods")
    return ", ".join(short) if short else None


def explain_other_resources(subject: Subject, dropped: Dropped) -> Finding:
    per_node = "; ".join(f"{n.name}: {why}" for n, why in dropped[:4])
    advice = []
    if any("Insufficient" in why or "Too many pods" in why for _, why in dropped):
        advice.append("Lower the pod's cpu / memory requests or free those nodes.")
    if unreadable := [n.name for n, why in dropped if UNREADABLE in why]:
        advice.append(f"Fix status.allocatable.pods on {', '.join(unreadable[:4])}: it is not "
                      "a quantity, so gpuwhy cannot tell whether a pod slot is left.")
    return Finding(Cause.OTHER_CONSTRAINT,
                   f"GPU-wise a node fits, but {per_node}. " + " ".join(advice),
                   [Evidence(f"Node/{n.name}", "status.allocatable − requests", why)
                    for n, why in dropped[:5]] + scheduler_evidence(subject))


def leftover_other_constraint(subject: Subject, fit: list[NodeInfo]) -> Finding | None:
    """Nodes fit GPU-wise, yet the pod waits: it is gated, or the scheduler names something."""
    fitting = ", ".join(n.name for n in fit[:3]) + fitting_alternatives(subject)
    gates = list(subject.facts.gates)
    if gates:
        return _gated(subject, fitting, gates)
    if (bound := binding_in_progress(subject)) is not None:
        return bound
    message = latest_scheduling_failure(subject.row, subject.events)
    if message is None and not scheduler_spoke(subject.row, subject.events):
        return None
    if message is None:
        action = (f"GPU-wise {fitting} fit and the scheduler has seen the pod, but it has not "
                  "bound it yet. Look at the pod's events for what it waits on.")
    elif subject.gang is not None and GANG_WAIT in message:
        action = (f"GPU-wise the whole gang fits now ({subject.gang.label}, minCount "
                  f"{subject.gang.min_count}; {fitting}): the scheduler gave the group up when "
                  "it did not fit, and tries it again as the cluster changes. If it stays "
                  "Pending, look at the other gang pods' events for what else stops them.")
    elif (others := _other_reasons(message, subject.config, _judged(subject))) is None:
        scheduler = subject.facts.scheduler or "default-scheduler"
        action = (f"GPU-wise {fitting} fit now; the scheduler's last word is only about GPUs, "
                  "taints or selectors, so the cluster has changed since and it will retry by "
                  f"itself. If the pod stays Pending, check that {scheduler} is running.")
    else:
        action = (f"GPU-wise {fitting} fit, but the scheduler rejects the pod for something "
                  f"else: {others}. Fix what it names (cpu, memory, pod affinity, volumes, "
                  "topology spread).")
    unjudged = subject.dra.unmodelled if subject.dra is not None else []
    if unjudged:
        action += (" gpuwhy does not judge " + ", ".join(dict.fromkeys(w for _, _, w in unjudged))
                   + ", so the scheduler's word on the claims stands.")
    return Finding(Cause.OTHER_CONSTRAINT, action, scheduler_evidence(subject) + [
        Evidence(obj, where, f"{what}: not judged by gpuwhy") for obj, where, what in unjudged[:3]])


def _gated(subject: Subject, fitting: str, gates: list[str]) -> Finding:
    """spec.schedulingGates: the scheduler does not look at the pod until they are removed
    (the API server's SchedulingGated condition says so too, but the spec decides). Kueue's
    gates are answered before the funnel (``queued``)."""
    names = ", ".join(gates)
    remover = (f"Whoever added {'it' if len(gates) == 1 else 'them'} removes "
               f"{'it' if len(gates) == 1 else 'them'} when ready: check that controller "
               "is running, or remove the gate if nothing manages it.")
    evidence = [Evidence(f"Pod {subject.label}", "spec.schedulingGates", names)]
    condition = pod_scheduled_false(subject.row)
    if condition is not None and condition.reason == SCHEDULING_GATED:
        evidence.append(Evidence(f"Pod {subject.label}", "PodScheduled condition (API server)",
                                 f"{SCHEDULING_GATED}: {condition.message}"))
    return Finding(Cause.OTHER_CONSTRAINT,
                   f"GPU-wise {fitting} fit, but the pod has scheduling "
                   f"{'gate' if len(gates) == 1 else 'gates'} {names}: no scheduler looks at "
                   f"it until {'it is' if len(gates) == 1 else 'they are'} removed. {remover}",
                   evidence)


_FUNNEL_REASONS = ("taint", "unschedulable", "selector", "extender", "preemption")


def _judged(subject: Subject) -> tuple[str, ...]:
    """The scheduler's reason kinds the funnel has checked itself: DRA's ("cannot allocate all
    claims") too, unless the claims ask for something gpuwhy does not judge."""
    if subject.dra is not None and not subject.dra.unmodelled:
        return (*_FUNNEL_REASONS, "dra")
    return _FUNNEL_REASONS


def _other_reasons(message: str, config: TriageConfig,
                   judged: tuple[str, ...] = _FUNNEL_REASONS) -> str | None:
    """The scheduler's reasons that are not about GPUs, taints or selectors (which the funnel
    has checked itself); the whole message when it cannot be parsed; None when none is left."""
    parsed = parse_failed_scheduling(message)
    if not parsed.reasons:
        return message
    others = [r for r in parsed.reasons if r.kind not in judged
              and not (r.kind.startswith("insufficient:")
                       and config.is_gpu_related(r.kind.partition(":")[2]))]
    if not others:
        return None
    return ", ".join(f"{r.count} {r.text}" if r.count is not None else r.text for r in others)
