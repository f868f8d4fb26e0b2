"""Gangs read live (scheduling.k8s.io, the version discovery prefers): cold reads, the watch
cache, a cluster that does not serve the group, and a gang growing under a running cache."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.clusters.sources import LiveSource, SnapshotSource, WatchSource
from tests.kubeapi import FakeKubeAPI, forbidden_status
from tests.paths import FIXTURES
from tests.triage.cluster.conftest import eventually, ready_cache, ref_of

GANGS = FIXTURES / "scenarios" / "gang-dra-basics"
GROUP = "scheduling.k8s.io/v1alpha2"


def _gang_reads(api: FakeKubeAPI, since: int) -> list[str]:
    return sorted(r.path for r in api.requests[since:] if "scheduling.k8s.io" in r.path
                  and r.query.get("watch") not in ("1", "true"))


@pytest.fixture
def api() -> Iterator[FakeKubeAPI]:
    with FakeKubeAPI(GANGS, bookmark_interval=0.05) as server:
        yield server


@pytest.fixture
def cache(api: FakeKubeAPI, tmp_path: Path) -> Iterator[WatchSource]:
    with ready_cache(api, tmp_path) as source:
        yield source


def test_a_gang_pod_reads_the_namespaces_workloads_and_pod_groups_cold(
        api: FakeKubeAPI, tmp_path: Path) -> None:
    live = LiveSource(kubeconfig=str(api.kubeconfig(tmp_path / "kubeconfig")))
    before = api.mark()
    verdict = live.triage(ref_of("train/moe-train-0"))
    assert verdict.cause == "exhausted" and "3 of 4 gang pods fit now" in verdict.action
    assert _gang_reads(api, before) == [
        "/apis/scheduling.k8s.io",
        f"/apis/{GROUP}/namespaces/train/podgroups",
        f"/apis/{GROUP}/namespaces/train/workloads"]


def test_a_pod_in_no_gang_reads_nothing_of_gangs(api: FakeKubeAPI, tmp_path: Path) -> None:
    live = LiveSource(kubeconfig=str(api.kubeconfig(tmp_path / "kubeconfig")))
    before = api.mark()
    assert live.triage(ref_of("research/eval-4g")).cause == "scheduled"
    assert _gang_reads(api, before) == []


def test_a_ref_naming_the_workload_is_answered_live(api: FakeKubeAPI, tmp_path: Path) -> None:
    live = LiveSource(kubeconfig=str(api.kubeconfig(tmp_path / "kubeconfig")))
    verdict = live.triage(ref_of("train/big-sweep"))
    assert (verdict.kind, verdict.cause, verdict.pods_total) == ("Workload", "too-large", 4)


def test_a_cluster_without_the_group_is_read_without_a_gang_list(tmp_path: Path) -> None:
    with FakeKubeAPI(GANGS, unserved=[GROUP]) as server:
        live = LiveSource(kubeconfig=str(server.kubeconfig(tmp_path / "kubeconfig")))
        before = server.mark()
        verdict = live.triage(ref_of("train/llama-pretrain-0"))
        assert _gang_reads(server, before) == ["/apis/scheduling.k8s.io"]  # discovery: 404
        assert verdict.error is None
        with ready_cache(server, tmp_path) as watch:
            assert watch.triage(ref_of("train/llama-pretrain-0")).to_dict() == verdict.to_dict()
            assert [r.path for r in server.requests if "scheduling.k8s.io/" in r.path] == []
    # judged pod by pod, as a dump without gangs.json judges it
    no_gangs = tmp_path / "dump"
    no_gangs.mkdir()
    for item in GANGS.iterdir():
        if item.name != "gangs.json":
            (no_gangs / item.name).write_bytes(item.read_bytes())
    from_dump = SnapshotSource(no_gangs).triage(ref_of("train/llama-pretrain-0")).to_dict()
    assert {k: v for k, v in verdict.to_dict().items() if k != "error"} == {
        k: v for k, v in from_dump.items() if k != "error"}


def test_a_refused_gang_read_is_noted(api: FakeKubeAPI, tmp_path: Path) -> None:
    api.inject("status", "/podgroups$", status=forbidden_status(
        "list", "podgroups", group="scheduling.k8s.io", namespace="train"))
    verdict = LiveSource(kubeconfig=str(api.kubeconfig(tmp_path / "kubeconfig"))).triage(
        ref_of("train/moe-train-0"))
    assert verdict.error is not None and "cannot list podgroups" in verdict.error


def test_a_cached_gang_triage_reads_no_gang_object(api: FakeKubeAPI,
                                                  cache: WatchSource) -> None:
    before = api.mark()
    assert cache.triage(ref_of("train/big-sweep-0")).cause == "too-large"
    assert _gang_reads(api, before) == []


def test_the_cache_follows_a_gang_getting_its_last_pod(api: FakeKubeAPI,
                                                      cache: WatchSource) -> None:
    assert cache.triage(ref_of("train/llama-pretrain-0")).cause == "other-constraint"
    pods = json.loads((GANGS / "pods.json").read_text())["items"]
    fourth = copy.deepcopy(next(p for p in pods if p["metadata"]["name"] == "llama-pretrain-2"))
    fourth["metadata"]["name"] = "llama-pretrain-3"
    fourth["metadata"]["uid"] = "0f0f0f0f-0000-4000-8000-000000000003"
    api.apply(fourth)
    # complete now, and GPU-wise it fits: no longer held back as incomplete
    eventually(lambda: "gang incomplete" not in cache.triage(
        ref_of("train/llama-pretrain-0")).action)
    minimal = copy.deepcopy(next(g for g in json.loads((GANGS / "gangs.json").read_text())
                                 ["items"] if g["metadata"]["name"] == "llama-pretrain-workers"))
    minimal["spec"]["schedulingPolicy"]["gang"]["minCount"] = 5
    api.apply(minimal)
    # 5 pods would not fit the 4 h100-a nodes: the GPU cause first
    eventually(lambda: "only 4 of its 5 pods exist" in cache.triage(
        ref_of("train/llama-pretrain-0")).action)
