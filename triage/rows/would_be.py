"""The Snapshot of its own ``where`` triages: the cluster with the pod someone asking for N
GPUs would submit, and its DRA claim template when it asks devices of a DeviceClass."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scoring.objects import K8sObject
from triage.rows.table import Rows
from triage.snapshot import Snapshot

WOULD_BE_POD = "gpuwhy-where"  # the would-be pod's name (and its DRA claim template's)


class WouldBe:
    """The cluster with the would-be pod in it, as rows; it keeps the Snapshot they are read
    from (they refer to it weakly), so read them while this lives."""

    def __init__(self, snapshot: Snapshot) -> None:
        self._snapshot = snapshot

    @property
    def rows(self) -> Rows:
        return self._snapshot.rows


def with_would_be_pod(rows: Rows, namespace: str, resource: str, count: int, scheduler: str,
                      selector: Mapping[str, str], tolerations: tuple[Mapping[str, Any], ...],
                      by_class: bool) -> WouldBe:
    """The cluster of ``rows`` with the would-be pod added (and, asking devices of the
    DeviceClass ``resource``, its claim template)."""
    pod = would_be_pod(namespace, resource, count, scheduler, selector, tolerations, by_class)
    return WouldBe(rows.snapshot.adding(
        [pod], [claim_template(namespace, resource, count)] if by_class else ()))


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
