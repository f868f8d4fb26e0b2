"""nodeSelector and required node affinity (kube-scheduler's NodeAffinity plugin)."""

from __future__ import annotations

from operator import attrgetter, itemgetter

from scoring.nodes import selection_mismatches
from scoring.nodetable import NodeInfo
from scoring.rows import PodSpecFacts
from scoring.verdict import Evidence
from triage.classify.subject import Dropped, Finding, Subject
from triage.vocabulary import Cause


def drop_selector(subject: Subject, node: NodeInfo) -> str | None:
    if not subject.selects_nodes:
        return None
    keys = subject.selector_keys
    if keys is not None:
        # labels alone decide: the answer depends only on the node's values of those keys
        labels = node.labels
        values = tuple([labels.get(key) for key in keys])
        drops = subject.selector_drops
        if values not in drops:
            drops[values] = _unmatched(_mismatches(subject, node))
        return drops[values]
    return _unmatched(_mismatches(subject, node))


def _mismatches(subject: Subject, node: NodeInfo) -> list[str]:
    return selection_mismatches(subject.facts.node_selector, subject.affinity_terms,
                                node.labels, node.name)


def _unmatched(failed: list[str]) -> str | None:
    return "unmatched " + ", ".join(failed) if failed else None


def explain_selector(subject: Subject, dropped: Dropped) -> Finding:
    wanted = selector_text(subject.facts)
    evidence = [Evidence(f"Pod {subject.label}", "spec.nodeSelector / affinity", wanted),
                *[Evidence(f"Node/{n.name}", "metadata.labels", why) for n, why in dropped[:5]]]
    missing, by_label = _missing_pins(subject.facts, dropped)
    if missing:
        label = (f"; {HOSTNAME} is the kubelet's own label, not one to put on another node"
                 if by_label else "")
        return Finding(Cause.SELECTOR_MISMATCH,
                       f"{wanted} pins the pod to {_nodes(missing)}, and no node of "
                       f"{'that name' if len(missing) == 1 else 'those names'} is in the cluster "
                       "(removed, or renamed). Point the pod at a node that exists, or drop the "
                       f"pin{label}.", evidence)
    keys = set(subject.facts.node_selector)
    nodes = list(map(itemgetter(0), dropped))
    if HOSTNAME not in keys:  # nodes of one shape have one value of every other label
        nodes = list(dict(zip(map(_shape, nodes), nodes, strict=True)).values())
    # by the selector's keys: a node has dozens of labels
    seen = {f"{k}={node.labels[k]}" for node in nodes for k in keys if k in node.labels}
    values = f" Values present: {', '.join(sorted(seen))}." if seen else (
        f" No node has the label{'s' if len(keys) > 1 else ''} at all." if keys else "")
    if subject.affinity_terms is not None and dropped:  # which requirement fails, on one node
        values += f" On {dropped[0][0].name}: {dropped[0][1]}."
    matched = ("does not match the one node" if len(dropped) == 1
               else f"matches none of the {len(dropped)} nodes")
    return Finding(Cause.SELECTOR_MISMATCH,
                   f"{wanted} {matched}.{values} Fix the selector, "
                   "or label a node that should run it.", evidence)


HOSTNAME = "kubernetes.io/hostname"
_shape = attrgetter("shape")


def _missing_pins(facts: PodSpecFacts, dropped: Dropped) -> tuple[list[str], bool]:
    """Node names the selection pins the pod to (kubernetes.io/hostname, or matchFields
    metadata.name; a DaemonSet's pods are pinned so) that no node has: a deleted node. And
    whether a pin is the hostname label."""
    pinned = {str(host): True} if (host := facts.node_selector.get(HOSTNAME)) else {}
    for term in facts.affinity_terms or ():
        for requirement in (*(term.get("matchExpressions") or ()),
                            *(term.get("matchFields") or ())):
            if (requirement.get("key") in (HOSTNAME, "metadata.name")
                    and requirement.get("operator") == "In"):
                for value in requirement.get("values") or []:
                    pinned[str(value)] = pinned.get(str(value), False) or (
                        requirement.get("key") == HOSTNAME)
    if not pinned:
        return [], False
    present = {node.name for node, _ in dropped} | {
        node.labels[HOSTNAME] for node, _ in dropped if HOSTNAME in node.labels}
    missing = [name for name in pinned if name not in present]
    return missing, any(pinned[name] for name in missing)


def _nodes(names: list[str]) -> str:
    return f"node{'s' if len(names) > 1 else ''} {', '.join(names)}"


def selector_text(facts: PodSpecFacts) -> str:
    parts = [f"{k}={v}" for k, v in facts.node_selector.items()]
    text = "nodeSelector " + " + ".join(parts) if parts else ""
    if facts.affinity_terms:
        text = f"{text} + required node affinity" if text else "required node affinity"
    return text or "the node selection"
