"""A pending DRA pod the scheduler is binding (pure): every claim allocated and reserved for
it, the devices' binding conditions (DRADeviceBindingConditions, beta in 1.36) pending or
failed. No event says so while it waits, so without this it reads as an absent scheduler."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from scoring.dra.inventory import Inventory
from scoring.dra.model import PodClaim, allocated_node_names
from scoring.dra.rows import Condition


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


def binding(inventory: Inventory, claims: list[PodClaim], uid: str, name: str
            ) -> Binding | None:
    """How far the scheduler is in binding the pod to the devices it allocated, read from the
    claims (status.allocation, status.reservedFor, status.devices[].conditions) and the
    devices' bindingConditions / bindingFailureConditions; None unless every claim is
    allocated and reserved for this pod (by its uid, else its name)."""
    rows = [c.claim for c in claims if c.claim is not None and c.allocated_nodes is not None]
    if not claims or len(rows) < len(claims):
        return None
    for row in rows:
        if not any(r.uid == uid if uid and r.uid else r.name == name
                   for r in row.reserved_for):
            return None
    devices, waiting, failed, drivers = [], [], [], []
    for claim, row in zip(claims, rows, strict=True):
        for key in claim.allocated_devices:
            devices.append(f"claim {claim.label}: {key[2]}")
            drivers.append(key[0])
            published = inventory.device(key)
            conditions = row.conditions.get(key, {})
            for wanted in published.binding_failure_conditions if published else ():
                if (found := conditions.get(wanted)) is not None and found.status == "True":
                    failed.append(f"{key[2]}: {_condition(wanted, conditions)}")
            for wanted in published.binding_conditions if published else ():
                if (found := conditions.get(wanted)) is None or found.status != "True":
                    waiting.append(f"{key[2]}: {_condition(wanted, conditions)}")
    nodes = tuple(dict.fromkeys(n for c in claims for n in allocated_node_names(c)))
    return Binding(nodes, tuple(devices), tuple(waiting), tuple(failed),
                   tuple(dict.fromkeys(drivers)))


def _condition(kind: str, conditions: Mapping[str, Condition]) -> str:
    found = conditions.get(kind)
    if found is None:
        return f"{kind} (not reported yet)"
    detail = ": ".join(x for x in (found.reason, found.message) if x)
    return f"{kind} ({found.status}{': ' + detail if detail else ''})"
