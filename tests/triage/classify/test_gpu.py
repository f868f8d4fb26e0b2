"""GPUs as extended resources, read as whole sentences: an exhausted node the scheduler has
nominated for the pod (nobody, one or two pods leaving), and a node that publishes its GPUs
only through DRA.

seven-states' research/full (1 nvidia.com/gpu, nodeSelector pool=a10-full: gpu-a10-full, 2
GPUs held by ml/train-a and team-b/train-b; team-b/crashed and team-b/done finished there) and
dra-basics' serving/legacy-gpu (a device-plugin request on a cluster of DRA nodes), changed the
way kube-scheduler and the cluster would change them.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from scoring.verdict import Verdict
from tests.conftest import find, load_lists
from tests.paths import FIXTURES
from triage.classify import triage
from triage.refs import parse_ref
from triage.snapshot import Snapshot

Lists = dict[str, list[dict[str, Any]]]


def _answer(lists: Lists, ref: str) -> Verdict:
    return triage(Snapshot(**copy.deepcopy(lists)), parse_ref(ref))


def _evidence(verdict: Verdict) -> list[tuple[str, str, str]]:
    return [(e.object, e.field, e.value) for e in verdict.evidence]


@pytest.mark.parametrize(("leaving", "holders", "when"), [
    ((), "ml/train-a, team-b/train-b", "they have gone."),
    ((("team-b", "train-b"),), "ml/train-a, team-b/train-b (terminating)",
     "team-b/train-b has gone."),
    ((("team-b", "train-b"), ("ml", "train-a")),
     "ml/train-a (terminating), team-b/train-b (terminating)",
     "ml/train-a, team-b/train-b have gone."),
])
def test_a_nominated_node_says_who_the_pod_waits_for(
        leaving: tuple[tuple[str, str], ...], holders: str, when: str) -> None:
    lists = load_lists("seven-states")
    find(lists["pods"], "full", "research")["status"]["nominatedNodeName"] = "gpu-a10-full"
    for namespace, name in leaving:  # evicted by the preemption, still stopping
        find(lists["pods"], name, namespace)["metadata"].update(
            deletionTimestamp="2026-11-30T12:55:00Z", deletionGracePeriodSeconds=30)
    verdict = _answer(lists, "research/full")
    assert (verdict.cause, verdict.action) == (
        "exhausted",
        f"gpu-a10-full has 2/2 nvidia.com/gpu held by {holders} (team-b/crashed and team-b/done"
        " are finished and hold nothing). Wait for them to finish, or relax nodeSelector"
        " pool=a10-full: gpu-a100-1 has 2 free; or add capacity. The scheduler has nominated"
        " gpu-a10-full for it (status.nominatedNodeName): it is preempting lower-priority pods"
        f" there and binds this one when {when}")
    assert _evidence(verdict) == [
        ("Node/gpu-a10-full", "status.allocatable[nvidia.com/gpu] − requests",
         f"2/2 nvidia.com/gpu held by {holders}"),
        ("Pod research/full", "status.nominatedNodeName", "gpu-a10-full"),
        ("Pod research/full", "scheduler message (preemption)",
         "1 No preemption victims found for incoming pod")]


def test_one_node_that_publishes_its_gpus_only_through_dra() -> None:
    lists = load_lists("dra-basics")
    find(lists["pods"], "legacy-gpu", "serving")["spec"]["nodeSelector"] = {
        "kubernetes.io/hostname": "dra-l4-1"}
    verdict = _answer(lists, "serving/legacy-gpu")
    assert (verdict.cause, verdict.action) == (
        "no-gpu-node",
        "no matching node reports nvidia.com/gpu in status.capacity: dra-l4-1 although its GFD"
        " labels say NVIDIA-L4. The device plugin is not registered there: restore the device"
        " plugin on dra-l4-1. dra-l4-1 publishes GPUs only as DRA devices (ResourceSlices): ask"
        " for them through a ResourceClaim instead.")
    assert _evidence(verdict)[0] == ("Node/dra-l4-1", "status.capacity[nvidia.com/gpu]",
                                     "absent")


def _mig_pod(gpus: str, slices: str) -> Lists:
    """funnel-edges' lab/mig-pod (pool=mig: gpu-mig-1, nvidia.com/gpu 1 and
    nvidia.com/mig-1g.10gb 7, lab/mig-holder holding 1 + 6) asking both resources."""
    lists = load_lists(FIXTURES / "scenarios-extra" / "funnel-edges")
    resources = find(lists["pods"], "mig-pod", "lab")["spec"]["containers"][0]["resources"]
    for section in ("limits", "requests"):
        resources[section].update({"nvidia.com/gpu": gpus, "nvidia.com/mig-1g.10gb": slices})
    return lists


def test_two_gpu_resources_both_held() -> None:
    verdict = _answer(_mig_pod("1", "2"), "lab/mig-pod")
    held = "1/1 nvidia.com/gpu held; 6/7 nvidia.com/mig-1g.10gb held"
    assert (verdict.cause, verdict.action) == (
        "exhausted",
        f"gpu-mig-1 has {held} by lab/mig-holder. Wait for them to finish; or add capacity.")
    assert _evidence(verdict)[0] == (
        "Node/gpu-mig-1", "status.allocatable[nvidia.com/gpu] − requests",
        f"{held} by lab/mig-holder")
    assert {n.name: n.detail for n in verdict.nodes}["gpu-mig-1"] == held


def test_two_gpu_resources_both_too_large() -> None:
    verdict = _answer(_mig_pod("2", "8"), "lab/mig-pod")
    short = ("nvidia.com/gpu allocatable 1 < request 2, nvidia.com/mig-1g.10gb allocatable 7 <"
             " request 8")
    assert verdict.cause == "too-large"
    assert verdict.action.startswith(
        "no node you can use has 2 nvidia.com/gpu: the largest is gpu-mig-1 with 1.")
    assert _evidence(verdict)[:2] == [
        ("Pod lab/mig-pod", "effective request nvidia.com/gpu", "2"),
        ("Node/gpu-mig-1", "status.allocatable[nvidia.com/gpu]", short)]


def test_a_node_without_the_second_resource_names_that_one() -> None:
    # gpu-a100-2 (pool a100) has 4 nvidia.com/gpu and no nvidia.com/mig-1g.10gb
    lists = _mig_pod("1", "2")
    find(lists["pods"], "mig-pod", "lab")["spec"]["nodeSelector"] = {"pool": "a100"}
    verdict = _answer(lists, "lab/mig-pod")
    assert (verdict.cause, verdict.action) == (
        "no-gpu-node",
        "no matching node reports nvidia.com/mig-1g.10gb in status.capacity: gpu-a100-2"
        " although its GFD labels say NVIDIA-A100-SXM4-80GB. The device plugin is not"
        " registered there: restore the device plugin on gpu-a100-2.")
    assert _evidence(verdict)[0] == (
        "Node/gpu-a100-2", "status.capacity[nvidia.com/mig-1g.10gb]", "absent")
    assert {n.name: n.detail for n in verdict.nodes}["gpu-a100-2"] == (
        "no nvidia.com/mig-1g.10gb in status.capacity")


def test_two_nodes_that_offer_none_of_their_gpus() -> None:
    # seven-states' research/broken-node (pool v100-broken: gpu-v100-broken, 4 GPUs,
    # allocatable 0), with gpu-a10-full relabelled into that pool and its allocatable 0 too
    lists = load_lists("seven-states")
    node = find(lists["nodes"], "gpu-a10-full")
    node["metadata"]["labels"]["pool"] = "v100-broken"
    node["status"]["allocatable"]["nvidia.com/gpu"] = "0"
    verdict = _answer(lists, "research/broken-node")
    assert (verdict.cause, verdict.action) == (
        "allocatable-zero",
        "gpu-a10-full: nvidia.com/gpu capacity 2, allocatable 0; gpu-v100-broken: nvidia.com/gpu"
        " capacity 4, allocatable 0. The GPUs exist but the node offers none: repair the node"
        " (driver, device plugin, validator); adding nodes won't help.")
    assert _evidence(verdict)[:2] == [
        ("Node/gpu-a10-full", "status.allocatable[nvidia.com/gpu]",
         "nvidia.com/gpu capacity 2, allocatable 0"),
        ("Node/gpu-v100-broken", "status.allocatable[nvidia.com/gpu]",
         "nvidia.com/gpu capacity 4, allocatable 0")]
