"""Taints and cordons against the pod's tolerations (kube-scheduler's TaintToleration)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from scoring.nodes import taint_text, tolerates
from scoring.nodetable import NodeInfo
from scoring.verdict import Evidence
from triage.classify.subject import Dropped, Finding, Subject, capital
from triage.vocabulary import Cause

# Taints the node lifecycle controller sets for node conditions (not-ready, unreachable,
# memory-pressure, ...): no toleration is the fix, the node is (the cordon's is told apart).
CONDITION_TAINT_PREFIX = "node.kubernetes.io/"
CORDONED = "cordoned"  # how taint_text writes the cordon's taint


def drop_taint(subject: Subject, node: NodeInfo) -> str | None:
    if not node.taints:
        return None
    tolerations = subject.facts.tolerations
    taints = [t for t in node.taints if not tolerates(tolerations, t)]
    return ", ".join(taint_text(t) for t in taints) if taints else None


def explain_taint(subject: Subject, dropped: Dropped) -> Finding:
    def state(node: NodeInfo, why: str) -> str:
        return f"{node.name} is {why if why.startswith(CORDONED) else 'tainted ' + why}"

    # each node's untolerated taints, as drop_taint listed them; a cordon among them anywhere
    parts = {n.name: why.split(", ") for n, why in dropped}
    cordoned = [name for name, taints in parts.items()
                if any(t.startswith(CORDONED) for t in taints)]
    sick = [name for name, taints in parts.items()
            if any(t.startswith(CONDITION_TAINT_PREFIX) for t in taints)]
    every = {t for taints in parts.values() for t in taints if not t.startswith(CORDONED)}
    conditions = sorted(t for t in every if t.startswith(CONDITION_TAINT_PREFIX))
    taints = sorted(every - set(conditions))
    advice = []
    if conditions:
        advice.append(f"repair {', '.join(sick[:5])}: the node lifecycle controller put "
                      f"{'; '.join(conditions)} there for a failing node condition (kubelet "
                      "not ready or unreachable, memory / disk / PID pressure) and takes it "
                      "off once the condition clears")
    if taints:
        owners = sorted({t.split("=", 1)[1].split(":", 1)[0] for t in taints if "=" in t})
        ask = f" (ask {', '.join(owners)})" if owners else ""
        advice.append(f"add a toleration for {'; '.join(taints)} to the pod{ask}")
    if cordoned:
        advice.append(f"uncordon {', '.join(cordoned)} once it is healthy "
                      f"(kubectl uncordon {' '.join(cordoned)})")
    only = "The only matching node" if len(dropped) == 1 else "Every matching node"
    either = "; or " if conditions else " or "  # a repair reads apart from a toleration
    return Finding(Cause.TAINT_UNTOLERATED,
                   f"{only} blocks the pod: {'; '.join(state(n, w) for n, w in dropped[:5])}. "
                   f"{capital(either.join(advice))}. Don't remove taints: they protect the "
                   "node and its owners.",
                   [Evidence(f"Node/{n.name}", "spec.unschedulable" if why.startswith(
                       CORDONED) else "spec.taints", why) for n, why in dropped[:5]]
                   + [Evidence(f"Pod {subject.label}", "spec.tolerations",
                               _tolerations_text(subject.facts.tolerations))])


def _tolerations_text(tolerations: Sequence[Mapping[str, Any]]) -> str:
    custom = [t for t in tolerations
              if not str(t.get("key", "")).startswith("node.kubernetes.io/not-ready")
              and not str(t.get("key", "")).startswith("node.kubernetes.io/unreachable")]
    if not custom:
        return "none beyond the defaults"
    return ", ".join(f"{t.get('key', '*')}{'=' + t['value'] if t.get('value') else ''}"
                     f":{t.get('effect', '*')}" for t in custom)
