"""The order, as data: which checks answer each cause word, in the vocabulary's order.

``PIPELINE`` follows ``triage.vocabulary.CAUSES``; a cause may have several checks (say, an
extended-resource filter and a Dynamic Resource Allocation one), run in the order listed.
Each check has a precondition (pod absent / present / unbound / bound). Pod checks return a
Finding or None. Node filters narrow the candidate nodes; the cause is the filter that leaves
no node, and every node keeps the outcome of the filter where it dropped out.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable, Mapping, Sequence
from decimal import Decimal
from itertools import compress, groupby, repeat
from operator import itemgetter

from scoring.nodetable import NodeInfo
from scoring.verdict import NodeOutcomes, ReportTable
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
from triage.classify.checks.dra_alternatives import with_alternatives
from triage.classify.checks.gang import (
    check_gang_exhausted,
    check_gang_incomplete,
    check_gang_too_large,
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
from triage.classify.checks.queue import check_queued_pod, check_queued_workload
from triage.classify.checks.request import check_no_gpu_request
from triage.classify.checks.scheduler import check_scheduler_unavailable
from triage.classify.checks.selector import drop_selector, explain_selector
from triage.classify.checks.taints import drop_taint, explain_taint
from triage.classify.subject import (
    Check,
    Dropped,
    Finding,
    NodeFilter,
    NodeFilterFn,
    PodCheck,
    Subject,
    When,
    always,
    asks_dra,
    asks_gpus,
    asks_hami,
    device_plugin_only,
    in_gang,
    selection_ignores_names,
    selects_nodes,
)
from triage.vocabulary import CAUSES, FIT, Cause

CHECKS: Mapping[Cause, tuple[Check, ...]] = {
    Cause.QUOTA_EXCEEDED: (PodCheck(Cause.QUOTA_EXCEEDED, When.ABSENT, check_quota),),
    Cause.RUNTIMECLASS_MISSING: (
        PodCheck(Cause.RUNTIMECLASS_MISSING, When.ABSENT, check_runtimeclass),),
    # Kueue holds a queue-labelled workload suspended (no pods) or its pod gated until it
    # admits it; until then the funnel has nothing to judge: the flavor it admits into may
    # still set the pod's nodeSelector and tolerations.
    Cause.QUEUED: (PodCheck(Cause.QUEUED, When.ABSENT, check_queued_workload),
                   PodCheck(Cause.QUEUED, When.UNBOUND, check_queued_pod)),
    Cause.NO_GPU_REQUEST: (PodCheck(Cause.NO_GPU_REQUEST, When.PRESENT, check_no_gpu_request),),
    Cause.SELECTOR_MISMATCH: (
        NodeFilter(Cause.SELECTOR_MISMATCH, When.UNBOUND, drop_selector, explain_selector,
                   applies=selects_nodes, by_shape=selection_ignores_names),),
    Cause.TAINT_UNTOLERATED: (
        NodeFilter(Cause.TAINT_UNTOLERATED, When.UNBOUND, drop_taint, explain_taint,
                   by_shape=always),),
    # DRA's device-unfit (devices of the class exist, none meets the request's selectors) is
    # decided at this step, right after no-gpu-node and before too-large (design.md's DRA
    # funnel): a node without a matching device cannot be "too large" or "exhausted".
    Cause.NO_GPU_NODE: (
        NodeFilter(Cause.NO_GPU_NODE, When.UNBOUND, drop_no_gpu_node, explain_no_gpu_node,
                   applies=asks_gpus, by_shape=device_plugin_only),
        NodeFilter(Cause.NO_GPU_NODE, When.UNBOUND, drop_dra_no_device,
                   with_alternatives(explain_dra_no_device),
                   applies=asks_dra),
        NodeFilter(Cause.NO_GPU_NODE, When.UNBOUND, drop_dra_device_unfit,
                   with_alternatives(explain_dra_device_unfit), outcome=Cause.DEVICE_UNFIT,
                   applies=asks_dra)),
    Cause.ALLOCATABLE_ZERO: (
        NodeFilter(Cause.ALLOCATABLE_ZERO, When.UNBOUND, drop_allocatable_zero,
                   explain_allocatable_zero, applies=asks_gpus, by_shape=device_plugin_only),),
    Cause.TOO_LARGE: (
        NodeFilter(Cause.TOO_LARGE, When.UNBOUND, drop_too_large, explain_too_large,
                   applies=asks_gpus, by_shape=device_plugin_only),
        NodeFilter(Cause.TOO_LARGE, When.UNBOUND, drop_dra_too_large,
                   with_alternatives(explain_dra_too_large),
                   applies=asks_dra),
        # a gang: its pods each fit somewhere, but not minCount of them at once, even empty
        PodCheck(Cause.TOO_LARGE, When.UNBOUND, check_gang_too_large, applies=in_gang)),
    Cause.EXHAUSTED: (
        NodeFilter(Cause.EXHAUSTED, When.UNBOUND, drop_exhausted, explain_exhausted,
                   applies=asks_gpus, by_sums=device_plugin_only),
        NodeFilter(Cause.EXHAUSTED, When.UNBOUND, drop_dra_exhausted,
                   with_alternatives(explain_dra_exhausted),
                   applies=asks_dra),
        PodCheck(Cause.EXHAUSTED, When.UNBOUND, check_gang_exhausted, applies=in_gang)),
    Cause.DEVICE_UNFIT: (
        NodeFilter(Cause.DEVICE_UNFIT, When.UNBOUND, drop_device_unfit, explain_device_unfit,
                   outcome_is_reason=True, applies=asks_hami),),
    Cause.OTHER_CONSTRAINT: (
        # an incomplete gang: the scheduler waits, silently, for the rest of its pods
        PodCheck(Cause.OTHER_CONSTRAINT, When.UNBOUND, check_gang_incomplete,
                 applies=in_gang),
        NodeFilter(Cause.OTHER_CONSTRAINT, When.UNBOUND, drop_dra_other, explain_dra_other,
                   applies=asks_dra),
        NodeFilter(Cause.OTHER_CONSTRAINT, When.UNBOUND, drop_other_resources,
                   explain_other_resources, leftover_other_constraint, by_sums=always),),
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
    """The first check that holds, in order.

    The node filters run as one pass over the node table: each node stops at the first filter
    that drops it. Walking the checks in order then, the cause of a node filter is that the
    count of nodes still standing after it reaches 0, exactly as if each filter had narrowed
    the candidates in turn; every node keeps the outcome where it dropped out.
    """
    subject.checks = pipeline
    state = subject.state
    steps = [check for check in pipeline if check.when in state and (
        isinstance(check, NodeFilter) or check.applies is None or check.applies(subject))]
    filters = [check for check in steps if isinstance(check, NodeFilter)]
    funnel = _Funnel(subject, filters)
    for check in steps:
        if isinstance(check, PodCheck):
            funnel.report_so_far()
            finding = check.check(subject)
            if finding is not None:
                return finding
            continue
        funnel.pass_filter()
        if not funnel.left:
            funnel.report_so_far()
            return check.explain(subject, funnel.last_dropped())
        if check.leftover is not None:
            funnel.report_so_far()
            finding = check.leftover(subject, funnel.standing())
            if finding is not None:
                return finding
    raise AssertionError("every precondition ends in a fallback check")


class _Funnel:
    """Where each node drops out of the node filters, worked out in one pass, and the
    NodeReports of the filters passed so far (built when a check is about to read them)."""

    def __init__(self, subject: Subject, filters: list[NodeFilter]) -> None:
        self.subject = subject
        self.filters = filters
        self.nodes = subject.rows.node_table
        active = [(index, check) for index, check in enumerate(filters)
                  if check.applies is None or check.applies(subject)]
        # The leading filters that read only a node's shape are asked once per shape; the
        # rest (free GPUs, HAMi, DRA: what the node's pods or devices decide) per node.
        shaped = 0
        while shaped < len(active) and (by_shape := active[shaped][1].by_shape) is not None \
                and by_shape(subject):
            shaped += 1
        first = [(index, check.drop) for index, check in active[:shaped]]
        rest = [(index, check.drop) for index, check in active[shaped:]]
        nodes = self.nodes
        columns = subject.rows.node_columns
        self.names, shapes, resources = columns.names, columns.shapes, columns.resources
        # per node: (the index of the filter that drops it, why); (len(filters), "") if none
        kept = len(filters)
        dropped = _judged(subject, nodes, range(len(nodes)), shapes, first, kept)
        standing = list(compress(range(len(nodes)), map(kept.__eq__, map(_at, dropped))))
        if rest and all(check.by_sums is not None and check.by_sums(subject)
                        for _, check in active[shaped:]):
            # Each of the rest reads only the node's capacity, allocatable and summed
            # requests: asked once per kind of node and sums mapping. Nodes that hold alike
            # share one mapping (the watch cache keeps one per distinct sums), so an answer
            # judges a few dozen groups, not every node. The mappings are held here, so an id
            # stays theirs.
            sums = subject.rows.requested_of(map(self.names.__getitem__, standing))
            keys = list(zip(map(resources.__getitem__, standing), map(id, sums), strict=True))
            # (each standing node's entry set in C: list.__setitem__ by map)
            deque(map(dropped.__setitem__, standing,
                      _judged(subject, nodes, standing, keys, rest, kept)), maxlen=0)
            node_sums: list[Mapping[str, Decimal] | None] = [None] * len(nodes)
            deque(map(node_sums.__setitem__, standing, sums), maxlen=0)
            subject.node_sums = node_sums
        elif rest:
            for position in standing:
                dropped[position] = _first_drop(subject, nodes[position], rest) or (kept, "")
        # per node, in parallel lists: the index of the filter that drops it (len(filters):
        # none) and why; per filter, the positions of the nodes it drops
        self.at: list[int] = list(map(_at, dropped))
        self.why: list[str] = list(map(_why, dropped))
        # (sorted by filter, stable: each filter's in order; grouped without a Python step
        # per node)
        self.by_filter = sorted(range(len(nodes)), key=self.at.__getitem__)
        self.dropped_at: dict[int, list[int]] = {
            index: list(positions)
            for index, positions in groupby(self.by_filter, key=self.at.__getitem__)
            if index != kept}
        # the outcome each filter gives a node it drops; None: the reason itself (HAMi codes)
        self.outcomes = [None if check.outcome_is_reason else (check.outcome or check.cause).value
                         for check in filters]
        self.passed = 0  # filters walked so far
        self.left = len(self.nodes)  # nodes still standing after them
        self.reported = -1

    def pass_filter(self) -> None:
        """Walk the next filter: fewer nodes are left standing by those it drops."""
        self.left -= len(self.dropped_at.get(self.passed, ()))
        self.passed += 1

    def last_dropped(self) -> Dropped:
        """The nodes the filter walked last dropped (by name), with why."""
        nodes, whys = self.nodes, self.why
        return [(nodes[position], whys[position])
                for position in self.dropped_at.get(self.passed - 1, ())]

    def standing(self) -> list[NodeInfo]:
        return list(compress(self.nodes, map(self.passed.__le__, self.at)))

    def report_so_far(self) -> None:
        """subject.reports as the filters walked so far leave them: every node dropped so far
        with its outcome, the others fit; in the order the first filter left them (the nodes
        it dropped, then the rest, each by name). Column by column, set in C where it can be
        (map, compress): a report is made only when a check reads it."""
        if self.reported == self.passed or not self.passed:
            return
        passed, outcomes, names, whys = self.passed, self.outcomes, self.names, self.why
        reports = self.subject.reports
        if self.reported > 0:
            # Only the nodes the filters walked since dropped change: a new table (checks may
            # hold the earlier one) keeps every other report and the order.
            words: dict[int, str] = {}
            changed: dict[int, str] = {}
            for index in range(self.reported, passed):
                positions, outcome = self.dropped_at.get(index, ()), outcomes[index]
                said = map(whys.__getitem__, positions) if outcome is None else repeat(outcome)
                words.update(zip(positions, said, strict=False))  # said may repeat
                changed.update(zip(positions, map(whys.__getitem__, positions), strict=True))
            table = reports.table.with_changes(words, changed)
            self.subject.reports = NodeOutcomes(table, reports.order)
        else:
            # per node: the outcome of the filter that dropped it (a HAMi filter's: its reason)
            # and why, or fit if it stands after the filters walked; set a filter's nodes at a
            # time, in C (list.__setitem__ by map)
            column, details = [FIT] * len(names), list(whys)
            for index in range(passed):
                positions, outcome = self.dropped_at.get(index, ()), outcomes[index]
                said = map(whys.__getitem__, positions) if outcome is None else repeat(outcome)
                deque(map(column.__setitem__, positions, said), maxlen=0)
            standing = self.by_filter[len(names) - self.left:]  # sorted by filter: the last
            deque(map(details.__setitem__, standing, repeat("fits")), maxlen=0)
            order = [*self.dropped_at.get(0, ()), *compress(range(len(names)), self.at)]
            table = ReportTable(names, column, details, self.subject.rows.node_columns.position)
            self.subject.reports = NodeOutcomes(table, order)
        self.reported = passed


def _judged(subject: Subject, nodes: tuple[NodeInfo, ...], positions: Sequence[int],
            keys: Sequence[Hashable], filters: list[tuple[int, NodeFilterFn]], kept: int,
            ) -> list[tuple[int, str]]:
    """``_first_drop`` of the nodes at ``positions`` ((kept, "") where none drops it), asked
    once per key (of the first node with it, in order): nodes of one key give these filters
    the same answer."""
    # each key's first position (built backwards, so the first one stays), in order
    backwards = zip(reversed(keys), reversed(positions), strict=True)
    first_of = sorted(dict(backwards).items(), key=itemgetter(1))
    answers = {key: _first_drop(subject, nodes[position], filters) or (kept, "")
               for key, position in first_of}
    return list(map(answers.__getitem__, keys))


_at, _why = itemgetter(0), itemgetter(1)


def _first_drop(subject: Subject, node: NodeInfo,
                filters: list[tuple[int, NodeFilterFn]]) -> tuple[int, str] | None:
    """(the index of the first filter that drops the node, why), or None."""
    for index, drop in filters:
        why = drop(subject, node)
        if why is not None:
            return index, why
    return None
