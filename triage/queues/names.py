"""Kueue's names (its API group, labels, annotations, gates) and the raw accessors the row
builders read its objects with."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

GROUP = "kueue.x-k8s.io"
# The versions gpuwhy reads, most preferred first (v1beta2 is stored by recent releases).
KNOWN_VERSIONS = ("v1beta2", "v1beta1")
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
CLUSTER_QUEUE_LABEL = "kueue.x-k8s.io/cluster-queue-name"
WORKLOAD_ANNOTATION = "kueue.x-k8s.io/workload"
JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"
# Kueue gates a plain pod until admission (recent releases add a topology gate as well).
GATE_PREFIX = "kueue.x-k8s.io/"
# The kinds of a dump's queues.json, in the order `kubectl get` lists them.
QUEUE_KINDS = ("ResourceFlavor", "ClusterQueue", "LocalQueue", "Workload", "Cohort",
               "WorkloadPriorityClass")
# What a Kubernetes object name may be (a DNS subdomain); a label that is not one names no queue.
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
_UID_IN_MESSAGE = re.compile(r"\(UID: (?P<uid>[0-9a-fA-F-]+)")


def part(obj: object, key: str) -> Mapping[str, Any]:
    """``obj[key]`` when both are mappings, else {}: a Kueue object of an odd shape (a newer
    version, a hand-edited dump) gives an answer, never a traceback."""
    value = obj.get(key) if isinstance(obj, Mapping) else None
    return value if isinstance(value, Mapping) else {}


def entries(obj: object, key: str) -> list[Mapping[str, Any]]:
    """The mappings of the list ``obj[key]`` (anything else in it, or in its place, skipped)."""
    value = obj.get(key) if isinstance(obj, Mapping) else None
    return [item for item in value if isinstance(item, Mapping)] if isinstance(value, list) else []


def text(obj: object, key: str) -> str:
    """``obj[key]`` as a name: "" unless a string."""
    value = obj.get(key) if isinstance(obj, Mapping) else None
    return value if isinstance(value, str) else ""


def is_kueue(obj: Mapping[str, Any]) -> bool:
    return str(obj.get("apiVersion", "")).partition("/")[0] == GROUP


def queue_name(obj: Mapping[str, Any]) -> str | None:
    """The LocalQueue the object asks for (label kueue.x-k8s.io/queue-name), or None."""
    value = part(part(obj, "metadata"), "labels").get(QUEUE_LABEL)
    return None if value is None else str(value)


def valid_name(name: str) -> bool:
    return bool(_NAME.match(name))


def kueue_gates(spec: Mapping[str, Any]) -> list[str]:
    """The pod's scheduling gates Kueue owns (it removes them at admission)."""
    return [name for gate in entries(spec, "schedulingGates")
            if (name := text(gate, "name")).startswith(GATE_PREFIX)]


def kueue_involved(obj: Mapping[str, Any]) -> bool:
    """Queued or admitted by Kueue: the queue label, a Kueue gate, or the labels and
    annotation Kueue puts on the pods of a workload it admitted."""
    metadata = part(obj, "metadata")
    labels = part(metadata, "labels")
    return (QUEUE_LABEL in labels or CLUSTER_QUEUE_LABEL in labels
            or WORKLOAD_ANNOTATION in part(metadata, "annotations")
            or bool(kueue_gates(part(obj, "spec"))))


def preemptor_uid(message: str) -> str:
    """The preempting Workload's uid in Kueue's "Preempted to accommodate a workload (UID: …"."""
    match = _UID_IN_MESSAGE.search(message)
    return match["uid"] if match else ""
