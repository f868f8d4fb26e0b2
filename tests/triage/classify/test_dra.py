"""The DRA checks' answers read as whole sentences, on the dra-basics recording changed the way
the cluster would change: a claim shared across nodes, a bound pod's claims, a selector gpuwhy
cannot evaluate, device taints, requests that fit one by one but not together, more nodes than
an answer lists, and a pod the scheduler is binding.

Every expected text is worked out by hand from the objects; the node and device lists are
cut at the lengths the answers promise (four nodes in a sentence, five in the evidence, ...),
so the tests give each cut more than it keeps."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from scoring.verdict import Verdict
from tests.conftest import find, load_lists
from tests.paths import FIXTURES
from tests.triage.classify.dra_objects import Lists, answer, dra_object, evidence_of
from triage.classify.checks.dra import (
    drop_dra_device_unfit,
    drop_dra_exhausted,
    drop_dra_no_device,
    drop_dra_too_large,
)

MESSAGE = ("0/5 nodes are available: 1 cannot allocate all claims, 4 node(s) didn't match Pod's "
           "node affinity/selector. still not schedulable, preemption: 0/5 nodes are available: "
           "5 Preemption is not helpful for scheduling.")
SAID = ("Pod vision/pinned-a", "scheduler message", MESSAGE)
PREEMPTION = ("Pod vision/pinned-a", "scheduler message (preemption)",
              "5 Preemption is not helpful for scheduling")
NOT_AVAILABLE = ("The scheduler reports \"resourceclaim not available on the node\". Let the pod "
                 "reach that node, or give it a claim of its own.")


@pytest.fixture
def dra() -> Lists:
    return load_lists("dra-basics")


def _answer(lists: Lists, ref: str = "vision/pinned-a") -> Verdict:
    return answer(lists, ref)


def _pinned_a(lists: Lists) -> dict[str, Any]:
    return find(lists["pods"], "pinned-a", "vision")


def _request(lists: Lists) -> dict[str, Any]:
    """pinned-a's one request (count 1 of gpu.nvidia.com), as its claim holds it."""
    claim = dra_object(lists, "ResourceClaim", "pinned-a-gpu-q8nlw")
    request: dict[str, Any] = claim["spec"]["devices"]["requests"][0]
    return request


def _racks(lists: Lists, count: int, devices: int, published: bool = True) -> list[str]:
    """``count`` more A100 nodes like dra-a100-2 (rack-1, rack-2, ...; label pool=rack), each
    with a ResourceSlice of ``devices`` A100s gpu-0, gpu-1, ... (none when not published), as
    when a rack of nodes joins and its DRA driver starts."""
    template = find(lists["nodes"], "dra-a100-2")
    slice_ = dra_object(lists, "ResourceSlice", "dra-a100-2-gpu.nvidia.com-24092")
    names = []
    for number in range(1, count + 1):
        name = f"rack-{number}"
        node = copy.deepcopy(template)
        node["metadata"].update(name=name, uid=f"00000000-0000-4000-8000-00000000000{number}")
        node["metadata"]["labels"].update({"kubernetes.io/hostname": name, "pool": "rack"})
        lists["nodes"].append(node)
        names.append(name)
        if not published:
            continue
        own = copy.deepcopy(slice_)
        own["metadata"]["name"] = f"{name}-gpu.nvidia.com-0000{number}"
        own["metadata"]["ownerReferences"][0]["name"] = name
        own["spec"].update(nodeName=name, pool={"generation": 1, "name": name,
                                                 "resourceSliceCount": 1})
        model = own["spec"]["devices"][0]
        own["spec"]["devices"] = []
        for index in range(devices):
            device = copy.deepcopy(model)
            device["name"] = f"gpu-{index}"
            device["attributes"]["uuid"]["string"] = f"GPU-{number:08d}-0000-4000-8000-{index:012d}"
            own["spec"]["devices"].append(device)
        lists["dra"].append(own)
    _pinned_a(lists)["spec"]["nodeSelector"] = {"pool": "rack"}
    return names


# -- a claim allocated where the pod cannot go ---------------------------------------------

def _share_finetune_claim(lists: Lists) -> dict[str, Any]:
    """pinned-a (nodeSelector pool=a100-a: dra-a100-1 only) names finetune-1g's claim, which
    is allocated for dra-a100-2."""
    pod = _pinned_a(lists)
    pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "finetune-1g-gpu-7hfk8"}]
    pod["status"].pop("resourceClaimStatuses")
    return dra_object(lists, "ResourceClaim", "finetune-1g-gpu-7hfk8")


def test_a_shared_claim_on_one_node_the_pod_cannot_reach(dra: Lists) -> None:
    _share_finetune_claim(dra)
    verdict = _answer(dra)
    assert (verdict.cause, verdict.action) == (
        "other-constraint",
        "claim vision/finetune-1g-gpu-7hfk8 is already allocated for dra-a100-2, and "
        "vision/pinned-a cannot use it: dra-a100-2 is excluded (selector-mismatch: unmatched "
        f"pool=a100-a). {NOT_AVAILABLE}")
    assert evidence_of(verdict) == [
        ("ResourceClaim vision/finetune-1g-gpu-7hfk8", "status.allocation.nodeSelector",
         "dra-a100-2"),
        ("Node/dra-a100-2", "selector-mismatch", "unmatched pool=a100-a"), SAID]


def test_shared_claims_on_three_nodes_name_two_of_them(dra: Lists) -> None:
    """Beside finetune-1g's claim, pinned-a names two claims allocated for dra-l4-1 and
    cpu-1, and for dra-a100-1: the answer names two claims' and two nodes' evidence."""
    _share_finetune_claim(dra)
    for name, nodes in (("team-gpus", ["dra-l4-1", "cpu-1"]), ("team-more", ["dra-a100-1"])):
        other = copy.deepcopy(dra_object(dra, "ResourceClaim", "finetune-1g-gpu-7hfk8"))
        other["metadata"]["name"] = name
        other["status"]["allocation"]["devices"]["results"][0]["pool"] = nodes[0]
        other["status"]["allocation"]["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0][
            "values"] = nodes
        dra["dra"].append(other)
        _pinned_a(dra)["spec"]["resourceClaims"].append({"name": name,
                                                          "resourceClaimName": name})
    verdict = _answer(dra)
    assert verdict.action == (
        "claim vision/finetune-1g-gpu-7hfk8, vision/team-gpus, vision/team-more is already "
        "allocated for dra-a100-2, dra-l4-1, cpu-1, dra-a100-1, and vision/pinned-a cannot use "
        "them: dra-a100-2 is excluded (selector-mismatch: unmatched pool=a100-a); dra-l4-1 is "
        f"excluded (selector-mismatch: unmatched pool=a100-a). {NOT_AVAILABLE}")
    assert evidence_of(verdict) == [
        ("ResourceClaim vision/finetune-1g-gpu-7hfk8", "status.allocation.nodeSelector",
         "dra-a100-2"),
        ("ResourceClaim vision/team-gpus", "status.allocation.nodeSelector", "dra-l4-1, cpu-1"),
        ("Node/dra-a100-2", "selector-mismatch", "unmatched pool=a100-a"),
        ("Node/dra-l4-1", "selector-mismatch", "unmatched pool=a100-a"), SAID]


def test_a_shared_claim_allocated_by_labels_names_no_node(dra: Lists) -> None:
    claim = _share_finetune_claim(dra)
    claim["status"]["allocation"]["nodeSelector"] = {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "pool", "operator": "In", "values": ["a100-b"]}]}]}
    verdict = _answer(dra)
    assert verdict.action == (
        "claim vision/finetune-1g-gpu-7hfk8 is already allocated for other nodes, and "
        f"vision/pinned-a cannot use them. {NOT_AVAILABLE}")
    assert evidence_of(verdict) == [
        ("ResourceClaim vision/finetune-1g-gpu-7hfk8", "status.allocation.nodeSelector",
         "other nodes"), SAID]


MIG_MESSAGE = ("0/5 nodes are available: request mig: device class mig.nvidia.com does not "
               "exist. no new claims to deallocate, preemption: 0/5 nodes are available: 5 "
               "Preemption is not helpful for scheduling.")


@pytest.mark.parametrize(("classes", "existing"), [
    (["gpu.nvidia.com", "a100.example.com"], "a100.example.com, gpu.nvidia.com"),
    ([], "none")])
def test_a_missing_device_class_lists_the_classes_there_are(
        dra: Lists, classes: list[str], existing: str) -> None:
    model = dra_object(dra, "DeviceClass", "gpu.nvidia.com")
    dra["dra"].remove(model)
    for name in classes:
        device_class = copy.deepcopy(model)
        device_class["metadata"]["name"] = name
        dra["dra"].append(device_class)
    verdict = _answer(dra, "serving/mig-1g")
    missing = "request mig: device class mig.nvidia.com does not exist"
    assert (verdict.cause, verdict.action) == (
        "other-constraint",
        f"ResourceClaim serving/mig-1g-mig-s4mzp: {missing} (DeviceClasses: {existing}). Create "
        "the DeviceClass (it comes with the DRA driver) or fix deviceClassName.")
    assert evidence_of(verdict) == [
        ("ResourceClaim serving/mig-1g-mig-s4mzp",
         "spec.devices.requests[mig].exactly.deviceClassName", missing),
        ("DeviceClasses", "metadata.name", existing),
        ("Pod serving/mig-1g", "scheduler message", MIG_MESSAGE)]


def test_a_bound_pod_s_claim_allocated_nothing_anywhere_for_nobody(dra: Lists) -> None:
    """holder-a's claim as a driver without node-local devices leaves it: allocated, with no
    device result and no node selector, and no longer reserved."""
    claim = dra_object(dra, "ResourceClaim", "holder-a-gpu-8jq68")
    allocation = claim["status"]["allocation"]
    del allocation["nodeSelector"]
    allocation["devices"]["results"] = []
    claim["status"]["reservedFor"] = []
    verdict = _answer(dra, "vision/holder-a")
    assert verdict.cause == "scheduled"
    assert evidence_of(verdict) == [
        ("Pod vision/holder-a", "spec.nodeName", "dra-a100-1"),
        ("Pod vision/holder-a", "status.phase", "Running"),
        ("ResourceClaim vision/holder-a-gpu-8jq68", "status.allocation / status.reservedFor",
         "no device on any node; reserved for nobody")]


def _running(lists: Lists, pod: dict[str, Any]) -> None:
    """The pod started by its kubelet: phase Running, its container running as holder-a's."""
    holder_a = find(lists["pods"], "holder-a", "vision")
    status = copy.deepcopy(holder_a["status"]["containerStatuses"][0])
    status.update(name=pod["spec"]["containers"][0]["name"],
                  containerID="containerd://" + pod["metadata"]["uid"].replace("-", "") * 2)
    pod["status"].update(phase="Running", containerStatuses=[status])


def _named_claim(lists: Lists) -> dict[str, Any]:
    """holder-a's claim as a user makes it (ResourceClaim vision/train-gpus, no owner) and
    names it in spec.resourceClaims[].resourceClaimName; the scheduler allocated it as before."""
    claim = dra_object(lists, "ResourceClaim", "holder-a-gpu-8jq68")
    claim["metadata"]["name"] = "train-gpus"
    for generated in ("generateName", "ownerReferences", "annotations"):
        del claim["metadata"][generated]
    pod = find(lists["pods"], "holder-a", "vision")
    pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "train-gpus"}]
    pod["status"].pop("resourceClaimStatuses")
    return claim


def test_a_finished_pod_s_released_claim_is_not_named(dra: Lists) -> None:
    """holder-a succeeded; the resourceclaim controller dropped it from reservedFor and, with
    nobody reserving the claim, deallocated it: the claim allocates nothing for it now."""
    claim = _named_claim(dra)
    claim["status"] = {}
    del claim["metadata"]["finalizers"]
    pod = find(dra["pods"], "holder-a", "vision")
    container = pod["status"]["containerStatuses"][0]
    container.update(ready=False, started=False, state={"terminated": {
        "containerID": container["containerID"], "exitCode": 0, "reason": "Completed",
        "startedAt": "2026-12-01T08:43:31Z", "finishedAt": "2026-12-01T09:12:04Z"}})
    pod["status"]["phase"] = "Succeeded"
    verdict = _answer(dra, "vision/holder-a")
    assert (verdict.cause, verdict.action) == (
        "scheduled",
        "vision/holder-a is bound to dra-a100-1 (phase Succeeded). Nothing is wrong at "
        "scheduling level: look at the pod's logs and container statuses.")
    assert evidence_of(verdict) == [
        ("Pod vision/holder-a", "spec.nodeName", "dra-a100-1"),
        ("Pod vision/holder-a", "status.phase", "Succeeded")]


def test_a_shared_claim_names_both_pods_and_both_alternatives_chosen(dra: Lists) -> None:
    """holder-a and holder-b share train-gpus, whose two firstAvailable requests chose
    different alternatives; holder-a's first pod claim needed no ResourceClaim (its
    resourceClaimStatuses entry names none), so only the shared one is evidence."""
    claim = _named_claim(dra)
    exactly = claim["spec"]["devices"]["requests"][0].pop("exactly")
    del exactly["allocationMode"]
    requests = [{"name": "gpu", "firstAvailable": [{"name": "a100", **exactly, "count": 1}]},
                {"name": "gpu-b", "firstAvailable": [{"name": "any", **exactly, "count": 1}]}]
    claim["spec"]["devices"]["requests"] = requests
    results = claim["status"]["allocation"]["devices"]["results"]
    for result, request in zip(results, ("gpu/a100", "gpu-b/any"), strict=True):
        result["request"] = request
    holder_b = find(dra["pods"], "holder-b", "vision")
    claim["status"]["reservedFor"].append(
        {"name": "holder-b", "resource": "pods", "uid": holder_b["metadata"]["uid"]})
    holder_b["spec"]["resourceClaims"].append({"name": "shared", "resourceClaimName": "train-gpus"})
    pod = find(dra["pods"], "holder-a", "vision")
    pod["spec"]["resourceClaims"].insert(0, {"name": "scratch",
                                             "resourceClaimTemplateName": "one-gpu"})
    pod["status"]["resourceClaimStatuses"] = [{"name": "scratch"}]
    verdict = _answer(dra, "vision/holder-a")
    assert (verdict.cause, verdict.action) == (
        "scheduled",
        "vision/holder-a is bound to dra-a100-1 (phase Running). Nothing is wrong at "
        "scheduling level: look at the pod's logs and container statuses.")
    assert evidence_of(verdict) == [
        ("Pod vision/holder-a", "spec.nodeName", "dra-a100-1"),
        ("Pod vision/holder-a", "status.phase", "Running"),
        ("ResourceClaim vision/train-gpus", "status.allocation / status.reservedFor",
         "gpu-0,gpu-1 on dra-a100-1; reserved for holder-a, holder-b; firstAvailable "
         "alternative a100, any chosen")]


# -- a selector gpuwhy cannot evaluate ------------------------------------------------------

def test_an_unevaluated_selector_before_the_scheduler_spoke(dra: Lists) -> None:
    _request(dra)["exactly"]["selectors"] = [
        {"cel": {"expression": 'device.attributes["gpu.nvidia.com"].mig == true'}}]
    pod = _pinned_a(dra)
    pod["status"].pop("conditions")
    dra["events"] = [e for e in dra["events"] if e["involvedObject"]["name"] != "pinned-a"]
    verdict = _answer(dra)
    reason = ("vision/pinned-a-gpu-q8nlw request gpu selector "
              "device.attributes[\"gpu.nvidia.com\"].mig == true: no such member in mapping: "
              "'mig'")
    assert (verdict.cause, verdict.action) == (
        "other-constraint",
        f"selector not evaluated: {reason}. gpuwhy cannot judge the devices against it, so it "
        "goes by the scheduler's word (it has said nothing yet).")
    assert evidence_of(verdict) == [("Node/dra-a100-1", "selector not evaluated", reason)]


def test_four_unevaluated_selectors_on_two_nodes(dra: Lists) -> None:
    """Four requests, each with a selector on an attribute the devices do not publish: the
    answer quotes the first, the evidence three, every node's detail all four."""
    requests = dra_object(dra, "ResourceClaim", "pinned-a-gpu-q8nlw")["spec"]["devices"]["requests"]
    model = requests.pop()
    members = ["mig", "nvlink", "fabric", "ecc"]
    for member in members:
        request = copy.deepcopy(model)
        request["name"] = member
        request["exactly"]["selectors"] = [
            {"cel": {"expression": f'device.attributes["gpu.nvidia.com"].{member} == true'}}]
        requests.append(request)
    _racks(dra, count=2, devices=1)
    verdict = _answer(dra)
    reasons = [f"vision/pinned-a-gpu-q8nlw request {m} selector "
               f"device.attributes[\"gpu.nvidia.com\"].{m} == true: no such member in "
               f"mapping: '{m}'" for m in members]
    assert verdict.action == (
        f"selector not evaluated: {reasons[0]}. gpuwhy cannot judge the devices against it, so "
        f"it goes by the scheduler's word ({MESSAGE}).")
    assert evidence_of(verdict) == [
        ("Node/rack-1", "selector not evaluated", r) for r in reasons[:3]] + [SAID]
    assert {n.name: n.detail for n in verdict.nodes if n.name.startswith("rack-")} == {
        name: "selector not evaluated: " + "; ".join(reasons) for name in ("rack-1", "rack-2")}


def test_two_missing_claims_are_each_a_node_s_detail(dra: Lists) -> None:
    pod = _pinned_a(dra)
    pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "team-gpus"},
                                     {"name": "more", "resourceClaimName": "team-more"}]
    pod["status"].pop("resourceClaimStatuses")
    verdict = _answer(dra)
    missing = ["ResourceClaim vision/team-gpus does not exist (pod claim gpu)",
               "ResourceClaim vision/team-more does not exist (pod claim more)"]
    assert (verdict.cause, verdict.action) == (
        "other-constraint",
        f"{missing[0]}, so the scheduler cannot even start on vision/pinned-a (and says nothing "
        "about it). Create it, or fix the name in spec.resourceClaims.")
    assert evidence_of(verdict) == [
        ("Pod vision/pinned-a", "spec.resourceClaims[].resourceClaimName", missing[0]), SAID]
    assert {n.name: n.detail for n in verdict.nodes}["dra-a100-1"] == "; ".join(missing)


# -- device taints ---------------------------------------------------------------------------

def test_tainted_devices_on_five_nodes_list_four_and_the_request_s_tolerations(
        dra: Lists) -> None:
    _racks(dra, count=5, devices=6)
    for slice_ in dra["dra"]:
        if slice_["kind"] == "ResourceSlice" and slice_["spec"]["nodeName"].startswith("rack-"):
            for device in slice_["spec"]["devices"]:
                device["taints"] = [{"key": "example.com/unhealthy", "value": "xid-79",
                                     "effect": "NoSchedule"},
                                    {"key": "example.com/ecc", "effect": "NoExecute"}]
    _request(dra)["exactly"]["tolerations"] = [{"key": "example.com/drain",
                                                "operator": "Exists"}]
    verdict = _answer(dra)
    taint = "example.com/unhealthy=xid-79:NoSchedule"
    per_node = "; ".join(
        f"rack-{n}: gpu-0 {taint}, gpu-1 {taint}, gpu-2 {taint}, gpu-3 {taint} (6 of 6 "
        "matching, 1 × gpu.nvidia.com needed)" for n in range(1, 5))
    assert (verdict.cause, verdict.action) == (
        "device-unfit",
        "the matching devices are tainted, and ResourceClaim vision/pinned-a-gpu-q8nlw "
        f"(from template one-gpu) does not tolerate it: {per_node}. The DRA driver or an admin "
        "marked them unusable (often unhealthy): repair them or remove the taint; tolerate it "
        "in the request (exactly.tolerations), and only if the devices are fit to use.")
    taints = f"{taint} example.com/ecc:NoExecute"  # every taint of the device
    assert evidence_of(verdict) == [
        (f"ResourceSlice rack-{n}-gpu.nvidia.com-0000{n}", "spec.devices[].taints",
         f"rack-{n}: gpu-0 {taints}, gpu-1 {taints}, gpu-2 {taints}, gpu-3 {taints}")
        for n in range(1, 5)] + [
        ("ResourceClaim vision/pinned-a-gpu-q8nlw",
         "spec.devices.requests[gpu].exactly.tolerations", "1 toleration(s)")]


# -- requests that fit one by one but not together -------------------------------------------

def _two_requests(lists: Lists, count: int) -> None:
    """pinned-a's claim asks two requests of ``count`` GPUs each."""
    request = _request(lists)
    request["exactly"]["count"] = count
    second = copy.deepcopy(request)
    second["name"] = "gpu-b"
    dra_object(lists, "ResourceClaim", "pinned-a-gpu-q8nlw")["spec"]["devices"]["requests"].append(
        second)


def test_requests_too_large_together_on_six_nodes(dra: Lists) -> None:
    _racks(dra, count=6, devices=6)
    _two_requests(dra, 4)
    verdict = _answer(dra)
    why = "the requests together need 8 devices, the node has 6 that match them"
    assert (verdict.cause, verdict.action) == (
        "too-large",
        "; ".join(f"rack-{n}: {why}" for n in range(1, 5))
        + ". Split the job or get a node with that many devices; waiting never helps.")
    assert evidence_of(verdict) == [
        (f"Node/rack-{n}", "ResourceSlices and claim allocations", why) for n in range(1, 6)
    ] + [PREEMPTION]


def test_requests_exhausted_together_name_what_holds_the_node(dra: Lists) -> None:
    _two_requests(dra, 2)
    _pinned_a(dra)["spec"]["nodeSelector"] = {"pool": "a100-b"}
    verdict = _answer(dra)
    why = ("the requests together need 4 free devices, 3 are free; the others are allocated "
           "to claim vision/finetune-1g-gpu-7hfk8 (pod vision/finetune-1g): gpu-0")
    assert (verdict.cause, verdict.action) == (
        "exhausted", f"dra-a100-2: {why}. Wait for the holders to finish, or add capacity.")
    assert evidence_of(verdict)[0] == (
        "Node/dra-a100-2", "ResourceSlices and claim allocations", why)


# -- more nodes than an answer lists --------------------------------------------------------

def test_six_nodes_without_a_driver_list_five(dra: Lists) -> None:
    names = _racks(dra, count=6, devices=0, published=False)
    for name in names[::2]:  # GFD has not labelled the product on every other one
        del find(dra["nodes"], name)["metadata"]["labels"]["nvidia.com/gpu.product"]
    find(dra["nodes"], "rack-5")["metadata"]["labels"]["nvidia.com/gpu.present"] = "false"
    verdict = _answer(dra)
    product = " although its GFD labels say NVIDIA-A100-SXM4-80GB"
    present = " although it is labelled nvidia.com/gpu.present=true"
    assert (verdict.cause, verdict.action) == (
        "no-gpu-node",
        "no matching node publishes a gpu.nvidia.com device in its ResourceSlices: "
        f"rack-1{present}; rack-2{product}; rack-3{present}; rack-4{product}; rack-5. The DRA "
        "driver is not running there (or publishes nothing): restore the DRA driver's kubelet "
        "plugin on rack-1, rack-2, rack-3, rack-4, rack-5.")
    assert evidence_of(verdict) == [
        (f"Node/rack-{n}", "ResourceSlices (spec.nodeName / nodeSelector)",
         "no gpu.nvidia.com device") for n in range(1, 6)] + [
        ("DeviceClass gpu.nvidia.com", "spec.selectors", 'device.driver == "gpu.nvidia.com"'),
        ("ResourceClaim vision/pinned-a-gpu-q8nlw",
         "spec.devices.requests[gpu].exactly.deviceClassName", "gpu.nvidia.com"), PREEMPTION]


def test_three_classes_no_node_publishes_show_two_classes_selectors(dra: Lists) -> None:
    """pinned-a asks one device of a class without selectors (every device), one of
    gpu.nvidia.com (two selectors now) and one of an AMD class. rack-1 publishes nothing: the
    first request fails there; rack-2 publishes only an AMD GPU: the first takes it, the
    second finds none; rack-3 one NVIDIA GPU: only the third finds none."""
    gpu = dra_object(dra, "DeviceClass", "gpu.nvidia.com")
    gpu["spec"]["selectors"].append(
        {"cel": {"expression": 'device.attributes["gpu.nvidia.com"].type == "gpu"'}})
    requests = dra_object(dra, "ResourceClaim", "pinned-a-gpu-q8nlw")["spec"]["devices"]["requests"]
    for position, name, selectors in ((0, "all-devices.example.com", []), (2, "mi300.amd.com", [
            {"cel": {"expression": 'device.driver == "gpu.amd.com"'}}])):
        device_class = copy.deepcopy(gpu)
        device_class["metadata"]["name"] = name
        device_class["spec"]["selectors"] = selectors
        dra["dra"].append(device_class)
        request = copy.deepcopy(requests[0])
        request["name"] = name.split(".")[0]
        request["exactly"]["deviceClassName"] = name
        requests.insert(position, request)
    _racks(dra, count=3, devices=1)
    dra["dra"].remove(dra_object(dra, "ResourceSlice", "rack-1-gpu.nvidia.com-00001"))
    amd_only = dra_object(dra, "ResourceSlice", "rack-2-gpu.nvidia.com-00002")
    amd_only["spec"]["driver"] = "gpu.amd.com"
    verdict = _answer(dra)
    wanted = "all-devices.example.com or gpu.nvidia.com or mi300.amd.com"
    labelled = " although its GFD labels say NVIDIA-A100-SXM4-80GB"
    assert (verdict.cause, verdict.action) == (
        "no-gpu-node",
        f"no matching node publishes a {wanted} device in its ResourceSlices: rack-1{labelled}; "
        f"rack-2{labelled}; rack-3{labelled}. The DRA driver is not running there (or "
        "publishes nothing): restore the DRA driver's kubelet plugin on rack-1, rack-2, rack-3.")
    assert evidence_of(verdict) == [
        (f"Node/rack-{n}", "ResourceSlices (spec.nodeName / nodeSelector)", f"no {wanted} device")
        for n in (1, 2, 3)] + [
        ("DeviceClass all-devices.example.com", "spec.selectors", "none (every device)"),
        ("DeviceClass gpu.nvidia.com", "spec.selectors",
         'device.driver == "gpu.nvidia.com" && '
         'device.attributes["gpu.nvidia.com"].type == "gpu"'),
        ("ResourceClaim vision/pinned-a-gpu-q8nlw",
         "spec.devices.requests[all-devices].exactly.deviceClassName",
         "all-devices.example.com"), PREEMPTION]


def test_five_nodes_whose_devices_fail_the_selectors_list_four(dra: Lists) -> None:
    _racks(dra, count=5, devices=2)
    # rack-1's driver publishes its two GPUs in two slices of one pool
    first = dra_object(dra, "ResourceSlice", "rack-1-gpu.nvidia.com-00001")
    second = copy.deepcopy(first)
    second["metadata"]["name"] = "rack-1-gpu.nvidia.com-10001"
    second["spec"]["devices"] = [first["spec"]["devices"].pop()]
    for half in (first, second):
        half["spec"]["pool"]["resourceSliceCount"] = 2
    dra["dra"].append(second)
    selectors = ['device.attributes["gpu.nvidia.com"].architecture == "Hopper"',
                 'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("80Gi")) >= 0']
    _request(dra)["exactly"]["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    verdict = _answer(dra)
    both = " && ".join(selectors)
    assert (verdict.cause, verdict.action) == (
        "device-unfit",
        "devices of the class exist, but none meets the selectors of ResourceClaim "
        f"vision/pinned-a-gpu-q8nlw (from template one-gpu) ({both}): "
        + "; ".join(f"rack-{n} has 2 × NVIDIA A100-SXM4-80GB, memory 80Gi" for n in range(1, 5))
        + ". Relax the selector, or send the pod to nodes whose devices meet it (show devices "
        "lists them).")
    assert evidence_of(verdict) == [
        ("ResourceClaim vision/pinned-a-gpu-q8nlw", "spec.devices.requests[gpu].exactly.selectors",
         both)] + [
        (f"ResourceSlice rack-{n}-gpu.nvidia.com-0000{n}"
         + (", rack-1-gpu.nvidia.com-10001" if n == 1 else ""), "spec.devices[]",
         "2 × NVIDIA A100-SXM4-80GB, memory 80Gi") for n in range(1, 5)]


def test_seven_nodes_too_small_list_the_largest_four_and_the_others(dra: Lists) -> None:
    _racks(dra, count=7, devices=3)
    for number, keep in ((1, 2), (2, 1)):
        slice_ = dra_object(dra, "ResourceSlice", f"rack-{number}-gpu.nvidia.com-0000{number}")
        del slice_["spec"]["devices"][keep:]
    _request(dra)["exactly"]["count"] = 4
    verdict = _answer(dra)
    assert (verdict.cause, verdict.action) == (
        "too-large",
        "ResourceClaim vision/pinned-a-gpu-q8nlw (from template one-gpu) asks 4 × "
        "gpu.nvidia.com; the most any node you can use has is 3 (rack-3, rack-4, rack-5, "
        "rack-6; rack-1 has 2; rack-2 has 1), even if all were free. Split the job or get a "
        "node with that many devices; waiting never helps.")
    assert evidence_of(verdict) == [
        ("ResourceClaim vision/pinned-a-gpu-q8nlw", "spec.devices.requests[gpu].exactly.count",
         "4")] + [
        (f"ResourceSlice rack-{n}-gpu.nvidia.com-0000{n}", "spec.devices[]",
         f"{size} matching device(s) on rack-{n}")
        for n, size in ((1, 2), (2, 1), (3, 3), (4, 3), (5, 3))] + [PREEMPTION]


def test_too_large_asks_what_the_request_failing_on_the_largest_node_asks(dra: Lists) -> None:
    """pinned-a asks 3 GPUs (request gpu) and 5 (gpu-b); rack-1 has 2 devices, rack-2 has 4.
    On rack-1 gpu fails first, on rack-2 only gpu-b does: the answer gives gpu-b's 5 against
    rack-2's 4, not gpu's 3, which rack-2 could hold."""
    _racks(dra, count=2, devices=4)
    del dra_object(dra, "ResourceSlice", "rack-1-gpu.nvidia.com-00001")["spec"]["devices"][2:]
    _two_requests(dra, 3)
    claim = dra_object(dra, "ResourceClaim", "pinned-a-gpu-q8nlw")
    claim["spec"]["devices"]["requests"][1]["exactly"]["count"] = 5
    verdict = _answer(dra)
    assert (verdict.cause, verdict.action) == (
        "too-large",
        "ResourceClaim vision/pinned-a-gpu-q8nlw (from template one-gpu) asks 5 × "
        "gpu.nvidia.com; the most any node you can use has is 4 (rack-2; rack-1 has 2), even "
        "if all were free. Split the job or get a node with that many devices; waiting never "
        "helps.")
    assert evidence_of(verdict) == [
        ("ResourceClaim vision/pinned-a-gpu-q8nlw", "spec.devices.requests[gpu-b].exactly.count",
         "5"),
        ("ResourceSlice rack-1-gpu.nvidia.com-00001", "spec.devices[]",
         "2 matching device(s) on rack-1"),
        ("ResourceSlice rack-2-gpu.nvidia.com-00002", "spec.devices[]",
         "4 matching device(s) on rack-2"), PREEMPTION]


def test_a_first_available_request_too_large_names_its_alternative_s_field(
        dra: Lists) -> None:
    request = _request(dra)
    alternative = request.pop("exactly")
    del alternative["allocationMode"]
    request["firstAvailable"] = [{"name": "trio", **alternative, "count": 3}]
    _racks(dra, count=2, devices=2)
    verdict = _answer(dra)
    assert verdict.action == (
        "ResourceClaim vision/pinned-a-gpu-q8nlw (from template one-gpu) asks 3 × "
        "gpu.nvidia.com; the most any node you can use has is 2 (rack-1, rack-2), even if all "
        "were free. Split the job or get a node with that many devices; waiting never helps.")
    assert evidence_of(verdict)[0] == (
        "ResourceClaim vision/pinned-a-gpu-q8nlw",
        "spec.devices.requests[gpu].firstAvailable[trio].count", "3")


def test_a_claim_not_generated_yet_points_into_its_template(dra: Lists) -> None:
    pod = find(dra["pods"], "big-8g", "vision")
    pod["status"].pop("resourceClaimStatuses")
    dra["dra"].remove(dra_object(dra, "ResourceClaim", "big-8g-gpu-4nr9w"))
    verdict = _answer(dra, "vision/big-8g")
    assert verdict.action.startswith("ResourceClaimTemplate vision/eight-gpus asks 8 × ")
    assert evidence_of(verdict)[0] == (
        "ResourceClaimTemplate vision/eight-gpus", "spec.spec.devices.requests[gpu].exactly.count",
        "8")


def test_an_implicit_extended_resource_too_large_says_where_its_name_comes_from() -> None:
    lists = load_lists(FIXTURES / "scenarios-extra" / "dra-extended")
    pod = find(lists["pods"], "ext-implicit", "serving")
    for section in ("limits", "requests"):
        pod["spec"]["containers"][0]["resources"][section][
            "deviceclass.resource.kubernetes.io/gpu.nvidia.com"] = "7"
    verdict = _answer(lists, "serving/ext-implicit")
    assert (verdict.cause, verdict.action) == (
        "too-large",
        "the pod's deviceclass.resource.kubernetes.io/gpu.nvidia.com limit (served through "
        "DeviceClass gpu.nvidia.com) asks 7 × gpu.nvidia.com; the most any node you can use "
        "has is 6 (dra-a100-1), even if all were free. Split the job or get a node with that "
        "many devices; waiting never helps.")
    assert evidence_of(verdict)[0] == (
        "Pod serving/ext-implicit",
        "effective request deviceclass.resource.kubernetes.io/gpu.nvidia.com",
        "7, served through DeviceClass gpu.nvidia.com (its implicit extended resource name)")


def test_four_nodes_held_by_claims_list_three(dra: Lists) -> None:
    """Every device of four racks is allocated to a claim of its own, reserved for
    holder-a, but rack-1's gpu-0: its claim is allocated and reserved for no pod; rack-2's
    gpu-1 is reserved for holder-b too."""
    _racks(dra, count=4, devices=3)
    model = dra_object(dra, "ResourceClaim", "holder-a-gpu-8jq68")
    for rack in range(1, 5):
        for index in range(3):
            claim = copy.deepcopy(model)
            claim["metadata"]["name"] = f"hold-{rack}-{index}"
            allocation = claim["status"]["allocation"]
            allocation["devices"]["results"] = [{"device": f"gpu-{index}",
                                                 "driver": "gpu.nvidia.com",
                                                 "pool": f"rack-{rack}", "request": "gpu"}]
            allocation["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"] = [
                f"rack-{rack}"]
            if (rack, index) == (1, 0):
                claim["status"]["reservedFor"] = []
            if (rack, index) == (2, 1):  # a claim two pods share
                claim["status"]["reservedFor"].append({
                    "name": "holder-b", "resource": "pods",
                    "uid": "5e3c0a4f-0000-4000-8000-0000000000b2"})
            dra["dra"].append(claim)
    verdict = _answer(dra)

    def pods(rack: int, index: int, nobody: str) -> str:
        return {(1, 0): nobody, (2, 1): "vision/holder-a, vision/holder-b"}.get(
            (rack, index), "vision/holder-a")

    def held(rack: int) -> str:
        return (f"rack-{rack}: 3/3 matching device(s) allocated, to " + " and ".join(
            f"claim vision/hold-{rack}-{i} (pod {pods(rack, i, 'none reserved')}, gpu-{i})"
            for i in range(3)) + "; it needs 1 × gpu.nvidia.com")

    assert (verdict.cause, verdict.action) == (
        "exhausted",
        f"{held(1)}; {held(2)}; {held(3)}. Wait for them to finish, or add capacity.")
    assert evidence_of(verdict) == [
        (f"ResourceClaim vision/hold-{rack}-{i}", "status.allocation.devices.results",
         f"gpu-{i} on rack-{rack}; reservedFor {pods(rack, i, 'nobody')}")
        for rack in (1, 2) for i in range(3)]


def _nic_request(lists: Lists) -> None:
    """DeviceClass nic.example.com (a NIC driver's, not a GPU's), and pinned-a's claim asking
    one NIC of it beside its GPU (request nic)."""
    nic = copy.deepcopy(dra_object(lists, "DeviceClass", "gpu.nvidia.com"))
    nic["metadata"]["name"] = "nic.example.com"
    nic["spec"]["selectors"] = [{"cel": {"expression": 'device.driver == "nic.example.com"'}}]
    lists["dra"].append(nic)
    request = copy.deepcopy(_request(lists))
    request["name"] = "nic"
    request["exactly"]["deviceClassName"] = "nic.example.com"
    claim = dra_object(lists, "ResourceClaim", "pinned-a-gpu-q8nlw")
    claim["spec"]["devices"]["requests"].append(request)


def test_a_non_gpu_request_no_node_can_serve_on_six_nodes(dra: Lists) -> None:
    _nic_request(dra)
    _racks(dra, count=6, devices=1)
    verdict = _answer(dra)
    why = ("non-GPU claim cannot be allocated: no nic.example.com device published for the "
           "node (no ResourceSlice of that class)")
    assert (verdict.cause, verdict.action) == (
        "other-constraint",
        "GPU-wise a node fits, but a claim of vision/pinned-a that is not a GPU cannot be "
        "allocated: " + "; ".join(f"rack-{n}: {why}" for n in range(1, 5))
        + ". Fix that claim or its DRA driver.")
    assert evidence_of(verdict) == [
        (f"Node/rack-{n}", "ResourceSlices and claim allocations", why) for n in range(1, 6)
    ] + [SAID]


# -- the scheduler is binding ----------------------------------------------------------------

def _binding_on_rack(lists: Lists, failed: bool, reach: tuple[str, ...]) -> None:
    """pinned-a as kube-scheduler leaves it in PreBind: its claim allocated gpu-0..gpu-4 of
    rack-1 (a node selector naming the nodes in ``reach``, or one by its pool label when it is
    empty) and reserved for it, no event; every device waits for FabricAttached, which none
    reports yet, or reports its FabricAttachFailed. When ``reach`` names several racks, rack-1's
    devices are attached through a fabric: its slice is published for all of them
    (spec.nodeSelector), and so is the allocation."""
    _racks(lists, count=max(1, len(reach)), devices=6)
    pod = _pinned_a(lists)
    pod["status"].pop("conditions")
    lists["events"] = [e for e in lists["events"] if e["involvedObject"]["name"] != "pinned-a"]
    selector = ({"matchFields": [{"key": "metadata.name", "operator": "In",
                                  "values": list(reach)}]} if reach else
                {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["rack"]}]})
    rack = dra_object(lists, "ResourceSlice", "rack-1-gpu.nvidia.com-00001")
    if len(reach) > 1:
        del rack["spec"]["nodeName"]
        rack["spec"]["nodeSelector"] = {"nodeSelectorTerms": [selector]}
    for device in rack["spec"]["devices"]:
        device.update(bindingConditions=["FabricAttached"],
                      bindingFailureConditions=["FabricAttachFailed"])
    devices = [f"gpu-{i}" for i in range(5)]
    claim = dra_object(lists, "ResourceClaim", "pinned-a-gpu-q8nlw")
    claim["status"] = {
        "allocation": {"devices": {"results": [
            {"device": d, "driver": "gpu.nvidia.com", "pool": "rack-1", "request": "gpu"}
            for d in devices]}, "nodeSelector": {"nodeSelectorTerms": [selector]}},
        "reservedFor": [{"name": "pinned-a", "resource": "pods", "uid": pod["metadata"]["uid"]}]}
    if failed:
        claim["status"]["devices"] = [
            {"driver": "gpu.nvidia.com", "pool": "rack-1", "device": d, "conditions": [
                {"type": "FabricAttachFailed", "status": "True", "reason": "PortDown",
                 "message": f"switch port {i}", "lastTransitionTime": "2026-12-01T08:44:00Z"}]}
            for i, d in enumerate(devices)]


def _fabric_nic(lists: Lists) -> None:
    """After _binding_on_rack over two racks: pinned-a's claim also asks a NIC, and the
    scheduler allocated nic-0 of the fabric's NIC driver (a slice published for the same racks,
    no binding conditions) beside the GPUs."""
    _nic_request(lists)
    gpus = dra_object(lists, "ResourceSlice", "rack-1-gpu.nvidia.com-00001")
    nic = copy.deepcopy(gpus)
    nic["metadata"]["name"] = "fabric-nic.example.com-00001"
    nic["spec"].update(driver="nic.example.com", devices=[{"name": "nic-0", "attributes": {}}],
                       pool={"generation": 1, "name": "fabric", "resourceSliceCount": 1})
    lists["dra"].append(nic)
    claim = dra_object(lists, "ResourceClaim", "pinned-a-gpu-q8nlw")
    claim["status"]["allocation"]["devices"]["results"].append(
        {"device": "nic-0", "driver": "nic.example.com", "pool": "fabric", "request": "nic"})


HELD = "; ".join(f"claim vision/pinned-a-gpu-q8nlw: gpu-{i}" for i in range(4))


_WAITING = [f"gpu-{i}: FabricAttached (not reported yet)" for i in range(5)]
_FAILED = [f"gpu-{i}: FabricAttachFailed (True: PortDown: switch port {i})" for i in range(5)]


@pytest.mark.parametrize(("failed", "reach", "action", "field", "conditions"), [
    (False, ("rack-1",),
     f"the scheduler allocated {HELD} on rack-1 and waits for the devices to be ready before it "
     f"binds vision/pinned-a ({'; '.join(_WAITING[:2])}). Devices that must be attached first "
     "take a while; if it lasts past the scheduler's binding timeout, look at the DRA driver "
     "(gpu.nvidia.com).", "bindingConditions", _WAITING),
    (True, (),
     f"the scheduler allocated {HELD} on its node for vision/pinned-a, but the driver reports a "
     f"binding failure ({'; '.join(_FAILED[:2])}): the scheduler releases the devices and tries "
     "again. If it keeps failing, look at the DRA driver (gpu.nvidia.com) for those devices.",
     "bindingFailureConditions", _FAILED)])
def test_a_binding_pod_on_five_devices_names_four_and_two_conditions(
        dra: Lists, failed: bool, reach: tuple[str, ...], action: str, field: str,
        conditions: list[str]) -> None:
    """Waiting on a node the allocation names, and failed on one it chose by labels."""
    _binding_on_rack(dra, failed=failed, reach=reach)
    verdict = _answer(dra)
    assert (verdict.cause, verdict.action) == ("other-constraint", action)
    assert evidence_of(verdict) == [
        ("Pod vision/pinned-a", "claims (status.allocation, reservedFor)",
         f"{HELD} on {', '.join(reach) or 'its node'}"),
        ("ResourceClaim status.devices[].conditions", field, "; ".join(conditions[:4]))]


def test_a_binding_pod_on_fabric_devices_names_both_racks_and_both_drivers(dra: Lists) -> None:
    """Devices two racks reach, from two drivers: the answer names every node the allocation
    allows and every driver whose devices it holds."""
    _binding_on_rack(dra, failed=False, reach=("rack-1", "rack-2"))
    _fabric_nic(dra)
    verdict = _answer(dra)
    assert (verdict.cause, verdict.action) == (
        "other-constraint",
        f"the scheduler allocated {HELD} on rack-1, rack-2 and waits for the devices to be "
        f"ready before it binds vision/pinned-a ({'; '.join(_WAITING[:2])}). Devices that must "
        "be attached first take a while; if it lasts past the scheduler's binding timeout, look "
        "at the DRA driver (gpu.nvidia.com, nic.example.com).")
    assert evidence_of(verdict) == [
        ("Pod vision/pinned-a", "claims (status.allocation, reservedFor)",
         f"{HELD} on rack-1, rack-2"),
        ("ResourceClaim status.devices[].conditions", "bindingConditions",
         "; ".join(_WAITING[:4]))]


def test_a_claim_reserved_for_an_earlier_pod_of_the_same_name_is_not_binding(
        dra: Lists) -> None:
    """pinned-a names its claim (spec.resourceClaims[].resourceClaimName) and was deleted and
    created again under the same name: the claim is still allocated and reserved for the
    earlier pod's uid. The scheduler has not taken the new pod up, so it is not binding it."""
    _binding_on_rack(dra, failed=False, reach=("rack-1",))
    pod = _pinned_a(dra)
    pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "pinned-a-gpu-q8nlw"}]
    pod["status"].pop("resourceClaimStatuses")
    claim = dra_object(dra, "ResourceClaim", "pinned-a-gpu-q8nlw")
    claim["status"]["reservedFor"][0]["uid"] = "3f1c2b9e-7d4a-4e61-9a0b-5c8d2e7f1a64"
    verdict = _answer(dra)
    assert (verdict.cause, verdict.action) == (
        "scheduler-unavailable",
        "GPU-wise rack-1 fit, but no scheduler has said anything about vision/pinned-a: "
        "spec.schedulerName default-scheduler is not running or does not see the pod. Start or "
        "fix that scheduler, or correct schedulerName.")
    assert evidence_of(verdict) == [
        ("Pod vision/pinned-a", "spec.schedulerName", "default-scheduler"),
        ("Pod vision/pinned-a", "events / PodScheduled condition", "none from any scheduler")]


def test_a_bound_pod_on_fabric_devices_names_both_racks(dra: Lists) -> None:
    """The binding above done: pinned-a bound to rack-1 and running. Its claim's evidence
    names the devices of both drivers and both racks the allocation allows."""
    _binding_on_rack(dra, failed=False, reach=("rack-1", "rack-2"))
    _fabric_nic(dra)
    pod = _pinned_a(dra)
    pod["spec"]["nodeName"] = "rack-1"
    _running(dra, pod)
    verdict = _answer(dra)
    assert (verdict.cause, verdict.action) == (
        "scheduled",
        "vision/pinned-a is bound to rack-1 (phase Running). Nothing is wrong at scheduling "
        "level: look at the pod's logs and container statuses.")
    assert evidence_of(verdict) == [
        ("Pod vision/pinned-a", "spec.nodeName", "rack-1"),
        ("Pod vision/pinned-a", "status.phase", "Running"),
        ("ResourceClaim vision/pinned-a-gpu-q8nlw", "status.allocation / status.reservedFor",
         "gpu-0,gpu-1,gpu-2,gpu-3,gpu-4,nic-0 on rack-1, rack-2; reserved for pinned-a")]


def test_the_drop_functions_carry_their_stage_s_name() -> None:
    """Tracebacks and profiles name a pipeline step by its function's name."""
    assert [f.__name__ for f in (drop_dra_no_device, drop_dra_device_unfit, drop_dra_too_large,
                                 drop_dra_exhausted)] == [
        "drop_dra_no_gpu_node", "drop_dra_device_unfit", "drop_dra_too_large",
        "drop_dra_exhausted"]
