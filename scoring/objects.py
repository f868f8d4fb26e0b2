"""Plain Kubernetes objects as JSON dicts, and the few facts every module reads off them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

K8sObject = dict[str, Any]

TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})


def is_terminated(pod: Mapping[str, Any]) -> bool:
    """Succeeded and Failed pods hold no resources; Pending and Terminating ones do."""
    return pod.get("status", {}).get("phase") in TERMINAL_PHASES


def is_terminating(pod: Mapping[str, Any]) -> bool:
    """Being deleted: it holds what it holds until the kubelet has stopped it."""
    return bool(pod.get("metadata", {}).get("deletionTimestamp"))


def object_key(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata", {})
    return meta.get("namespace", "") or "", meta.get("name", "") or ""
