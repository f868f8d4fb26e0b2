"""Plain Kubernetes objects as JSON dicts, and the few facts every module reads off them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

K8sObject = dict[str, Any]

TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})


def part_of(obj: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """The object at ``key``; anything else there (null, a string, a list) counts as absent:
    these facts are read of objects before their odd parts are left out (triage.slim)."""
    value = obj.get(key)
    return value if isinstance(value, dict) else {}


def is_terminated(pod: Mapping[str, Any]) -> bool:
    """Succeeded and Failed pods hold no resources; Pending and Terminating ones do."""
    phase = part_of(pod, "status").get("phase")
    return isinstance(phase, str) and phase in TERMINAL_PHASES


def is_terminating(pod: Mapping[str, Any]) -> bool:
    """Being deleted: it holds what it holds until the kubelet has stopped it."""
    return bool(part_of(pod, "metadata").get("deletionTimestamp"))


def object_key(obj: Mapping[str, Any]) -> tuple[str, str]:
    """(namespace, name); a part not a string counts as absent ("")."""
    meta = part_of(obj, "metadata")
    namespace, name = meta.get("namespace"), meta.get("name")
    return (namespace if isinstance(namespace, str) else "",
            name if isinstance(name, str) else "")
