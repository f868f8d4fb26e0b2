"""Slim copies of nodes and pods: only the fields triage and scoring read about objects other
than the one being triaged. The watch cache keeps them; a dump is read with them for the pods
a triage of one namespace looks at only in passing."""

from __future__ import annotations

from typing import Any

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
    pod without a startTime (150,000 pods' other conditions would be kept for nothing)."""
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


def device_annotations(annotations: Any) -> Any:
    """Of a pod's annotations, those that record device allocations (anything but an object
    is kept as it is)."""
    if not isinstance(annotations, dict):
        return annotations
    return {k: v for k, v in annotations.items() if k.startswith(SLIM_POD_ANNOTATION_PREFIXES)}


def scheduled_conditions(conditions: Any) -> list[Any]:
    """Of a pod's conditions, the one a pod without a startTime is kept for: PodScheduled."""
    return [c for c in conditions or () if isinstance(c, dict) and c.get("type") == "PodScheduled"]


def slim_outside(namespace: str, pod: K8sObject) -> K8sObject:
    """The pod whole when it is in ``namespace``, else its slim copy."""
    return pod if pod["metadata"].get("namespace") == namespace else slim_pod(pod)


def slim_node(node: K8sObject) -> K8sObject:
    small: K8sObject = slim(node, SLIM_NODE)
    return small
