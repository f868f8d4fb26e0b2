"""The order, as data: which checks answer each cause word, in the vocabulary's order.

``PIPELINE`` follows ``triage.vocabulary.CAUSES``; a cause may have several checks (say, an
extended-resource filter and a Dynamic Resource Allocation one), run in the order listed.
Each check has a precondition (pod absent / present / unbound / bound). Pod checks return a
Finding or None. Node filters narrow the candidate nodes; the cause is the filter that leaves
no node, and every node keeps the outcome of the filter where it dropped out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from triage.classify.checks.admission import check_pod_not_found, check_quota, check_runtimeclass
from triage.classify.checks.bound import check_node_runtime_error, check_scheduled
from triage.classify.checks.dra import (
    drop_dra_device_unfit,
    drop_dra_exhausted,
    drop_dra_no_device,
    drop_dra_other,
    drop_dra_too_large,
    explain_dra_device_unfit,
    explain_dra_exhausted,
    explain_dra_no_device,
    explain_dra_other,
    explain_dra_too_large,
)
from triage.classify.checks.gpu import (
    drop_allocatable_zero,
    drop_exhausted,
    drop_no_gpu_node,
    drop_too_large,
    explain_allocatable_zero,
    explain_exhausted,
    explain_no_gpu_node,
    explain_too_large,
)
from triage.classify.checks.hami import drop_device_unfit, explain_device_unfit
from triage.classify.checks.other import (
    drop_other_resources,
    explain_other_resources,
    leftover_other_constraint,
)
from triage.classify.checks.request import check_no_gpu_request
from triage.classify.checks.scheduler import check_scheduler_unavailable
from triage.classify.checks.selector import drop_selector, explain_selector
from triage.classify.checks.taints import drop_taint, explain_taint
from triage.classify.subject import Check, Finding, NodeFilter, PodCheck, Subject, When
from triage.nodetable import NodeInfo
from triage.verdict import NodeReport
from triage.vocabulary import CAUSES, FIT, Cause

CHECKS: Mapping[Cause, tuple[Check, ...]] = {
    Cause.QUOTA_EXCEEDED: (PodCheck(Cause.QUOTA_EXCEEDED, When.ABSENT, check_quota),),
    Cause.RUNTIMECLASS_MISSING: (
        PodCheck(Cause.RUNTIMECLASS_MISSING, When.ABSENT, check_runtimeclass),),
    Cause.NO_GPU_REQUEST: (PodCheck(Cause.NO_GPU_REQUEST, When.PRESENT, check_no_gpu_request),),
    Cause.SELECTOR_MISMATCH: (
        NodeFilter(Cause.SELECTOR_MISMATCH, When.UNBOUND, drop_selector, explain_selector),),
    Cause.TAINT_UNTOLERATED: (
        NodeFilter(Cause.TAINT_UNTOLERATED, When.UNBOUND, drop_taint, explain_taint),),
    # DRA's device-unfit (devices of the class exist, none meets the request's selectors) is
    # decided at this step, right after no-gpu-node and before too-large (design.md's DRA
    # funnel): a node without a matching device cannot be "too large" or "exhausted".
    Cause.NO_GPU_NODE: (
        NodeFilter(Cause.NO_GPU_NODE, When.UNBOUND, drop_no_gpu_node, explain_no_gpu_node),
        NodeFilter(Cause.NO_GPU_NODE, When.UNBOUND, drop_dra_no_device, explain_dra_no_device),
        NodeFilter(Cause.NO_GPU_NODE, When.UNBOUND, drop_dra_device_unfit,
                   explain_dra_device_unfit, outcome=Cause.DEVICE_UNFIT)),
    Cause.ALLOCATABLE_ZERO: (
        NodeFilter(Cause.ALLOCATABLE_ZERO, When.UNBOUND, drop_allocatable_zero,
                   explain_allocatable_zero),),
    Cause.TOO_LARGE: (
        NodeFilter(Cause.TOO_LARGE, When.UNBOUND, drop_too_large, explain_too_large),
        NodeFilter(Cause.TOO_LARGE, When.UNBOUND, drop_dra_too_large, explain_dra_too_large)),
    Cause.EXHAUSTED: (
        NodeFilter(Cause.EXHAUSTED, When.UNBOUND, drop_exhausted, explain_exhausted),
        NodeFilter(Cause.EXHAUSTED, When.UNBOUND, drop_dra_exhausted, explain_dra_exhausted)),
    Cause.DEVICE_UNFIT: (
        NodeFilter(Cause.DEVICE_UNFIT, When.UNBOUND, drop_device_unfit, explain_device_unfit,
                   outcome_is_reason=True),),
    Cause.OTHER_CONSTRAINT: (
        NodeFilter(Cause.OTHER_CONSTRAINT, When.UNBOUND, drop_dra_other, explain_dra_other),
        NodeFilter(Cause.OTHER_CONSTRAINT, When.UNBOUND, drop_other_resources,
                   explain_other_resources, leftover_other_constraint),),
    Cause.SCHEDULER_UNAVAILABLE: (
        PodCheck(Cause.SCHEDULER_UNAVAILABLE, When.UNBOUND, check_scheduler_unavailable),),
    Cause.NODE_RUNTIME_ERROR: (
        PodCheck(Cause.NODE_RUNTIME_ERROR, When.BOUND, check_node_runtime_error),),
    Cause.SCHEDULED: (PodCheck(Cause.SCHEDULED, When.BOUND, check_scheduled),),
    Cause.POD_NOT_FOUND: (PodCheck(Cause.POD_NOT_FOUND, When.ABSENT, check_pod_not_found),),
}


def build_pipeline(checks: Mapping[Cause, Sequence[Check]]) -> tuple[Check, ...]:
    """The checks of every cause, in the vocabulary's order."""
    return tuple(check for info in CAUSES for check in checks.get(info.cause, ()))


PIPELINE: tuple[Check, ...] = build_pipeline(CHECKS)


def run_pipeline(subject: Subject, pipeline: Sequence[Check] = PIPELINE) -> Finding:
    subject.checks = pipeline
    state = subject.state
    candidates: list[NodeInfo] = list(subject.snapshot.node_table)
    for check in pipeline:
        if check.when not in state:
            continue
        if isinstance(check, PodCheck):
            finding = check.check(subject)
            if finding is not None:
                return finding
            continue
        kept, dropped = [], []
        for node in candidates:
            why = check.drop(subject, node)
            if why is None:
                kept.append(node)
            else:
                dropped.append((node, why))
                subject.reports[node.name] = NodeReport(node.name, _outcome(check, why), why)
        candidates = kept
        if not candidates:
            return check.explain(subject, dropped)
        _mark_fit(subject, candidates)  # so far; a later filter may still drop them
        if check.leftover is not None:
            finding = check.leftover(subject, candidates)
            if finding is not None:
                return finding
    raise AssertionError("every precondition ends in a fallback check")


def _outcome(check: NodeFilter, why: str) -> str:
    return why if check.outcome_is_reason else (check.outcome or check.cause).value


def _mark_fit(subject: Subject, fit: list[NodeInfo]) -> None:
    for node in fit:
        subject.reports[node.name] = NodeReport(node.name, FIT, "fits")
