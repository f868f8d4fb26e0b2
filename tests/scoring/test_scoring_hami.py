"""scoring.hami: registration, allocations, usage, requests, the device fit and scores.

Nodes and pods are built as the API server returns them: annotations are strings and
quantities are canonical ("70k", not 70000). They reach scoring.hami as the funnel hands
them over: through the node table's and the pods' rows (triage.rows).
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from scoring.hami import (
    HamiNodeFit,
    HamiRequest,
    Registration,
    Usage,
    device_usage,
    parse_allocation,
    pick_order,
)
from scoring.nodetable import node_info
from scoring.objects import object_key
from scoring.rows import HamiAllocation
from tests.paths import FIXTURES
from triage.rows import hami_request, pod_row
from triage.snapshot import Snapshot

FIXTURE = FIXTURES / "scenarios" / "hami-sharing"
T4 = "NVIDIA-Tesla T4"


def card(uuid: str, index: int = 0, count: int = 10, devmem: int = 16384, devcore: int = 100,
         type: str = T4, numa: int = 0, mode: str = "hami-core",
         health: bool = True) -> dict[str, Any]:
    """One device in HAMi's v2.8+ JSON: zero / false fields are left out."""
    fields: dict[str, Any] = {"id": uuid, "index": index, "count": count, "devmem": devmem,
                              "devcore": devcore, "type": type, "numa": numa, "mode": mode,
                              "health": health}
    return {key: value for key, value in fields.items() if value not in (0, False, "")}


def node(name: str, cards: list[dict[str, Any]] | None = None,
         annotations: dict[str, str] | None = None) -> dict[str, Any]:
    notes = {"hami.io/node-handshake": "Reported 2026-11-30 10:00:00"}
    if cards is not None:
        notes["hami.io/node-nvidia-register"] = json.dumps(cards, separators=(",", ":"))
    notes.update(annotations or {})
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "annotations": notes, "labels": {}},
            "status": {"allocatable": {"nvidia.com/gpu": str(10 * len(cards or []))}}}


def pod(name: str, limits: dict[str, str] | None = None, *,
        requests: dict[str, str] | None = None, annotations: dict[str, str] | None = None,
        scheduler: str = "hami-scheduler", phase: str = "Pending", node_name: str | None = None,
        init_limits: dict[str, str] | None = None, namespace: str = "ml") -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if limits is not None:
        resources["limits"] = limits
    if requests is not None:
        resources["requests"] = requests
    spec: dict[str, Any] = {"schedulerName": scheduler,
                            "containers": [{"name": "main", "image": "cuda:12",
                                            "resources": resources}]}
    if init_limits is not None:
        spec["initContainers"] = [{"name": "warmup", "image": "cuda:12",
                                   "resources": {"limits": init_limits}}]
    if node_name:
        spec["nodeName"] = node_name
    metadata: dict[str, Any] = {"name": name, "namespace": namespace, "uid": f"uid-{name}"}
    if annotations:
        metadata["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec,
            "status": {"phase": phase}}


def holder(name: str, node_name: str, allocated: str, phase: str = "Running",
           **extra: str) -> dict[str, Any]:
    """A pod HAMi placed: vgpu-node plus the allocation annotation."""
    notes = {"hami.io/vgpu-node": node_name, "hami.io/vgpu-devices-allocated": allocated,
             "hami.io/vgpu-devices-to-allocate": ";", "hami.io/bind-phase": "success", **extra}
    return pod(name, {"nvidia.com/gpu": "1"}, annotations=notes, phase=phase,
               node_name=node_name)


def parse_registration(the_node: dict[str, Any]) -> Registration | None:
    """The node's HAMi registration as the node table's row decodes it."""
    return node_info(the_node).hami_registration


def fit_node(the_node: dict[str, Any], pods_on_node: list[dict[str, Any]],
             the_pod: dict[str, Any], request: HamiRequest) -> HamiNodeFit:
    """HAMi's fit as the funnel asks it of the rows: the node's row, the usage summed over
    its pods' rows, the pod itself left out."""
    snapshot = Snapshot(nodes=[the_node], pods=pods_on_node)
    return _fit_on_rows(snapshot, object_key(the_node)[1], the_pod, request)


def _fit_on_rows(snapshot: Snapshot, node_name: str, the_pod: dict[str, Any],
                 request: HamiRequest) -> HamiNodeFit:
    info = snapshot.node_info(node_name)
    assert info is not None
    fit = snapshot.rows.hami_fit(info, request, without=object_key(the_pod))
    assert fit is not None, "the node has no HAMi registration"
    return fit


# -- registration ----------------------------------------------------------------------------


def test_json_registration_reads_omitted_fields_as_zero_and_missing_health_as_unhealthy() -> None:
    value = ('[{"id":"GPU-0","count":10,"devmem":32768,"devcore":100,'
             '"type":"NVIDIA-Tesla V100-PCIE-32GB","mode":"hami-core","health":true},'
             '{"id":"GPU-1","index":1,"count":10,"devmem":32768,"devcore":100,'
             '"type":"NVIDIA-Tesla V100-PCIE-32GB","numa":1,"mode":"hami-core"}]')
    registration = parse_registration(
        {"metadata": {"name": "v", "annotations": {"hami.io/node-nvidia-register": value}}})
    assert registration is not None
    assert registration.registered and registration.problem is None
    first, second = registration.devices
    assert (first.uuid, first.index, first.numa, first.health) == ("GPU-0", 0, 0, True)
    assert (second.uuid, second.index, second.numa, second.health) == ("GPU-1", 1, 1, False)
    assert (second.count, second.devmem, second.devcore, second.mode) == (10, 32768, 100,
                                                                          "hami-core")


def test_nine_field_colon_registration() -> None:
    value = ("GPU-a,10,32768,100,NVIDIA-Tesla V100,0,true,0,hami-core:"
             "GPU-b,4,40960,100,NVIDIA A100-PCIE-40GB,1,false,3,mig:")
    registration = parse_registration(
        {"metadata": {"annotations": {"hami.io/node-nvidia-register": value}}})
    assert registration is not None and registration.registered
    a, b = registration.devices
    assert (a.uuid, a.count, a.devmem, a.devcore, a.type, a.numa, a.health, a.index, a.mode) == (
        "GPU-a", 10, 32768, 100, "NVIDIA-Tesla V100", 0, True, 0, "hami-core")
    assert (b.uuid, b.count, b.devmem, b.type, b.numa, b.health, b.index, b.mode) == (
        "GPU-b", 4, 40960, "NVIDIA A100-PCIE-40GB", 1, False, 3, "mig")


def test_seven_field_colon_registration_under_the_old_4pd_key() -> None:
    value = ("GPU-a02b30b8-0001,10,15360,100,NVIDIA-Tesla T4,0,true:"
             "GPU-a02b30b8-0002,10,15360,100,NVIDIA-Tesla T4,1,true:")
    registration = parse_registration(
        {"metadata": {"annotations": {"4pd.io/node-nvidia-register": value}}})
    assert registration is not None and registration.registered
    assert [(d.uuid, d.index, d.numa, d.mode, d.devmem) for d in registration.devices] == [
        ("GPU-a02b30b8-0001", 0, 0, "hami-core", 15360),
        ("GPU-a02b30b8-0002", 1, 1, "hami-core", 15360)]


def test_node_without_register_annotation_is_not_hami_managed() -> None:
    assert parse_registration({"metadata": {"name": "plain", "annotations": {"a": "b"}}}) is None
    assert parse_registration({"metadata": {"name": "bare"}}) is None


@pytest.mark.parametrize(("value", "problem"), [
    ('[{"id":"GPU-0","count":10', "not valid JSON"),
    ('["GPU-0"]', "device 0 is not a JSON object"),
    ('[{"id":"GPU-0","count":"10"}]', "wrong type: count"),
    ("[]", "no devices listed"),
    ("GPU-0,10,15360", "neither JSON nor"),
    ("GPU-0,10,15360,100,T4:", "device 0 has 5 fields"),
])
def test_malformed_registration_is_reported_and_leaves_the_node_unregistered(
        value: str, problem: str) -> None:
    hami_node = {"metadata": {"name": "bad",
                              "annotations": {"hami.io/node-nvidia-register": value}}}
    registration = parse_registration(hami_node)
    assert registration is not None
    assert not registration.registered
    assert registration.problem is not None and problem in registration.problem
    assert "\n" not in registration.problem
    fit = fit_node(hami_node, [], pod("p", {"nvidia.com/gpumem": "1k"}),
                   _request(pod("p", {"nvidia.com/gpumem": "1k"})))
    assert (fit.registered, fit.fits, fit.reason) == (False, False, "node unregistered")


def test_unreadable_colon_number_reads_as_zero_like_hami_and_says_so() -> None:
    value = "GPU-0,ten,15360,100,NVIDIA-Tesla T4,0,yes:"
    registration = parse_registration(
        {"metadata": {"annotations": {"hami.io/node-nvidia-register": value}}})
    assert registration is not None and registration.registered
    assert (registration.devices[0].count, registration.devices[0].health) == (0, False)
    assert registration.problem is not None
    assert "count 'ten'" in registration.problem and "health 'yes'" in registration.problem


def test_deleted_handshake_means_unregistered() -> None:
    hami_node = node("gone", [card("GPU-0")],
                     {"hami.io/node-handshake": "Deleted_2026-11-30 10:00:00"})
    registration = parse_registration(hami_node)
    assert registration is not None and not registration.registered
    assert registration.problem is not None and "Deleted_" in registration.problem
    request = _request(pod("p", {"nvidia.com/gpumem": "1k"}))
    assert fit_node(hami_node, [], pod("p"), request).reason == "node unregistered"


def test_cordoned_cards_are_read_with_the_registration_an_odd_value_as_its_text() -> None:
    registration = parse_registration(node("n1", [card("GPU-0")],
                                           {"hami.io/device-cordon": "GPU-0, GPU-9"}))
    assert registration is not None and registration.cordoned == {"GPU-0", "GPU-9"}
    odd = node("n1", [card("GPU-0")])
    odd["metadata"]["annotations"]["hami.io/device-cordon"] = 7
    registration = parse_registration(odd)
    assert registration is not None and registration.registered
    assert registration.cordoned == {"7"}


def test_old_requesting_handshake_is_not_judged() -> None:
    hami_node = node("quiet", [card("GPU-0")],
                     {"hami.io/node-handshake": "Requesting_2020-01-01 00:00:00"})
    registration = parse_registration(hami_node)
    assert registration is not None and registration.registered


# -- allocations and usage -------------------------------------------------------------------


def test_allocation_per_container_with_init_container_and_empty_entries() -> None:
    assert parse_allocation("GPU-a,NVIDIA,3000,30:GPU-b,NVIDIA,3000,30:;GPU-c,NVIDIA,5000,0:;") == [
        [("GPU-a", "NVIDIA", 3000, 30), ("GPU-b", "NVIDIA", 3000, 30)],
        [("GPU-c", "NVIDIA", 5000, 0)]]
    # an init container without GPU comes first, then the app container
    assert parse_allocation(";GPU-c,NVIDIA,5000,0:;") == [[], [("GPU-c", "NVIDIA", 5000, 0)]]
    assert parse_allocation(";;") == [[], []]
    assert parse_allocation(";") == [[]]
    assert parse_allocation("") == []


def test_allocation_skips_unreadable_device_entries() -> None:
    assert parse_allocation("GPU-a,NVIDIA,lots,30:GPU-b,NVIDIA:GPU-c,NVIDIA,10,5:;") == [
        [("GPU-c", "NVIDIA", 10, 5)]]


def test_usage_counts_pending_and_terminating_but_not_finished_pods() -> None:
    running = holder("running", "n1", "GPU-a,NVIDIA,3000,30:;")
    pending = holder("pending", "n1", "GPU-a,NVIDIA,2000,20:;", phase="Pending")
    terminating = holder("terminating", "n1", "GPU-a,NVIDIA,1000,10:;")
    terminating["metadata"]["deletionTimestamp"] = "2026-11-30T12:00:00Z"
    succeeded = holder("done", "n1", "GPU-a,NVIDIA,7000,70:;", phase="Succeeded")
    failed = holder("crashed", "n1", "GPU-a,NVIDIA,7000,70:;", phase="Failed")
    elsewhere = holder("elsewhere", "n2", "GPU-a,NVIDIA,7000,70:;")
    two_cards = holder("two", "n1", "GPU-a,NVIDIA,500,5:GPU-b,NVIDIA,500,5:;")
    only_to_allocate = holder("binding", "n1", "", phase="Pending")
    del only_to_allocate["metadata"]["annotations"]["hami.io/vgpu-devices-allocated"]
    only_to_allocate["metadata"]["annotations"]["hami.io/vgpu-devices-to-allocate"] = (
        "GPU-b,NVIDIA,100,1:;")
    usage = device_usage("n1", [pod_row(p) for p in (
        running, pending, terminating, succeeded, failed, elsewhere, two_cards, only_to_allocate)])
    assert usage == {
        "GPU-a": Usage(used=4, usedmem=6500, usedcores=65,
                       holders=["ml/running", "ml/pending", "ml/terminating", "ml/two"]),
        "GPU-b": Usage(used=2, usedmem=600, usedcores=6, holders=["ml/two", "ml/binding"]),
    }


def test_the_pod_row_carries_its_allocation_parsed_once() -> None:
    mig = holder("mig", "n1", "GPU-a[1-0],NVIDIA,5000,0:;GPU-b,NVIDIA,lots,5:GPU-c,NVIDIA,10,5:;",
                 phase="Pending")
    allocation = pod_row(mig).hami
    assert allocation is not None and allocation.node == "n1"
    # the MIG slice counts against its card; an unreadable entry is skipped
    assert [(d.card, d.memory, d.cores) for d in allocation.devices] == [
        ("GPU-a", 5000, 0), ("GPU-c", 10, 5)]
    assert pod_row(pod("plain", {"nvidia.com/gpu": "1"}, node_name="n1")).hami is None
    unplaced = pod("waiting", {"nvidia.com/gpumem": "1k"},
                   annotations={"hami.io/vgpu-node": "n1"})
    assert pod_row(unplaced).hami == HamiAllocation(node="n1", devices=())


def test_a_pod_bound_to_the_node_but_assigned_another_holds_nothing_there() -> None:
    hami_node = node("n1", [card("GPU-0", count=1)])
    stray = holder("stray", "n1", "GPU-0,NVIDIA,100,1:;", **{"hami.io/vgpu-node": "n2"})
    asking = pod("p", SMALL)
    fit = fit_node(hami_node, [stray], asking, _request(asking))
    assert fit.fits and fit.devices[0].holders == []
    counted = holder("counted", "n1", "GPU-0,NVIDIA,100,1:;")
    assert fit_node(hami_node, [counted], asking, _request(asking)).reason == (
        "1/1 CardTimeSlicingExhausted")


# -- the request -----------------------------------------------------------------------------


def _request(p: dict[str, Any]) -> HamiRequest:
    request = hami_request(p)
    assert request is not None
    return request


def test_request_reads_canonical_quantities_limits_before_requests() -> None:
    request = _request(pod("p", {"nvidia.com/gpu": "1", "nvidia.com/gpumem": "70k"},
                           requests={"nvidia.com/gpu": "2", "nvidia.com/gpumem": "1k",
                                     "nvidia.com/gpucores": "30"}))
    assert (request.count, request.mem, request.mem_percentage, request.cores) == (1, 70000,
                                                                                   None, 30)


def test_request_falls_back_to_requests() -> None:
    request = _request(pod("p", requests={"nvidia.com/gpumem": "4k", "nvidia.com/gpucores": "10"},
                           scheduler="default-scheduler"))
    assert (request.count, request.mem, request.cores) == (1, 4000, 10)


def test_memory_only_request_gets_one_card_and_no_cores() -> None:
    request = _request(pod("p", {"nvidia.com/gpumem": "1k"}))
    assert (request.count, request.mem, request.mem_percentage, request.cores) == (1, 1000,
                                                                                   None, 0)


def test_percentage_request_and_memory_default_of_a_whole_card() -> None:
    by_share = _request(pod("p", {"nvidia.com/gpumem-percentage": "50"}))
    assert (by_share.mem, by_share.mem_percentage, by_share.memory_on(16384)) == (None, 50, 8192)
    cores_only = _request(pod("p", {"nvidia.com/gpucores": "20"}))
    assert (cores_only.mem, cores_only.mem_percentage, cores_only.memory_on(15360)) == (
        None, 100, 15360)


def test_cores_clamp_to_one_card() -> None:
    assert _request(pod("p", {"nvidia.com/gpucores": "150"})).cores == 100


def test_count_only_request_is_an_exclusive_card_on_hami() -> None:
    request = _request(pod("p", {"nvidia.com/gpu": "2"}))
    assert (request.count, request.cores, request.mem_percentage) == (2, 100, 100)


def test_whole_gpus_for_the_default_scheduler_are_not_hami() -> None:
    assert hami_request(pod("p", {"nvidia.com/gpu": "1"}, scheduler="default-scheduler")) is None
    assert hami_request(pod("p", {"cpu": "1"})) is None
    assert hami_request(pod("p", None)) is None


def test_sharing_resource_is_hami_whatever_the_scheduler() -> None:
    assert hami_request(pod("p", {"nvidia.com/gpumem": "2k"},
                            scheduler="default-scheduler")) is not None


def test_largest_container_request_is_taken() -> None:
    request = _request(pod("p", {"nvidia.com/gpu": "1", "nvidia.com/gpumem": "2k"},
                           init_limits={"nvidia.com/gpu": "2", "nvidia.com/gpumem": "1k"}))
    assert (request.count, request.mem, request.container, request.containers) == (
        2, 1000, "warmup", 2)


def test_request_carries_the_pod_annotations() -> None:
    request = _request(pod("p", {"nvidia.com/gpumem": "1k"}, annotations={
        "nvidia.com/use-gputype": "A100,H100", "nvidia.com/nouse-gputype": "T4",
        "nvidia.com/use-gpuuuid": "GPU-1", "nvidia.com/nouse-gpuuuid": "GPU-2,GPU-3",
        "nvidia.com/numa-bind": "true", "nvidia.com/vgpu-mode": "mig",
        "hami.io/node-scheduler-policy": "spread", "hami.io/gpu-scheduler-policy": "binpack"}))
    assert request.use_types == ("A100", "H100") and request.nouse_types == ("T4",)
    assert request.use_uuids == ("GPU-1",) and request.nouse_uuids == ("GPU-2", "GPU-3")
    assert request.numa_bind and request.vgpu_mode == "mig"
    assert (request.node_policy, request.gpu_policy) == ("spread", "binpack")
    plain = _request(pod("q", {"nvidia.com/gpumem": "1k"}))
    assert plain.use_types is None and not plain.numa_bind and plain.gpu_policy is None


# -- every code, each on a device built to fail exactly that check ----------------------------

SMALL = {"nvidia.com/gpu": "1", "nvidia.com/gpumem": "1k", "nvidia.com/gpucores": "10"}


def _fit_one(the_card: dict[str, Any], limits: dict[str, str], *, allocations: tuple[str, ...] = (),
             pod_notes: dict[str, str] | None = None,
             node_notes: dict[str, str] | None = None) -> HamiNodeFit:
    hami_node = node("n1", [the_card], node_notes)
    holders = [holder(f"h{i}", "n1", value) for i, value in enumerate(allocations)]
    asking = pod("asking", limits, annotations=pod_notes)
    return fit_node(hami_node, holders, asking, _request(asking))


@pytest.mark.parametrize(("code", "the_card", "limits", "allocations", "pod_notes", "node_notes"), [
    ("CardNotHealth", card("GPU-0", health=False), SMALL, (), None, None),
    ("CardCordoned", card("GPU-0"), SMALL, (), None, {"hami.io/device-cordon": "GPU-9, GPU-0"}),
    ("CardTypeMismatch", card("GPU-0"), SMALL, (), {"nvidia.com/use-gputype": "A100"}, None),
    ("CardTypeMismatch", card("GPU-0"), SMALL, (), {"nvidia.com/nouse-gputype": "t4"}, None),
    ("CardTypeMismatch", card("GPU-0"), SMALL, (), {"nvidia.com/vgpu-mode": "mig"}, None),
    ("CardUuidMismatch", card("GPU-0"), SMALL, (), {"nvidia.com/use-gpuuuid": "GPU-7"}, None),
    ("CardUuidMismatch", card("GPU-0"), SMALL, (), {"nvidia.com/nouse-gpuuuid": "GPU-0"}, None),
    ("CardTimeSlicingExhausted", card("GPU-0", count=2), SMALL,
     ("GPU-0,NVIDIA,100,1:;", "GPU-0,NVIDIA,100,1:;"), None, None),
    ("ExclusiveDeviceAllocateConflict", card("GPU-0"), SMALL, ("GPU-0,NVIDIA,100,1:;",),
     {"hami.io/gpu-scheduler-policy": "mutex"}, None),
    ("CardInsufficientMemory", card("GPU-0"), {**SMALL, "nvidia.com/gpumem": "5k"},
     ("GPU-0,NVIDIA,12000,10:;",), None, None),
    ("CardInsufficientCore", card("GPU-0"), {**SMALL, "nvidia.com/gpucores": "30"},
     ("GPU-0,NVIDIA,1000,80:;",), None, None),
    ("ExclusiveDeviceAllocateConflict", card("GPU-0"), {"nvidia.com/gpu": "1"},
     ("GPU-0,NVIDIA,0,0:;",), None, None),
    ("CardComputeUnitsExhausted", card("GPU-0"), {"nvidia.com/gpumem": "1k"},
     ("GPU-0,NVIDIA,1000,100:;",), None, None),
])
def test_device_code(code: str, the_card: dict[str, Any], limits: dict[str, str],
                     allocations: tuple[str, ...], pod_notes: dict[str, str] | None,
                     node_notes: dict[str, str] | None) -> None:
    fit = _fit_one(the_card, limits, allocations=allocations, pod_notes=pod_notes,
                   node_notes=node_notes)
    assert (fit.registered, fit.fits, fit.reason) == (True, False, f"1/1 {code}")
    assert [d.code for d in fit.devices] == [code]
    # the same card without the one obstacle fits
    clean = _fit_one(card("GPU-0"), SMALL)
    assert (clean.fits, clean.reason, clean.chosen, clean.devices[0].code) == (True, "", ["GPU-0"],
                                                                               None)


def test_node_insufficient_device_is_the_whole_reason() -> None:
    fit = _fit_one(card("GPU-0"), {"nvidia.com/gpu": "2", "nvidia.com/gpumem": "1k"})
    assert (fit.fits, fit.reason) == (False, "NodeInsufficientDevice")
    assert [d.code for d in fit.devices] == [None]


def test_cards_that_fit_but_too_few_carry_no_code() -> None:
    # reference/hami.md: one code per device, the first failing check; a card that fits has none
    hami_node = node("n1", [card("GPU-0"), card("GPU-1", index=1, health=False)])
    asking = pod("p", {"nvidia.com/gpu": "2", "nvidia.com/gpumem": "1k"})
    fit = fit_node(hami_node, [], asking, _request(asking))
    assert (fit.fits, fit.reason) == (False, "1/2 CardNotHealth")
    assert [d.code for d in fit.devices] == [None, "CardNotHealth"]


def test_numa_bind_drops_a_run_that_crosses_numa_nodes() -> None:
    # numa 1 holds GPU-1 (free) and GPU-2 (memory full); numa 0 holds GPU-0 (free).
    cards = [card("GPU-0"), card("GPU-1", index=1, numa=1), card("GPU-2", index=2, numa=1)]
    hami_node = node("n1", cards)
    full = holder("full", "n1", "GPU-2,NVIDIA,16000,10:;")
    limits = {"nvidia.com/gpu": "2", "nvidia.com/gpumem": "1k"}
    bound = pod("p", limits, annotations={"nvidia.com/numa-bind": "true"})
    fit = fit_node(hami_node, [full], bound, _request(bound))
    assert fit.reason == "1/3 CardInsufficientMemory, 1/3 NumaNotFit"
    assert [d.code for d in fit.devices] == [None, "NumaNotFit", "CardInsufficientMemory"]
    unbound = pod("q", limits)
    free = fit_node(hami_node, [full], unbound, _request(unbound))
    assert (free.fits, sorted(free.chosen)) == (True, ["GPU-0", "GPU-1"])


def test_node_reason_counts_and_sorts_codes_as_strings() -> None:
    cards = [card(f"GPU-{i}", index=i) for i in range(4)]
    cards[3] = card("GPU-3", index=3, health=False)
    holders = [holder("a", "n1", "GPU-0,NVIDIA,16000,10:;"),
               holder("b", "n1", "GPU-1,NVIDIA,16000,10:;"),
               holder("c", "n1", "GPU-2,NVIDIA,100,100:;")]
    asking = pod("p", {"nvidia.com/gpumem": "2k", "nvidia.com/gpucores": "5"})
    fit = fit_node(node("n1", cards), holders, asking, _request(asking))
    assert fit.reason == "1/4 CardInsufficientCore, 1/4 CardNotHealth, 2/4 CardInsufficientMemory"


def test_devices_carry_the_show_devices_facts() -> None:
    hami_node = node("n1", [card("GPU-0", numa=1), card("GPU-1", index=1, health=False)])
    holders = [holder("a", "n1", "GPU-0,NVIDIA,3000,30:;")]
    asking = pod("p", SMALL)
    fit = fit_node(hami_node, holders, asking, _request(asking))
    first, second = fit.devices
    assert (first.uuid, first.index, first.type, first.memory_used, first.memory_total,
            first.cores_used, first.cores_total, first.numa, first.healthy, first.holders,
            first.code) == ("GPU-0", 0, T4, 3000, 16384, 30, 100, 1, True, ["ml/a"], None)
    assert (second.healthy, second.holders, second.code) == (False, [], "CardNotHealth")


# -- scores and policies ---------------------------------------------------------------------


def test_node_score_uses_usage_before_the_pod() -> None:
    cards = [card("GPU-0", devmem=10000), card("GPU-1", index=1, devmem=10000)]
    holders = [holder("a", "n1", "GPU-0,NVIDIA,5000,50:;")]
    asking = pod("p", SMALL)
    fit = fit_node(node("n1", cards), holders, asking, _request(asking))
    # 10 × (1/20 + 50/200 + 5000/20000)
    assert fit.score == pytest.approx(5.5)
    # the pod's own allocation is not usage "before" it
    placed = holder("p", "n1", "GPU-1,NVIDIA,1000,10:;")
    again = fit_node(node("n1", cards), [*holders, placed], placed, _request(asking))
    assert again.score == pytest.approx(5.5)


def test_gpu_policy_order_spread_least_used_first_binpack_most_used_first() -> None:
    cards = [card("GPU-0"), card("GPU-1", index=1), card("GPU-2", index=2)]
    holders = [holder("a", "n1", "GPU-0,NVIDIA,1000,10:;"),
               holder("b", "n1", "GPU-2,NVIDIA,8000,40:;")]
    for policy, expected in [(None, ["GPU-1"]), ("spread", ["GPU-1"]), ("binpack", ["GPU-2"])]:
        notes = {"hami.io/gpu-scheduler-policy": policy} if policy else None
        asking = pod("p", SMALL, annotations=notes)
        assert fit_node(node("n1", cards), holders, asking, _request(asking)).chosen == expected
    two = pod("p", {**SMALL, "nvidia.com/gpu": "2"},
              annotations={"hami.io/gpu-scheduler-policy": "binpack"})
    assert fit_node(node("n1", cards), holders, two, _request(two)).chosen == ["GPU-2", "GPU-0"]


def test_pick_order_binpack_highest_spread_lowest() -> None:
    scores = {"a": 1.5, "b": 12.0, "c": 0.0, "d": 12.0}
    assert pick_order(scores, "binpack") == ["b", "d", "a", "c"]
    assert pick_order(scores, "spread") == ["c", "a", "b", "d"]
    # HAMi treats anything but "spread" as its default, binpack
    assert pick_order(scores, None) == ["b", "d", "a", "c"]
    assert pick_order(scores, "nonsense") == ["b", "d", "a", "c"]


# -- the recorded hami-sharing cluster --------------------------------------------------------


@pytest.fixture(scope="module")
def snapshot() -> Snapshot:
    return Snapshot.from_dir(FIXTURE)


def _fit_in_snapshot(snapshot: Snapshot, pod_name: str, node_name: str) -> HamiNodeFit:
    the_pod = snapshot.pod("hami", pod_name)
    assert the_pod is not None
    return _fit_on_rows(snapshot, node_name, the_pod, _request(the_pod))


def _expected_codes() -> list[tuple[str, str, str]]:
    expected = json.loads((FIXTURE / "expected.json").read_text())
    return [(ref.split("/")[1], node_name, reason)
            for ref, entry in expected.items() if "codes" in entry
            for node_name, reason in entry["codes"].items()]


def test_fixture_lists_codes_for_three_pods() -> None:
    assert {pod_name for pod_name, _node, _reason in _expected_codes()} == {
        "needs-40g", "wants-h100", "too-many-cards"}


@pytest.mark.parametrize(("pod_name", "node_name", "reason"), _expected_codes())
def test_hami_sharing_reasons(snapshot: Snapshot, pod_name: str, node_name: str,
                              reason: str) -> None:
    fit = _fit_in_snapshot(snapshot, pod_name, node_name)
    assert (fit.registered, fit.fits, fit.reason) == (True, False, reason)


def test_hami_sharing_needs_40g_device_codes(snapshot: Snapshot) -> None:
    fit = _fit_in_snapshot(snapshot, "needs-40g", "hami-a100-1")
    assert [(d.index, d.code, d.memory_used, d.cores_used, d.healthy) for d in fit.devices] == [
        (0, "CardInsufficientMemory", 70000, 30, True),
        (1, "CardInsufficientMemory", 70000, 30, True),
        (2, "CardInsufficientCore", 40000, 100, True),
        (3, "CardNotHealth", 0, 0, False)]
    assert fit.devices[2].holders == ["hami/trainer-lora"]


@pytest.mark.parametrize("node_name", ["hami-a100-1", "hami-t4-1"])
def test_hami_sharing_fits_small_fits_both_nodes(snapshot: Snapshot, node_name: str) -> None:
    fit = _fit_in_snapshot(snapshot, "fits-small", node_name)
    assert (fit.registered, fit.fits, fit.reason) == (True, True, "")
    assert len(fit.chosen) == 1


def test_hami_sharing_fits_small_on_a100_may_use_gpu0_or_gpu1_only(snapshot: Snapshot) -> None:
    fit = _fit_in_snapshot(snapshot, "fits-small", "hami-a100-1")
    assert [d.code for d in fit.devices] == [None, None, "CardInsufficientCore", "CardNotHealth"]
    assert fit.chosen[0] in ("GPU-4a42c684-78ae-f63f-edf3-363f7e95780a",
                             "GPU-b5f837f6-e884-c0ef-2759-66a3930d7f0a")


def test_hami_sharing_old_requesting_handshake_still_registered(snapshot: Snapshot) -> None:
    for hami_node in snapshot.nodes:
        registration = parse_registration(hami_node)
        assert registration is not None and registration.registered


def test_hami_sharing_own_score_matches_the_schedulers(snapshot: Snapshot) -> None:
    # the scheduler wrote 10.24 for hami-a100-1 before placing "placed" (on hami-t4-1)
    assert _fit_in_snapshot(snapshot, "placed", "hami-a100-1").score == pytest.approx(10.24,
                                                                                     abs=0.005)
    assert _fit_in_snapshot(snapshot, "placed", "hami-t4-1").score == pytest.approx(0.0)


def test_containers_are_placed_one_after_another() -> None:
    # One card with room for one 10000 MiB container, not two.
    hami_node = node("n1", [card("GPU-0", devmem=16384)])
    limits = {"nvidia.com/gpu": "1", "nvidia.com/gpumem": "10k"}
    both = pod("p", limits, init_limits=None)
    both["spec"]["containers"].append(copy.deepcopy(both["spec"]["containers"][0]))
    both["spec"]["containers"][1]["name"] = "second"
    fit = fit_node(hami_node, [], both, _request(both))
    assert (fit.fits, fit.reason) == (False, "1/1 CardInsufficientMemory")
    one = pod("q", limits)
    assert fit_node(hami_node, [], one, _request(one)).fits


def test_sequential_fit_shows_usage_before_the_pod() -> None:
    hami_node = node("n1", [card("GPU-0", devmem=16384), card("GPU-1", index=1, devmem=16384)])
    limits = {"nvidia.com/gpu": "1", "nvidia.com/gpumem": "10k"}
    both = pod("p", limits)
    both["spec"]["containers"].append(copy.deepcopy(both["spec"]["containers"][0]))
    both["spec"]["containers"][1]["name"] = "second"
    fit = fit_node(hami_node, [], both, _request(both))
    assert fit.fits and sorted(fit.chosen) == ["GPU-0", "GPU-1"]
    assert [d.memory_used for d in fit.devices] == [0, 0]
