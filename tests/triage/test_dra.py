"""GPUs through Dynamic Resource Allocation, triaged from the objects (dra-basics, recorded).

kube-scheduler says ``N cannot allocate all claims`` for a missing driver, devices failing the
selectors, too few devices and devices all taken alike: each trap below keeps the scheduler's
message as recorded and changes only the objects, so a triage that read the message would
give the same answer twice and fail.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from scoring.verdict import Verdict
from tests.conftest import SCENARIOS, find, load_lists, slice_uuids
from triage.classify import triage
from triage.config import TriageConfig
from triage.messages import latest_scheduling_failure
from triage.refs import parse_ref
from triage.snapshot import Snapshot

SCENARIO = SCENARIOS / "dra-basics"
EXPECTED: dict[str, dict[str, str]] = json.loads((SCENARIO / "expected.json").read_text())
Lists = dict[str, list[dict[str, Any]]]

# The decisive object and field of every answer, worked out by hand from the dumped objects.
DECISIVE = {
    "vision/holder-a": ("ResourceClaim vision/holder-a-gpu-8jq68",
                        "status.allocation / status.reservedFor",
                        "gpu-0,gpu-1 on dra-a100-1; reserved for holder-a"),
    "vision/finetune-1g": ("ResourceClaim vision/finetune-1g-gpu-7hfk8",
                           "status.allocation / status.reservedFor",
                           "gpu-0 on dra-a100-2; reserved for finetune-1g"),
    "vision/pinned-a": ("ResourceClaim vision/holder-b-gpu-srp9s",
                        "status.allocation.devices.results",
                        "gpu-2,gpu-3 on dra-a100-1; reservedFor vision/holder-b"),
    "vision/big-8g": ("ResourceClaim vision/big-8g-gpu-4nr9w",
                      "spec.devices.requests[gpu].exactly.count", "8"),
    "vision/spare-pool": ("Node/gpu-spare-1", "ResourceSlices (spec.nodeName / nodeSelector)",
                          "no gpu.nvidia.com device"),
    "vision/cpu-heavy": ("Node/dra-a100-2", "status.allocatable − requests", "Insufficient cpu"),
    "serving/llm-80g": ("ResourceSlice dra-l4-1-gpu.nvidia.com-46379", "spec.devices[]",
                        "2 × NVIDIA L4, memory 24Gi"),
    "serving/mig-1g": ("ResourceClaim serving/mig-1g-mig-s4mzp",
                       "spec.devices.requests[mig].exactly.deviceClassName",
                       "request mig: device class mig.nvidia.com does not exist"),
    "serving/h100-pool": ("Pod serving/h100-pool", "spec.nodeSelector / affinity",
                          "nodeSelector pool=h100"),
    "serving/legacy-gpu": ("Node/dra-a100-2", "status.capacity[nvidia.com/gpu]", "absent"),
}


def _answer(lists: Lists, ref: str, config: TriageConfig | None = None) -> Verdict:
    snapshot = Snapshot(**copy.deepcopy(lists))
    return triage(snapshot, parse_ref(ref), config or TriageConfig())


def _dra(lists: Lists, kind: str, prefix: str) -> dict[str, Any]:
    return next(o for o in lists["dra"] if o["kind"] == kind
                and o["metadata"]["name"].startswith(prefix))


@pytest.fixture
def dra() -> Lists:
    return load_lists("dra-basics")


@pytest.fixture(scope="module")
def recorded() -> dict[str, Verdict]:
    snapshot = Snapshot.from_dir(SCENARIO)
    return {ref: triage(snapshot, parse_ref(ref)) for ref in EXPECTED}


@pytest.mark.parametrize("ref", sorted(EXPECTED))
def test_every_expected_cause_with_its_decisive_evidence(ref: str,
                                                         recorded: dict[str, Verdict]) -> None:
    verdict = recorded[ref]
    assert verdict.cause == EXPECTED[ref]["cause"]
    assert DECISIVE[ref] in [(e.object, e.field, e.value) for e in verdict.evidence]


def test_actions_name_the_objects(recorded: dict[str, Verdict]) -> None:
    assert recorded["vision/pinned-a"].action == (
        "dra-a100-1: 4/4 matching device(s) allocated, to claim "
        "vision/holder-a-gpu-8jq68 (pod vision/holder-a, gpu-0,gpu-1) and claim "
        "vision/holder-b-gpu-srp9s (pod vision/holder-b, gpu-2,gpu-3); it needs "
        "1 × gpu.nvidia.com. Wait for them to finish, or add capacity.")
    assert recorded["vision/big-8g"].action.startswith(
        "ResourceClaim vision/big-8g-gpu-4nr9w (from template eight-gpus) asks 8 × "
        "gpu.nvidia.com; the most any node you can use has is 4 (dra-a100-1, dra-a100-2; "
        "dra-l4-1 has 2), even if all were free.")
    assert "gpu-spare-1 although its GFD labels say NVIDIA-A10" in recorded[
        "vision/spare-pool"].action
    assert "(device.capacity[\"gpu.nvidia.com\"].memory.compareTo(quantity(\"80Gi\")) >= 0): " \
           "dra-l4-1 has 2 × NVIDIA L4, memory 24Gi" in recorded["serving/llm-80g"].action
    assert "mig.nvidia.com does not exist (DeviceClasses: gpu.nvidia.com)" in recorded[
        "serving/mig-1g"].action
    # The device-plugin pod is told where the GPUs are: DRA devices.
    assert "dra-a100-1, dra-a100-2, dra-l4-1 publish GPUs only as DRA devices" in recorded[
        "serving/legacy-gpu"].action


def test_node_summary_counts_dra_outcomes(recorded: dict[str, Verdict]) -> None:
    assert recorded["vision/big-8g"].node_summary == (
        "5 nodes: 5 not fit (2 no-gpu-node, 3 too-large), 0 fit")
    assert recorded["serving/llm-80g"].node_summary == (
        "5 nodes: 5 not fit (4 selector-mismatch, 1 device-unfit), 0 fit")
    assert recorded["vision/cpu-heavy"].node_summary == (
        "5 nodes: 5 not fit (3 selector-mismatch, 1 exhausted, 1 other-constraint), 0 fit")


UUIDS = slice_uuids("dra-basics")


def test_show_devices_lists_the_slices_devices(recorded: dict[str, Verdict]) -> None:
    """The UUID column holds the GPU's UUID the driver publishes (the one DCGM names), not
    the slice's device name."""
    l4 = next(n for n in recorded["serving/llm-80g"].nodes if n.name == "dra-l4-1")
    selector = 'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("80Gi")) >= 0'
    assert [(d.uuid, d.type, d.memory_total, d.code) for d in l4.devices] == [
        (UUIDS["dra-l4-1", "gpu-0"], "NVIDIA L4", 24576, f"fails {selector}"),
        (UUIDS["dra-l4-1", "gpu-1"], "NVIDIA L4", 24576, f"fails {selector}")]
    assert all(d.uuid.startswith("GPU-") for d in l4.devices)
    a100 = next(n for n in recorded["vision/pinned-a"].nodes if n.name == "dra-a100-1")
    a100_uuid = {name: UUIDS["dra-a100-1", name] for name in ("gpu-0", "gpu-1", "gpu-2", "gpu-3")}
    assert [(d.uuid, d.holders, d.code) for d in a100.devices] == [
        (a100_uuid["gpu-0"], ["vision/holder-a"], "allocated to vision/holder-a-gpu-8jq68"),
        (a100_uuid["gpu-1"], ["vision/holder-a"], "allocated to vision/holder-a-gpu-8jq68"),
        (a100_uuid["gpu-2"], ["vision/holder-b"], "allocated to vision/holder-b-gpu-srp9s"),
        (a100_uuid["gpu-3"], ["vision/holder-b"], "allocated to vision/holder-b-gpu-srp9s")]
    bound = recorded["vision/finetune-1g"].nodes[0]
    assert [(d.uuid, d.holders) for d in bound.devices][:2] == [
        (UUIDS[bound.name, "gpu-0"], ["vision/finetune-1g"]), (UUIDS[bound.name, "gpu-1"], [])]


# -- traps: the same message, different objects, different answers -------------------------

def test_one_scheduler_message_three_causes(dra: Lists) -> None:
    snapshot = Snapshot(**copy.deepcopy(dra))
    messages = set()
    for namespace, name in (("vision", "pinned-a"), ("vision", "spare-pool"),
                            ("serving", "llm-80g")):
        pod = snapshot.rows.pod(namespace, name)
        assert pod is not None
        messages.add(latest_scheduling_failure(pod,
                                               snapshot.rows.events_for("Pod", namespace, name)))
    assert len(messages) == 1  # word for word the same
    assert [_answer(dra, ref).cause for ref in ("vision/pinned-a", "vision/spare-pool",
                                                "serving/llm-80g")] == [
        "exhausted", "no-gpu-node", "device-unfit"]


def test_exhausted_follows_the_allocations_not_the_message(dra: Lists) -> None:
    # holder-b's claim released (its pod gone): dra-a100-1 has 2 free devices.
    claim = _dra(dra, "ResourceClaim", "holder-b-gpu-")
    claim["status"] = {}
    dra["pods"].remove(find(dra["pods"], "holder-b", "vision"))
    verdict = _answer(dra, "vision/pinned-a")
    assert verdict.cause != "exhausted"
    assert {n.name: n.outcome for n in verdict.nodes}["dra-a100-1"] == "fit"


def test_no_gpu_node_follows_the_slices(dra: Lists) -> None:
    # A DRA driver starts on gpu-spare-1 and publishes its two A10s.
    published = copy.deepcopy(_dra(dra, "ResourceSlice", "dra-l4-1-"))
    published["metadata"]["name"] = "gpu-spare-1-gpu.nvidia.com-abcde"
    published["spec"]["nodeName"] = "gpu-spare-1"
    published["spec"]["pool"]["name"] = "gpu-spare-1"
    dra["dra"].append(published)
    verdict = _answer(dra, "vision/spare-pool")
    assert verdict.cause != "no-gpu-node"
    assert {n.name: n.outcome for n in verdict.nodes}["gpu-spare-1"] == "fit"


def test_device_unfit_follows_the_devices_capacity(dra: Lists) -> None:
    l4 = _dra(dra, "ResourceSlice", "dra-l4-1-")
    for device in l4["spec"]["devices"]:
        device["capacity"]["memory"]["value"] = "80Gi"
    verdict = _answer(dra, "serving/llm-80g")
    assert {n.name: n.outcome for n in verdict.nodes}["dra-l4-1"] == "fit"


def test_too_large_follows_the_device_count(dra: Lists) -> None:
    a100 = _dra(dra, "ResourceSlice", "dra-a100-2-")
    extra = copy.deepcopy(a100["spec"]["devices"])
    for position, device in enumerate(extra, start=4):
        device["name"] = f"gpu-{position}"
    a100["spec"]["devices"] += extra
    verdict = _answer(dra, "vision/big-8g")
    # 8 devices now, gpu-0 held by finetune-1g: waiting helps.
    assert verdict.cause == "exhausted"
    assert "finetune-1g" in verdict.action


def test_a_missing_claim_is_named_although_the_scheduler_says_nothing(dra: Lists) -> None:
    pod = find(dra["pods"], "pinned-a", "vision")
    pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "team-gpus"}]
    pod["status"].pop("resourceClaimStatuses")
    dra["events"] = [e for e in dra["events"]
                     if (e.get("regarding") or e.get("involvedObject") or {}).get("name")
                     != "pinned-a"]
    verdict = _answer(dra, "vision/pinned-a")
    assert verdict.cause == "other-constraint"  # not scheduler-unavailable
    assert verdict.action.startswith("ResourceClaim vision/team-gpus does not exist")


def test_a_missing_device_class_is_found_without_events(dra: Lists) -> None:
    dra["events"] = []
    verdict = _answer(dra, "serving/mig-1g")
    assert verdict.cause == "other-constraint"
    assert "mig.nvidia.com does not exist" in verdict.action


def test_answers_hold_when_events_expired(dra: Lists, recorded: dict[str, Verdict]) -> None:
    dra["events"] = []
    for ref in EXPECTED:
        assert _answer(dra, ref).cause == recorded[ref].cause, ref


def test_a_shared_claim_allocated_where_the_pod_cannot_go(dra: Lists) -> None:
    # pinned-a (nodeSelector pool=a100-a) shares finetune-1g's claim, allocated on dra-a100-2.
    pod = find(dra["pods"], "pinned-a", "vision")
    pod["spec"]["resourceClaims"] = [{"name": "gpu",
                                      "resourceClaimName": "finetune-1g-gpu-7hfk8"}]
    pod["status"].pop("resourceClaimStatuses")
    verdict = _answer(dra, "vision/pinned-a")
    assert verdict.cause == "other-constraint"
    assert verdict.action.startswith(
        "claim vision/finetune-1g-gpu-7hfk8 is already allocated for dra-a100-2, and "
        "vision/pinned-a cannot use it: dra-a100-2 is excluded (selector-mismatch: unmatched "
        "pool=a100-a)")
    # Without the selector it could run beside finetune-1g: the claim fits there.
    del pod["spec"]["nodeSelector"]
    assert {n.name: n.outcome for n in _answer(dra, "vision/pinned-a").nodes}[
        "dra-a100-2"] == "fit"


def test_a_selector_that_cannot_be_evaluated_defers_to_the_scheduler(dra: Lists) -> None:
    template = _dra(dra, "ResourceClaim", "llm-80g-gpu-")
    template["spec"]["devices"]["requests"][0]["exactly"]["selectors"] = [
        {"cel": {"expression": 'device.attributes["gpu.nvidia.com"].mig == true'}}]
    verdict = _answer(dra, "serving/llm-80g")
    assert verdict.cause == "other-constraint"
    assert verdict.action.startswith(
        "selector not evaluated: serving/llm-80g-gpu-j47x4 request gpu selector "
        "device.attributes[\"gpu.nvidia.com\"].mig == true: no such member in mapping: 'mig'.")
    assert "1 cannot allocate all claims" in verdict.action  # the scheduler's word, quoted
    assert any(e.field == "scheduler message" for e in verdict.evidence)


def test_a_dra_pod_is_not_no_gpu_request(recorded: dict[str, Verdict]) -> None:
    assert all(v.cause != "no-gpu-request" for v in recorded.values())


def test_a_claim_of_a_non_gpu_class_is_no_gpu_request(dra: Lists) -> None:
    nic = copy.deepcopy(_dra(dra, "DeviceClass", "gpu.nvidia.com"))
    nic["metadata"]["name"] = "nic.example.com"
    nic["spec"]["selectors"] = [{"cel": {"expression": 'device.driver == "nic.example.com"'}}]
    dra["dra"].append(nic)
    claim = _dra(dra, "ResourceClaim", "pinned-a-gpu-")
    claim["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] = "nic.example.com"
    verdict = _answer(dra, "vision/pinned-a")
    assert verdict.cause == "no-gpu-request"
    assert "ask for nic.example.com, not a GPU class" in verdict.action


def test_gpu_drivers_are_configurable(dra: Lists) -> None:
    only_amd = TriageConfig(gpu_drivers=("gpu.amd.com",))
    assert _answer(dra, "vision/pinned-a", only_amd).cause == "no-gpu-request"
    assert _answer(dra, "vision/pinned-a").cause == "exhausted"


def test_dra_and_extended_resources_together(dra: Lists) -> None:
    # A pod asking nvidia.com/gpu and a DRA GPU: no node reports nvidia.com/gpu at all.
    pod = find(dra["pods"], "pinned-a", "vision")
    pod["spec"]["containers"][0]["resources"].setdefault("limits", {})["nvidia.com/gpu"] = "1"
    verdict = _answer(dra, "vision/pinned-a")
    assert verdict.cause == "no-gpu-node"
    assert verdict.resource == "nvidia.com/gpu"


def test_not_generated_claim_is_judged_from_its_template(dra: Lists) -> None:
    pod = find(dra["pods"], "big-8g", "vision")
    pod["status"].pop("resourceClaimStatuses")
    dra["dra"].remove(_dra(dra, "ResourceClaim", "big-8g-gpu-"))
    verdict = _answer(dra, "vision/big-8g")
    assert verdict.cause == "too-large"
    assert verdict.action.startswith("ResourceClaimTemplate vision/eight-gpus asks 8")


def test_the_dump_without_dra_json_reads_as_no_dra_objects(tmp_path: Path) -> None:
    for item in SCENARIO.iterdir():
        if item.name != "dra.json":
            (tmp_path / item.name).write_bytes(item.read_bytes())
    verdict = triage(Snapshot.from_dir(tmp_path), parse_ref("vision/pinned-a"))
    assert verdict.cause == "other-constraint"
    assert "does not exist" in verdict.action  # its generated claim is gone with dra.json


def test_what_gpuwhy_does_not_judge_leaves_the_scheduler_s_word(dra: Lists) -> None:
    # Without its selector pinned-a fits dra-a100-2 GPU-wise, while the recorded message says
    # "1 cannot allocate all claims": with claims gpuwhy judges fully, that is stale ...
    pod = find(dra["pods"], "pinned-a", "vision")
    del pod["spec"]["nodeSelector"]
    judged = _answer(dra, "vision/pinned-a")
    assert judged.cause == "other-constraint"
    assert "the cluster has changed since" in judged.action
    # ... but a matchAttribute constraint is not judged: then the scheduler's word stands.
    claim = _dra(dra, "ResourceClaim", "pinned-a-gpu-")
    claim["spec"]["devices"]["constraints"] = [
        {"matchAttribute": "gpu.nvidia.com/productName", "requests": ["gpu"]}]
    unjudged = _answer(dra, "vision/pinned-a")
    assert unjudged.cause == "other-constraint"
    assert "rejects the pod for something else: 1 cannot allocate all claims" in unjudged.action
    assert "does not judge constraints between devices (matchAttribute)" in unjudged.action
    assert ("ResourceClaim vision/pinned-a-gpu-q8nlw", "spec.devices.constraints",
            "constraints between devices (matchAttribute): not judged by gpuwhy") in [
        (e.object, e.field, e.value) for e in unjudged.evidence]


# -- extended resources backed by DRA (a DeviceClass's spec.extendedResourceName) -------------

def _serve_gpus_through_dra(lists: Lists) -> None:
    _dra(lists, "DeviceClass", "gpu.nvidia.com")["spec"]["extendedResourceName"] = "nvidia.com/gpu"


def test_a_gpu_limit_a_device_class_serves_goes_through_the_dra_funnel(dra: Lists) -> None:
    outcomes = {n.name: n.outcome for n in _answer(dra, "serving/legacy-gpu").nodes}
    assert set(outcomes.values()) == {"no-gpu-node"}  # as recorded: no class serves it
    _serve_gpus_through_dra(dra)
    verdict = _answer(dra, "serving/legacy-gpu")
    assert {n.name: n.outcome for n in verdict.nodes} == {
        "dra-a100-1": "exhausted", "dra-a100-2": "fit", "dra-l4-1": "fit",
        "cpu-1": "no-gpu-node", "gpu-spare-1": "no-gpu-node"}
    devices = {n.name: n.devices for n in verdict.nodes}["dra-a100-2"]
    # the node's ResourceSlice devices, not its GFD labels' cards beside them
    assert [(d.uuid, d.holders) for d in devices] == [
        (UUIDS["dra-a100-2", "gpu-0"], ["vision/finetune-1g"]), (UUIDS["dra-a100-2", "gpu-1"], []),
        (UUIDS["dra-a100-2", "gpu-2"], []), (UUIDS["dra-a100-2", "gpu-3"], [])]


def test_a_device_plugin_node_keeps_its_own_checks_beside_dra_nodes(dra: Lists) -> None:
    _serve_gpus_through_dra(dra)
    spare = find(dra["nodes"], "gpu-spare-1")
    for section in ("capacity", "allocatable"):
        spare["status"][section]["nvidia.com/gpu"] = "1"
    pod = find(dra["pods"], "legacy-gpu", "serving")
    pod["spec"]["nodeSelector"] = {"gpu-type": "a10"}  # gpu-spare-1 only
    assert {n.name: n.outcome for n in _answer(dra, "serving/legacy-gpu").nodes}[
        "gpu-spare-1"] == "fit"
    for container in pod["spec"]["containers"]:
        for section in ("limits", "requests"):
            container["resources"][section]["nvidia.com/gpu"] = "2"
    verdict = _answer(dra, "serving/legacy-gpu")  # 1 allocatable: the device plugin's too-large
    assert verdict.cause == "too-large"
    assert "gpu-spare-1 with 1" in verdict.action and "DeviceClass" not in verdict.action


# -- the scheduler is binding: claims allocated and reserved, no node yet ----------------------

def _binding(dra: Lists, conditions: list[dict[str, Any]] | None,
             device_fields: dict[str, Any] | None = None) -> None:
    """vision/pinned-a as kube-scheduler leaves it in PreBind: its claim allocated gpu-3 on
    dra-a100-2 and reserved for it, no nodeName yet, no event about it."""
    pod = find(dra["pods"], "pinned-a", "vision")
    pod["spec"]["nodeSelector"] = {"pool": "a100-b"}
    pod["status"].pop("conditions", None)  # keeps resourceClaimStatuses: the claim's name
    dra["events"] = [e for e in dra["events"] if e["involvedObject"]["name"] != "pinned-a"]
    claim = _dra(dra, "ResourceClaim", "pinned-a-gpu-")
    claim["status"] = {
        "allocation": {
            "devices": {"results": [{"device": "gpu-3", "driver": "gpu.nvidia.com",
                                     "pool": "dra-a100-2", "request": "gpu"}]},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": ["dra-a100-2"]}]}]}},
        "reservedFor": [{"name": "pinned-a", "resource": "pods",
                         "uid": pod["metadata"]["uid"]}]}
    if conditions is not None:
        claim["status"]["devices"] = [{"driver": "gpu.nvidia.com", "pool": "dra-a100-2",
                                       "device": "gpu-3", "conditions": conditions}]
    slice_ = next(o for o in dra["dra"] if o["kind"] == "ResourceSlice"
                  and o["spec"]["nodeName"] == "dra-a100-2")
    slice_["spec"]["devices"][3].update(device_fields or {})


_FABRIC = {"bindingConditions": ["FabricAttached"],
           "bindingFailureConditions": ["FabricAttachFailed"]}


@pytest.mark.parametrize(("conditions", "fields", "says"), [
    ([{"type": "FabricAttached", "status": "False", "reason": "Attaching",
       "message": "switch port 7", "lastTransitionTime": "2026-12-01T08:44:00Z"}], _FABRIC,
     "waits for the devices to be ready before it binds vision/pinned-a (gpu-3: "
     "FabricAttached (False: Attaching: switch port 7))"),
    (None, _FABRIC, "gpu-3: FabricAttached (not reported yet)"),
    ([{"type": "FabricAttachFailed", "status": "True", "reason": "PortDown",
       "lastTransitionTime": "2026-12-01T08:44:00Z"}], _FABRIC,
     "the driver reports a binding failure (gpu-3: FabricAttachFailed (True: PortDown))"),
    (None, None, "is binding vision/pinned-a now: ask again in a moment"),
])
def test_a_pod_the_scheduler_is_binding_is_not_an_absent_scheduler(
        dra: Lists, conditions: list[dict[str, Any]] | None, fields: dict[str, Any] | None,
        says: str) -> None:
    _binding(dra, conditions, fields)
    verdict = _answer(dra, "vision/pinned-a")
    assert verdict.cause == "other-constraint"
    assert "the scheduler allocated claim vision/pinned-a-gpu-q8nlw: gpu-3 on dra-a100-2" in (
        verdict.action)
    assert says in verdict.action


def test_a_claim_reserved_for_another_pod_is_not_this_pods_binding(dra: Lists) -> None:
    _binding(dra, None)
    _dra(dra, "ResourceClaim", "pinned-a-gpu-")["status"]["reservedFor"][0].update(
        name="someone-else", uid="5e3c0a4f-0000-4000-8000-000000000001")
    assert _answer(dra, "vision/pinned-a").cause == "scheduler-unavailable"


def test_a_bound_pod_whose_claims_ask_no_gpu_class_says_where_it_is_bound(dra: Lists) -> None:
    for name in ("nic.example.com", "fpga.example.com"):
        device_class = copy.deepcopy(_dra(dra, "DeviceClass", "gpu.nvidia.com"))
        device_class["metadata"]["name"] = name
        device_class["spec"]["selectors"] = [{"cel": {"expression": f'device.driver == "{name}"'}}]
        dra["dra"].append(device_class)
    claim = _dra(dra, "ResourceClaim", "holder-a-gpu-")
    claim["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] = "nic.example.com"
    fpga = copy.deepcopy(claim)
    fpga["metadata"]["name"] = "holder-a-fpga"
    fpga["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] = "fpga.example.com"
    dra["dra"].append(fpga)
    pod = next(p for p in dra["pods"] if p["metadata"]["name"] == "holder-a")
    pod["spec"]["resourceClaims"].append({"name": "fpga", "resourceClaimName": "holder-a-fpga"})
    verdict = _answer(dra, "vision/holder-a")
    assert verdict.cause == "no-gpu-request"
    assert verdict.action == (
        "vision/holder-a asks for no GPU: no container (init containers included) has a GPU in "
        "resources.limits. It is bound to dra-a100-1. Its claims (two-gpus, holder-a-fpga) ask "
        "for fpga.example.com, nic.example.com, not a GPU class (drivers gpu.nvidia.com, "
        "gpu.amd.com, hami-core-gpu.project-hami.io). Add `limits: nvidia.com/gpu: N` to the "
        "container that needs it.")


def test_a_claim_that_requests_no_device_is_said_to_ask_for_none(dra: Lists) -> None:
    _dra(dra, "ResourceClaim", "holder-a-gpu-")["spec"]["devices"]["requests"] = []
    verdict = _answer(dra, "vision/holder-a")
    assert verdict.cause == "no-gpu-request"
    assert "Its claims (two-gpus) ask for no device, not a GPU class" in verdict.action
