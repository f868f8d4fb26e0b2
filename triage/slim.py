"""Slim copies of nodes and pods: only the fields triage and scoring read about objects other
than the one being triaged. The watch cache keeps them; a dump is read with them for the pods
a triage of one namespace looks at only in passing."""

from __future__ import annotations

from typing import Any, cast

from scoring.objects import K8sObject

# The fields triage and scoring read; everything else (images, managedFields, env, volumes,
# last-applied-configuration, ...) is dropped to keep 150,000 pods small in memory.
_Keep = dict[str, Any]  # a dict (checked as one): the shape of what is kept
SLIM_METADATA: _Keep = {key: True for key in (
    "name", "namespace", "uid", "labels", "ownerReferences", "creationTimestamp",
    "deletionTimestamp", "resourceVersion")}
SLIM_NODE: _Keep = {
    "apiVersion": True, "kind": True,
    "metadata": {**SLIM_METADATA, "annotations": True},
    "spec": {"taints": True, "unschedulable": True},
    "status": {"capacity": True, "allocatable": True, "runtimeHandlers": True,
               # what scoring.nodes.not_ready reads: not the times, which differ per node
               # (the kubelet's heartbeat) where a pool's conditions are otherwise alike
               "conditions": {"type": True, "status": True, "reason": True, "message": True}},
}
_CONTAINER: _Keep = {"name": True, "resources": True, "restartPolicy": True}
SLIM_POD: _Keep = {
    "apiVersion": True, "kind": True,
    "metadata": {**SLIM_METADATA, "annotations": True},
    "spec": {"nodeName": True, "schedulerName": True, "priority": True, "overhead": True,
             "resources": True, "containers": _CONTAINER, "initContainers": _CONTAINER,
             "resourceClaims": True,  # a DRA claim asks for a GPU (the stuck-pod watch)
             "schedulingGroup": True},  # a gang counts its pods (scheduling.k8s.io)
    # how long a holder has held: startTime, else the PodScheduled condition's time (see
    # trim_pod)
    "status": {"phase": True, "startTime": True,
               "conditions": {"type": True, "status": True, "lastTransitionTime": True}},
}
# The parts triage reads of a pod and of a node, and the JSON type each must have: a type; a
# dict, an object of such parts; a one-item list, a list of such items. A part of another type
# (null, a string where an object belongs, ...) counts as absent, as kube-apiserver would
# never have served it; a list keeps only its items of the right type.
_RESOURCES = {"requests": dict, "limits": dict}
_PARTS_CONTAINER = [{"name": str, "resources": _RESOURCES}]
_PARTS_METADATA = {"name": str, "namespace": str, "labels": dict, "annotations": dict,
                   "ownerReferences": [dict]}
POD_PARTS: _Keep = {
    "metadata": _PARTS_METADATA,
    "spec": {"containers": _PARTS_CONTAINER, "initContainers": _PARTS_CONTAINER,
             "overhead": dict, "resources": _RESOURCES},
    "status": {"conditions": [dict]},
}
NODE_PARTS: _Keep = {
    "metadata": _PARTS_METADATA,
    "spec": {"taints": [dict]},
    "status": {"capacity": dict, "allocatable": dict, "conditions": [dict]},
}
_ODD = object()  # a part of the wrong type: left out


def sound(obj: K8sObject, parts: _Keep) -> K8sObject:
    """``obj`` with each of ``parts`` of the wrong JSON type left out (``obj`` itself when
    none is: most objects are read without a copy)."""
    kept = _sound(obj, parts)
    return {} if kept is _ODD else cast(K8sObject, kept)


def is_sound(obj: Any, parts: Any) -> bool:
    """Whether ``obj`` has every one of ``parts`` of its right type (or absent)."""
    return _sound(obj, parts) is obj


def _sound(value: Any, part: Any) -> Any:
    if isinstance(part, type):
        return value if isinstance(value, part) else _ODD
    if isinstance(part, list):
        if not isinstance(value, list):
            return _ODD
        items = [kept for item in value if (kept := _sound(item, part[0])) is not _ODD]
        same = len(items) == len(value) and all(a is b for a, b in zip(items, value, strict=True))
        return value if same else items
    if not isinstance(value, dict):
        return _ODD
    copied: dict[str, Any] | None = None
    for key, inner in part.items():
        if key in value and (kept := _sound(value[key], inner)) is not value[key]:
            if copied is None:
                copied = dict(value)
            if kept is _ODD:
                del copied[key]
            else:
                copied[key] = kept
    return value if copied is None else copied


# Pod annotations worth keeping: HAMi's allocation records (device usage per card).
SLIM_POD_ANNOTATION_PREFIXES = ("hami.io/", "4pd.io/", "nvidia.com/")


def slim(obj: Any, keep: _Keep | bool) -> Any:
    if keep is True:
        return obj
    if isinstance(obj, list):
        return [slim(item, keep) for item in obj]
    if isinstance(obj, dict) and isinstance(keep, dict):
        # a kept-whole value is taken as it is, without a call (most values of a pod are)
        return {key: value if (inner := keep[key]) is True else slim(value, inner)
                for key, value in obj.items() if key in keep}
    return obj


def slim_pod(pod: K8sObject) -> K8sObject:
    return trim_pod(slim(pod, SLIM_POD))


def trim_pod(small: K8sObject) -> K8sObject:
    """A pod cut to SLIM_POD keeps only the annotations that record device allocations, and
    a condition only when it says since when the pod has held its node: PodScheduled, on a
    pod without a startTime (150,000 pods' other conditions would be kept for nothing). Its
    parts of the wrong type are left out (``sound``)."""
    small = sound(small, POD_PARTS)
    annotations = small.get("metadata", {}).get("annotations")
    if annotations:
        small["metadata"]["annotations"] = device_annotations(annotations)
    status = small.get("status")
    if status and "conditions" in status:
        if status.get("startTime"):
            del status["conditions"]
        else:
            status["conditions"] = scheduled_conditions(status["conditions"])
    return small


def device_annotations(annotations: dict[str, Any]) -> dict[str, Any]:
    """Of a pod's annotations (an object: ``sound`` or the page's check saw to it), those that
    record device allocations."""
    return {k: v for k, v in annotations.items() if k.startswith(SLIM_POD_ANNOTATION_PREFIXES)}


def scheduled_conditions(conditions: Any) -> list[Any]:
    """Of a pod's conditions, the one a pod without a startTime is kept for: PodScheduled."""
    return [c for c in conditions or () if isinstance(c, dict) and c.get("type") == "PodScheduled"]


def slim_outside(namespace: str, pod: K8sObject) -> K8sObject:
    """The pod whole when it is in ``namespace``, else its slim copy."""
    return pod if pod["metadata"].get("namespace") == namespace else slim_pod(pod)


def slim_node(node: K8sObject) -> K8sObject:
    return sound(slim(node, SLIM_NODE), NODE_PARTS)
