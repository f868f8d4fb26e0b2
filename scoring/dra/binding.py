"""A pending DRA pod the scheduler is binding (pure): every claim allocated and reserved for
it, the devices' binding conditions (DRADeviceBindingConditions, beta in 1.36) pending or
failed. No event says so while it waits, so without this it reads as an absent scheduler."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scoring.dra.inventory import Inventory
from scoring.dra.model import PodClaim, allocated_node_names
from scoring.objects import object_key


@dataclass(frozen=True)
class Binding:
    """A pending pod whose claims the scheduler has all allocated and reserved for it: it is
    binding the pod, waiting for the devices' binding conditions (DRADeviceBindingConditions)
    when they have any."""

    nodes: tuple[str, ...]
    devices: tuple[str, ...]  # "claim ns/x: gpu-0"
    waiting: tuple[str, ...]  # "gpu-0: FabricAttached (False: attaching)"
    failed: tuple[str, ...]  # "gpu-0: FabricAttachFailed (True: switch port down)"
    drivers: tuple[str, ...]


def binding(inventory: Inventory, claims: list[PodClaim], pod: Mapping[str, Any]
            ) -> Binding | None:
    """How far the scheduler is in binding the pod to the devices it allocated, read from the
    claims (status.allocation, status.reservedFor, status.devices[].conditions) and the
    devices' bindingConditions / bindingFailureConditions; None unless every claim is
    allocated and reserved for this pod."""
    uid = (pod.get("metadata") or {}).get("uid")
    name = object_key(pod)[1]
    if not claims or any(c.claim is None or c.allocated_nodes is None for c in claims):
        return None
    for claim in claims:
        reserved = (claim.claim or {}).get("status", {}).get("reservedFor") or []
        if not any(isinstance(r, Mapping) and (r.get("uid") == uid if uid and r.get("uid")
                                               else r.get("name") == name) for r in reserved):
            return None
    devices, waiting, failed, drivers = [], [], [], []
    for claim in claims:
        statuses = {(str(d.get("driver", "")), str(d.get("pool", "")), str(d.get("device", ""))):
                    {str(c.get("type")): c for c in d.get("conditions") or []
                     if isinstance(c, Mapping)}
                    for d in (claim.claim or {}).get("status", {}).get("devices") or []
                    if isinstance(d, Mapping)}
        for key in claim.allocated_devices:
            devices.append(f"claim {claim.label}: {key[2]}")
            drivers.append(key[0])
            published = inventory.device(key)
            raw = published.raw if published is not None else {}
            conditions = statuses.get(key, {})
            for wanted in raw.get("bindingFailureConditions") or []:
                if (conditions.get(str(wanted)) or {}).get("status") == "True":
                    failed.append(f"{key[2]}: {_condition(str(wanted), conditions)}")
            for wanted in raw.get("bindingConditions") or []:
                if (conditions.get(str(wanted)) or {}).get("status") != "True":
                    waiting.append(f"{key[2]}: {_condition(str(wanted), conditions)}")
    nodes = tuple(dict.fromkeys(n for c in claims for n in allocated_node_names(c)))
    return Binding(nodes, tuple(devices), tuple(waiting), tuple(failed),
                   tuple(dict.fromkeys(drivers)))


def _condition(kind: str, conditions: Mapping[str, Mapping[str, Any]]) -> str:
    found = conditions.get(kind)
    if found is None:
        return f"{kind} (not reported yet)"
    detail = ": ".join(str(x) for x in (found.get("reason"), found.get("message")) if x)
    return f"{kind} ({found.get('status')}{': ' + detail if detail else ''})"
