"""DRA objects read live (resource.k8s.io/v1): cold reads, the watch cache, clusters without
the API group, refused reads, and claims changing under a running cache."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.clusters.sources import LiveSource, SnapshotSource, WatchSource
from tests.kubeapi import FakeKubeAPI, forbidden_status
from tests.paths import FIXTURES
from tests.triage.cluster.conftest import eventually, ready_cache, ref_of, watch_source
from tests.triage.cluster.test_read import FINISHED_REMARK
from triage.errors import ClusterError

FIXTURES = FIXTURES / "scenarios"
DRA = FIXTURES / "dra-basics"
SEVEN = FIXTURES / "seven-states"
EXTENDED = FIXTURES.parent / "scenarios-extra" / "dra-extended"
DRA_GROUP = "resource.k8s.io/v1"
TAINT_RULES_GROUP = "resource.k8s.io/v1beta2"  # DeviceTaintRules


def _kubeconfig(server: FakeKubeAPI, tmp_path: Path) -> str:
    return str(server.kubeconfig(tmp_path / "kubeconfig"))


@pytest.fixture
def api() -> Iterator[FakeKubeAPI]:
    with FakeKubeAPI(DRA, bookmark_interval=0.05) as server:
        yield server


@pytest.fixture
def cache(api: FakeKubeAPI, tmp_path: Path) -> Iterator[WatchSource]:
    with ready_cache(api, tmp_path) as source:
        yield source


def test_a_dra_pod_reads_the_four_kinds_cold(api: FakeKubeAPI, tmp_path: Path) -> None:
    live = LiveSource(kubeconfig=_kubeconfig(api, tmp_path))
    before = api.mark()
    assert live.triage(ref_of("vision/pinned-a")).cause == "exhausted"
    paths = {r.path for r in api.requests[before:]}
    assert {"/apis/resource.k8s.io/v1/deviceclasses",
            "/apis/resource.k8s.io/v1/namespaces/vision/resourceclaimtemplates",
            "/apis/resource.k8s.io/v1/resourceclaims",
            "/apis/resource.k8s.io/v1/resourceslices"} <= paths


def test_a_cached_dra_triage_reads_no_dra_object(api: FakeKubeAPI, cache: WatchSource) -> None:
    # claims, slices, DeviceClasses and claim templates are all watched: the pod and its
    # events are the only reads, as for any pending pod
    before = api.mark()
    assert cache.triage(ref_of("serving/llm-80g")).cause == "device-unfit"
    assert _dra_reads(api, before) == []
    assert len([r for r in api.requests[before:] if r.query.get("watch") not in ("1", "true")
                ]) == 2
    before = api.mark()
    cache.triage(ref_of("serving/legacy-gpu"))  # nvidia.com/gpu: the cached classes say no
    assert _dra_reads(api, before) == []


def _dra_reads(api: FakeKubeAPI, since: int) -> list[str]:
    return sorted(r.path for r in api.requests[since:] if "resource.k8s.io" in r.path
                  and r.query.get("watch") not in ("1", "true"))


@pytest.fixture
def extended_api() -> Iterator[FakeKubeAPI]:
    with FakeKubeAPI(EXTENDED, bookmark_interval=0.05) as server:
        yield server


def test_an_extended_resource_pod_reads_classes_claims_and_slices_cold(
        extended_api: FakeKubeAPI, tmp_path: Path) -> None:
    live = LiveSource(kubeconfig=_kubeconfig(extended_api, tmp_path))
    before = extended_api.mark()
    assert live.triage(ref_of("serving/ext-a100b")).cause == "exhausted"
    assert _dra_reads(extended_api, before) == [
        "/apis/resource.k8s.io/v1/deviceclasses", "/apis/resource.k8s.io/v1/resourceclaims",
        "/apis/resource.k8s.io/v1/resourceslices"]


def test_a_cached_extended_resource_triage_reads_no_dra_object(
        extended_api: FakeKubeAPI, tmp_path: Path) -> None:
    cache = watch_source(extended_api, tmp_path).start()
    try:
        assert cache.wait_ready(5)
        before = extended_api.mark()
        assert cache.triage(ref_of("serving/ext-a100b")).cause == "exhausted"
        assert _dra_reads(extended_api, before) == []
        # legacy-runner leaves: its claim goes with it, and dra-a100-2 has 3 devices free
        extended_api.delete("ResourceClaim", "vision", "legacy-runner-extended-resources-7k2lq")
        extended_api.delete("Pod", "vision", "legacy-runner")
        _eventually_fits(cache, "serving/ext-a100b", "dra-a100-2")
    finally:
        cache.stop()


def test_a_refused_class_read_is_noted_and_the_device_plugin_view_stands(
        extended_api: FakeKubeAPI, tmp_path: Path) -> None:
    live = LiveSource(kubeconfig=_kubeconfig(extended_api, tmp_path))
    extended_api.inject("status", "/deviceclasses$", status=forbidden_status(
        "list", "deviceclasses", group="resource.k8s.io"))
    verdict = live.triage(ref_of("serving/ext-a100b"))
    assert verdict.cause == "no-gpu-node"  # without the classes, nothing says DRA serves it
    assert verdict.error is not None and "cannot list deviceclasses" in verdict.error


def test_the_cache_follows_claims_being_released(api: FakeKubeAPI, cache: WatchSource) -> None:
    assert cache.triage(ref_of("vision/pinned-a")).cause == "exhausted"
    for holder in ("holder-a-gpu-8jq68", "holder-b-gpu-srp9s"):
        api.delete("ResourceClaim", "vision", holder)
    api.delete("Pod", "vision", "holder-a")
    api.delete("Pod", "vision", "holder-b")
    _eventually_fits(cache, "vision/pinned-a", "dra-a100-1")


def _eventually_fits(cache: WatchSource, ref: str, node: str) -> None:
    """The cache catches up with released claims: the pod fits the node they were on."""
    def fits() -> bool:
        verdict = cache.triage(ref_of(ref))
        return {n.name: n.outcome for n in verdict.nodes}.get(node) == "fit"
    eventually(fits)


def test_the_cache_follows_a_device_class_taking_an_extended_resource(
        api: FakeKubeAPI, cache: WatchSource) -> None:
    outcomes = {n.name: n.outcome for n in cache.triage(ref_of("serving/legacy-gpu")).nodes}
    assert outcomes["dra-a100-2"] == "no-gpu-node"  # no class serves nvidia.com/gpu
    items = json.loads((DRA / "dra.json").read_text())["items"]
    device_class = copy.deepcopy(next(i for i in items if i["kind"] == "DeviceClass"))
    device_class["spec"]["extendedResourceName"] = "nvidia.com/gpu"
    api.apply(device_class)
    eventually(lambda: {n.name: n.outcome for n in cache.triage(
        ref_of("serving/legacy-gpu")).nodes}["dra-a100-2"] == "fit")


def test_the_cache_follows_a_slice_published_later(api: FakeKubeAPI, cache: WatchSource) -> None:
    assert cache.triage(ref_of("vision/spare-pool")).cause == "no-gpu-node"
    items = json.loads((DRA / "dra.json").read_text())["items"]
    published = copy.deepcopy(next(i for i in items if i["kind"] == "ResourceSlice"
                                   and i["spec"]["nodeName"] == "dra-l4-1"))
    published["metadata"]["name"] = "gpu-spare-1-gpu.nvidia.com-late1"
    published["spec"]["nodeName"] = "gpu-spare-1"
    published["spec"]["pool"]["name"] = "gpu-spare-1"
    api.apply(published)
    eventually(lambda: cache.triage(ref_of("vision/spare-pool")).cause != "no-gpu-node")


@pytest.mark.parametrize("directory", [SEVEN, DRA], ids=["seven-states", "dra-basics"])
def test_a_cluster_without_the_dra_group_is_not_an_error(directory: Path,
                                                         tmp_path: Path) -> None:
    expected = json.loads((directory / "expected.json").read_text())
    no_dra = tmp_path / "dump"
    no_dra.mkdir()
    for item in directory.iterdir():
        if item.name != "dra.json":
            (no_dra / item.name).write_bytes(item.read_bytes())
    dump = SnapshotSource(no_dra)
    with FakeKubeAPI(directory, unserved=[DRA_GROUP, TAINT_RULES_GROUP]) as server:
        live = LiveSource(kubeconfig=_kubeconfig(server, tmp_path))
        watch = watch_source(server, tmp_path).start()
        try:
            assert watch.wait_ready(5)
            for ref in expected:
                from_dump = dump.triage(ref_of(ref)).to_dict()
                # a live read never sees finished pods (see test_read)
                from_dump["action"] = FINISHED_REMARK.sub("", from_dump["action"])
                assert live.triage(ref_of(ref)).to_dict() == from_dump, ref
                assert watch.triage(ref_of(ref)).to_dict() == from_dump, ref
                assert from_dump["error"] is None
        finally:
            watch.stop()


def test_a_refused_dra_read_is_the_answer_for_a_dra_pod(api: FakeKubeAPI,
                                                        tmp_path: Path) -> None:
    live = LiveSource(kubeconfig=_kubeconfig(api, tmp_path))
    api.inject("status", "/resourceclaims$", status=forbidden_status(
        "list", "resourceclaims", group="resource.k8s.io"))
    with pytest.raises(ClusterError) as refused:
        live.triage(ref_of("vision/pinned-a"))
    assert "cannot list resourceclaims" in str(refused.value)
    assert "\n" not in str(refused.value)


def test_a_refused_slice_read_is_noted_for_other_pods(api: FakeKubeAPI, tmp_path: Path) -> None:
    live = LiveSource(kubeconfig=_kubeconfig(api, tmp_path))
    api.inject("status", "/resourceslices$", status=forbidden_status(
        "list", "resourceslices", group="resource.k8s.io"))
    verdict = live.triage(ref_of("serving/legacy-gpu"))
    assert verdict.cause == "no-gpu-node"
    assert verdict.error is not None and "cannot list resourceslices" in verdict.error


def test_a_never_created_ordinal_pod_is_read_through_its_statefulset(tmp_path: Path) -> None:
    extra = FIXTURES.parent / "scenarios-extra" / "admission-refs"
    with FakeKubeAPI(extra) as server:
        for event in [e for e in server.namespace_objects("events", "dbs")]:
            server.delete("Event", "dbs", event["metadata"]["name"])
        verdict = LiveSource(kubeconfig=_kubeconfig(server, tmp_path)).triage(ref_of("dbs/db-0"))
    assert (verdict.cause, verdict.kind) == ("quota-exceeded", "StatefulSet")
