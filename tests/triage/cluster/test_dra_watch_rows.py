"""The watch cache keeps the DRA rows (triage/cache/dra.py): built per event, shared by the
triages between events, rebuilt for the object an event changes only, dropped by a re-list."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.clusters.sources import WatchSource
from scoring.dra import DraRows, SliceRow
from tests.kubeapi import FakeKubeAPI
from tests.paths import FIXTURES
from tests.triage.cluster.conftest import eventually, ready_cache, ref_of
from triage.classify.where import WhereAsk, where
from triage.config import DEFAULT_CONFIG, DEFAULT_GPU_DRIVERS
from triage.rows.would_be import WOULD_BE_POD, claim_template
from triage.snapshot import Snapshot

DRA = FIXTURES / "scenarios" / "dra-basics"
L4_SLICE = "dra-l4-1-gpu.nvidia.com-46379"
HOLDER_CLAIM = "holder-a-gpu-8jq68"
WATCHES = 9  # nodes, pods, the five DRA kinds, Workloads and PodGroups


@pytest.fixture
def api() -> Iterator[FakeKubeAPI]:
    with FakeKubeAPI(DRA, bookmark_interval=0.05) as server:
        yield server


@pytest.fixture
def cache(api: FakeKubeAPI, tmp_path: Path) -> Iterator[WatchSource]:
    with ready_cache(api, tmp_path) as source:
        yield source


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
    cached_answer, cold_answer = where(snapshot, ask, DEFAULT_CONFIG), where(cold, ask,
                                                                              DEFAULT_CONFIG)
    assert cached_answer.fit_nodes == cold_answer.fit_nodes == ("dra-a100-2", "dra-l4-1")
    assert cached_answer.verdict.to_dict() == cold_answer.verdict.to_dict()
