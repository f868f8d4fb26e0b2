"""What gpuwhy keeps of an answer once it is given: for its thread ("show devices"), the
journal and the store, and the digest that reads them back.

Every node's report while the cluster is small. Past ``KEEP_EVERY_NODE`` nodes, the reports
"show devices" lists and the nodes the digest counts, with the rest counted by outcome: at
100,000 nodes a whole Verdict is ~20 MB of JSON and seconds of CPU to encode, twice per
answer (journal, store), and ~3 MB of report columns in memory for each of the answers a
thread may still ask about.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import replace

from bot.answer.devices import relevant_places
from scoring.verdict import Verdict, report_columns
from triage.vocabulary import FIT, NODE_UNREGISTERED, Cause

KEEP_EVERY_NODE = 1000
# of the nodes an answer implicates (the full ones of an exhausted pool: thousands, on a
# large cluster), the first ones kept, worst first: the digest's top nodes and broken nodes
# count these
IMPLICATED_KEPT = 100


def implicated_nodes(verdict: Verdict) -> list[str]:
    """Nodes that made this answer: those whose own outcome is the verdict's cause (the full
    node for `exhausted`, the broken one for `allocatable-zero`), the bound node for
    `node-runtime-error`, and the nodes HAMi turned down for `device-unfit`. Nodes that fit,
    or that the pod's own selector left out, say nothing about the node."""
    names, outcomes, _ = report_columns(verdict.nodes)
    return [names[i] for i in _implicated(verdict, outcomes)]


def _implicated(verdict: Verdict, outcomes: Sequence[str]) -> list[int]:
    """``implicated_nodes``, as places in the answer's order."""
    if verdict.cause == Cause.SELECTOR_MISMATCH:
        return []  # every node "is" the cause; the pod's selector is what is wrong
    if verdict.cause == Cause.NODE_RUNTIME_ERROR:
        return list(range(min(1, len(outcomes))))  # a bound pod has one report
    if verdict.cause == Cause.DEVICE_UNFIT:
        # HAMi rejections carry the device-code summary ("2/4 NumaNotFit") as the outcome.
        not_hami = {FIT, NODE_UNREGISTERED, *(cause.value for cause in Cause)}
        return [i for i, outcome in enumerate(outcomes) if outcome not in not_hami]
    return [i for i, outcome in enumerate(outcomes) if outcome == verdict.cause]


def kept_verdict(verdict: Verdict) -> Verdict:
    """The answer as gpuwhy keeps it: itself up to ``KEEP_EVERY_NODE`` nodes; past that, the
    nodes "show devices" lists and the first ``IMPLICATED_KEPT`` the digest counts, the rest
    in ``nodes_omitted``. "show devices" lists and counts the same nodes from either. Read
    from the reports' columns: only the kept reports are made."""
    nodes = verdict.nodes
    if len(nodes) <= KEEP_EVERY_NODE:
        return verdict
    columns = report_columns(nodes)
    outcomes = columns.outcomes
    places = set(relevant_places(verdict, columns)[1])
    places.update(_implicated(verdict, outcomes)[:IMPLICATED_KEPT])
    kept = [nodes[i] for i in sorted(places)]
    omitted = Counter(outcomes)
    omitted.subtract(outcomes[i] for i in places)
    omitted.update(verdict.nodes_omitted)
    return replace(verdict, nodes=kept,
                   nodes_omitted={outcome: n for outcome, n in omitted.items() if n})
