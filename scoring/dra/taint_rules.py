"""DeviceTaintRules (resource.k8s.io/v1beta2, DRADeviceTaintRules: beta in 1.36, off by
default): a rule puts one taint on every device its selector matches, with the same effect as
if the DRA driver had written the taint into the ResourceSlice (pure).

The selector matches by ``driver``, ``pool`` and ``device`` name, each optional; an empty
selector matches every device, a rule without one matches none.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from scoring.objects import K8sObject, object_key

RULE_KIND = "DeviceTaintRule"
# On a taint a rule added, the rule's name: the answer names where the taint comes from.
RULE_FIELD = "deviceTaintRule"


def _matches(selector: Mapping[str, Any], driver: str, pool: str, device: str) -> bool:
    return all(not selector.get(field) or selector.get(field) == value
               for field, value in (("driver", driver), ("pool", pool), ("device", device)))


def with_rule_taints(slices: list[K8sObject], objects: Iterable[K8sObject]) -> list[K8sObject]:
    """The slices with each rule's taint added to the devices it selects (copies of the
    slices and devices a rule touches; the others as they are)."""
    rules = [(object_key(rule)[1], selector, taint) for rule in objects
             if rule.get("kind") == RULE_KIND
             for spec in [rule.get("spec") or {}]
             if isinstance(selector := spec.get("deviceSelector"), Mapping)
             and isinstance(taint := spec.get("taint"), Mapping)]
    if not rules:
        return slices
    tainted = []
    for resource_slice in slices:
        spec = resource_slice.get("spec") or {}
        driver, pool = str(spec.get("driver", "")), str((spec.get("pool") or {}).get("name", ""))
        devices, changed = [], False
        for device in spec.get("devices") or []:
            added = [{**taint, RULE_FIELD: name} for name, selector, taint in rules
                     if isinstance(device, Mapping)
                     and _matches(selector, driver, pool, str(device.get("name", "")))]
            if added:
                device = {**device, "taints": [*(device.get("taints") or []), *added]}
                changed = True
            devices.append(device)
        tainted.append({**resource_slice, "spec": {**spec, "devices": devices}}
                       if changed else resource_slice)
    return tainted
