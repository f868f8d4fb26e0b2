"""Alike nodes are judged once per group (their shape, their resources and their pods' sums),
yet each node keeps its own outcome: through the dump, the live read and the watch cache, on
scenarios-extra/node-groups (see its README.md), and as watch events move one node of a group.

Every expected outcome below is worked out by hand from the scenario's objects."""

from __future__ import annotations

import copy
import json
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from bot.clusters.sources import LiveSource, SnapshotSource, TriageSource, WatchSource
from tests.kubeapi import FakeKubeAPI
from tests.paths import FIXTURES
from tests.triage.cluster.conftest import eventually, ready_cache, ref_of

GROUPS = FIXTURES / "scenarios-extra" / "node-groups"
TAINTED = ("taint-untolerated", "example.com/maintenance=true:NoSchedule")
OTHER_POOL = ("selector-mismatch", "unmatched pool=a100")
FITS = ("fit", "fits")
FULL = ("exhausted", "4/4 nvidia.com/gpu held")
HALF = ("exhausted", "2/4 nvidia.com/gpu held")
SHORT_OF_CPU = ("other-constraint", "Insufficient cpu")

# ref -> node -> (outcome, detail)
EXPECTED = {
    "grp/two-gpus": {"gpu-a100-1": FULL, "gpu-a100-2": FITS, "gpu-a100-3": FITS,
                     "gpu-a100-4": TAINTED, "gpu-a100-5": OTHER_POOL, "gpu-a100-6": FITS,
                     "gpu-a100-7": FITS},
    "grp/three-gpus": {"gpu-a100-1": FULL, "gpu-a100-2": HALF, "gpu-a100-3": HALF,
                       "gpu-a100-4": TAINTED, "gpu-a100-5": OTHER_POOL, "gpu-a100-6": FITS,
                       "gpu-a100-7": FITS},
    "grp/cpu-63200m": {"gpu-a100-1": FULL, "gpu-a100-2": SHORT_OF_CPU,
                       "gpu-a100-3": SHORT_OF_CPU, "gpu-a100-4": TAINTED,
                       "gpu-a100-5": OTHER_POOL, "gpu-a100-6": SHORT_OF_CPU,
                       "gpu-a100-7": FITS},
}
# the whole-GPU binpack score of each fit node: (held + asked) / 4
SCORES = {"grp/two-gpus": {"gpu-a100-2": 1.0, "gpu-a100-3": 1.0, "gpu-a100-6": 0.5,
                           "gpu-a100-7": 0.5},
          "grp/three-gpus": {"gpu-a100-6": 0.75, "gpu-a100-7": 0.75},
          "grp/cpu-63200m": {"gpu-a100-7": 0.25}}


def outcomes(source: TriageSource, ref: str) -> dict[str, tuple[str, str]]:
    return {n.name: (n.outcome, n.detail) for n in source.triage(ref_of(ref)).nodes}


def scores(source: TriageSource, ref: str) -> dict[str, float | None]:
    return {n.name: n.score for n in source.triage(ref_of(ref)).nodes if n.outcome == "fit"}


@contextmanager
def reader(name: str, tmp_path: Path, cluster: Path = GROUPS,
           ) -> Iterator[tuple[TriageSource, FakeKubeAPI | None]]:
    if name == "dump":
        yield SnapshotSource(cluster), None
        return
    with FakeKubeAPI(cluster) as server:
        if name == "live":
            yield LiveSource(kubeconfig=str(server.kubeconfig(tmp_path / "kubeconfig"))), server
            return
        with ready_cache(server, tmp_path) as cache:
            yield cache, server


READERS = ("dump", "live", "watch")


@pytest.mark.parametrize("name", READERS)
@pytest.mark.parametrize("ref", EXPECTED)
def test_alike_nodes_keep_their_own_outcomes(name: str, ref: str, tmp_path: Path) -> None:
    with reader(name, tmp_path) as (source, _):
        assert outcomes(source, ref) == EXPECTED[ref]
        assert scores(source, ref) == SCORES[ref]


def test_the_cache_keeps_one_sums_mapping_for_nodes_that_hold_alike(tmp_path: Path) -> None:
    with reader("watch", tmp_path) as (source, _):
        assert isinstance(source, WatchSource)
        sums = source.cache.snapshot_for(ref_of("grp/two-gpus")).requested_by_node
        assert sums["gpu-a100-2"] is sums["gpu-a100-3"]
        assert sums["gpu-a100-1"] is not sums["gpu-a100-2"]


def test_a_watch_event_moves_one_node_out_of_its_group(tmp_path: Path) -> None:
    with reader("watch", tmp_path) as (source, server):
        assert isinstance(source, WatchSource) and server is not None
        # two more GPUs taken on gpu-a100-3: it is full, its twin gpu-a100-2 is not
        newcomer = copy.deepcopy(server.get_object("Pod", "grp", "hold-3"))
        newcomer["metadata"].update(name="hold-3b", uid="0b3b0b3b-0000-4000-8000-00000000b3b0")
        server.apply(newcomer)
        eventually(lambda: outcomes(source, "grp/two-gpus")["gpu-a100-3"] == FULL)
        assert outcomes(source, "grp/two-gpus") == {**EXPECTED["grp/two-gpus"],
                                                    "gpu-a100-3": FULL}
        # one of gpu-a100-1's two pods gone: it holds as gpu-a100-2 does, and is judged so
        server.delete("Pod", "grp", "hold-1b")
        eventually(lambda: outcomes(source, "grp/three-gpus")["gpu-a100-1"] == HALF)
        assert outcomes(source, "grp/three-gpus") == {**EXPECTED["grp/three-gpus"],
                                                      "gpu-a100-3": FULL, "gpu-a100-1": HALF}
        assert scores(source, "grp/two-gpus") == {"gpu-a100-1": 1.0, "gpu-a100-2": 1.0,
                                                  "gpu-a100-6": 0.5, "gpu-a100-7": 0.5}
        # a node's taint lifted by an event: it leaves the tainted shape and fits
        lifted = copy.deepcopy(server.get_object("Node", "", "gpu-a100-4"))
        lifted["spec"].pop("taints")
        server.apply(lifted)
        eventually(lambda: outcomes(source, "grp/two-gpus")["gpu-a100-4"] == FITS)
        assert outcomes(source, "grp/two-gpus")["gpu-a100-5"] == OTHER_POOL


def with_eight_gpus(node_name: str, tmp_path: Path) -> Path:
    """The scenario, one node reporting 8 nvidia.com/gpu (capacity and allocatable) as a node
    with twice the cards would: its pods' sums stay those of its group."""
    cluster = tmp_path / "node-groups"
    shutil.copytree(GROUPS, cluster)
    listed = json.loads((cluster / "nodes.json").read_text())
    for node in listed["items"]:
        if node["metadata"]["name"] == node_name:
            node["status"]["capacity"]["nvidia.com/gpu"] = "8"
            node["status"]["allocatable"]["nvidia.com/gpu"] = "8"
    (cluster / "nodes.json").write_text(json.dumps(listed))
    return cluster


@pytest.mark.parametrize("name", READERS)
def test_nodes_holding_alike_with_other_gpu_counts_keep_their_own_scores(
        name: str, tmp_path: Path) -> None:
    """gpu-a100-6 and -7 hold nothing (one sums mapping in the cache): with 8 GPUs, -6 scores
    (0 + 2) / 8, -7 keeps (0 + 2) / 4; the fit nodes are listed best first, then by name, and
    the summary names them so."""
    with reader(name, tmp_path, with_eight_gpus("gpu-a100-6", tmp_path)) as (source, _):
        verdict = source.triage(ref_of("grp/two-gpus"))
    assert [(n.name, n.outcome, n.score) for n in verdict.nodes] == [
        ("gpu-a100-5", "selector-mismatch", None), ("gpu-a100-4", "taint-untolerated", None),
        ("gpu-a100-1", "exhausted", None), ("gpu-a100-2", "fit", 1.0),
        ("gpu-a100-3", "fit", 1.0), ("gpu-a100-7", "fit", 0.5), ("gpu-a100-6", "fit", 0.25)]
    assert verdict.node_summary == (
        "7 nodes: 3 not fit (1 selector-mismatch, 1 taint-untolerated, 1 exhausted), 4 fit "
        "(gpu-a100-2: 1.00, gpu-a100-3: 1.00, gpu-a100-7: 0.50, gpu-a100-6: 0.25)")
