"""The DRA device inventory and per-node claim fit, on the recorded dra-basics objects.

Variants are the recorded JSON with one thing changed (a request added, a claim shared, a
slice republished), so every object still looks as the API server returns it.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable
from typing import Any

import pytest

from scoring.dra import (
    CLAIM_ELSEWHERE,
    DEVICE_UNFIT,
    EXHAUSTED,
    NO_DEVICE,
    TOO_LARGE,
    UNEVALUATED,
    ClaimSet,
    Inventory,
    dra_rows,
)
from scoring.nodetable import node_info
from tests.conftest import slice_uuids
from tests.paths import FIXTURES
from triage.config import DEFAULT_GPU_DRIVERS

SCENARIO = FIXTURES / "scenarios" / "dra-basics"


def _items(name: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = json.loads((SCENARIO / name).read_text())["items"]
    return items


DRA = _items("dra.json")
UUIDS = slice_uuids("dra-basics")
NODES = {n["metadata"]["name"]: node_info(n) for n in _items("nodes.json")}
PODS = {(p["metadata"]["namespace"], p["metadata"]["name"]): p for p in _items("pods.json")}


def inventory_of(objects: Iterable[dict[str, Any]], drivers: Iterable[str]) -> Inventory:
    return Inventory(dra_rows(objects), drivers)


def _find(kind: str, namespace: str, prefix: str) -> dict[str, Any]:
    return next(i for i in DRA if i["kind"] == kind
                and i["metadata"].get("namespace", "") == namespace
                and i["metadata"]["name"].startswith(prefix))


def _pod(namespace: str, name: str) -> dict[str, Any]:
    return copy.deepcopy(PODS[(namespace, name)])


def _stages(inventory: Inventory, pod: dict[str, Any]) -> dict[str, str | None]:
    claims = inventory.pod_claims(pod)
    return {name: inventory.fit(claims, node).stage for name, node in sorted(NODES.items())}


def _unallocated_pod(claim_spec: dict[str, Any], extra: list[dict[str, Any]] | None = None
                     ) -> tuple[Inventory, dict[str, Any]]:
    """vision/pinned-a with its generated claim's spec replaced."""
    objects = copy.deepcopy(DRA)
    claim = next(o for o in objects if o["metadata"]["name"].startswith("pinned-a-gpu-"))
    claim["spec"] = claim_spec
    return inventory_of(objects + (extra or []), DEFAULT_GPU_DRIVERS), _pod("vision", "pinned-a")


def _exactly(name: str, count: int = 1, selectors: tuple[str, ...] = (),
             device_class: str = "gpu.nvidia.com", mode: str = "ExactCount") -> dict[str, Any]:
    exactly: dict[str, Any] = {"allocationMode": mode, "deviceClassName": device_class}
    if mode == "ExactCount":
        exactly["count"] = count
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": s}} for s in selectors]
    return {"name": name, "exactly": exactly}


INVENTORY = inventory_of(DRA, DEFAULT_GPU_DRIVERS)


def test_recorded_pods_stage_by_node() -> None:
    # Worked out from dra.json: dra-a100-1's 4 devices are held by holder-a and holder-b,
    # dra-a100-2 has gpu-0 held by finetune-1g, dra-l4-1 has 2 free L4 (24Gi), the other
    # two nodes publish no slice.
    no_slice = {"cpu-1": NO_DEVICE, "gpu-spare-1": NO_DEVICE}
    assert _stages(INVENTORY, _pod("vision", "pinned-a")) == {
        **no_slice, "dra-a100-1": EXHAUSTED, "dra-a100-2": None, "dra-l4-1": None}
    assert _stages(INVENTORY, _pod("vision", "big-8g")) == {
        **no_slice, "dra-a100-1": TOO_LARGE, "dra-a100-2": TOO_LARGE, "dra-l4-1": TOO_LARGE}
    assert _stages(INVENTORY, _pod("serving", "llm-80g")) == {
        **no_slice, "dra-a100-1": EXHAUSTED, "dra-a100-2": None, "dra-l4-1": DEVICE_UNFIT}
    assert _stages(INVENTORY, _pod("vision", "finetune-1g")) == {
        "cpu-1": CLAIM_ELSEWHERE, "gpu-spare-1": CLAIM_ELSEWHERE, "dra-a100-1": CLAIM_ELSEWHERE,
        "dra-a100-2": None, "dra-l4-1": CLAIM_ELSEWHERE}


def test_exhausted_names_the_claims_and_their_pods() -> None:
    pod = _pod("vision", "pinned-a")
    fit = INVENTORY.fit(INVENTORY.pod_claims(pod), NODES["dra-a100-1"])
    assert fit.detail == (
        "vision/pinned-a-gpu-q8nlw request gpu needs 1, 4/4 matching device(s) allocated to "
        "claim vision/holder-a-gpu-8jq68 (pod vision/holder-a): gpu-0,gpu-1, "
        "claim vision/holder-b-gpu-srp9s (pod vision/holder-b): gpu-2,gpu-3")
    rows = {d.uuid: d for d in INVENTORY.device_rows(fit)}
    assert rows[UUIDS["dra-a100-1", "gpu-2"]].holders == ["vision/holder-b"]
    assert rows[UUIDS["dra-a100-1", "gpu-2"]].code == "allocated to vision/holder-b-gpu-srp9s"
    assert rows[UUIDS["dra-a100-1", "gpu-0"]].type == "NVIDIA A100-SXM4-80GB"
    assert rows[UUIDS["dra-a100-1", "gpu-0"]].memory_total == 81920


def test_device_unfit_says_which_selector_failed() -> None:
    pod = _pod("serving", "llm-80g")
    fit = INVENTORY.fit(INVENTORY.pod_claims(pod), NODES["dra-l4-1"])
    assert "2 × NVIDIA L4, memory 24Gi" in fit.detail
    selector = 'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("80Gi")) >= 0'
    assert [d.code for d in INVENTORY.device_rows(fit)] == [f"fails {selector}"] * 2


def test_missing_device_class_is_a_claim_problem() -> None:
    claims = INVENTORY.pod_claims(_pod("serving", "mig-1g"))
    assert claims[0].problem == "request mig: device class mig.nvidia.com does not exist"


def test_several_requests_of_one_claim_need_distinct_devices() -> None:
    # dra-a100-2: 4 devices, gpu-0 taken. 2 + 1 fit in the 3 free; 2 + 2 need 4 free.
    inventory, pod = _unallocated_pod({"devices": {"requests": [_exactly("a", 2),
                                                                _exactly("b", 1)]}})
    assert _stages(inventory, pod)["dra-a100-2"] is None
    inventory, pod = _unallocated_pod({"devices": {"requests": [_exactly("a", 2),
                                                                _exactly("b", 2)]}})
    fit = inventory.fit(inventory.pod_claims(pod), NODES["dra-a100-2"])
    assert fit.stage == EXHAUSTED
    assert "together need 4 free devices, 3 are free" in fit.detail
    assert "vision/finetune-1g" in fit.detail
    # 3 + 2 exceed the node's 4 even if all were free.
    inventory, pod = _unallocated_pod({"devices": {"requests": [_exactly("a", 3),
                                                                _exactly("b", 2)]}})
    assert _stages(inventory, pod)["dra-a100-2"] == TOO_LARGE


def test_several_claims_of_one_pod_fit_together_or_not_at_all() -> None:
    objects = copy.deepcopy(DRA)
    second = copy.deepcopy(_find("ResourceClaim", "vision", "pinned-a-gpu-"))
    second["metadata"]["name"] = "pinned-a-extra-abcde"
    second["spec"]["devices"]["requests"][0]["exactly"]["count"] = 2
    pod = _pod("vision", "pinned-a")
    pod["spec"]["resourceClaims"].append({"name": "extra", "resourceClaimName":
                                          "pinned-a-extra-abcde"})
    inventory = inventory_of([*objects, second], DEFAULT_GPU_DRIVERS)
    stages = _stages(inventory, pod)
    assert stages["dra-a100-2"] is None  # 1 + 2 of 3 free
    second["spec"]["devices"]["requests"][0]["exactly"]["count"] = 3
    inventory = inventory_of([*objects, second], DEFAULT_GPU_DRIVERS)
    assert _stages(inventory, pod)["dra-a100-2"] == EXHAUSTED  # 1 + 3 of 3 free
    assert _stages(inventory, pod)["dra-l4-1"] == TOO_LARGE  # 1 + 3 of 2


def test_shared_claim_uses_its_own_devices_and_only_its_node() -> None:
    # A pre-created claim, already allocated gpu-0,gpu-1 on dra-a100-1 (holder-a's), shared by
    # a second pod: its own devices are not "taken" from it; other nodes cannot serve it.
    pod = _pod("vision", "pinned-a")
    pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "holder-a-gpu-8jq68"}]
    pod["status"].pop("resourceClaimStatuses", None)
    claims = INVENTORY.pod_claims(pod)
    assert claims[0].source == "ResourceClaim vision/holder-a-gpu-8jq68"
    stages = _stages(INVENTORY, pod)
    assert stages["dra-a100-1"] is None
    assert stages["dra-a100-2"] == CLAIM_ELSEWHERE
    detail = INVENTORY.fit(claims, NODES["dra-l4-1"]).detail
    assert detail == "claim vision/holder-a-gpu-8jq68 is allocated for dra-a100-1, not dra-l4-1"


def test_allocation_mode_all_needs_every_matching_device_free() -> None:
    inventory, pod = _unallocated_pod({"devices": {"requests": [_exactly("all", mode="All")]}})
    stages = _stages(inventory, pod)
    assert stages["dra-a100-2"] == EXHAUSTED  # gpu-0 is finetune-1g's
    assert stages["dra-l4-1"] is None


def test_missing_claim_and_template_are_named() -> None:
    pod = _pod("vision", "pinned-a")
    pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "nope"}]
    assert INVENTORY.pod_claims(pod)[0].problem == (
        "ResourceClaim vision/nope does not exist (pod claim gpu)")
    pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "nope"}]
    pod["status"].pop("resourceClaimStatuses", None)
    assert INVENTORY.pod_claims(pod)[0].problem == (
        "ResourceClaimTemplate vision/nope does not exist (pod claim gpu)")
    # Listed as generated, but the claim is gone.
    pod["status"]["resourceClaimStatuses"] = [{"name": "gpu", "resourceClaimName": "gone-x"}]
    assert INVENTORY.pod_claims(pod)[0].problem == (
        "ResourceClaim vision/gone-x does not exist (pod claim gpu)")


def test_claim_not_generated_yet_is_read_from_its_template() -> None:
    pod = _pod("vision", "big-8g")
    pod["status"].pop("resourceClaimStatuses")
    claims = INVENTORY.pod_claims(pod)
    assert claims[0].source == "ResourceClaimTemplate vision/eight-gpus"
    assert claims[0].requests[0].alternatives[0].count == 8
    assert _stages(INVENTORY, pod)["dra-a100-1"] == TOO_LARGE


def test_class_and_request_selectors_both_apply() -> None:
    l4_class = copy.deepcopy(_find("DeviceClass", "", "gpu.nvidia.com"))
    l4_class["metadata"]["name"] = "l4.example.com"
    l4_class["spec"]["selectors"].append({"cel": {"expression": (
        'device.attributes["gpu.nvidia.com"].productName == "NVIDIA L4"')}})
    inventory, pod = _unallocated_pod({"devices": {"requests": [_exactly(
        "gpu", selectors=('device.capacity["gpu.nvidia.com"].memory.isGreaterThan('
                          'quantity("40Gi"))',), device_class="l4.example.com")]}}, [l4_class])
    stages = _stages(inventory, pod)
    assert stages["dra-a100-2"] == NO_DEVICE  # A100s are not of that class
    assert stages["dra-l4-1"] == DEVICE_UNFIT  # of the class, but 24Gi
    assert inventory.is_gpu_class("l4.example.com")


def test_unevaluable_selector_leaves_the_node_unjudged() -> None:
    inventory, pod = _unallocated_pod({"devices": {"requests": [_exactly(
        "gpu", selectors=('device.attributes["gpu.nvidia.com"].mig == true',))]}})
    fit = inventory.fit(inventory.pod_claims(pod), NODES["dra-l4-1"])
    assert fit.stage == UNEVALUATED
    assert fit.unevaluated == ['vision/pinned-a-gpu-q8nlw request gpu selector '
                               'device.attributes["gpu.nvidia.com"].mig == true: '
                               "no such member in mapping: 'mig'"]
    # No slice: nothing to evaluate, so the node is judged.
    assert inventory.fit(inventory.pod_claims(pod), NODES["cpu-1"]).stage == NO_DEVICE


def test_only_the_newest_pool_generation_counts() -> None:
    objects = copy.deepcopy(DRA)
    old = next(o for o in objects if o["metadata"]["name"].startswith("dra-l4-1-"))
    new = copy.deepcopy(old)
    new["metadata"]["name"] = "dra-l4-1-gpu.nvidia.com-new"
    new["spec"]["pool"]["generation"] = old["spec"]["pool"].get("generation", 0) + 1
    new["spec"]["devices"] = new["spec"]["devices"][:1]
    inventory = inventory_of([*objects, new], DEFAULT_GPU_DRIVERS)
    assert [d.name for d in inventory.devices_for(NODES["dra-l4-1"])] == ["gpu-0"]


def test_slices_for_selected_or_all_nodes() -> None:
    shared = copy.deepcopy(next(o for o in DRA if o["metadata"]["name"].startswith("dra-l4-1-")))
    shared["metadata"]["name"] = "fabric"
    shared["spec"].pop("nodeName")
    shared["spec"]["pool"]["name"] = "fabric"
    shared["spec"]["nodeSelector"] = {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "pool", "operator": "In", "values": ["gpu-spare"]}]}]}
    inventory = inventory_of([*DRA, shared], DEFAULT_GPU_DRIVERS)
    assert len(inventory.devices_for(NODES["gpu-spare-1"])) == 2
    assert len(inventory.devices_for(NODES["cpu-1"])) == 0
    shared["spec"].pop("nodeSelector")
    shared["spec"]["allNodes"] = True
    inventory = inventory_of([*DRA, shared], DEFAULT_GPU_DRIVERS)
    assert len(inventory.devices_for(NODES["cpu-1"])) == 2


def test_admin_access_ignores_allocations() -> None:
    request = _exactly("gpu", 4)
    request["exactly"]["adminAccess"] = True
    inventory, pod = _unallocated_pod({"devices": {"requests": [request]}})
    assert _stages(inventory, pod)["dra-a100-1"] is None


def test_first_available_takes_the_first_alternative_that_fits() -> None:
    inventory, pod = _unallocated_pod({"devices": {"requests": [{"name": "gpu", "firstAvailable": [
        {"name": "big", "deviceClassName": "gpu.nvidia.com", "allocationMode": "ExactCount",
         "count": 4},
        {"name": "small", "deviceClassName": "gpu.nvidia.com", "allocationMode": "ExactCount",
         "count": 2}]}]}})
    stages = _stages(inventory, pod)
    assert stages["dra-l4-1"] is None  # 2 of 2
    assert stages["dra-a100-1"] == EXHAUSTED  # both alternatives: all 4 taken


@pytest.mark.parametrize(("drivers", "expected"), [
    (DEFAULT_GPU_DRIVERS, False), (("nic.example.com",), True)])
def test_gpu_classes_follow_the_configured_drivers(drivers: tuple[str, ...],
                                                   expected: bool) -> None:
    nic = copy.deepcopy(_find("DeviceClass", "", "gpu.nvidia.com"))
    nic["metadata"]["name"] = "nic"
    nic["spec"]["selectors"] = [{"cel": {"expression": 'device.driver == "nic.example.com"'}}]
    inventory = inventory_of([*DRA, nic], drivers)
    assert inventory.is_gpu_class("nic") is expected
    assert inventory.is_gpu_class("gpu.nvidia.com") is not expected


# -- extended resources backed by DRA -------------------------------------------------------

def _class(name: str, created: str, extended: str | None = None) -> dict[str, Any]:
    device_class = copy.deepcopy(_find("DeviceClass", "", "gpu.nvidia.com"))
    device_class["metadata"].update(name=name, creationTimestamp=created)
    if extended is not None:
        device_class["spec"]["extendedResourceName"] = extended
    return device_class


@pytest.mark.parametrize(("classes", "resource", "expected"), [
    ([], "nvidia.com/gpu", None),  # the recorded class names no extended resource
    ([("a.example.com", "2026-12-01T09:00:00Z", "nvidia.com/gpu")], "nvidia.com/gpu",
     "a.example.com"),
    ([("old.example.com", "2026-12-01T09:00:00Z", "nvidia.com/gpu"),
      ("new.example.com", "2026-12-01T10:00:00Z", "nvidia.com/gpu")], "nvidia.com/gpu",
     "new.example.com"),  # the newest class wins
    ([("b.example.com", "2026-12-01T09:00:00Z", "nvidia.com/gpu"),
      ("a.example.com", "2026-12-01T09:00:00Z", "nvidia.com/gpu")], "nvidia.com/gpu",
     "a.example.com"),  # created together: the first by name
    ([], "deviceclass.resource.kubernetes.io/gpu.nvidia.com", "gpu.nvidia.com"),  # implicit
    ([], "deviceclass.resource.kubernetes.io/mig.nvidia.com", None),  # no such class
    ([("a.example.com", "2026-12-01T09:00:00Z", "amd.com/gpu")], "nvidia.com/gpu", None),
])
def test_the_class_serving_an_extended_resource(classes: list[tuple[str, str, str]],
                                                resource: str, expected: str | None) -> None:
    inventory = inventory_of([*DRA, *(_class(*c) for c in classes)], DEFAULT_GPU_DRIVERS)
    assert inventory.extended_class(resource) == expected


def _extended_set() -> ClaimSet:
    inventory = inventory_of([*DRA, _class("dp.example.com", "2026-12-01T09:00:00Z",
                                           "nvidia.com/gpu")], DEFAULT_GPU_DRIVERS)
    pod = _pod("serving", "legacy-gpu")
    return ClaimSet(inventory, [], inventory.extended_claims(pod, {"nvidia.com/gpu": 2}))


def test_dra_serves_an_extended_resource_only_where_allocatable_lacks_it() -> None:
    raw = {n["metadata"]["name"]: n for n in _items("nodes.json")}
    plugin = raw["dra-a100-2"]  # a device plugin also reports 4 there
    for section in ("capacity", "allocatable"):
        plugin["status"][section]["nvidia.com/gpu"] = "4"
    broken = raw["gpu-spare-1"]  # registered, offers none, publishes no slice
    broken["status"]["capacity"]["nvidia.com/gpu"] = "2"
    broken["status"]["allocatable"]["nvidia.com/gpu"] = "0"
    republished = raw["dra-a100-1"]  # registered, offers none, but publishes a slice
    republished["status"]["capacity"]["nvidia.com/gpu"] = "4"
    republished["status"]["allocatable"]["nvidia.com/gpu"] = "0"
    nodes = {name: node_info(node) for name, node in raw.items()}
    claims = _extended_set()
    served = {name: claims.serves(node, "nvidia.com/gpu") for name, node in nodes.items()}
    assert served == {"dra-a100-1": True, "dra-a100-2": False, "dra-l4-1": True,
                      "gpu-spare-1": False, "cpu-1": True}
    assert claims.serves(nodes["dra-l4-1"], "amd.com/gpu") is False  # no class serves it
    # where DRA serves it, the pod's 2 GPUs are a claim on the node's devices
    assert claims.fit(nodes["dra-a100-1"]).stage == EXHAUSTED  # holder-a and holder-b
    assert claims.fit(nodes["dra-l4-1"]).stage is None
    assert claims.fit(nodes["cpu-1"]).stage == NO_DEVICE
    assert claims.fit(nodes["dra-a100-2"]).requests == []  # the device plugin's node


# -- device taints (DRADeviceTaints) ---------------------------------------------------------

def _taint_l4(effect: str) -> list[dict[str, Any]]:
    items = copy.deepcopy(DRA)
    l4 = next(i for i in items if i["kind"] == "ResourceSlice"
              and i["spec"]["nodeName"] == "dra-l4-1")
    for device in l4["spec"]["devices"]:
        device["taints"] = [{"key": "gpu.nvidia.com/unhealthy", "value": "xid-79",
                             "effect": effect, "timeAdded": "2026-12-01T08:43:31Z"}]
    return items


def _pod_using_l4_pair() -> dict[str, Any]:
    pod = _pod("serving", "llm-80g")
    pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "l4-pair"}]
    pod.setdefault("status", {}).pop("resourceClaimStatuses", None)
    return pod


@pytest.mark.parametrize(("effect", "tolerations", "stage"), [
    ("NoSchedule", [], DEVICE_UNFIT),
    ("NoExecute", [], DEVICE_UNFIT),
    ("None", [], None),  # informs, keeps nobody off
    ("NoSchedule", [{"key": "gpu.nvidia.com/unhealthy", "operator": "Exists"}], None),
    ("NoSchedule", [{"key": "gpu.nvidia.com/unhealthy", "operator": "Equal", "value": "xid-48"}],
     DEVICE_UNFIT),  # another value
    ("NoExecute", [{"key": "gpu.nvidia.com/unhealthy", "operator": "Exists",
                    "effect": "NoSchedule"}], DEVICE_UNFIT),  # another effect
    ("NoSchedule", [{"operator": "Exists"}], None),  # no key: every taint
])
def test_tainted_devices_are_skipped_unless_tolerated(effect: str,
                                                      tolerations: list[dict[str, Any]],
                                                      stage: str | None) -> None:
    items = _taint_l4(effect)
    claim = copy.deepcopy(_find("ResourceClaim", "serving", "llm-80g-gpu-"))
    claim["metadata"]["name"] = "l4-pair"
    request = claim["spec"]["devices"]["requests"][0]["exactly"]
    request.pop("selectors", None)
    request["count"] = 2
    if tolerations:
        request["tolerations"] = tolerations
    inventory = inventory_of([*items, claim], DEFAULT_GPU_DRIVERS)
    fit = inventory.fit(inventory.pod_claims(_pod_using_l4_pair()), NODES["dra-l4-1"])
    assert fit.stage == stage
    if stage == DEVICE_UNFIT:
        assert "2/2 matching device(s) are tainted" in fit.detail
        assert "gpu.nvidia.com/unhealthy=xid-79:" + effect in fit.detail


def test_a_taint_on_some_devices_leaves_the_others_usable() -> None:
    items = copy.deepcopy(DRA)
    a100 = next(i for i in items if i["kind"] == "ResourceSlice"
                and i["spec"]["nodeName"] == "dra-a100-2")
    a100["spec"]["devices"][3]["taints"] = [{"key": "maintenance", "effect": "NoSchedule"}]
    claim = next(i for i in items if i["kind"] == "ResourceClaim"
                 and i["metadata"]["name"].startswith("pinned-a-gpu-"))
    request = claim["spec"]["devices"]["requests"][0]["exactly"]
    pod = _pod("vision", "pinned-a")

    def stage(count: int) -> str | None:
        request["count"] = count
        inventory = inventory_of(items, DEFAULT_GPU_DRIVERS)
        return inventory.fit(inventory.pod_claims(pod), NODES["dra-a100-2"]).stage
    # dra-a100-2: gpu-0 is finetune-1g's, gpu-3 tainted; gpu-1 and gpu-2 are free
    assert [stage(n) for n in (2, 3, 4, 5)] == [None, EXHAUSTED, DEVICE_UNFIT, TOO_LARGE]


# -- partitionable devices (DRAPartitionableDevices): shared counters ------------------------

def _partitioned(gpu0_allocated: bool, pair_count: int | None = None) -> Inventory:
    """dra-a100-2 as a driver publishes a GPU and its two halves: gpu-0 and gpu-0-half-0/1
    consume the counter set gpu-0-counters (80Gi), published in a slice of its own."""
    items = copy.deepcopy(DRA)
    a100 = next(i for i in items if i["kind"] == "ResourceSlice"
                and i["spec"]["nodeName"] == "dra-a100-2")
    gpu0 = a100["spec"]["devices"][0]
    gpu0["consumesCounters"] = [{"counterSet": "gpu-0-counters",
                                 "counters": {"memory": {"value": "80Gi"}}}]
    for half in (0, 1):
        device = copy.deepcopy(gpu0)
        device["name"] = f"gpu-0-half-{half}"
        del device["attributes"]["uuid"]  # a partition publishes no GPU UUID of its own
        device["consumesCounters"][0]["counters"]["memory"]["value"] = "40Gi"
        a100["spec"]["devices"].append(device)
    counters = copy.deepcopy(a100)
    counters["metadata"]["name"] = "dra-a100-2-gpu.nvidia.com-counters"
    counters["spec"].pop("devices")
    counters["spec"].pop("nodeName", None)
    counters["spec"]["sharedCounters"] = [{"name": "gpu-0-counters",
                                           "counters": {"memory": {"value": "80Gi"}}}]
    items.append(counters)
    if not gpu0_allocated:
        items = [i for i in items if not i["metadata"]["name"].startswith("finetune-1g-gpu-")]
    if pair_count is not None:
        claim = next(i for i in items if i["metadata"]["name"].startswith("pinned-a-gpu-"))
        claim["spec"]["devices"]["requests"][0]["exactly"]["count"] = pair_count
    return inventory_of(items, DEFAULT_GPU_DRIVERS)


def _pair_on_a100_2(gpu0_allocated: bool, count: int) -> Any:
    inventory = _partitioned(gpu0_allocated, count)
    return inventory.fit(inventory.pod_claims(_pod("vision", "pinned-a")), NODES["dra-a100-2"])


def test_partitions_of_an_allocated_gpu_are_not_free() -> None:
    # finetune-1g holds gpu-0, which uses all of gpu-0-counters: its halves cannot be had
    fit = _pair_on_a100_2(True, 4)
    assert fit.stage == EXHAUSTED  # gpu-1..3 are free; the halves are counted out
    outcome = fit.requests[0]
    assert sorted(d.name for d, _ in outcome.holders) == ["gpu-0", "gpu-0-half-0",
                                                          "gpu-0-half-1"]
    assert {h.claim for _, h in outcome.holders} == {"vision/finetune-1g-gpu-7hfk8"}
    codes = {row.uuid: row.code for row in _partitioned(gpu0_allocated=True).device_rows(fit)}
    assert codes[UUIDS["dra-a100-2", "gpu-0"]] == "allocated to vision/finetune-1g-gpu-7hfk8"
    assert codes["gpu-0-half-1"] == ("its shared counters are used by "
                                     "vision/finetune-1g-gpu-7hfk8")  # its name: no UUID
    assert codes[UUIDS["dra-a100-2", "gpu-1"]] is None
    assert _pair_on_a100_2(True, 3).stage is None


def test_free_partitions_fit_as_many_as_the_counters_allow() -> None:
    # gpu-1..3 and both halves (40Gi + 40Gi of 80Gi): five devices; gpu-0 itself then not
    assert _pair_on_a100_2(False, 5).stage is None
    assert _pair_on_a100_2(False, 6).stage == EXHAUSTED
