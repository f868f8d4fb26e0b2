"""The DRA rows as the builder reads them off recorded objects: what a device, a claim and a
class say, parsed once (values are the recorded dra-basics JSON's, read by eye)."""

from __future__ import annotations

import copy
import json
from decimal import Decimal
from typing import Any

import pytest

from scoring.cel.values import Version
from scoring.dra import Inventory, build, build_devices, dra_rows, pod_claim_refs
from scoring.nodetable import node_info
from tests.paths import FIXTURES
from triage.config import DEFAULT_GPU_DRIVERS

SCENARIO = FIXTURES / "scenarios" / "dra-basics"


def _items(name: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = json.loads((SCENARIO / name).read_text())["items"]
    return items


DRA = _items("dra.json")
NODES = {n["metadata"]["name"]: node_info(n) for n in _items("nodes.json")}


def test_a_device_row_holds_what_the_slice_publishes() -> None:
    rows = dra_rows(DRA)
    a100 = next(s for s in rows.slices if s.name == "dra-a100-1-gpu.nvidia.com-93242")
    assert (a100.driver, a100.pool, a100.reach.node_name, a100.per_device) == (
        "gpu.nvidia.com", "dra-a100-1", "dra-a100-1", False)
    device = a100.devices[1]
    assert (device.slice, device.name, device.key) == (
        "dra-a100-1-gpu.nvidia.com-93242", "gpu-1", ("gpu.nvidia.com", "dra-a100-1", "gpu-1"))
    assert (device.product, device.memory, device.index) == ("NVIDIA A100-SXM4-80GB", "80Gi", 1)
    assert device.uuid == "GPU-aedbe446-4adc-11f7-a266-18aac44146ce"
    assert device.attributes["cudaComputeCapability"] == Version("8.0.0")
    assert device.attributes["minor"] == 1 and device.attributes["brand"] == "Nvidia"
    assert device.capacity["memory"].total == Decimal(80 * 2 ** 30)
    assert device.quantities == {"memory": "80Gi"}
    assert (device.shared, device.taints, device.consumes) == (False, (), ())


def test_a_claim_row_holds_its_request_allocation_and_pods() -> None:
    claim = dra_rows(DRA).claims[("vision", "finetune-1g-gpu-7hfk8")]
    [request] = claim.spec.requests
    [alternative] = request.alternatives
    assert (request.claim, request.name) == ("vision/finetune-1g-gpu-7hfk8", "gpu")
    assert (alternative.device_class, alternative.mode, alternative.count) == (
        "gpu.nvidia.com", "ExactCount", 1)
    assert claim.allocated and claim.allocation_nodes.names == ("dra-a100-2",)
    assert [(r.request, r.device, r.consumed) for r in claim.results] == [
        ("gpu", ("gpu.nvidia.com", "dra-a100-2", "gpu-0"), None)]
    assert claim.pods == ("vision/finetune-1g",)
    assert claim.allocation_nodes.selects(NODES["dra-a100-2"])
    assert not claim.allocation_nodes.selects(NODES["dra-a100-1"])


def test_a_class_row_holds_its_selectors() -> None:
    device_class = dra_rows(DRA).classes["gpu.nvidia.com"]
    assert device_class.selectors == ('device.driver == "gpu.nvidia.com"',)
    assert device_class.extended_resource is None


def test_only_blocking_taints_and_the_newest_generation_are_kept() -> None:
    items = copy.deepcopy(DRA)
    a100 = next(i for i in items if i["metadata"]["name"] == "dra-a100-1-gpu.nvidia.com-93242")
    a100["spec"]["devices"][0]["taints"] = [
        {"key": "unhealthy", "effect": "NoSchedule"}, {"key": "note", "effect": "None"}]
    older = copy.deepcopy(a100)
    older["metadata"]["name"] = "dra-a100-1-gpu.nvidia.com-old"
    a100["spec"]["pool"]["generation"] = 2
    rows = dra_rows([*items, older])
    [kept] = [s for s in rows.slices if s.pool == "dra-a100-1"]
    assert kept.name == "dra-a100-1-gpu.nvidia.com-93242"
    assert kept.devices[0].taints == ({"key": "unhealthy", "effect": "NoSchedule"},)


def test_a_pods_claim_references_are_read_once() -> None:
    pod = next(p for p in _items("pods.json") if p["metadata"]["name"] == "finetune-1g")
    refs = pod_claim_refs(pod)
    assert (refs.namespace, refs.name) == ("vision", "finetune-1g")
    [entry] = refs.entries
    assert (entry.name, entry.generated) == ("gpu", "finetune-1g-gpu-7hfk8")


def test_what_describes_a_device_or_a_claim_is_read_when_first_asked(
        monkeypatch: pytest.MonkeyPatch) -> None:
    read: list[str] = []
    capacity, spec = build_devices._capacity, build.claim_spec
    monkeypatch.setattr(build_devices, "_capacity",
                        lambda *args: read.append("capacity") or capacity(*args))
    monkeypatch.setattr(build, "claim_spec", lambda raw, label: read.append(label) or spec(
        raw, label))
    rows = dra_rows(DRA)
    # a claim template's spec is all it has (and templates are few): read with it
    read[:] = [what for what in read if not what.startswith("template ")]
    device = next(s for s in rows.slices if s.pool == "dra-a100-1").devices[1]
    claim = rows.claims[("vision", "finetune-1g-gpu-7hfk8")]
    assert read == []  # a fit that asks no capacity and resolves no claim reads neither
    assert device.capacity["memory"].total == Decimal(80 * 2 ** 30)
    assert read == ["capacity"]  # the device's one capacity, once
    assert device.product == "NVIDIA A100-SXM4-80GB" and read == ["capacity"]
    assert claim.spec.requests[0].name == "gpu" and claim.spec is claim.spec
    assert read == ["capacity", "vision/finetune-1g-gpu-7hfk8"]


def test_an_inventory_looks_up_each_selector_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from scoring.cel import selector

    asked: list[str] = []
    shared = selector.shared_selector
    monkeypatch.setattr(selector, "shared_selector",
                        lambda expression: asked.append(expression) or shared(expression))
    inventory = Inventory(dra_rows(DRA), DEFAULT_GPU_DRIVERS)
    pod = next(p for p in _items("pods.json") if p["metadata"]["name"] == "llm-80g")
    claims = inventory.pod_claims(pod)
    fits = {name: inventory.fit(claims, node).stage for name, node in sorted(NODES.items())}
    assert fits["dra-a100-1"] is not None
    assert sorted(asked) == sorted(set(asked)) and len(asked) >= 2
