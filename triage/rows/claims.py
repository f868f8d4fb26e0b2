"""A pod's (or pod template's) DRA claims as the Subject carries them: read off the pod's
JSON here, resolved on the snapshot's DRA rows (``scoring.dra``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scoring.dra import IMPLICIT_EXTENDED_PREFIX, ClaimSet, serves_extended
from scoring.objects import K8sObject
from triage.pods import effective_request, named_resources
from triage.snapshot import Snapshot


def pod_spec(pod: K8sObject) -> dict[str, Any]:
    """The pod's spec (a copy of its top level), as the Subject carries it."""
    return dict(pod.get("spec") or {})


def claim_set(snapshot: Snapshot, gpu_drivers: tuple[str, ...], namespace: str,
              spec: Mapping[str, Any], pod: K8sObject | None = None,
              gpu: Mapping[str, int] | None = None) -> ClaimSet | None:
    """The claims of a pod, or of a pod template (a workload whose pods do not exist); for a
    pending pod, also the claims kube-scheduler would make for GPU limits a DeviceClass
    serves (extended resources backed by DRA). None when DRA has no part in the answer."""
    status = (pod or {}).get("status") or {}
    asks = _extended_asks(spec, gpu or {}) if pod is not None and not spec.get("nodeName") else {}
    # a cluster that publishes no ResourceSlice meets GPU limits by device plugins alone (a
    # cold read does not even fetch its DeviceClasses then)
    served = serves_extended(snapshot.dra, asks) and any(
        obj.get("kind") == "ResourceSlice" for obj in snapshot.dra)
    if not (spec.get("resourceClaims") or status.get("extendedResourceClaimStatus") or served):
        return None
    inventory = snapshot.dra_inventory(gpu_drivers)
    return ClaimSet(inventory, inventory.pod_claims(pod) if pod is not None
                    else inventory.template_claims(namespace, spec),
                    inventory.extended_claims(pod, asks) if pod is not None and served else {})


def _extended_asks(spec: Mapping[str, Any], gpu: Mapping[str, int]) -> dict[str, int]:
    """The extended resources a DeviceClass might serve: the pod's GPU resources, and any
    ``deviceclass.resource.kubernetes.io/<class>`` it asks for by the class's own name."""
    implicit = {name for name in named_resources(spec)
                if name.startswith(IMPLICIT_EXTENDED_PREFIX)}
    return {**gpu, **{name: count for name in sorted(implicit)
                      if (count := int(effective_request(spec, name))) > 0}}
