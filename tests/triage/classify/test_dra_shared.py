"""Answers on shared DRA devices (consumable capacity) read as whole sentences, on the
gang-dra-basics recording changed the way the cluster would change: a claim not generated yet,
a firstAvailable request, a request that names no amount, a capacity the device does not
publish, and a policy that refuses an amount on a device others already share.

dra-share-1/gpu-0 (memory 80Gi, requestPolicy default 10Gi, validRange min 10Gi step 10Gi)
is shared by chat-a (consumes 30Gi) and chat-b (40Gi); chat-c (pool=share-a) asks 20Gi of it.
Every expected text is worked out by hand from those objects."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from scoring.verdict import Verdict
from tests.conftest import find, load_lists
from tests.triage.classify.dra_objects import Lists, answer, dra_object, evidence_of

CHAT_C = "ResourceClaim infer/chat-c-gpu-7jsvl"
SHARERS = "infer/chat-a-gpu-rxw97 (chat-a) and infer/chat-b-gpu-sw5b4 (chat-b)"
WAIT = "Wait for a sharing claim to be released, ask for less, or add devices."
CONSUMED = "status.allocation.devices.results[].consumedCapacity"
CHAT_A_SHARE = ("ResourceClaim infer/chat-a-gpu-rxw97", CONSUMED,
                "memory 30Gi of dra-share-1/gpu-0")
CHAT_B_SHARE = ("ResourceClaim infer/chat-b-gpu-sw5b4", CONSUMED,
                "memory 40Gi of dra-share-1/gpu-0")


@pytest.fixture
def shared() -> Lists:
    return load_lists("gang-dra-basics")


def _answer(lists: Lists, ref: str = "infer/chat-c") -> Verdict:
    return answer(lists, ref)


def _chat_c_request(lists: Lists) -> dict[str, Any]:
    claim = dra_object(lists, "ResourceClaim", "chat-c-gpu-7jsvl")
    request: dict[str, Any] = claim["spec"]["devices"]["requests"][0]
    return request


def test_a_claim_not_generated_yet_is_read_from_its_template(shared: Lists) -> None:
    shared["dra"].remove(dra_object(shared, "ResourceClaim", "chat-c-gpu-7jsvl"))
    find(shared["pods"], "chat-c", "infer")["status"].pop("resourceClaimStatuses")
    verdict = _answer(shared)
    assert (verdict.cause, verdict.action) == (
        "exhausted",
        "ResourceClaimTemplate infer/slice-20g asks memory 20Gi of a shared device: "
        f"dra-share-1/gpu-0 (memory 80Gi) has 70Gi consumed by {SHARERS}: 10Gi left, 20Gi "
        f"needed. {WAIT}")
    assert evidence_of(verdict) == [
        ("ResourceClaimTemplate infer/slice-20g",
         "spec.spec.devices.requests[gpu].exactly.capacity.requests", "memory 20Gi"),
        CHAT_A_SHARE, CHAT_B_SHARE]


def test_a_first_available_alternative_names_its_field(shared: Lists) -> None:
    request = _chat_c_request(shared)
    alternative = request.pop("exactly")
    del alternative["allocationMode"]
    request["firstAvailable"] = [{"name": "slice", **alternative}]
    verdict = _answer(shared)
    assert verdict.action == (
        f"{CHAT_C} (from template slice-20g) asks memory 20Gi of a shared device: "
        f"dra-share-1/gpu-0 (memory 80Gi) has 70Gi consumed by {SHARERS}: 10Gi left, 20Gi "
        f"needed. {WAIT}")
    assert evidence_of(verdict)[0] == (
        CHAT_C, "spec.devices.requests[gpu].firstAvailable[slice].capacity.requests",
        "memory 20Gi")


def test_a_request_naming_no_amount_takes_the_policy_default(shared: Lists) -> None:
    del _chat_c_request(shared)["exactly"]["capacity"]
    chat_b = dra_object(shared, "ResourceClaim", "chat-b-gpu-sw5b4")
    chat_b["status"]["allocation"]["devices"]["results"][0]["consumedCapacity"] = {
        "memory": "50Gi"}  # 30Gi + 50Gi: nothing left for the default 10Gi
    verdict = _answer(shared)
    assert (verdict.cause, verdict.action) == (
        "exhausted",
        f"{CHAT_C} (from template slice-20g) asks its policy default of a shared device: "
        f"dra-share-1/gpu-0 (memory 80Gi) has 80Gi consumed by {SHARERS}: 0 left, 10Gi "
        f"needed. {WAIT}")
    assert evidence_of(verdict) == [
        (CHAT_C, "spec.devices.requests[gpu].exactly.capacity.requests", "its policy default"),
        CHAT_A_SHARE, ("ResourceClaim infer/chat-b-gpu-sw5b4", CONSUMED,
                       "memory 50Gi of dra-share-1/gpu-0")]


def test_a_capacity_the_device_does_not_publish_is_device_unfit(shared: Lists) -> None:
    _chat_c_request(shared)["exactly"]["capacity"]["requests"]["cores"] = "50"
    verdict = _answer(shared)
    assert (verdict.cause, verdict.action) == (
        "device-unfit",
        f"{CHAT_C} (from template slice-20g) asks cores 50, memory 20Gi of a shared device, "
        "and no device it could use takes that amount: dra-share-1/gpu-0: publishes no "
        "(readable) capacity cores. The allocator rounds a request up to a valid amount, never "
        "beyond the largest: ask for an amount the policy admits, or use devices whose policy "
        "does.")
    assert evidence_of(verdict) == [
        (CHAT_C, "spec.devices.requests[gpu].exactly.capacity.requests",
         "cores 50, memory 20Gi"),  # by name, as the capacity rows keep them
        ("ResourceSlice dra-share-1-gpu.nvidia.com-4ec3d", "spec.devices[gpu-0].capacity",
         "publishes no (readable) capacity cores")]


def test_a_refused_amount_on_a_device_others_share_names_them(shared: Lists) -> None:
    slice_ = dra_object(shared, "ResourceSlice", "dra-share-1-gpu.nvidia.com-4ec3d")
    slice_["spec"]["devices"][0]["capacity"]["memory"]["requestPolicy"] = {
        "default": "10Gi", "validValues": ["10Gi", "30Gi", "40Gi"]}
    _chat_c_request(shared)["exactly"]["capacity"]["requests"]["memory"] = "50Gi"
    verdict = _answer(shared)
    refused = ("memory requestPolicy (default 10Gi; validValues 10Gi, 30Gi, 40Gi) admits "
               "nothing as large as 50Gi")
    assert (verdict.cause, verdict.action) == (
        "device-unfit",
        f"{CHAT_C} (from template slice-20g) asks memory 50Gi of a shared device, and no "
        f"device it could use takes that amount: dra-share-1/gpu-0: {refused} "
        "(infer/chat-a-gpu-rxw97, infer/chat-b-gpu-sw5b4 share it). The allocator rounds a "
        "request up to a valid amount, never beyond the largest: ask for an amount the "
        "policy admits, or use devices whose policy does.")
    assert evidence_of(verdict) == [
        (CHAT_C, "spec.devices.requests[gpu].exactly.capacity.requests", "memory 50Gi"),
        ("ResourceSlice dra-share-1-gpu.nvidia.com-4ec3d", "spec.devices[gpu-0].capacity",
         refused)]


@pytest.mark.parametrize(("joined", "listed"), [
    ((2,), "dra-l4-1/gpu-2 24Gi, dra-l4-1/gpu-1 24Gi +1 more"),
    ((2, 3), "dra-l4-1/gpu-3 24Gi, dra-l4-1/gpu-2 24Gi +2 more")])
def test_more_smaller_devices_than_four_list_four_and_count_the_rest(
        shared: Lists, joined: tuple[int, ...], listed: str) -> None:
    l4 = dra_object(shared, "ResourceSlice", "dra-l4-1-gpu.nvidia.com-46379")
    for index in joined:  # more L4s join dra-l4-1
        device = copy.deepcopy(l4["spec"]["devices"][0])
        device["name"] = f"gpu-{index}"
        l4["spec"]["devices"].append(device)
    verdict = _answer(shared, "infer/big-kv")
    assert (verdict.cause, verdict.action) == (
        "too-large",
        "ResourceClaim infer/big-kv-gpu-bvjrk (from template slice-96g) asks memory 96Gi of one "
        "device; the largest memory capacity of a device it could use is 80Gi "
        "(dra-share-2/gpu-0, dra-share-1/gpu-0; dra-excl-1/gpu-1 40Gi, dra-excl-1/gpu-0 40Gi, "
        f"{listed}), even if all were free. Ask for less, or get devices that large; waiting "
        "never helps.")
    assert evidence_of(verdict) == [
        ("ResourceClaim infer/big-kv-gpu-bvjrk",
         "spec.devices.requests[gpu].exactly.capacity.requests", "memory 96Gi")] + [
        (f"ResourceSlice {slice_}", f"spec.devices[{device}].capacity",
         f"memory {size} < 96Gi asked")
        for slice_, device, size in (
            ("dra-excl-1-gpu.nvidia.com-da4f2", "gpu-0", "40Gi"),
            ("dra-excl-1-gpu.nvidia.com-da4f2", "gpu-1", "40Gi"),
            ("dra-l4-1-gpu.nvidia.com-46379", "gpu-0", "24Gi"),
            ("dra-l4-1-gpu.nvidia.com-46379", "gpu-1", "24Gi"),
            ("dra-l4-1-gpu.nvidia.com-46379", "gpu-2", "24Gi"))] + [
        ("Pod infer/big-kv", "scheduler message (preemption)",
         "17 Preemption is not helpful for scheduling")]


def test_four_sharers_one_reserved_for_no_pod(shared: Lists) -> None:
    """chat-b consumes 20Gi now, and two batch claims 10Gi each (batch-1 reserved for no pod):
    70Gi used as recorded, by four claims."""
    chat_b = dra_object(shared, "ResourceClaim", "chat-b-gpu-sw5b4")
    chat_b["status"]["allocation"]["devices"]["results"][0]["consumedCapacity"] = {
        "memory": "20Gi"}
    for number, pod in ((1, None), (2, "chat-b")):
        batch = copy.deepcopy(chat_b)
        batch["metadata"]["name"] = f"batch-{number}"
        result = batch["status"]["allocation"]["devices"]["results"][0]
        result.update(consumedCapacity={"memory": "10Gi"},
                      shareID=f"00000000-0000-4000-8000-00000000000{number}")
        if pod is None:
            batch["status"]["reservedFor"] = []
        shared["dra"].append(batch)
    verdict = _answer(shared)
    assert verdict.action == (
        f"{CHAT_C} (from template slice-20g) asks memory 20Gi of a shared device: "
        "dra-share-1/gpu-0 (memory 80Gi) has 70Gi consumed by infer/chat-a-gpu-rxw97 (chat-a) "
        "and infer/chat-b-gpu-sw5b4 (chat-b) and infer/batch-1 and infer/batch-2 (chat-b): "
        f"10Gi left, 20Gi needed. {WAIT}")
    assert evidence_of(verdict) == [
        (CHAT_C, "spec.devices.requests[gpu].exactly.capacity.requests", "memory 20Gi"),
        CHAT_A_SHARE,
        ("ResourceClaim infer/chat-b-gpu-sw5b4", CONSUMED, "memory 20Gi of dra-share-1/gpu-0"),
        ("ResourceClaim infer/batch-1", CONSUMED, "memory 10Gi of dra-share-1/gpu-0")]


def test_a_bound_claim_on_two_devices_one_shared_with_two_claims(shared: Lists) -> None:
    """chat-a's claim, bound on dra-share-1, asks cores 20 and memory 30Gi of the shared gpu-0
    (which publishes 100 cores now), one whole GPU, gpu-1, an exclusive device of the node, and
    memory 10Gi of gpu-2, shared too; chat-b and a batch claim share gpu-0 with it."""
    slice_ = dra_object(shared, "ResourceSlice", "dra-share-1-gpu.nvidia.com-4ec3d")
    gpu_0 = slice_["spec"]["devices"][0]
    gpu_0["capacity"]["cores"] = {"value": "100"}
    gpu_1 = copy.deepcopy(gpu_0)
    gpu_1["name"] = "gpu-1"
    del gpu_1["allowMultipleAllocations"]
    gpu_2 = copy.deepcopy(gpu_0)
    gpu_2["name"] = "gpu-2"
    slice_["spec"]["devices"] += [gpu_1, gpu_2]
    claim = dra_object(shared, "ResourceClaim", "chat-a-gpu-rxw97")
    requests = claim["spec"]["devices"]["requests"]
    whole = copy.deepcopy(requests[0])
    whole["name"] = "whole"
    del whole["exactly"]["capacity"]
    more = copy.deepcopy(requests[0])
    more["name"] = "more"
    more["exactly"]["capacity"]["requests"]["memory"] = "10Gi"
    requests[0]["exactly"]["capacity"]["requests"]["cores"] = "20"
    requests += [whole, more]
    results = claim["status"]["allocation"]["devices"]["results"]
    results[0]["consumedCapacity"] = {"cores": "20", "memory": "30Gi"}
    results.insert(0, {"device": "gpu-1", "driver": "gpu.nvidia.com", "pool": "dra-share-1",
                       "request": "whole"})
    results.append({"device": "gpu-2", "driver": "gpu.nvidia.com", "pool": "dra-share-1",
                    "request": "more", "consumedCapacity": {"memory": "10Gi"},
                    "shareID": "00000000-0000-4000-8000-000000000002"})
    batch = copy.deepcopy(dra_object(shared, "ResourceClaim", "chat-b-gpu-sw5b4"))
    batch["metadata"]["name"] = "batch-1"
    batch["status"]["allocation"]["devices"]["results"][0].update(
        consumedCapacity={"memory": "10Gi"}, shareID="00000000-0000-4000-8000-000000000001")
    shared["dra"].append(batch)
    verdict = _answer(shared, "infer/chat-a")
    assert verdict.cause == "scheduled"
    assert evidence_of(verdict)[2] == (
        "ResourceClaim infer/chat-a-gpu-rxw97", "status.allocation / status.reservedFor",
        "gpu-1,gpu-0,gpu-2 on dra-share-1; reserved for chat-a; consumed cores 20, memory "
        "30Gi of gpu-0 (asked cores 20, memory 30Gi, memory 10Gi), shared with "
        "infer/chat-b-gpu-sw5b4, infer/batch-1; consumed memory 10Gi of gpu-2 (asked cores 20, "
        "memory 30Gi, memory 10Gi)")


def test_a_bound_claim_alone_on_a_shared_device_asking_no_amount(shared: Lists) -> None:
    shared["dra"].remove(dra_object(shared, "ResourceClaim", "chat-a-gpu-rxw97"))
    shared["pods"].remove(find(shared["pods"], "chat-a", "infer"))
    claim = dra_object(shared, "ResourceClaim", "chat-b-gpu-sw5b4")
    del claim["spec"]["devices"]["requests"][0]["exactly"]["capacity"]
    verdict = _answer(shared, "infer/chat-b")
    assert evidence_of(verdict)[2] == (
        "ResourceClaim infer/chat-b-gpu-sw5b4", "status.allocation / status.reservedFor",
        "gpu-0 on dra-share-1; reserved for chat-b; consumed memory 40Gi of gpu-0")


def test_six_devices_lacking_a_capacity_list_four(shared: Lists) -> None:
    claim = dra_object(shared, "ResourceClaim", "big-kv-gpu-bvjrk")
    claim["spec"]["devices"]["requests"][0]["exactly"]["capacity"]["requests"]["cores"] = "1"
    verdict = _answer(shared, "infer/big-kv")
    lacks = "publishes no (readable) capacity cores"
    devices = [("dra-excl-1", "gpu-0", "dra-excl-1-gpu.nvidia.com-da4f2"),
               ("dra-excl-1", "gpu-1", "dra-excl-1-gpu.nvidia.com-da4f2"),
               ("dra-l4-1", "gpu-0", "dra-l4-1-gpu.nvidia.com-46379"),
               ("dra-l4-1", "gpu-1", "dra-l4-1-gpu.nvidia.com-46379")]
    assert (verdict.cause, verdict.action) == (
        "device-unfit",
        "ResourceClaim infer/big-kv-gpu-bvjrk (from template slice-96g) asks cores 1, memory "
        "96Gi of a shared device, and no device it could use takes that amount: "
        + "; ".join(f"{node}/{device}: {lacks}" for node, device, _ in devices)
        + ". The allocator rounds a request up to a valid amount, never beyond the largest: "
        "ask for an amount the policy admits, or use devices whose policy does.")
    assert evidence_of(verdict) == [
        ("ResourceClaim infer/big-kv-gpu-bvjrk",
         "spec.devices.requests[gpu].exactly.capacity.requests", "cores 1, memory 96Gi")] + [
        (f"ResourceSlice {slice_}", f"spec.devices[{device}].capacity", lacks)
        for _, device, slice_ in devices]


def test_more_cores_than_the_one_device_has_is_too_large(shared: Lists) -> None:
    slice_ = dra_object(shared, "ResourceSlice", "dra-share-1-gpu.nvidia.com-4ec3d")
    slice_["spec"]["devices"][0]["capacity"]["cores"] = {"value": "100"}
    _chat_c_request(shared)["exactly"]["capacity"]["requests"]["cores"] = "200"
    verdict = _answer(shared)
    assert (verdict.cause, verdict.action) == (
        "too-large",
        f"{CHAT_C} (from template slice-20g) asks cores 200, memory 20Gi of one device; the "
        "largest cores capacity of a device it could use is 100 (dra-share-1/gpu-0), even if "
        "all were free. Ask for less, or get devices that large; waiting never helps.")
    assert evidence_of(verdict)[:2] == [
        (CHAT_C, "spec.devices.requests[gpu].exactly.capacity.requests", "cores 200, memory 20Gi"),
        ("ResourceSlice dra-share-1-gpu.nvidia.com-4ec3d", "spec.devices[gpu-0].capacity",
         "cores 100 < 200 asked")]


def test_four_used_up_devices_list_three_and_the_capacity_short(shared: Lists) -> None:
    """dra-share-1 publishes 10 cores per GPU now, and three more shared GPUs, each with 70Gi
    consumed by a fill claim (fill-1 serves chat-a and chat-b); chat-a consumes 2 cores of gpu-0.
    chat-c asks every core of a GPU and 20Gi: gpu-0 is short of cores, the others (10 of 10
    cores left) of memory."""
    slice_ = dra_object(shared, "ResourceSlice", "dra-share-1-gpu.nvidia.com-4ec3d")
    gpu_0 = slice_["spec"]["devices"][0]
    gpu_0["capacity"] = {"cores": {"value": "10"}, **gpu_0["capacity"]}  # judged first
    model = dra_object(shared, "ResourceClaim", "chat-b-gpu-sw5b4")
    for index in (1, 2, 3):
        device = copy.deepcopy(gpu_0)
        device["name"] = f"gpu-{index}"
        slice_["spec"]["devices"].append(device)
        fill = copy.deepcopy(model)
        fill["metadata"]["name"] = f"fill-{index}"
        fill["status"]["allocation"]["devices"]["results"][0].update(
            device=f"gpu-{index}", consumedCapacity={"memory": "70Gi"},
            shareID=f"00000000-0000-4000-8000-00000000000{index}")
        if index == 1:
            chat_a_pod = dra_object(shared, "ResourceClaim", "chat-a-gpu-rxw97")["status"][
                "reservedFor"][0]
            fill["status"]["reservedFor"].insert(0, copy.deepcopy(chat_a_pod))
        shared["dra"].append(fill)
    chat_a = dra_object(shared, "ResourceClaim", "chat-a-gpu-rxw97")
    chat_a["status"]["allocation"]["devices"]["results"][0]["consumedCapacity"] = {
        "cores": "2", "memory": "30Gi"}
    _chat_c_request(shared)["exactly"]["capacity"]["requests"]["cores"] = "10"
    verdict = _answer(shared)
    assert (verdict.cause, verdict.action) == (
        "exhausted",
        f"{CHAT_C} (from template slice-20g) asks cores 10, memory 20Gi of a shared device: "
        f"dra-share-1/gpu-0 (cores 10) has 2 consumed by {SHARERS}: 8 left, 10 needed; "
        "dra-share-1/gpu-1 (memory 80Gi) has 70Gi consumed by infer/fill-1 (chat-a, "
        "chat-b): 10Gi left, 20Gi needed; dra-share-1/gpu-2 (memory 80Gi) has 70Gi consumed by "
        f"infer/fill-2 (chat-b): 10Gi left, 20Gi needed. {WAIT}")
    assert evidence_of(verdict) == [
        (CHAT_C, "spec.devices.requests[gpu].exactly.capacity.requests", "cores 10, memory 20Gi"),
        ("ResourceClaim infer/chat-a-gpu-rxw97", CONSUMED,
         "cores 2, memory 30Gi of dra-share-1/gpu-0"), CHAT_B_SHARE,
        ("ResourceClaim infer/fill-1", CONSUMED, "memory 70Gi of dra-share-1/gpu-1"),
        ("ResourceClaim infer/fill-2", CONSUMED, "memory 70Gi of dra-share-1/gpu-2")]
