"""The objects ``where`` puts into a Snapshot of its own: the pod someone asking for N GPUs
would submit, and its DRA claim template when it asks devices of a DeviceClass."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scoring.objects import K8sObject

WOULD_BE_POD = "gpuwhy-where"  # the would-be pod's name (and its DRA claim template's)


def would_be_pod(namespace: str, resource: str, count: int, scheduler: str,
                 selector: Mapping[str, str], tolerations: tuple[Mapping[str, Any], ...],
                 by_class: bool) -> K8sObject:
    """One container, ``count`` of the resource as a limit (or a claim for that many
    devices of the DeviceClass)."""
    container: dict[str, Any] = {"name": "gpus", "image": "none"}
    spec: dict[str, Any] = {"containers": [container], "schedulerName": scheduler}
    if by_class:
        container["resources"] = {"claims": [{"name": "gpus"}]}
        spec["resourceClaims"] = [{"name": "gpus", "resourceClaimTemplateName": WOULD_BE_POD}]
    else:
        container["resources"] = {"limits": {resource: str(count)}}
    if selector:
        spec["nodeSelector"] = dict(selector)
    if tolerations:
        spec["tolerations"] = [dict(t) for t in tolerations]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": WOULD_BE_POD, "namespace": namespace},
            "spec": spec, "status": {"phase": "Pending"}}


def claim_template(namespace: str, device_class: str, count: int) -> K8sObject:
    """The would-be pod's ResourceClaimTemplate: ``count`` devices of the DeviceClass."""
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": WOULD_BE_POD, "namespace": namespace},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpus", "exactly": {
                "deviceClassName": device_class, "allocationMode": "ExactCount",
                "count": count}}]}}}}
