"""Assembling the Verdict: the finding, the node reports worst first with their devices and
scores, the node summary, and the scheduler's own words."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from decimal import Decimal
from itertools import compress, islice, repeat
from operator import is_not, methodcaller, not_
from typing import cast

from scoring.events import scheduler_scores
from scoring.hami import pick_first
from scoring.nodetable import NodeInfo
from scoring.summary import proposal_summary
from scoring.verdict import Device, Evidence, Holding, NodeReport, NodeReports, ReportTable, Verdict
from scoring.whole import gfd_devices, whole_gpu_score
from triage.classify.checks.gang import gang_summary
from triage.classify.checks.gpu import RULED_OUT
from triage.classify.checks.hami import hami_fit
from triage.classify.checks.queue_flavor import flavor_note
from triage.classify.subject import Finding, Subject, primary
from triage.messages import latest_scheduling_failure, parse_failed_scheduling
from triage.vocabulary import CAUSES, FIT, NODE_UNREGISTERED, Cause

MAX_DEVICE_NODES = 50  # more than one Slack reply can show


def assemble(subject: Subject, finding: Finding, kind: str) -> Verdict:
    finding = flavor_note(subject, finding)
    pod = subject.row
    message = latest_scheduling_failure(pod, subject.events) if pod is not None else None
    resource = primary(subject) if subject.gpu else None
    policy = _policy(subject)
    reports = _node_reports(subject, policy)
    scheduler = scheduler_scores(subject.events) if pod is not None else None
    if scheduler:
        table = reports.table
        named = [(position, score) for name, score in scheduler.items()
                 if (position := table.position(name)) is not None]
        table.set_scores([position for position, _ in named], [score for _, score in named])
    evidence = finding.evidence + _preemption_evidence(subject, message, finding.cause)
    namespace, name = (pod.key if pod is not None else
                       (subject.workload_row.namespace, subject.workload_row.name)
                       if subject.workload_row is not None else
                       (subject.ref.namespace, subject.ref.name))
    return Verdict(
        ref=f"{namespace}/{name}" if kind == "Pod" else str(subject.ref),
        cause=finding.cause.value,
        action=finding.action,
        kind=kind,
        evidence=evidence,
        nodes=reports,
        node_summary=_node_summary(subject, reports, policy),
        scheduler_message=message,
        resource=resource,
        request=subject.gpu.get(resource) if resource else None,
        pods=[pod.label] if pod is not None else [],
        pods_total=1 if pod is not None else 0,
        score_source=("scheduler" if scheduler else "gpuwhy") if any(
            map(is_not, reports.table.scores, repeat(None))) else None,
        score_policy=policy,
        # HAMi's proposal line speaks for HAMi's scheduler: only for the pods it schedules.
        scheduler_summary=proposal_summary(reports, policy)
        if reports and subject.hami is not None and not subject.facts.node else None,
        error="; ".join(dict.fromkeys(subject.rows.problems)) or None,
    )


# Kubernetes 1.36 says why preemption would not help: corroboration, never the only evidence.
_PREEMPTION_CORROBORATES = {
    Cause.EXHAUSTED: "No preemption victims found",
    Cause.NO_GPU_NODE: "Preemption is not helpful",
    Cause.ALLOCATABLE_ZERO: "Preemption is not helpful",
    Cause.TOO_LARGE: "Preemption is not helpful",
}


def _preemption_evidence(subject: Subject, message: str | None, cause: Cause) -> list[Evidence]:
    wanted = _PREEMPTION_CORROBORATES.get(cause)
    if message is None or wanted is None:
        return []
    found = [r for r in parse_failed_scheduling(message).preemption if r.text.startswith(wanted)]
    return [Evidence(f"Pod {subject.label}", "scheduler message (preemption)",
                     f"{r.count} {r.text}" if r.count is not None else r.text) for r in found]


def _policy(subject: Subject) -> str:
    chosen = subject.hami.node_policy if subject.hami else None
    return str(chosen or subject.config.node_policy)


def _node_reports(subject: Subject, policy: str) -> NodeReports:
    """Reports in funnel order (worst first), with devices for the nodes that matter."""
    rows = subject.rows
    bound = subject.facts.node if subject.row is not None else None
    if bound:
        node = rows.node(bound)
        reports = NodeReports(ReportTable((bound,), [FIT], ["bound here"], {bound: 0}), [0])
        if node is not None:
            _describe_node(subject, node, reports[0])
        return reports
    reports = _funnel_order(subject, policy)
    # Devices for the nodes a GPU check looked at, else (all tainted) for those the selector
    # matched; a 5,000-node answer lists the first ones.
    # (the first MAX_DEVICE_NODES of them, without a list of 100,000 first, nor a Python
    # step per report before them)
    outcomes, order = reports.outcomes(), reports.order
    matter = list(islice(compress(order, map(not_, map(RULED_OUT.__contains__, outcomes))),
                         MAX_DEVICE_NODES)) or list(islice(compress(order, map(
                             Cause.TAINT_UNTOLERATED.value.__eq__, outcomes)), MAX_DEVICE_NODES))
    for report in map(reports.table.report, matter):
        node = rows.node(report.name)
        if node is not None:
            _describe_node(subject, node, report)
        if report.outcome != FIT and not any(d.code for d in report.devices):
            # No per-card fit is known here (plain device plugin): the node's outcome holds.
            for device in report.devices:
                device.code = report.outcome
    return reports


def _describe_node(subject: Subject, node: NodeInfo, report: NodeReport) -> None:
    """The node's devices, its allocatable and who holds its GPUs (the pods' requests: the
    API server knows who holds how many, not which device)."""
    report.devices = _devices(subject, node)
    if not subject.gpu:
        return
    resource = primary(subject)
    report.allocatable = node.allocatable.get(resource)
    report.held = [Holding(pod.label, count, pod.held_since)
                   for pod, count in subject.rows.holders_on(node.name, resource)]


_ORDER = {info.cause.value: i for i, info in enumerate(CAUSES)}
_HAMI_REASON_ORDER = _ORDER[Cause.DEVICE_UNFIT.value]  # HAMi reason strings sort as device-unfit


def _funnel_order(subject: Subject, policy: str) -> NodeReports:
    """The reports, the fit ones scored, worst first: by the outcome's place in the vocabulary
    (HAMi reasons and fit where device-unfit sits), then the highest score, then by name.

    In the node table's order (by name: every node has a report), then (stably) by score,
    then by rank: each key looked up per distinct outcome or score (a few on 100,000 nodes),
    without a Python step per report, nor a report made.
    """
    table = subject.reports.table
    outcomes = table.outcomes
    fit = list(compress(range(len(outcomes)), map(FIT.__eq__, outcomes)))
    table.set_scores(fit, _scores(subject, fit, policy))
    order = list(range(len(outcomes)))
    if fit:  # only fit reports have scores yet: the others' score key is the same, 0
        scores = table.scores
        highest_first = {score: -(score or 0) for score in set(scores)}
        order.sort(key=list(map(highest_first.__getitem__, scores)).__getitem__)
    rank = {outcome: _ORDER.get(outcome, _HAMI_REASON_ORDER) for outcome in set(outcomes)}
    order.sort(key=list(map(rank.__getitem__, outcomes)).__getitem__)
    return NodeReports(table, order)


def _devices(subject: Subject, node: NodeInfo) -> list[Device]:
    fit = hami_fit(subject, node) if subject.hami is not None else None
    if fit is not None:
        return fit.devices
    # A DRA pod's devices are its ResourceSlices' (with a device-plugin GPU too, both).
    published = subject.dra.device_rows(node) if subject.dra is not None else []
    if subject.dra is not None and all(subject.dra.serves(node, r) for r in subject.gpu):
        return published  # no GPU of the pod's comes from a device plugin here
    return published + gfd_devices(node.labels)


def _scores(subject: Subject, positions: list[int], policy: str) -> list[float | None]:
    """``_own_score`` of the nodes at these positions of the node table. A whole-GPU score
    reads only the node's allocatable of the resource and the sum its pods request: worked
    out once per kind of node (``NodeInfo.resources``) and summed request (a few on 100,000
    nodes); a HAMi score per node (its devices' usage)."""
    table = subject.rows.node_table
    if subject.hami is not None or not subject.gpu:
        return [_own_score(subject, table[position], policy) for position in positions]
    of_resource = methodcaller("get", primary(subject))
    resources = subject.rows.node_columns.resources
    keys = list(zip(map(resources.__getitem__, positions),
                    map(of_resource, _sums_of(subject, positions)), strict=True))
    first_of = dict(zip(reversed(keys), reversed(positions), strict=True))
    known = {key: _own_score(subject, table[position], policy)
             for key, position in first_of.items()}
    return list(map(known.__getitem__, keys))


def _sums_of(subject: Subject, positions: list[int]) -> list[Mapping[str, Decimal]]:
    """The summed requests of the nodes at these positions: those the funnel read, unless it
    read none of some (then the Snapshot's, by name)."""
    read = subject.node_sums
    if read:
        found = list(map(read.__getitem__, positions))
        if None not in found:
            return cast(list[Mapping[str, Decimal]], found)
    names = subject.rows.node_columns.names
    return subject.rows.requested_of(map(names.__getitem__, positions))


def _own_score(subject: Subject, node: NodeInfo, policy: str) -> float | None:
    if subject.hami is not None:
        fit = hami_fit(subject, node)
        return None if fit is None else fit.score
    resource = primary(subject)
    allocatable = node.allocatable.get(resource)
    if not subject.gpu or not allocatable:
        return None
    used = allocatable - subject.rows.free_gpus(node, resource)
    return whole_gpu_score(allocatable, used, subject.gpu[resource], policy)


# Outcomes named as they are in the summary; HAMi code summaries count as device-unfit.
_SUMMARY_WORDS = frozenset({*(c.value for c in Cause), NODE_UNREGISTERED})


def _node_summary(subject: Subject, reports: NodeReports, policy: str) -> str:
    if subject.row is None:
        return ""
    bound = subject.facts.node
    if bound:
        return f"bound to {bound}"
    if not reports:
        # No node filter ran (the pod asks for no GPU): nothing to say about nodes.
        return "" if subject.rows.has_nodes else "no nodes in the cluster"
    outcomes = reports.outcomes()
    fit = list(compress(reports.order, map(FIT.__eq__, outcomes)))
    counts: dict[str, int] = {}  # in the order each word first comes
    for outcome, n in Counter(outcomes).items():
        if outcome != FIT:
            word = outcome if outcome in _SUMMARY_WORDS else Cause.DEVICE_UNFIT.value
            counts[word] = counts.get(word, 0) + n
    breakdown = ", ".join(f"{n} {word}" for word, n in counts.items())
    # the first five fit nodes by the policy's order of their scores, then unscored ones, by
    # their places in the table (which is by name): no mapping of 100,000 names made
    names, scores = reports.table.names, reports.table.scores
    fit_scores = list(map(scores.__getitem__, fit))
    scored = list(map(is_not, fit_scores, repeat(None)))
    best = pick_first(list(compress(fit, scored)),
                      cast(list[float], list(compress(fit_scores, scored))), policy, 5)
    ordered = [*best, *islice(compress(fit, map(not_, scored)), 5)][:5]
    shown = ", ".join(names[p] if (score := scores[p]) is None else f"{names[p]}: {score:.2f}"
                      for p in ordered) + (f", +{len(fit) - 5} more" if len(fit) > 5 else "")
    total = len(reports)
    text = f"{total} node{'s' if total != 1 else ''}: {total - len(fit)} not fit"
    text += f" ({breakdown})" if breakdown else ""
    text += f", {len(fit)} fit" + (f" ({shown})" if fit else "")
    return text + gang_summary(subject)
