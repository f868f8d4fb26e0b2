"""Plain device-plugin clusters: a whole-GPU score per node and per-card facts from GFD."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, get_args

from scoring.verdict import Device

PRODUCT_LABEL = "nvidia.com/gpu.product"
MEMORY_LABEL = "nvidia.com/gpu.memory"  # MiB per card
COUNT_LABEL = "nvidia.com/gpu.count"

Policy = Literal["binpack", "spread"]
POLICIES: tuple[Policy, ...] = get_args(Policy)


def whole_gpu_score(allocatable: int, used: int, request: int, policy: str) -> float:
    """0.00–1.00. binpack: the share of allocatable in use once the pod is placed;
    spread: 1 − that. A node with nothing allocatable counts as full."""
    if policy not in POLICIES:
        raise ValueError(f"unknown score policy {policy!r}: use binpack or spread")
    share = (used + request) / allocatable if allocatable > 0 else 1.0
    share = min(max(share, 0.0), 1.0)
    return round(share if policy == "binpack" else 1.0 - share, 2)


def gfd_devices(labels: Mapping[str, str]) -> list[Device]:
    """The node's cards as GPU Feature Discovery labels them; [] without those labels.

    The device plugin publishes neither card UUIDs nor which pod holds which card, so
    ``uuid`` is empty, usage, cores and NUMA are None, and no card names a holder: which pod
    holds which card is for a source that knows (DCGM exporter, HAMi or DRA allocations).
    """
    count = _whole_number(labels.get(COUNT_LABEL))
    if not count:
        return []
    product = str(labels.get(PRODUCT_LABEL, ""))
    memory = _whole_number(labels.get(MEMORY_LABEL))
    return [Device(uuid="", index=index, type=product, memory_total=memory)
            for index in range(count)]


def _whole_number(value: object) -> int | None:
    try:
        number = int(str(value))
    except ValueError:
        return None
    return number if number >= 0 else None
