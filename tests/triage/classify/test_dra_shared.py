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
from triage.classify import triage
from triage.refs import parse_ref
from triage.snapshot import Snapshot

Lists = dict[str, list[dict[str, Any]]]
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
    return triage(Snapshot(**copy.deepcopy(lists)), parse_ref(ref))


def _evidence(verdict: Verdict) -> list[tuple[str, str, str]]:
    return [(e.object, e.field, e.value) for e in verdict.evidence]


def _dra(lists: Lists, kind: str, name: str) -> dict[str, Any]:
    return next(o for o in lists["dra"] if o["kind"] == kind and o["metadata"]["name"] == name)


def _chat_c_request(lists: Lists) -> dict[str, Any]:
    claim = _dra(lists, "ResourceClaim", "chat-c-gpu-7jsvl")
    request: dict[str, Any] = claim["spec"]["devices"]["requests"][0]
    return request


def test_a_claim_not_generated_yet_is_read_from_its_template(shared: Lists) -> None:
    shared["dra"].remove(_dra(shared, "ResourceClaim", "chat-c-gpu-7jsvl"))
    find(shared["pods"], "chat-c", "infer")["status"].pop("resourceClaimStatuses")
    verdict = _answer(shared)
    assert (verdict.cause, verdict.action) == (
        "exhausted",
        "ResourceClaimTemplate infer/slice-20g asks memory 20Gi of a shared device: "
        f"dra-share-1/gpu-0 (memory 80Gi) has 70Gi consumed by {SHARERS}: 10Gi left, 20Gi "
        f"needed. {WAIT}")
    assert _evidence(verdict) == [
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
    assert _evidence(verdict)[0] == (
        CHAT_C, "spec.devices.requests[gpu].firstAvailable[slice].capacity.requests",
        "memory 20Gi")


def test_a_request_naming_no_amount_takes_the_policy_default(shared: Lists) -> None:
    del _chat_c_request(shared)["exactly"]["capacity"]
    chat_b = _dra(shared, "ResourceClaim", "chat-b-gpu-sw5b4")
    chat_b["status"]["allocation"]["devices"]["results"][0]["consumedCapacity"] = {
        "memory": "50Gi"}  # 30Gi + 50Gi: nothing left for the default 10Gi
    verdict = _answer(shared)
    assert (verdict.cause, verdict.action) == (
        "exhausted",
        f"{CHAT_C} (from template slice-20g) asks its policy default of a shared device: "
        f"dra-share-1/gpu-0 (memory 80Gi) has 80Gi consumed by {SHARERS}: 0 left, 10Gi "
        f"needed. {WAIT}")
    assert _evidence(verdict) == [
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
    assert _evidence(verdict) == [
        (CHAT_C, "spec.devices.requests[gpu].exactly.capacity.requests",
         "cores 50, memory 20Gi"),  # by name, as the capacity rows keep them
        ("ResourceSlice dra-share-1-gpu.nvidia.com-4ec3d", "spec.devices[gpu-0].capacity",
         "publishes no (readable) capacity cores")]


def test_a_refused_amount_on_a_device_others_share_names_them(shared: Lists) -> None:
    slice_ = _dra(shared, "ResourceSlice", "dra-share-1-gpu.nvidia.com-4ec3d")
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
    assert _evidence(verdict) == [
        (CHAT_C, "spec.devices.requests[gpu].exactly.capacity.requests", "memory 50Gi"),
        ("ResourceSlice dra-share-1-gpu.nvidia.com-4ec3d", "spec.devices[gpu-0].capacity",
         refused)]
