"""Pods and nodes with parts of odd JSON types (null, a string where an object belongs, a list
of strings) in a cluster: each odd part counts as absent, so the watch cache gets ready, and a
triage of the odd pod and of another pod answers, the same from a dump, a live read and the
watch cache."""

from __future__ import annotations

import copy
import json
import logging
import shutil
from pathlib import Path
from typing import Any

import pytest

from bot.clusters.sources import LiveSource, SnapshotSource
from tests.kubeapi import FakeKubeAPI
from tests.triage.cluster.conftest import eventually, ready_cache
from tests.triage.cluster.test_pages import (
    NEVER_SERVED,
    ODD_FIELDS,
    ODD_NODE_FIELDS,
    SEVEN,
    as_page,
    odd_pod,
    whole,
    with_field,
)
from tests.triage.cluster.test_read import FINISHED_REMARK
from triage.cache import PodStore
from triage.cluster.resources import PODS
from triage.refs import PodRef
from triage.slim import NODE_PARTS, POD_PARTS, sound

ODD_PODS = sorted(set(ODD_FIELDS) - NEVER_SERVED)
FULL = PodRef("research", "full")  # exhausted, whatever the odd objects


def odd_node(label: str) -> dict[str, Any]:
    node = copy.deepcopy(json.loads((SEVEN / "nodes.json").read_text())["items"][0])
    node["metadata"]["name"] = f"odd-node-{sorted(ODD_NODE_FIELDS).index(label):02d}"
    return with_field(node, *ODD_NODE_FIELDS[label])


def refs_of(pods: list[dict[str, Any]]) -> list[PodRef]:
    """The refs of the pods a ref can name (a pod of no namespace is counted, not named)."""
    return [PodRef(meta["namespace"], meta["name"]) for meta in (p["metadata"] for p in pods)
            if isinstance(meta.get("namespace"), str)]


def dump_with(directory: Path, pods: list[dict[str, Any]],
              nodes: list[dict[str, Any]]) -> Path:
    """The seven-states dump with the odd objects added, in the API server's list order."""
    shutil.copytree(SEVEN, directory)
    for filename, added in (("pods.json", pods), ("nodes.json", nodes)):
        document = json.loads((SEVEN / filename).read_text())
        document["items"] = sorted([*document["items"], *added], key=lambda o: (
            o["metadata"].get("namespace") or "", o["metadata"]["name"]))
        (directory / filename).write_text(json.dumps(document))
    return directory


@pytest.mark.parametrize("kind", ["pods", "nodes"])
def test_odd_objects_count_as_absent_through_every_reader(
        kind: str, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    pods = [odd_pod(label) for label in ODD_PODS] if kind == "pods" else []
    nodes = [odd_node(label) for label in sorted(ODD_NODE_FIELDS)] if kind == "nodes" else []
    refs = [*refs_of(pods), FULL]
    dump = SnapshotSource(dump_with(tmp_path / "dump", pods, nodes))
    # less the remark a live read cannot make (it lists no finished pods: see test_read)
    from_dump = {ref: {**verdict, "action": FINISHED_REMARK.sub("", verdict["action"])}
                 for ref in refs if (verdict := dump.triage(ref).to_dict())}
    with FakeKubeAPI(SEVEN) as api:
        for obj in (*pods, *nodes):
            api.apply(obj)
        live = LiveSource(kubeconfig=str(api.kubeconfig(tmp_path / "kubeconfig")))
        from_live = {ref: live.triage(ref).to_dict() for ref in refs}
        with caplog.at_level(logging.ERROR), ready_cache(api, tmp_path) as cache:
            from_cache = {ref: cache.triage(ref).to_dict() for ref in refs}
    assert not [r for r in caplog.records if r.exc_info]  # no list failed: no stack trace
    assert from_dump[FULL]["cause"] == "exhausted"
    for ref in refs:
        assert from_live[ref] == from_dump[ref], ref
        assert from_cache[ref] == from_dump[ref], ref
    # a dump read for one answer keeps the other namespaces' pods slim (gpuwhy triage)
    for ref in refs:
        one = SnapshotSource(tmp_path / "dump", namespace=ref.namespace).triage(ref).to_dict()
        assert one["cause"] == from_dump[ref]["cause"], ref
    # the odd pods answer of themselves; none is lost
    assert all(from_dump[ref]["cause"] != "pod-not-found" for ref in refs)


def test_odd_pods_watched_into_a_ready_cache_keep_it_answering(tmp_path: Path) -> None:
    odd = [odd_pod(label) for label in ODD_PODS]
    with FakeKubeAPI(SEVEN) as api, ready_cache(api, tmp_path) as cache:
        before = cache.triage(FULL).to_dict()
        for pod in odd:
            api.apply(pod)
        named = {ref.name for ref in refs_of(odd)}
        eventually(lambda: named <= {p["metadata"]["name"]
                                     for p in cache.cache.pods.in_namespace("ml")})
        assert cache.triage(FULL).cause == before["cause"]
        for ref in refs_of(odd):
            assert cache.triage(ref).cause != "pod-not-found", ref


# (object, parts, what is kept)
SOUND = [
    ({"metadata": {"name": "a", "annotations": ["x"]}}, POD_PARTS, {"metadata": {"name": "a"}}),
    ({"metadata": None, "spec": {}}, POD_PARTS, {"spec": {}}),
    ({"spec": {"containers": ["a", {"name": "b", "resources": "4"}]}}, POD_PARTS,
     {"spec": {"containers": [{"name": "b"}]}}),
    ({"spec": {"initContainers": 7, "overhead": [1]}}, POD_PARTS, {"spec": {}}),
    ({"status": {"conditions": {"type": "PodScheduled"}}}, POD_PARTS, {"status": {}}),
    ({"spec": {"taints": ["t", {"key": "k"}]}, "status": "Ready"}, NODE_PARTS,
     {"spec": {"taints": [{"key": "k"}]}}),
]


@pytest.mark.parametrize(("obj", "parts", "kept"), SOUND)
def test_sound_leaves_out_the_parts_of_another_type(obj: dict[str, Any], parts: dict[str, Any],
                                                     kept: dict[str, Any]) -> None:
    before = copy.deepcopy(obj)
    assert sound(obj, parts) == kept
    assert obj == before  # read, never changed


def test_a_sound_object_is_read_without_a_copy() -> None:
    pod = json.loads((SEVEN / "pods.json").read_text())["items"][0]
    assert sound(pod, POD_PARTS) is pod


@pytest.mark.parametrize("conditions", [{"type": "PodScheduled"}, ["PodScheduled"], "x", None])
def test_odd_conditions_of_a_pod_not_started_are_kept_as_the_whole_pod_is(
        conditions: object) -> None:
    """A pod without a startTime keeps its PodScheduled condition (triage.slim.trim_pod):
    decoded by its page's bytes or cut whole, odd conditions count as absent alike."""
    pod = odd_pod("no startTime")
    pod["status"]["conditions"] = conditions
    page = as_page([pod])
    kept = PodStore().slim.kept_page(PODS, page)
    assert (kept[1] if kept is not None else whole(page)) == whole(page)
    assert not whole(page)[0]["status"].get("conditions")  # none of them a condition
