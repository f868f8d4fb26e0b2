"""The watch cache of `gpuwhy serve`: list + watch against tests/kubeapi.py."""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable, Iterator
from decimal import Decimal
from pathlib import Path

import pytest

from bot.sources import LiveSource, WatchSource
from tests.kubeapi import FakeKubeAPI, generated_cluster
from triage.cluster import load_api_client
from triage.errors import ClusterError
from triage.refs import PodRef

SCENARIOS = Path(__file__).parent / "fixtures" / "scenarios"
SEVEN = SCENARIOS / "seven-states"
CASES = [(directory.name, ref)
         for directory in sorted(SCENARIOS.iterdir()) if (directory / "expected.json").exists()
         for ref in json.loads((directory / "expected.json").read_text())]


def ref_of(text: str) -> PodRef:
    namespace, name = text.split("/")
    return PodRef(namespace, name)


def eventually(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the cache did not catch up"
        time.sleep(0.01)


def watch_source(server: FakeKubeAPI, tmp_path: Path, **options: object) -> WatchSource:
    client = load_api_client(str(server.kubeconfig(tmp_path / "kubeconfig")))
    return WatchSource(api_client=client, retry_delay=0.05, **options)  # type: ignore[arg-type]


@pytest.fixture
def api() -> Iterator[FakeKubeAPI]:
    with FakeKubeAPI(SEVEN, bookmark_interval=0.05) as server:
        yield server


@pytest.fixture
def cache(api: FakeKubeAPI, tmp_path: Path) -> Iterator[WatchSource]:
    source = watch_source(api, tmp_path).start()
    assert source.wait_ready(5)
    yield source
    source.stop()


def gpus_requested(source: WatchSource, node: str) -> Decimal:
    snapshot = source.cache.snapshot_for(ref_of("research/full"))
    return snapshot.requested_on(node).get("nvidia.com/gpu", Decimal(0))


def holders(source: WatchSource, node: str) -> list[str]:
    snapshot = source.cache.snapshot_for(ref_of("research/full"))
    return sorted(f"{p['metadata']['namespace']}/{p['metadata']['name']}"
                  for p in snapshot.pods_on(node))


# -- same answers as the cold read --------------------------------------------------------------

@pytest.mark.parametrize(("scenario", "ref"), CASES)
def test_the_cache_gives_the_cold_reads_verdict(scenario: str, ref: str, tmp_path: Path) -> None:
    with FakeKubeAPI(SCENARIOS / scenario) as server:
        source = watch_source(server, tmp_path).start()
        try:
            assert source.wait_ready(5)
            cached = source.triage(ref_of(ref))
        finally:
            source.stop()
        cold = LiveSource(api_client=source.cache.reader.api_client).triage(ref_of(ref))
    assert cached.to_dict() == cold.to_dict()


def test_cached_pods_are_slim(cache: WatchSource) -> None:
    cached = cache.cache.snapshot_for(ref_of("ml/finetune")).pods_on("gpu-a10-full")
    assert {p["metadata"]["name"] for p in cached} == {"train-a", "train-b"}
    for pod in cached:
        assert set(pod) == {"apiVersion", "kind", "metadata", "spec", "status"}
        assert set(pod["spec"]) <= {"nodeName", "schedulerName", "priority", "containers",
                                    "initContainers", "overhead"}
        assert set(pod["spec"]["containers"][0]) <= {"name", "resources", "restartPolicy"}
        assert set(pod["status"]) == {"phase"}
        assert "managedFields" not in pod["metadata"]


# -- O(1) requests per triage, whatever the cluster size --------------------------------------

def requests_per_triage(tmp_path: Path, extra_nodes: int, pods_per_node: int) -> dict[str, int]:
    counts = {}
    with FakeKubeAPI(SEVEN) as server:
        server.add_many(generated_cluster(extra_nodes, pods_per_node))
        source = watch_source(server, tmp_path, page_size=250).start()
        try:
            assert source.wait_ready(30)
            for ref in ("research/full", "research/big", "ml/finetune", "infer/vllm"):
                before = server.mark()
                source.triage(ref_of(ref))
                counts[ref] = server.count(before)
            assert len(source.cache.nodes.view()) == 6 + extra_nodes
        finally:
            source.stop()
    return counts


def test_requests_per_triage_do_not_grow_with_the_cluster(tmp_path: Path) -> None:
    small = requests_per_triage(tmp_path, 0, 0)
    large = requests_per_triage(tmp_path, 600, 5)  # 606 nodes, 3,010 pods
    assert small == large
    # pod: get, its events, quotas, RuntimeClasses; a workload adds its lookups, not the cluster's
    assert small["research/full"] == 4


# -- keeping up: watch events, 410 Gone, dropped connections ------------------------------------

def test_watch_events_update_the_node_index(api: FakeKubeAPI, cache: WatchSource) -> None:
    assert holders(cache, "gpu-a10-full") == ["ml/train-a", "team-b/train-b"]
    assert gpus_requested(cache, "gpu-a10-full") == 2

    api.delete("Pod", "ml", "train-a")
    eventually(lambda: holders(cache, "gpu-a10-full") == ["team-b/train-b"])
    assert gpus_requested(cache, "gpu-a10-full") == 1

    newcomer = copy.deepcopy(api.get_object("Pod", "team-b", "train-b"))
    newcomer["metadata"].update(name="train-c", uid="c0ffee")
    api.apply(newcomer)
    eventually(lambda: holders(cache, "gpu-a10-full") == ["team-b/train-b", "team-b/train-c"])
    assert gpus_requested(cache, "gpu-a10-full") == 2

    finished = copy.deepcopy(api.get_object("Pod", "team-b", "train-b"))
    finished["status"]["phase"] = "Succeeded"
    api.apply(finished)  # leaves the field selector: the server sends DELETED
    eventually(lambda: holders(cache, "gpu-a10-full") == ["team-b/train-c"])
    assert gpus_requested(cache, "gpu-a10-full") == 1

    tainted = copy.deepcopy(api.get_object("Node", "", "gpu-a100-1"))
    tainted["spec"]["unschedulable"] = True
    api.apply(tainted)
    eventually(lambda: any(n["spec"].get("unschedulable") for n in cache.cache.nodes.view()))


def test_410_gone_relists(api: FakeKubeAPI, cache: WatchSource) -> None:
    lists = cache.cache.lists
    api.compact()
    api.delete("Pod", "ml", "train-a")
    eventually(lambda: cache.cache.lists >= lists + 2)  # nodes and pods listed again
    eventually(lambda: holders(cache, "gpu-a10-full") == ["team-b/train-b"])
    assert cache.ready()


def test_a_dropped_watch_resumes_from_the_last_resource_version(
        api: FakeKubeAPI, cache: WatchSource) -> None:
    lists = cache.cache.lists
    eventually(lambda: api.open_watches == 2)  # nodes and pods are both watching
    watches = len(api.watch_requests())
    api.drop_watches()
    api.delete("Pod", "ml", "train-a")
    eventually(lambda: holders(cache, "gpu-a10-full") == ["team-b/train-b"])
    eventually(lambda: len(api.watch_requests()) >= watches + 2)
    assert cache.cache.lists == lists  # resumed, no full list needed


def test_a_failing_watch_is_retried_and_the_cache_keeps_serving(
        api: FakeKubeAPI, cache: WatchSource) -> None:
    api.inject("status", "^/api/v1/pods$", query="watch=1", times=2,
               status={"kind": "Status", "apiVersion": "v1", "status": "Failure",
                       "message": "etcdserver: too many requests", "reason": "InternalError",
                       "code": 500})
    api.drop_watches()
    assert cache.triage(ref_of("research/full")).cause == "exhausted"
    api.delete("Pod", "ml", "train-a")
    eventually(lambda: holders(cache, "gpu-a10-full") == ["team-b/train-b"])
    assert cache.cache.last_error == (
        f"The Kubernetes API server at {api.url} failed to watch pods: 500 Internal Server Error: "
        "etcdserver: too many requests.")


# -- readiness and stopping ---------------------------------------------------------------------

def test_not_ready_until_the_first_full_list(api: FakeKubeAPI, tmp_path: Path) -> None:
    api.inject("delay", "^/api/v1/pods$", seconds=0.5)
    source = watch_source(api, tmp_path).start()
    try:
        assert not source.ready()
        with pytest.raises(ClusterError) as failure:
            source.triage(ref_of("research/full"))
        assert str(failure.value) == ("gpuwhy is still loading the cluster's nodes and pods; "
                                      "try again in a minute.")
        assert source.wait_ready(5)
        assert source.triage(ref_of("research/full")).cause == "exhausted"
    finally:
        source.stop()


def test_stop_ends_the_watch_threads(api: FakeKubeAPI, tmp_path: Path) -> None:
    source = watch_source(api, tmp_path).start()
    assert source.wait_ready(5)
    started = time.monotonic()
    source.stop()
    assert time.monotonic() - started < 2
    assert not any(r.thread.is_alive() for r in source.cache._reflectors)
