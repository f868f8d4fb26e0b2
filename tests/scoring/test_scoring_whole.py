"""scoring.whole: the whole-GPU score and GFD device facts for plain device-plugin nodes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from scoring.nodetable import node_info
from scoring.verdict import Device
from scoring.whole import gfd_devices, whole_gpu_score


@pytest.mark.parametrize(("allocatable", "used", "asked", "binpack", "spread"), [
    (8, 4, 2, 0.75, 0.25),
    (8, 0, 1, 0.12, 0.88),  # 0.125 rounds to 0.12 (round half to even)
    (3, 1, 1, 0.67, 0.33),
    (4, 4, 2, 1.0, 0.0),  # over-full clamps to 1
    (0, 0, 1, 1.0, 0.0),  # nothing allocatable counts as full
])
def test_whole_gpu_score_both_policies(allocatable: int, used: int, asked: int,
                                       binpack: float, spread: float) -> None:
    assert whole_gpu_score(allocatable, used, asked, "binpack") == binpack
    assert whole_gpu_score(allocatable, used, asked, "spread") == spread


def test_whole_gpu_score_unknown_policy_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown score policy 'tightest': use binpack or spread"):
        whole_gpu_score(8, 0, 1, "tightest")


def gfd_node(labels: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "gpu-a10-full", "labels": {"kubernetes.io/os": "linux",
                                                            **labels}},
            "status": {"capacity": {"nvidia.com/gpu": "2"}}}


def labels_of(labels: dict[str, str]) -> Mapping[str, str]:
    """The labels the node table reads off such a node."""
    return node_info(gfd_node(labels)).labels


def test_gfd_devices_from_labels_with_unknown_usage() -> None:
    node = gfd_node({"nvidia.com/gpu.product": "NVIDIA-A10", "nvidia.com/gpu.memory": "23028",
                     "nvidia.com/gpu.count": "2"})
    # No holder on any card: the Node object does not say which pod holds which one.
    assert gfd_devices(node_info(node).labels) == [
        Device(uuid="", index=0, type="NVIDIA-A10", memory_used=None, memory_total=23028,
               cores_used=None, cores_total=None, numa=None, healthy=True,
               holders=[], code=None, holder_source=None),
        Device(uuid="", index=1, type="NVIDIA-A10", memory_total=23028),
    ]


def test_gfd_devices_without_labels_or_with_bad_ones() -> None:
    assert gfd_devices(labels_of({})) == []
    assert gfd_devices(labels_of({"nvidia.com/gpu.count": "two"})) == []
    odd_memory = gfd_devices(labels_of({"nvidia.com/gpu.count": "1",
                                       "nvidia.com/gpu.memory": "lots"}))
    assert [(d.type, d.memory_total) for d in odd_memory] == [("", None)]
