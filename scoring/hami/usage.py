"""The usage of each HAMi card, summed like HAMi over the rows of the pods it placed."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from scoring.rows import PodRow


@dataclass
class Usage:
    used: int = 0  # tasks sharing the card
    usedmem: int = 0  # MiB
    usedcores: int = 0
    holders: list[str] = field(default_factory=list)  # "ns/pod"


def device_usage(node_name: str, pods_on_node: Iterable[PodRow]) -> dict[str, Usage]:
    """Usage per card UUID, summed like HAMi over pods it assigned to this node.

    Only pods whose ``hami.io/vgpu-node`` names the node count, and only while they hold
    their devices: Succeeded and Failed pods do not, Pending and Terminating ones do.
    """
    usage: dict[str, Usage] = {}
    for pod in pods_on_node:
        if pod.hami is None or pod.hami.node != node_name or pod.terminated:
            continue
        for device in pod.hami.devices:
            card = usage.setdefault(device.card, Usage())
            card.used += 1
            card.usedmem += device.memory
            card.usedcores += device.cores
            if pod.label not in card.holders:
                card.holders.append(pod.label)
    return usage
