"""DRA consumable capacity (shared devices) on the gang-dra-basics recording: the request
policy as the allocator applied it, what sharing claims leave, and each cause's trap."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest

from scoring.dra import SliceDevice, device_row, request_policy
from scoring.dra.capacity import Share, judge, quantity_text
from scoring.quantity import parse_quantity
from tests.conftest import find, load_lists
from triage.classify import triage
from triage.refs import parse_ref
from triage.snapshot import Snapshot

Lists = dict[str, list[dict[str, Any]]]
ToSnapshot = Callable[[Lists], Snapshot]
GI = Decimal(2 ** 30)


@pytest.fixture
def shared() -> Lists:
    return load_lists("gang-dra-basics")


def _dra(lists: Lists, kind: str, name: str) -> dict[str, Any]:
    return next(o for o in lists["dra"] if o["kind"] == kind and o["metadata"]["name"] == name)


def _triage(lists: Lists, to_snapshot: ToSnapshot, ref: str) -> Any:
    return triage(to_snapshot(lists), parse_ref(ref))


def test_used_up_capacity_names_the_sharing_claims_and_what_is_left(
        shared: Lists, to_snapshot: ToSnapshot) -> None:
    verdict = _triage(shared, to_snapshot, "infer/chat-c")
    assert verdict.cause == "exhausted"
    assert "70Gi consumed by infer/chat-a-gpu-rxw97 (chat-a) and infer/chat-b-gpu-sw5b4 " \
           "(chat-b): 10Gi left, 20Gi needed" in verdict.action
    assert any(e.field.endswith("consumedCapacity") and e.value == "memory 40Gi of "
               "dra-share-1/gpu-0" for e in verdict.evidence)
    assert "not judged by gpuwhy" not in verdict.action
    assert all("not judged" not in e.value for e in verdict.evidence)


def test_capacity_released_by_a_sharing_claim_fits(shared: Lists,
                                                   to_snapshot: ToSnapshot) -> None:
    shared["dra"].remove(_dra(shared, "ResourceClaim", "chat-b-gpu-sw5b4"))
    verdict = _triage(shared, to_snapshot, "infer/chat-c")
    assert {n.name: n.outcome for n in verdict.nodes}["dra-share-1"] == "fit"


def test_more_than_any_device_holds_is_too_large(shared: Lists,
                                                 to_snapshot: ToSnapshot) -> None:
    verdict = _triage(shared, to_snapshot, "infer/big-kv")
    assert verdict.cause == "too-large"
    assert "the largest memory capacity of a device it could use is 80Gi" in verdict.action
    assert "dra-excl-1/gpu-0 40Gi" in verdict.action and "waiting never helps" in verdict.action


def test_a_request_the_policy_refuses_is_device_unfit_though_the_device_is_free(
        shared: Lists, to_snapshot: ToSnapshot) -> None:
    verdict = _triage(shared, to_snapshot, "infer/odd-slice")
    assert verdict.cause == "device-unfit"
    assert "validValues 10Gi, 20Gi, 40Gi" in verdict.action
    assert "admits nothing as large as 60Gi" in verdict.action and "it is free" in verdict.action


def test_a_request_the_policy_rounds_up_fits(shared: Lists, to_snapshot: ToSnapshot) -> None:
    template = _dra(shared, "ResourceClaimTemplate", "slice-60g")
    template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["capacity"]["requests"][
        "memory"] = "15Gi"  # rounds up to 20Gi: fits dra-share-2's 80Gi
    claim = _dra(shared, "ResourceClaim", "odd-slice-gpu-mhz8m")
    claim["spec"]["devices"]["requests"][0]["exactly"]["capacity"]["requests"]["memory"] = "15Gi"
    verdict = _triage(shared, to_snapshot, "infer/odd-slice")
    assert {n.name: n.outcome for n in verdict.nodes}["dra-share-2"] == "fit"


def test_a_device_without_the_capacity_asked_is_skipped(shared: Lists,
                                                        to_snapshot: ToSnapshot) -> None:
    claim = _dra(shared, "ResourceClaim", "odd-slice-gpu-mhz8m")
    claim["spec"]["devices"]["requests"][0]["exactly"]["capacity"]["requests"] = {
        "cores": "10"}
    verdict = _triage(shared, to_snapshot, "infer/odd-slice")
    assert verdict.cause == "device-unfit"
    assert "publishes no (readable) capacity cores" in verdict.action


def test_show_devices_gives_capacity_used_and_the_sharing_claims(
        shared: Lists, to_snapshot: ToSnapshot) -> None:
    verdict = _triage(shared, to_snapshot, "infer/chat-a")
    node = next(n for n in verdict.nodes if n.name == "dra-share-1")
    device = node.devices[0]
    assert (device.memory_used, device.memory_total) == (70 * 1024, 80 * 1024)
    assert device.holders == ["infer/chat-a", "infer/chat-b"]
    assert device.code is not None and "memory 70Gi/80Gi used by claims " \
        "infer/chat-a-gpu-rxw97, infer/chat-b-gpu-sw5b4" in device.code


@pytest.mark.parametrize(("policy", "asked", "consumed"), [
    ({"default": "10Gi", "validRange": {"min": "10Gi", "step": "10Gi"}}, "35Gi", "40Gi"),
    ({"default": "10Gi", "validRange": {"min": "10Gi", "step": "10Gi"}}, "1Gi", "10Gi"),
    ({"validRange": {"min": "10Gi", "max": "40Gi", "step": "10Gi"}}, "45Gi", None),
    ({"validRange": {"min": "4Gi"}}, "5Gi", "5Gi"),
    ({"default": "20Gi", "validValues": ["40Gi", "10Gi", "20Gi"]}, "15Gi", "20Gi"),
    ({"default": "20Gi", "validValues": ["10Gi", "20Gi", "40Gi"]}, "60Gi", None),
])
def test_the_request_policy_rounds_up_or_refuses(policy: dict[str, Any], asked: str,
                                                 consumed: str | None) -> None:
    parsed = request_policy(policy)
    assert parsed is not None
    applied = parsed.applied(parse_quantity(asked))
    assert applied == (parse_quantity(consumed) if consumed else None)


def _device(shared_flag: bool = True, **capacity: Any) -> SliceDevice:
    return device_row({"name": "gpu-0", "allowMultipleAllocations": shared_flag,
                       "capacity": capacity}, "gpu.nvidia.com")


def test_an_unnamed_capacity_is_consumed_at_its_default_or_in_full() -> None:
    device = _device(memory={"value": "80Gi"},
                     cores={"value": "100", "requestPolicy": {"default": "10",
                                                              "validRange": {"min": "10"}}})
    fit = judge(device, {"memory": 20 * GI}, [])
    assert fit.failure is None and fit.consumed == {"memory": 20 * GI, "cores": Decimal(10)}
    whole = judge(device, {}, [])
    assert whole.consumed["memory"] == 80 * GI  # no policy: all of it
    taken = judge(device, {}, [Share("ns/a", (), {"memory": GI})])
    assert taken.failure == "used-up"


def test_an_exclusive_device_only_has_to_be_large_enough() -> None:
    device = _device(False, memory={"value": "40Gi"})
    assert judge(device, {"memory": 30 * GI}, []).failure is None
    assert judge(device, {"memory": 48 * GI}, []).failure == "too-small"
    qualified = _device(False, **{"gpu.nvidia.com/memory": {"value": "40Gi"}})
    assert judge(qualified, {"memory": 30 * GI}, []).failure is None


def test_quantities_read_as_the_api_server_prints_them() -> None:
    assert [quantity_text(parse_quantity(q)) for q in ("80Gi", "512Mi", "3", "1.5")] == [
        "80Gi", "512Mi", "3", "1.5"]


def test_an_unreadable_policy_is_no_policy() -> None:
    assert request_policy("ten") is None
    device = _device(memory={"value": "80Gi", "requestPolicy": "ten"})
    assert judge(device, {"memory": 35 * GI}, []).consumed["memory"] == 35 * GI


def test_a_bound_pod_says_what_its_claim_consumes_of_the_shared_device(
        shared: Lists, to_snapshot: ToSnapshot) -> None:
    verdict = _triage(shared, to_snapshot, "infer/chat-b")
    assert verdict.cause == "scheduled"
    assert any("consumed memory 40Gi of gpu-0 (asked memory 35Gi), shared with "
               "infer/chat-a-gpu-rxw97" in e.value for e in verdict.evidence)


def test_an_unreadable_capacity_is_said_not_guessed(shared: Lists,
                                                    to_snapshot: ToSnapshot) -> None:
    published = _dra(shared, "ResourceSlice", "dra-share-1-gpu.nvidia.com-4ec3d")
    published["spec"]["devices"][0]["capacity"]["memory"]["value"] = "lots"
    verdict = _triage(shared, to_snapshot, "infer/chat-c")
    assert verdict.cause == "device-unfit"
    assert "publishes no (readable) capacity memory" in verdict.action


def test_devices_refusing_the_amount_explain_it_over_devices_not_selected(
        shared: Lists, to_snapshot: ToSnapshot) -> None:
    find(shared["pods"], "odd-slice", "infer")["spec"].pop("nodeSelector")
    claim = _dra(shared, "ResourceClaim", "odd-slice-gpu-mhz8m")
    claim["spec"]["devices"]["requests"][0]["exactly"]["selectors"] = [{"cel": {
        "expression": 'device.attributes["gpu.nvidia.com"].productName == '
                      '"NVIDIA A100-SXM4-80GB"'}}]
    one = _dra(shared, "ResourceSlice", "dra-share-1-gpu.nvidia.com-4ec3d")
    one["spec"]["devices"][0]["capacity"]["memory"]["requestPolicy"] = {
        "default": "20Gi", "validValues": ["10Gi", "20Gi", "40Gi"]}
    verdict = _triage(shared, to_snapshot, "infer/odd-slice")
    assert verdict.cause == "device-unfit"  # L4s and 40GB A100s: not selected; 80GB: refused
    assert "admits nothing as large as 60Gi" in verdict.action
    assert "dra-share-1/gpu-0" in verdict.action and "dra-share-2/gpu-0" in verdict.action
