"""bench/pageserver.py, the bench's page-rendering API server: its lists page as
kube-apiserver's do, and the watch cache reads it whole."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

import pytest

from bench.pageserver import (
    FINISHED_PODS,
    NON_TERMINATED,
    PAGED_PENDING,
    GeneratedCluster,
    PageServer,
    paged_pending_refs,
    raw_list,
)

NODES, PODS = 120, 3_000


@pytest.fixture(scope="module")
def server() -> Iterator[PageServer]:
    page_server = PageServer(GeneratedCluster(NODES, PODS)).start()
    yield page_server
    page_server.stop()


def _get(server: PageServer, path: str, **query: str) -> Any:
    url = f"{server.url}{path}" + (f"?{urlencode(query)}" if query else "")
    with urllib.request.urlopen(url) as response:
        return json.loads(response.read())


def _paged(server: PageServer, path: str, limit: int, **query: str) -> list[Any]:
    items: list[Any] = []
    token = ""
    while True:
        page = _get(server, path, limit=str(limit), **query, **({"continue": token} if token
                                                                 else {}))
        assert len(page["items"]) <= limit
        assert page["metadata"]["resourceVersion"]
        items += page["items"]
        token = page["metadata"].get("continue", "")
        if not token:
            return items


def _key(item: Any) -> tuple[str, str]:
    return item["metadata"].get("namespace", ""), item["metadata"]["name"]


def test_pods_page_in_key_order_and_the_field_selector_leaves_finished_pods_out(
        server: PageServer) -> None:
    running = _paged(server, "/api/v1/pods", 97, fieldSelector=NON_TERMINATED)
    every = _paged(server, "/api/v1/pods", 500)
    assert len(every) == PODS
    assert len(running) == PODS - FINISHED_PODS
    assert [_key(p) for p in every] == sorted({_key(p) for p in every})
    assert {p["status"]["phase"] for p in running} == {"Pending", "Running"}
    assert sum(p["status"]["phase"] == "Succeeded" for p in every) == FINISHED_PODS
    pending = [p for p in running if not p["spec"].get("nodeName")]
    assert [f"{p['metadata']['namespace']}/{p['metadata']['name']}" for p in pending] == \
        sorted(paged_pending_refs())
    assert len(pending) == PAGED_PENDING
    bound = {p["spec"]["nodeName"] for p in running if p["spec"].get("nodeName")}
    assert bound <= {n["metadata"]["name"] for n in _paged(server, "/api/v1/nodes", 50)}


def test_nodes_page_and_a_single_object_is_the_listed_one(server: PageServer) -> None:
    nodes = _paged(server, "/api/v1/nodes", 50)
    assert [n["metadata"]["name"] for n in nodes] == [f"node-{i:05d}" for i in range(NODES)]
    assert _get(server, f"/api/v1/nodes/{nodes[7]['metadata']['name']}") == nodes[7]
    pods = _paged(server, "/api/v1/pods", 500)
    for pod in (pods[0], pods[len(pods) // 2], pods[-1], pods[1500]):
        namespace, name = _key(pod)
        assert _get(server, f"/api/v1/namespaces/{namespace}/pods/{name}") == pod


def test_unknown_objects_and_continue_tokens_answer_as_the_api_server_does(
        server: PageServer) -> None:
    with pytest.raises(urllib.error.HTTPError) as missing:
        _get(server, "/api/v1/namespaces/bench/pods/no-such-pod")
    assert missing.value.code == 404
    with pytest.raises(urllib.error.HTTPError) as expired:
        _get(server, "/api/v1/pods", limit="10", **{"continue": "not-a-token"})
    assert expired.value.code == 410
    with pytest.raises(urllib.error.HTTPError) as unserved:
        _get(server, "/apis/resource.k8s.io/v1/resourceslices")
    assert unserved.value.code == 404


def test_a_watch_stays_open_and_quiet_until_its_timeout(server: PageServer) -> None:
    url = f"{server.url}/api/v1/pods?watch=1&resourceVersion=1&timeoutSeconds=1"
    with urllib.request.urlopen(url) as response:
        assert response.status == 200
        assert response.read() == b""


def test_the_raw_floor_reads_every_page(server: PageServer) -> None:
    pages, size = raw_list(server.url, "/api/v1/pods", {"fieldSelector": NON_TERMINATED}, 500)
    assert pages == -(-(PODS - FINISHED_PODS) // 500)
    assert size > (PODS - FINISHED_PODS) * 1_000


def test_the_watch_cache_reads_the_whole_cluster(server: PageServer, tmp_path: Any) -> None:
    from bench.pageserver import write_kubeconfig
    from triage.cluster import load_api_client
    from triage.cluster.watch import WatchCache

    client = load_api_client(str(write_kubeconfig(server.url, tmp_path / "kubeconfig")))
    cache = WatchCache(client, page_size=200, watch_seconds=2)
    cache.start()
    try:
        assert cache.wait_ready(30)
        assert len(cache.nodes) == NODES
        assert len(cache.pods) == PODS - FINISHED_PODS
        assert {pod["metadata"]["name"] for pod in cache.pods.waiting()} == {
            ref.partition("/")[2] for ref in paged_pending_refs()}
    finally:
        cache.stop()


def test_pods_and_nodes_have_their_own_times_seeded_and_the_old_shape_on_request() -> None:
    def times(cluster: GeneratedCluster) -> tuple[list[Any], list[Any]]:
        pods, _ = cluster.pod_page(0, PODS, True)
        nodes = [json.loads(cluster.render_node(i)) for i in range(NODES)]
        return ([(p["metadata"]["creationTimestamp"], p["status"].get("startTime"))
                 for p in map(json.loads, pods) if p["spec"].get("nodeName")],
                [[c["lastHeartbeatTime"] for c in n["status"]["conditions"]] for n in nodes])

    pod_times, node_times = times(GeneratedCluster(NODES, PODS))
    assert len(set(pod_times)) > 0.9 * len(pod_times)
    assert all(created < started for created, started in pod_times)
    assert len({beats[0] for beats in node_times}) > NODES // 2
    assert (pod_times, node_times) == times(GeneratedCluster(NODES, PODS))
    assert (pod_times, node_times) != times(GeneratedCluster(NODES, PODS, seed=10))
    same_pods, same_nodes = times(GeneratedCluster(NODES, PODS, same_times=True))
    assert len(set(same_pods)) <= 3 and len({beats[0] for beats in same_nodes}) <= 3
