"""DRA objects read live (resource.k8s.io/v1): cold reads, the watch cache, clusters without
the API group, refused reads, claims changing under a running cache, and the DRA rows the
cache keeps (triage/cache/dra.py: built per event, shared by the triages between events,
rebuilt for the object an event changes only, dropped by a re-list)."""

from __future__ import annotations

import copy
import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.clusters.sources import LiveSource, SnapshotSource, WatchSource
from scoring.dra import DraRows, SliceRow
from tests.kubeapi import FakeKubeAPI, forbidden_status
from tests.paths import FIXTURES
from tests.triage.cluster.conftest import eventually, ready_cache, ref_of, watch_source
from tests.triage.cluster.test_read import FINISHED_REMARK
from triage.classify.where import WhereAsk, where
from triage.config import DEFAULT_CONFIG, DEFAULT_GPU_DRIVERS
from triage.errors import ClusterError
from triage.rows.would_be import WOULD_BE_POD, claim_template
from triage.snapshot import Snapshot

FIXTURES = FIXTURES / "scenarios"
DRA = FIXTURES / "dra-basics"
SEVEN = FIXTURES / "seven-states"
EXTENDED = FIXTURES.parent / "scenarios-extra" / "dra-extended"
DRA_GROUP = "resource.k8s.io/v1"
TAINT_RULES_GROUP = "resource.k8s.io/v1beta2"  # DeviceTaintRules
L4_SLICE = "dra-l4-1-gpu.nvidia.com-46379"
HOLDER_CLAIM = "holder-a-gpu-8jq68"
WATCHES = 9  # nodes, pods, the five DRA kinds, Workloads and PodGroups


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


# -- the DRA rows the watch cache keeps ------------------------------------------------------

def rows_of(source: WatchSource) -> DraRows:
    """The DRA rows a triage from the cache reads."""
    return source.cache.snapshot_for(ref_of("vision/pinned-a")).dra_rows


def slices_by_name(rows: DraRows) -> dict[str, SliceRow]:
    return {row.name: row for row in rows.slices}


def test_triages_with_no_event_between_share_the_rows(cache: WatchSource) -> None:
    first = rows_of(cache)
    snapshot = cache.cache.snapshot_for(ref_of("vision/pinned-a"))
    assert snapshot.dra_rows is first
    assert snapshot.dra_inventory(DEFAULT_GPU_DRIVERS).slices is first.slices
    assert sorted(slices_by_name(first)) == ["dra-a100-1-gpu.nvidia.com-93242",
                                             "dra-a100-2-gpu.nvidia.com-24092", L4_SLICE]
    assert cache.triage(ref_of("vision/pinned-a")).cause == "exhausted"


def test_a_modified_slice_gets_new_rows_and_the_others_keep_theirs(
        api: FakeKubeAPI, cache: WatchSource) -> None:
    before = rows_of(cache)
    republished = copy.deepcopy(api.get_object("ResourceSlice", "", L4_SLICE))
    republished["spec"]["devices"][0]["attributes"]["driverVersion"] = {"version": "580.1.0"}
    api.apply(republished)
    eventually(lambda: "driverVersion" in slices_by_name(rows_of(cache))[L4_SLICE].devices[
        0].attributes)
    after = rows_of(cache)
    old, new = slices_by_name(before), slices_by_name(after)
    assert new[L4_SLICE] is not old[L4_SLICE]
    assert all(new[name] is row for name, row in old.items() if name != L4_SLICE)
    assert all(after.claims[key] is row for key, row in before.claims.items())
    assert all(after.classes[name] is row for name, row in before.classes.items())
    assert all(after.templates[key] is row for key, row in before.templates.items())


def test_a_deleted_slice_takes_its_rows_along(api: FakeKubeAPI, cache: WatchSource) -> None:
    before = slices_by_name(rows_of(cache))
    api.delete("ResourceSlice", "", L4_SLICE)
    eventually(lambda: L4_SLICE not in slices_by_name(rows_of(cache)))
    after = slices_by_name(rows_of(cache))
    assert sorted(after) == sorted(set(before) - {L4_SLICE})
    assert all(after[name] is before[name] for name in after)


def test_a_modified_claim_gets_a_new_row_and_the_others_keep_theirs(
        api: FakeKubeAPI, cache: WatchSource) -> None:
    before = rows_of(cache)
    key = ("vision", HOLDER_CLAIM)
    assert before.claims[key].pods == ("vision/holder-a",)
    released = copy.deepcopy(api.get_object("ResourceClaim", "vision", HOLDER_CLAIM))
    released["status"]["reservedFor"] = []
    api.apply(released)
    eventually(lambda: rows_of(cache).claims[key].pods == ())
    after = rows_of(cache)
    assert all(after.claims[k] is row for k, row in before.claims.items() if k != key)
    assert all(row is before.slices[i] for i, row in enumerate(after.slices))


def test_a_relist_drops_the_rows_and_the_next_triages_share_new_ones(
        api: FakeKubeAPI, cache: WatchSource) -> None:
    before = rows_of(cache)
    assert rows_of(cache) is before
    lists = cache.cache.lists
    eventually(lambda: api.open_watches == WATCHES)
    api.compact()
    api.drop_watches()
    eventually(lambda: cache.cache.lists >= lists + WATCHES)
    eventually(lambda: all(row is not before.slices[i]
                           for i, row in enumerate(rows_of(cache).slices)))
    relisted = rows_of(cache)
    assert not any(row is before.claims[key] for key, row in relisted.claims.items())
    assert slices_by_name(relisted).keys() == slices_by_name(before).keys()
    assert rows_of(cache) is relisted


def test_a_snapshot_adding_a_dra_object_builds_rows_for_it_alone(cache: WatchSource) -> None:
    # ``where`` asks for devices of a class with a claim template of its own
    snapshot = cache.cache.cluster_snapshot()
    ask = WhereAsk(2, "gpu.nvidia.com", namespace="vision")
    with_template = dataclasses.replace(snapshot, dra=[*snapshot.dra, claim_template(
        ask.namespace, ask.resource, ask.count)])
    kept, rows = snapshot.dra_rows, with_template.dra_rows
    assert rows is not kept
    assert ("vision", WOULD_BE_POD) in rows.templates
    assert ("vision", WOULD_BE_POD) not in kept.templates
    assert all(row is kept.slices[i] for i, row in enumerate(rows.slices))
    assert all(rows.templates[key] is row for key, row in kept.templates.items())
    cold = Snapshot.from_dir(DRA)
    cached_answer = where(snapshot.rows, ask, DEFAULT_CONFIG)
    cold_answer = where(cold.rows, ask, DEFAULT_CONFIG)
    assert cached_answer.fit_nodes == cold_answer.fit_nodes == ("dra-a100-2", "dra-l4-1")
    assert cached_answer.verdict.to_dict() == cold_answer.verdict.to_dict()
