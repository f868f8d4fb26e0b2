"""GPUs as extended resources, read as whole sentences: an exhausted node the scheduler has
nominated for the pod (nobody, one or two pods leaving), a node that publishes its GPUs only
through DRA, pools grown to more nodes than an answer names, and pods asking two GPU
resources of which a node lacks, offers none of or has too few of one.

seven-states' research/full (1 nvidia.com/gpu, nodeSelector pool=a10-full: gpu-a10-full, 2
GPUs held by ml/train-a and team-b/train-b; team-b/crashed and team-b/done finished there),
its other pending pods, funnel-edges' lab/mig-pod and dra-basics' serving/legacy-gpu (a
device-plugin request on a cluster of DRA nodes), changed the way kube-scheduler and the
cluster would change them.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from scoring.verdict import Verdict
from tests.conftest import find, load_lists
from tests.paths import FIXTURES
from tests.triage.classify.test_dra import _racks
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


def test_one_finished_pod_on_a_full_node_is_said_in_the_singular() -> None:
    lists = load_lists("seven-states")
    lists["pods"].remove(find(lists["pods"], "crashed", "team-b"))
    verdict = _answer(lists, "research/full")
    assert verdict.action.startswith(
        "gpu-a10-full has 2/2 nvidia.com/gpu held by ml/train-a, team-b/train-b (team-b/done is"
        " finished and holds nothing). Wait for them to finish,")


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


def test_only_the_first_five_nodes_are_looked_up_for_dra_devices() -> None:
    """dra-basics' serving/legacy-gpu (no selector) with a sixth node, rack-1, whose DRA driver
    publishes two A100s: like the evidence, the sentence on DRA devices covers the first five
    nodes (cpu-1, dra-a100-1, dra-a100-2, dra-l4-1, gpu-spare-1)."""
    lists = load_lists("dra-basics")
    _racks(lists, count=1, devices=2)
    verdict = _answer(lists, "serving/legacy-gpu")
    assert verdict.cause == "no-gpu-node"
    assert verdict.action.endswith(
        "restore the device plugin on cpu-1, dra-a100-1, dra-a100-2, dra-l4-1, gpu-spare-1,"
        " rack-1. dra-a100-1, dra-a100-2, dra-l4-1 publish GPUs only as DRA devices"
        " (ResourceSlices): ask for them through a ResourceClaim instead.")


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


@pytest.mark.parametrize(("gpus", "slices", "second_node", "sentence", "evidence"), [
    ("1", "8", None, "8 nvidia.com/mig-1g.10gb: the largest is gpu-mig-1 with 7",
     [("Pod lab/mig-pod", "effective request nvidia.com/mig-1g.10gb", "8"),
      ("Node/gpu-mig-1", "status.allocatable[nvidia.com/mig-1g.10gb]",
       "nvidia.com/mig-1g.10gb allocatable 7 < request 8")]),
    ("2", "7", {"nvidia.com/gpu": "2", "nvidia.com/mig-1g.10gb": "4"},
     "2 nvidia.com/gpu: the largest is gpu-mig-1 with 1",
     [("Pod lab/mig-pod", "effective request nvidia.com/gpu", "2"),
      ("Node/gpu-mig-1", "status.allocatable[nvidia.com/gpu]",
       "nvidia.com/gpu allocatable 1 < request 2"),
      ("Node/gpu-mig-1-2", "status.allocatable[nvidia.com/mig-1g.10gb]",
       "nvidia.com/mig-1g.10gb allocatable 4 < request 7")]),
])
def test_too_large_speaks_of_a_resource_the_nodes_are_short_of(
        gpus: str, slices: str, second_node: dict[str, str] | None, sentence: str,
        evidence: list[tuple[str, str, str]]) -> None:
    """gpu-mig-1 has 1 GPU and 7 slices. A pod asking 1 GPU and 8 slices is too large for
    its slices alone. With a second node in pool mig, gpu-mig-1-2 (2 GPUs, 4 slices), a pod
    asking 2 + 7 is too large for gpu-mig-1's GPUs and for gpu-mig-1-2's slices: gpu-mig-1-2,
    with the 2 GPUs asked, is not the largest node short of GPUs."""
    lists = _mig_pod(gpus, slices)
    if second_node is not None:
        _, name = _pool_grows(lists, "gpu-mig-1", 1)
        for section in ("capacity", "allocatable"):
            find(lists["nodes"], name)["status"][section].update(second_node)
    verdict = _answer(lists, "lab/mig-pod")
    assert (verdict.cause, verdict.action) == (
        "too-large",
        f"no node you can use has {sentence}. Split the job or get a bigger node (or access to"
        " one); waiting never helps.")
    assert _evidence(verdict)[:len(evidence)] == evidence


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


# -- more nodes and pods, as when a pool scales up and jobs land on it ----------------------

def _pool_grows(lists: Lists, template: str, count: int) -> list[str]:
    """``count`` more nodes like ``template`` (its pool, labels, capacity and taints), named
    ``template-2``, ``template-3``, ...; the pool's names, ``template`` first."""
    model = find(lists["nodes"], template)
    names = [template]
    for number in range(2, count + 2):
        name = f"{template}-{number}"
        node = copy.deepcopy(model)
        node["metadata"].update(name=name, uid=f"00000000-0000-4000-8000-{number:012d}")
        node["metadata"]["labels"]["kubernetes.io/hostname"] = name
        lists["nodes"].append(node)
        names.append(name)
    return names


def _pod_like(lists: Lists, model: str, name: str, node: str, gpus: int = 1) -> dict[str, Any]:
    """A pod made like ``model`` ("namespace/name", with its phase) bound to ``node``, asking
    ``gpus`` nvidia.com/gpu (none when 0)."""
    namespace, model_name = model.split("/")
    pod = copy.deepcopy(find(lists["pods"], model_name, namespace))
    pod["metadata"].update(name=name, uid=f"00000000-0000-4000-9000-{len(lists['pods']):012d}")
    pod["spec"]["nodeName"] = node
    for resources in [pod["spec"]["containers"][0]["resources"]] + [
            status["resources"] for status in pod["status"].get("containerStatuses", [])]:
        for section in ("limits", "requests"):
            resources[section].pop("nvidia.com/gpu", None)
            if gpus:
                resources[section]["nvidia.com/gpu"] = str(gpus)
    lists["pods"].append(pod)
    return pod


@pytest.mark.parametrize(("finished", "named"), [
    # a CPU-only pod on the second node, three more GPU pods on the third: four named
    ({2: [("cpu-done", 0)], 3: [("done-3a", 1), ("done-3b", 1), ("done-3c", 1)]},
     "team-b/crashed and team-b/done and team-b/done-3a and team-b/done-3b"),
    ({4: [("done-4", 1)]}, "team-b/crashed and team-b/done"),  # past the three named
])
def test_six_full_nodes_name_three_and_their_finished_pods(
        finished: dict[int, list[tuple[str, int]]], named: str) -> None:
    """research/full's pool a10-full grows to six nodes, each held by a train-a and a train-b
    like the first (where team-b/crashed and team-b/done finished); more pods finish on the
    n-th node."""
    lists = load_lists("seven-states")
    names = _pool_grows(lists, "gpu-a10-full", 5)
    for number, node in enumerate(names[1:], start=2):
        _pod_like(lists, "ml/train-a", f"train-a-{number}", node)
        _pod_like(lists, "team-b/train-b", f"train-b-{number}", node)
    for number, pods in finished.items():
        for name, gpus in pods:
            _pod_like(lists, "team-b/done", name, names[number - 1], gpus)
    verdict = _answer(lists, "research/full")

    def held(number: int) -> str:
        suffix = f"-{number}" if number > 1 else ""
        return f"2/2 nvidia.com/gpu held by ml/train-a{suffix}, team-b/train-b{suffix}"

    assert (verdict.cause, verdict.action) == (
        "exhausted",
        "; ".join(f"{names[n - 1]} has {held(n)}" for n in (1, 2, 3))
        + f" ({named} are finished and hold nothing). Wait for them to finish, or relax"
        " nodeSelector pool=a10-full: gpu-a100-1 has 2 free; or add capacity.")
    assert _evidence(verdict) == [
        (f"Node/{names[n - 1]}", "status.allocatable[nvidia.com/gpu] − requests", held(n))
        for n in range(1, 6)] + [
        ("Pod research/full", "scheduler message (preemption)",
         "1 No preemption victims found for incoming pod")]


@pytest.mark.parametrize("change", ["tainted", "full"])
def test_a_selector_alternative_is_one_the_pod_tolerates_with_room(change: str) -> None:
    """research/full's alternative, gpu-a100-1 (2 of 4 GPUs free), tainted NoSchedule or
    filled by one more 2-GPU pod: relaxing the selector would not help there."""
    lists = load_lists("seven-states")
    if change == "tainted":
        find(lists["nodes"], "gpu-a100-1")["spec"]["taints"] = [
            {"effect": "NoSchedule", "key": "maintenance", "value": "firmware"}]
    else:
        _pod_like(lists, "research/ok", "ok-2", "gpu-a100-1", gpus=2)
    verdict = _answer(lists, "research/full")
    assert (verdict.cause, verdict.action) == (
        "exhausted",
        "gpu-a10-full has 2/2 nvidia.com/gpu held by ml/train-a, team-b/train-b (team-b/crashed"
        " and team-b/done are finished and hold nothing). Wait for them to finish; or add"
        " capacity.")


def _h100_held(gpus: list[int]) -> Lists:
    """research/tainted (1 GPU, pool=h100) tolerating gpu-h100-reserved's dedicated=llm-team
    taint, and pods research/hold-1, hold-2, ... holding ``gpus`` of its 8 GPUs."""
    lists = load_lists("seven-states")
    pod = find(lists["pods"], "tainted", "research")
    pod["spec"]["tolerations"].append(
        {"effect": "NoSchedule", "key": "dedicated", "operator": "Equal", "value": "llm-team"})
    for number, count in enumerate(gpus, start=1):
        _pod_like(lists, "research/ok", f"hold-{number}", "gpu-h100-reserved", count)
    return lists


@pytest.mark.parametrize(("gpus", "named"), [
    ([2, 2, 2, 2], "research/hold-1, research/hold-2, research/hold-3, research/hold-4"),
    ([2, 2, 2, 1, 1], "research/hold-1, research/hold-2, research/hold-3, research/hold-4 +1 more"),
])
def test_holders_past_four_are_counted(gpus: list[int], named: str) -> None:
    verdict = _answer(_h100_held(gpus), "research/tainted")
    assert (verdict.cause, verdict.action) == (
        "exhausted",
        f"gpu-h100-reserved has 8/8 nvidia.com/gpu held by {named}. Wait for them to finish,"
        " or relax nodeSelector pool=h100: gpu-a100-1 has 2 free; or add capacity.")


def test_a_nomination_names_four_of_the_pods_leaving() -> None:
    """kube-scheduler nominated gpu-h100-reserved for research/tainted and is evicting all
    five holders there."""
    lists = _h100_held([2, 2, 2, 1, 1])
    find(lists["pods"], "tainted", "research")["status"]["nominatedNodeName"] = (
        "gpu-h100-reserved")
    for number in range(1, 6):
        find(lists["pods"], f"hold-{number}", "research")["metadata"].update(
            deletionTimestamp="2026-11-30T12:55:00Z", deletionGracePeriodSeconds=30)
    verdict = _answer(lists, "research/tainted")
    leaving = ", ".join(f"research/hold-{number}" for number in range(1, 5))
    assert verdict.action.endswith(
        "The scheduler has nominated gpu-h100-reserved for it (status.nominatedNodeName): it is"
        f" preempting lower-priority pods there and binds this one when {leaving} have gone.")


def test_four_excluded_nodes_with_enough_name_three() -> None:
    """research/big (8 GPUs, no selector) and gpu-h100-reserved's pool grown to four nodes,
    each with 8 GPUs behind the dedicated=llm-team taint."""
    lists = load_lists("seven-states")
    _pool_grows(lists, "gpu-h100-reserved", 3)
    verdict = _answer(lists, "research/big")
    excluded = "; ".join(
        f"{name} has enough but is excluded (taint-untolerated: dedicated=llm-team:NoSchedule)"
        for name in ("gpu-h100-reserved", "gpu-h100-reserved-2", "gpu-h100-reserved-3"))
    assert (verdict.cause, verdict.action) == (
        "too-large",
        f"no node you can use has 8 nvidia.com/gpu: the largest is gpu-a100-1 with 4. {excluded}."
        " Split the job or get a bigger node (or access to one); waiting never helps.")
    assert _evidence(verdict)[:3] == [
        ("Pod research/big", "effective request nvidia.com/gpu", "8"),
        ("Node/gpu-a10-full", "status.allocatable[nvidia.com/gpu]",
         "nvidia.com/gpu allocatable 2 < request 8"),
        ("Node/gpu-a100-1", "status.allocatable[nvidia.com/gpu]",
         "nvidia.com/gpu allocatable 4 < request 8")]


@pytest.mark.parametrize(("second_mig_node", "excluded"), [
    (False, ""),
    (True, " gpu-mig-1-2 has enough but is excluded (selector-mismatch: unmatched pool=mig)."),
])
def test_an_excluded_node_has_enough_only_with_every_resource(
        second_mig_node: bool, excluded: str) -> None:
    """lab/mig-pod asks 2 nvidia.com/gpu and 1 nvidia.com/mig-1g.10gb: gpu-mig-1 has 1 GPU.
    cp-1, gpu-a100-2, gpu-cordoned ... have 2 or 4 GPUs and no MIG slice: not enough. A
    second MIG node, in pool mig-b, with 2 GPUs and 7 slices is."""
    lists = _mig_pod("2", "1")
    if second_mig_node:
        _, name = _pool_grows(lists, "gpu-mig-1", 1)
        node = find(lists["nodes"], name)
        node["metadata"]["labels"]["pool"] = "mig-b"
        for section in ("capacity", "allocatable"):
            node["status"][section]["nvidia.com/gpu"] = "2"
    verdict = _answer(lists, "lab/mig-pod")
    assert (verdict.cause, verdict.action) == (
        "too-large",
        f"no node you can use has 2 nvidia.com/gpu: the largest is gpu-mig-1 with 1.{excluded}"
        " Split the job or get a bigger node (or access to one); waiting never helps.")


def test_six_nodes_without_the_device_plugin() -> None:
    """research/no-plugin's pool t4-noplugin grows to six nodes; the fourth has no GFD labels
    (gpu-feature-discovery not running there either)."""
    lists = load_lists("seven-states")
    names = _pool_grows(lists, "gpu-t4-noplugin", 5)
    labels = find(lists["nodes"], names[3])["metadata"]["labels"]
    for key in [k for k in labels if k.startswith("nvidia.com/")]:
        del labels[key]
    verdict = _answer(lists, "research/no-plugin")
    assert (verdict.cause, verdict.action) == (
        "no-gpu-node",
        "no matching node reports nvidia.com/gpu in status.capacity: "
        + "; ".join(name if name == names[3] else f"{name} although its GFD labels say Tesla-T4"
                    for name in names)
        + ". The device plugin is not registered there: restore the device plugin on "
        + ", ".join(names) + ".")
    assert _evidence(verdict)[:6] == [
        (f"Node/{name}", "status.capacity[nvidia.com/gpu]", "absent") for name in names[:5]] + [
        ("Pod research/no-plugin", "scheduler message (preemption)",
         "6 Preemption is not helpful for scheduling")]


def test_a_node_without_either_resource_names_both() -> None:
    lists = _mig_pod("1", "2")
    find(lists["pods"], "mig-pod", "lab")["spec"]["nodeSelector"] = {"pool": "amd"}
    verdict = _answer(lists, "lab/mig-pod")
    assert (verdict.cause, verdict.action) == (
        "no-gpu-node",
        "no matching node reports nvidia.com/gpu, nvidia.com/mig-1g.10gb in status.capacity:"
        " gpu-amd-1. The device plugin is not registered there: restore the device plugin on"
        " gpu-amd-1.")
    assert {n.name: n.detail for n in verdict.nodes}["gpu-amd-1"] == (
        "no nvidia.com/gpu, nvidia.com/mig-1g.10gb in status.capacity")


def test_six_nodes_that_offer_none_of_their_gpus() -> None:
    lists = load_lists("seven-states")
    names = _pool_grows(lists, "gpu-v100-broken", 5)
    verdict = _answer(lists, "research/broken-node")
    why = "nvidia.com/gpu capacity 4, allocatable 0"
    assert (verdict.cause, verdict.action) == (
        "allocatable-zero",
        "; ".join(f"{name}: {why}" for name in names) + ". The GPUs exist but the node offers"
        " none: repair the node (driver, device plugin, validator); adding nodes won't help.")
    assert _evidence(verdict)[:6] == [
        (f"Node/{name}", "status.allocatable[nvidia.com/gpu]", why) for name in names[:5]] + [
        ("Pod research/broken-node", "scheduler message (preemption)",
         "6 Preemption is not helpful for scheduling")]


@pytest.mark.parametrize(("zero", "detail"), [
    (["nvidia.com/mig-1g.10gb"], "nvidia.com/mig-1g.10gb capacity 7, allocatable 0"),
    (["nvidia.com/gpu", "nvidia.com/mig-1g.10gb"],
     "nvidia.com/gpu capacity 1, allocatable 0, nvidia.com/mig-1g.10gb capacity 7, allocatable 0"),
])
def test_allocatable_zero_names_only_the_resources_offered_none(
        zero: list[str], detail: str) -> None:
    """gpu-mig-1's device plugin offers none of its MIG slices, or none of either resource."""
    lists = _mig_pod("1", "1")
    for resource in zero:
        find(lists["nodes"], "gpu-mig-1")["status"]["allocatable"][resource] = "0"
    verdict = _answer(lists, "lab/mig-pod")
    assert (verdict.cause, verdict.action) == (
        "allocatable-zero",
        f"gpu-mig-1: {detail}. The GPUs exist but the node offers none: repair the node (driver,"
        " device plugin, validator); adding nodes won't help.")
    assert _evidence(verdict)[0] == (
        "Node/gpu-mig-1", f"status.allocatable[{zero[0]}]", detail)
    assert {n.name: n.detail for n in verdict.nodes}["gpu-mig-1"] == detail


def test_a_resource_with_just_enough_free_is_not_named_held() -> None:
    """lab/mig-pod asks 1 + 1: gpu-mig-1's one GPU is held, one of its 7 slices is free."""
    verdict = _answer(_mig_pod("1", "1"), "lab/mig-pod")
    assert (verdict.cause, verdict.action) == (
        "exhausted",
        "gpu-mig-1 has 1/1 nvidia.com/gpu held by lab/mig-holder. Wait for them to finish; or add"
        " capacity.")
    assert {n.name: n.detail for n in verdict.nodes}["gpu-mig-1"] == "1/1 nvidia.com/gpu held"
