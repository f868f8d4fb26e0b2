"""nodeSelector and required node affinity (kube-scheduler's NodeAffinity plugin)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from triage.classify.subject import Dropped, Finding, Subject
from triage.nodes import selector_mismatches
from triage.nodetable import NodeInfo
from triage.verdict import Evidence
from triage.vocabulary import Cause


def drop_selector(subject: Subject, node: NodeInfo) -> str | None:
    if not subject.selects_nodes:
        return None
    if subject.affinity_terms is None:
        # nodeSelector alone: the answer depends only on the node's values of its keys
        labels = node.labels
        values = tuple([labels.get(key) for key in subject.spec["nodeSelector"]])
        drops = subject.selector_drops
        if values not in drops:
            drops[values] = _unmatched(selector_mismatches(subject.spec, node.raw))
        return drops[values]
    return _unmatched(selector_mismatches(subject.spec, node.raw))


def _unmatched(failed: list[str]) -> str | None:
    return "unmatched " + ", ".join(failed) if failed else None


def explain_selector(subject: Subject, dropped: Dropped) -> Finding:
    wanted = selector_text(subject.spec)
    keys = {k for k in (subject.spec.get("nodeSelector") or {})}
    # by the selector's keys: a node has dozens of labels
    seen = {f"{k}={node.labels[k]}" for node, _ in dropped for k in keys if k in node.labels}
    values = f" Values present: {', '.join(sorted(seen))}." if seen else (
        f" No node has the label{'s' if len(keys) > 1 else ''} at all." if keys else "")
    return Finding(Cause.SELECTOR_MISMATCH,
                   f"{wanted} matches none of the {len(dropped)} nodes.{values} Fix the selector, "
                   "or label a node that should run it.",
                   [Evidence(f"Pod {subject.label}", "spec.nodeSelector / affinity", wanted),
                    *[Evidence(f"Node/{n.name}", "metadata.labels", why)
                      for n, why in dropped[:5]]])


def selector_text(spec: Mapping[str, Any]) -> str:
    parts = [f"{k}={v}" for k, v in (spec.get("nodeSelector") or {}).items()]
    terms = ((((spec.get("affinity") or {}).get("nodeAffinity") or {})
              .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
             .get("nodeSelectorTerms") or [])
    if terms:
        parts.append("required node affinity")
    return "nodeSelector " + " + ".join(parts) if parts else "the node selection"
