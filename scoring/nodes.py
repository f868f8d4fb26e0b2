"""Node-side predicates of the funnel: selector / affinity match and taint toleration.

Each returns what fails (empty when the node passes), so the failing text becomes evidence.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from scoring.objects import K8sObject
from scoring.quantity import quantity_int

BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")
UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}


def node_name(node: Mapping[str, Any]) -> str:
    return str(node.get("metadata", {}).get("name", ""))


def labels(node: Mapping[str, Any]) -> Mapping[str, str]:
    found: Mapping[str, str] = node.get("metadata", {}).get("labels") or {}
    return found


# -- nodeSelector and required node affinity --------------------------------------------

def selector_mismatches(spec: Mapping[str, Any], node: Mapping[str, Any]) -> list[str]:
    """The selector terms the node fails, as `key=value` / `key In (a,b)` texts."""
    return selection_mismatches(spec.get("nodeSelector") or {}, required_terms(spec),
                                labels(node), node_name(node))


def required_terms(spec: Mapping[str, Any]) -> list[Any] | None:
    """Required node affinity's nodeSelectorTerms (None when there is none)."""
    affinity = (spec.get("affinity") or {}).get("nodeAffinity") or {}
    terms: list[Any] | None = (affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
                               or {}).get("nodeSelectorTerms")
    return terms


def selection_mismatches(node_selector: Mapping[str, Any], terms: Sequence[Any] | None,
                         node_labels: Mapping[str, str], name: str) -> list[str]:
    """``selector_mismatches`` of a pod's nodeSelector and required terms, parsed already, on
    a node's labels and name."""
    unmatched = [f"{key}={value}" for key, value in node_selector.items()
                 if node_labels.get(key) != value]
    if terms is not None:
        failures = [_term_failures(term, name, node_labels) for term in terms]
        if not any(not failed for failed in failures):  # terms are ORed; none matched
            unmatched.extend(failures[0] if failures and failures[0] else ["no term matches"])
    return unmatched


def _term_failures(term: Mapping[str, Any], name: str,
                   node_labels: Mapping[str, str]) -> list[str]:
    expressions = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not expressions and not fields:
        return ["empty nodeSelectorTerm matches no node"]
    failed = [describe(e) for e in expressions if not _matches(e, node_labels)]
    node_fields = {"metadata.name": name}
    failed += [describe(f) for f in fields if not _matches(f, node_fields)]
    return failed


def _matches(requirement: Mapping[str, Any], values: Mapping[str, str]) -> bool:
    key, operator = requirement.get("key", ""), requirement.get("operator", "")
    wanted = [str(v) for v in requirement.get("values") or []]
    present = key in values
    if operator == "In":
        return present and values[key] in wanted
    if operator == "NotIn":
        return not present or values[key] not in wanted
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    if operator in ("Gt", "Lt") and present and len(wanted) == 1:
        try:
            actual, bound = int(values[key]), int(wanted[0])
        except ValueError:
            return False
        return actual > bound if operator == "Gt" else actual < bound
    return False


def describe(requirement: Mapping[str, Any]) -> str:
    key, operator = requirement.get("key", ""), requirement.get("operator", "")
    values = ",".join(str(v) for v in requirement.get("values") or [])
    if operator in ("Exists", "DoesNotExist"):
        return f"{key} {operator}"
    return f"{key} {operator} ({values})"


# -- taints -----------------------------------------------------------------------------

def blocking_taints(node: Mapping[str, Any]) -> list[dict[str, Any]]:
    """NoSchedule / NoExecute taints, with a cordon counted as the unschedulable taint."""
    spec = node.get("spec") or {}
    taints = [t for t in spec.get("taints") or [] if t.get("effect") in BLOCKING_EFFECTS]
    if spec.get("unschedulable") and not any(
            t.get("key") == UNSCHEDULABLE_TAINT["key"] for t in taints):
        taints.append(dict(UNSCHEDULABLE_TAINT))
    return taints


def tolerates(tolerations: Sequence[Mapping[str, Any]], taint: Mapping[str, Any]) -> bool:
    return any(_toleration_matches(t, taint) for t in tolerations)


def _toleration_matches(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    operator = toleration.get("operator") or "Equal"
    key = toleration.get("key") or ""
    if not key:
        return operator == "Exists"  # empty key + Exists tolerates everything
    if key != taint.get("key"):
        return False
    if operator == "Exists":
        return True
    return (toleration.get("value") or "") == (taint.get("value") or "")


def taint_text(taint: Mapping[str, Any]) -> str:
    if taint.get("key") == UNSCHEDULABLE_TAINT["key"]:
        return "cordoned (node.kubernetes.io/unschedulable:NoSchedule)"
    value = taint.get("value")
    key = f"{taint.get('key')}={value}" if value else str(taint.get("key"))
    return f"{key}:{taint.get('effect')}"


# -- conditions -------------------------------------------------------------------------

def not_ready(node: Mapping[str, Any]) -> str | None:
    """The node's Ready condition when it is not True ("Unknown: NodeStatusUnknown, Kubelet
    stopped posting node status."); None when Ready, or when the node reports no conditions."""
    for condition in node.get("status", {}).get("conditions") or []:
        if condition.get("type") == "Ready" and condition.get("status") != "True":
            return (f"{condition.get('status')}: {condition.get('reason') or '?'}"
                    + (f", {condition['message']}" if condition.get("message") else ""))
    return None


# -- resources --------------------------------------------------------------------------

def status_amount(node: K8sObject, section: str, resource: str) -> int | None:
    """status.capacity / status.allocatable of one resource; None when the node lacks it."""
    value = (node.get("status", {}).get(section) or {}).get(resource)
    return None if value is None else quantity_int(value)
