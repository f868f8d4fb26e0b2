"""The watch cache of `gpuwhy serve`: list + watch against tests/kubeapi.py."""

from __future__ import annotations

import copy
import gc
import json
import time
from collections.abc import Callable, Iterable, Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from bot.clusters.sources import LiveSource, WatchSource
from scoring.objects import K8sObject, is_terminated, object_key
from scoring.rows import PodRow
from tests.kubeapi import FakeKubeAPI, forbidden_status, generated_cluster, status_body
from tests.paths import FIXTURES
from tests.triage.cluster.conftest import eventually, ready_cache, ref_of, watch_source
from triage.cache import IndexedSnapshot, NodeStore, PodStore
from triage.cluster import read_snapshot
from triage.errors import ClusterError
from triage.rows import pod_row
from triage.slim import slim_node, slim_pod
from triage.snapshot import Snapshot

SEVEN = FIXTURES / "scenarios" / "seven-states"
# nodes, pods, ResourceSlices, ResourceClaims, DeviceClasses, ResourceClaimTemplates,
# DeviceTaintRules, Workloads and PodGroups (scheduling.k8s.io)
WATCHES = 9
ALL_SCENARIOS = sorted(d for folder in ("scenarios", "scenarios-extra")
                       for d in (FIXTURES / folder).iterdir() if (d / "expected.json").exists())


@pytest.fixture
def api() -> Iterator[FakeKubeAPI]:
    with FakeKubeAPI(SEVEN, bookmark_interval=0.05) as server:
        yield server


@pytest.fixture
def cache(api: FakeKubeAPI, tmp_path: Path) -> Iterator[WatchSource]:
    with ready_cache(api, tmp_path) as source:
        yield source


def gpus_requested(source: WatchSource, node: str) -> Decimal:
    snapshot = source.cache.snapshot_for(ref_of("research/full"))
    return snapshot.requested_on(node).get("nvidia.com/gpu", Decimal(0))


def holders(source: WatchSource, node: str) -> list[str]:
    snapshot = source.cache.snapshot_for(ref_of("research/full"))
    return sorted(f"{p['metadata']['namespace']}/{p['metadata']['name']}"
                  for p in snapshot.pods_on(node))


# -- same answers as the cold read --------------------------------------------------------------

def verdicts(source: WatchSource | LiveSource, refs: Iterable[str]) -> dict[str, object]:
    return {ref: source.triage(ref_of(ref)).to_dict() for ref in refs}


@pytest.mark.parametrize("directory", ALL_SCENARIOS, ids=lambda d: f"{d.parent.name}/{d.name}")
def test_the_cache_gives_the_cold_reads_verdicts(directory: Path, tmp_path: Path) -> None:
    refs = json.loads((directory / "expected.json").read_text())
    with FakeKubeAPI(directory) as server:
        source = watch_source(server, tmp_path).start()
        try:
            assert source.wait_ready(5)
            cached = verdicts(source, refs)
        finally:
            source.stop()
        cold = verdicts(LiveSource(api_client=source.cache.reader.api_client), refs)
    assert cached == cold


def test_cached_pods_are_slim(cache: WatchSource) -> None:
    cached = cache.cache.snapshot_for(ref_of("ml/finetune")).pods_on("gpu-a10-full")
    assert {p["metadata"]["name"] for p in cached} == {"train-a", "train-b"}
    for pod in cached:
        assert set(pod) == {"apiVersion", "kind", "metadata", "spec", "status"}
        assert set(pod["spec"]) <= {"nodeName", "schedulerName", "priority", "containers",
                                    "initContainers", "overhead", "resourceClaims"}
        assert set(pod["spec"]["containers"][0]) <= {"name", "resources", "restartPolicy"}
        assert set(pod["status"]) == {"phase", "startTime"}  # no conditions: see below
        assert "managedFields" not in pod["metadata"]


# -- O(1) requests per triage, whatever the cluster size --------------------------------------

CLUSTER_WIDE = {"/api/v1/nodes", "/api/v1/pods"}


def requests_per_triage(tmp_path: Path, extra_nodes: int, pods_per_node: int) -> dict[str, int]:
    counts = {}
    with FakeKubeAPI(SEVEN) as server:
        server.add_many(generated_cluster(extra_nodes, pods_per_node))
        source = watch_source(server, tmp_path, page_size=250).start()
        try:
            assert source.wait_ready(120)
            for ref in ("research/full", "research/big", "ml/finetune", "infer/vllm"):
                before = server.mark()
                source.triage(ref_of(ref))
                counts[ref] = server.count(before)
                assert not [r.path for r in server.requests[before:]
                            if r.path in CLUSTER_WIDE and r.query.get("watch") != "1"]
            assert len(source.cache.nodes.view()[0]) == 6 + extra_nodes
        finally:
            source.stop()
    return counts


def test_requests_per_triage_do_not_grow_with_the_cluster(tmp_path: Path) -> None:
    small = requests_per_triage(tmp_path, 0, 0)
    large = requests_per_triage(tmp_path, 4994, 1)  # 5,000 nodes, 5,004 pods: 21 pages at 250
    assert small == large
    # a pending pod: get it, list its events; quotas and RuntimeClasses only for a workload,
    # which adds its own lookups, never the cluster's
    assert small == {"research/full": 2, "research/big": 2, "ml/finetune": 11, "infer/vllm": 12}


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
    eventually(lambda: any(n["spec"].get("unschedulable") for n in cache.cache.nodes.view()[0]))


def rows_on(source: WatchSource, node: str) -> dict[str, PodRow]:
    """The pod rows a triage from the cache sees on the node, by namespace/name."""
    snapshot = source.cache.snapshot_for(ref_of("research/full"))
    return {row.label: row for row in snapshot.rows.pods_on(node)}


def test_watch_events_replace_and_drop_the_cached_rows(api: FakeKubeAPI,
                                                       cache: WatchSource) -> None:
    first = rows_on(cache, "gpu-a10-full")
    assert sorted(first) == ["ml/train-a", "team-b/train-b"]
    # no event between two triages: the rows they see are the same objects, built once
    assert all(row is first[label] for label, row in rows_on(cache, "gpu-a10-full").items())

    relabelled = copy.deepcopy(api.get_object("Pod", "team-b", "train-b"))
    relabelled["metadata"]["labels"] = {"app": "relabelled"}
    api.apply(relabelled)
    eventually(lambda: rows_on(cache, "gpu-a10-full")["team-b/train-b"].labels == {
        "app": "relabelled"})
    after = rows_on(cache, "gpu-a10-full")
    assert after["team-b/train-b"] is not first["team-b/train-b"]
    assert after["ml/train-a"] is first["ml/train-a"]  # its neighbour's event left it alone

    newcomer = copy.deepcopy(api.get_object("Pod", "team-b", "train-b"))
    newcomer["metadata"].update(name="train-c", uid="c0ffee")
    api.apply(newcomer)
    eventually(lambda: "team-b/train-c" in rows_on(cache, "gpu-a10-full"))
    grown = rows_on(cache, "gpu-a10-full")
    assert grown["team-b/train-c"].uid == "c0ffee"
    # pods of one kind: one requests mapping for their rows
    assert grown["team-b/train-c"].requests is grown["team-b/train-b"].requests
    assert grown["team-b/train-c"].request("nvidia.com/gpu") == 1

    held = next(p for p in cache.cache.pods.in_namespace("ml")
                if p["metadata"]["name"] == "train-a")
    assert cache.cache.pods.row_of(held) is first["ml/train-a"]
    api.delete("Pod", "ml", "train-a")
    eventually(lambda: "ml/train-a" not in rows_on(cache, "gpu-a10-full"))
    assert cache.cache.pods.row_of(held) is None  # the cache holds it no more, nor its row


def test_a_triage_from_the_cache_builds_rows_only_for_the_pods_it_fetched(
        api: FakeKubeAPI, cache: WatchSource, monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[tuple[str, str]] = []

    def counted(pod: K8sObject) -> PodRow:
        built.append(object_key(pod))
        return pod_row(pod)

    monkeypatch.setattr("triage.rows.table.pod_row", counted)
    monkeypatch.setattr("triage.cache.pods.pod_row", counted)
    ref = ref_of("ml/train-a")
    first = cache.triage(ref).to_dict()
    # the first triage built the rows of the cached pods it asked about ...
    assert set(built) > {("ml", "train-a")}
    built.clear()
    assert cache.triage(ref).to_dict() == first
    # ... the second only the row of the pod it read fresh
    assert built == [("ml", "train-a")]

    relabelled = copy.deepcopy(api.get_object("Pod", "team-b", "train-b"))
    relabelled["metadata"]["labels"] = {"app": "relabelled"}
    api.apply(relabelled)
    eventually(lambda: ("team-b", "train-b") in built)  # rebuilt as its event came
    built.clear()
    cache.triage(ref)
    assert built == [("ml", "train-a")]


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
    eventually(lambda: api.open_watches == WATCHES)
    watches = len(api.watch_requests())
    api.drop_watches()
    api.delete("Pod", "ml", "train-a")
    eventually(lambda: holders(cache, "gpu-a10-full") == ["team-b/train-b"])
    eventually(lambda: len(api.watch_requests()) >= watches + WATCHES)
    assert cache.cache.lists == lists  # resumed, no full list needed


@pytest.mark.parametrize(("status", "relists"), [
    (status_body(500, "InternalError", "etcdserver: leader changed"), False),
    (status_body(410, "Expired", "too old resource version: 1 (2000)"), True),
], ids=["error-event", "gone-event"])
def test_an_error_event_ends_the_watch_and_the_cache_catches_up(
        api: FakeKubeAPI, cache: WatchSource, status: dict[str, object], relists: bool) -> None:
    lists = cache.cache.lists
    eventually(lambda: api.open_watches == WATCHES)
    api.drop_watches(error=status)
    api.delete("Pod", "ml", "train-a")
    eventually(lambda: holders(cache, "gpu-a10-full") == ["team-b/train-b"])
    eventually(lambda: api.open_watches == WATCHES)
    assert (cache.cache.lists > lists) == relists
    if not relists:
        assert cache.cache.last_error in {
            f"The Kubernetes API server at {api.url} ended the watch of {plural}: etcdserver: "
            "leader changed." for plural in ("pods", "nodes", "resourceslices", "resourceclaims",
                                             "deviceclasses", "resourceclaimtemplates",
                                             "devicetaintrules", "workloads", "podgroups")}


def test_a_410_when_the_watch_opens_relists(api: FakeKubeAPI, cache: WatchSource) -> None:
    lists = cache.cache.lists
    eventually(lambda: api.open_watches == WATCHES)
    api.inject("status", "^/api/v1/pods$", query="watch=1", status=status_body(
        410, "Expired", "too old resource version"))
    api.drop_watches()
    api.delete("Pod", "ml", "train-a")
    eventually(lambda: holders(cache, "gpu-a10-full") == ["team-b/train-b"])
    assert cache.cache.lists == lists + 1  # pods listed again, nodes resumed


def test_a_failing_watch_is_retried_and_the_cache_keeps_serving(
        api: FakeKubeAPI, cache: WatchSource) -> None:
    # every watch open first: one still starting when the streams are cut would not be cut
    eventually(lambda: api.open_watches == WATCHES)
    api.inject("status", "^/api/v1/pods$", query="watch=1", times=2,
               status={"kind": "Status", "apiVersion": "v1", "status": "Failure",
                       "message": "etcdserver: too many requests", "reason": "InternalError",
                       "code": 500})
    api.drop_watches()
    assert cache.triage(ref_of("research/full")).cause == "exhausted"
    api.delete("Pod", "ml", "train-a")
    eventually(lambda: holders(cache, "gpu-a10-full") == ["team-b/train-b"])
    # per resource: the nodes watch, cut at the same moment, may fail later with its own words
    assert cache.cache.last_error_of("pods") == (
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


def test_the_first_lists_hold_garbage_collection_and_freeze_what_they_keep(
        api: FakeKubeAPI, tmp_path: Path) -> None:
    api.inject("delay", "^/api/v1/pods$", seconds=1.0)
    frozen = gc.get_freeze_count()
    source = watch_source(api, tmp_path).start()
    try:
        eventually(lambda: source.cache._reflectors[0].listed.is_set())  # nodes: listed
        assert not gc.isenabled()  # pods: still listing
        assert source.wait_ready(5)
        assert gc.isenabled() and gc.get_freeze_count() > frozen
    finally:
        source.stop()


def test_a_forbidden_first_list_is_the_answer_until_it_works(
        api: FakeKubeAPI, tmp_path: Path) -> None:
    api.inject("status", "^/api/v1/pods$", query="fieldSelector=", times=2,
               status=forbidden_status("list", "pods"))
    source = watch_source(api, tmp_path, retry_delay=0.3).start()
    try:
        eventually(lambda: api.count() >= 2 and source.cache._reflectors[1].list_error is not None)
        with pytest.raises(ClusterError) as failure:
            source.triage(ref_of("research/full"))
        assert str(failure.value) == (
            'Forbidden: User "system:serviceaccount:gpuwhy:gpuwhy" cannot list pods at the '
            'cluster scope (RBAC needs verb "list" on resource "pods").')
        assert source.wait_ready(5)
        assert source.triage(ref_of("research/full")).cause == "exhausted"
    finally:
        source.stop()


CORROBORATING = {"forbidden", "reset"}  # events: noted in the Verdict, not fatal


@pytest.mark.parametrize(("kind", "path", "options", "sentence"), [
    ("status", "/events$",
     {"status": forbidden_status("list", "events", namespace="research")},
     'Forbidden: User "system:serviceaccount:gpuwhy:gpuwhy" cannot list events in '
     'namespace "research" (RBAC needs verb "list" on resource "events").'),
    ("delay", "/pods/full$", {"seconds": 1.0},
     "The Kubernetes API server at {url} did not answer within 0.3 s (get pods research/full)."),
    ("reset", "/events$", {}, "The connection to the Kubernetes API server at {url} broke during "
     "list events in namespace research (reset or closed early)."),
    ("truncate", "/pods/full$", {}, "The Kubernetes API server at {url} sent a truncated or "
     "invalid JSON answer to get pods research/full."),
], ids=["forbidden", "timeout", "reset", "truncated"])
def test_a_fault_in_a_cached_triage_is_one_sentence_and_the_next_works(
        api: FakeKubeAPI, tmp_path: Path, kind: str, path: str, options: dict[str, object],
        sentence: str, request: pytest.FixtureRequest) -> None:
    source = watch_source(api, tmp_path, timeout=0.3).start()
    try:
        assert source.wait_ready(5)
        api.inject(kind, path, **options)  # type: ignore[arg-type]
        if request.node.callspec.id in CORROBORATING:
            verdict = source.triage(ref_of("research/full"))
            assert (verdict.cause, verdict.error) == ("exhausted", sentence.format(url=api.url))
        else:
            with pytest.raises(ClusterError) as failure:
                source.triage(ref_of("research/full"))
            assert str(failure.value) == sentence.format(url=api.url)
        assert source.triage(ref_of("research/full")).error is None
    finally:
        source.stop()


def test_stop_ends_the_watch_threads(api: FakeKubeAPI, tmp_path: Path) -> None:
    source = watch_source(api, tmp_path).start()
    assert source.wait_ready(5)
    started = time.monotonic()
    source.stop()
    assert time.monotonic() - started < 2
    assert not any(r.thread.is_alive() for r in source.cache._reflectors)


# -- converging on the server's state ------------------------------------------------------------

def server_state(api: FakeKubeAPI) -> tuple[dict[str, str], dict[tuple[str, str], str]]:
    """Node and non-terminated pod resourceVersions, as the API server holds them."""
    nodes = {name: api.get_object("Node", "", name)["metadata"]["resourceVersion"]
             for _, name in api.keys("nodes")}
    pods = {key: pod["metadata"]["resourceVersion"] for key in api.keys("pods")
            if not is_terminated(pod := api.get_object("Pod", *key))}
    return nodes, pods


def cache_state(source: WatchSource) -> tuple[dict[str, str], dict[tuple[str, str], str]]:
    snapshot = source.cache.snapshot_for(ref_of("research/full"))
    nodes = {n["metadata"]["name"]: n["metadata"]["resourceVersion"] for n in snapshot.nodes}
    pods = {object_key(p): p["metadata"]["resourceVersion"]
            for n in snapshot.nodes for p in snapshot.pods_on(n["metadata"]["name"])}
    pods.update((object_key(p), p["metadata"]["resourceVersion"])
                for namespace in ("research", "ml", "team-b", "infer")
                for p in source.cache.pods.in_namespace(namespace))
    return nodes, pods


def test_the_cache_converges_through_changes_drops_and_410(
        api: FakeKubeAPI, cache: WatchSource) -> None:
    refs = json.loads((SEVEN / "expected.json").read_text())
    cold = LiveSource(api_client=cache.cache.reader.api_client)
    spare = copy.deepcopy(api.get_object("Node", "", "gpu-a10-full"))
    spare["metadata"].update(name="a10-spare", uid="spare")  # lists before every other node
    spare["status"]["allocatable"]["nvidia.com/gpu"] = "1"
    api.apply(spare)
    holder = copy.deepcopy(api.get_object("Pod", "team-b", "train-b"))
    holder["metadata"].update(name="a-holder", uid="holder")
    holder["spec"]["nodeName"] = "a10-spare"
    api.apply(holder)
    relabelled = copy.deepcopy(api.get_object("Pod", "ml", "train-a"))
    relabelled["metadata"].setdefault("labels", {})["touched"] = "yes"
    api.apply(relabelled)  # a modified pod keeps its place in the node's list
    eventually(lambda: cache_state(cache) == server_state(api))
    assert verdicts(cache, refs) == verdicts(cold, refs)
    assert "a10-spare has 1/1 nvidia.com/gpu held by team-b/a-holder" in \
        cache.triage(ref_of("research/full")).action

    api.drop_watches()
    api.delete("Pod", "team-b", "train-b")
    api.compact()
    api.delete("Node", "", "gpu-v100-broken")
    cordoned = copy.deepcopy(api.get_object("Node", "", "gpu-a100-1"))
    cordoned["spec"]["unschedulable"] = True
    api.apply(cordoned)
    eventually(lambda: cache_state(cache) == server_state(api))
    assert verdicts(cache, refs) == verdicts(cold, refs)
    assert cache.triage(ref_of("research/broken-node")).cause == "selector-mismatch"
    assert cache.triage(ref_of("research/full")).cause != "exhausted"  # a GPU came free


# -- the cache's snapshot means what a Snapshot means ------------------------------------------

def node_views(snapshot: Snapshot) -> dict[str, object]:
    """Per node: who is bound there (in order), what they request, who holds GPUs."""
    return {node["metadata"]["name"]: (
        [object_key(p) for p in snapshot.pods_on(node["metadata"]["name"])],
        {k: v for k, v in snapshot.requested_on(node["metadata"]["name"]).items() if v},
        [(object_key(p), n) for p, n in snapshot.holders_on(node["metadata"]["name"],
                                                            "nvidia.com/gpu")])
        for node in snapshot.nodes}


def finish(api: FakeKubeAPI) -> str:
    finished = copy.deepcopy(api.get_object("Pod", "ml", "train-a"))
    finished["status"]["phase"] = "Succeeded"
    api.apply(finished)  # still bound to gpu-a10-full, holds nothing any more
    return "ml/train-a"


def add_unseen(api: FakeKubeAPI) -> str:
    newcomer = copy.deepcopy(api.get_object("Pod", "ml", "train-a"))
    newcomer["metadata"].update(name="newcomer", uid="new")
    api.apply(newcomer)  # bound to gpu-a10-full, unknown to the cache
    return "ml/newcomer"


def recreate_elsewhere(api: FakeKubeAPI) -> str:
    api.delete("Pod", "team-b", "train-b")
    moved = copy.deepcopy(api.get_object("Pod", "research", "ok"))
    moved["metadata"].update(namespace="team-b", name="train-b", uid="recreated")
    api.apply(moved)  # same name, now on gpu-a100-1; the cache still has it on gpu-a10-full
    return "team-b/train-b"


@pytest.mark.parametrize(("change", "a10_full"), [
    (finish, ([("ml", "train-a"), ("team-b", "train-b")],  # by namespace and name
              {"cpu": Decimal(4), "memory": Decimal(32 * 2**30), "nvidia.com/gpu": Decimal(1),
               "pods": Decimal(1)}, [(("team-b", "train-b"), 1)])),
    (add_unseen, ([("ml", "newcomer"), ("ml", "train-a"), ("team-b", "train-b")],
                  {"cpu": Decimal(12), "memory": Decimal(96 * 2**30),
                   "nvidia.com/gpu": Decimal(3), "pods": Decimal(3)},
                  [(("ml", "newcomer"), 1), (("ml", "train-a"), 1), (("team-b", "train-b"), 1)])),
    (recreate_elsewhere, ([("ml", "train-a")],
                          {"cpu": Decimal(4), "memory": Decimal(32 * 2**30),
                           "nvidia.com/gpu": Decimal(1), "pods": Decimal(1)},
                          [(("ml", "train-a"), 1)])),
], ids=["finished", "unseen", "recreated-elsewhere"])
def test_fetched_pods_override_a_stale_cache_as_a_cold_read_would(
        api: FakeKubeAPI, cache: WatchSource, change: Callable[[FakeKubeAPI], str],
        a10_full: object) -> None:
    """The cache is frozen (watches stopped) while one pod changes on the server; the pod a
    triage fetches fresh must then count the way a cold read counts it."""
    cache.stop()
    ref = ref_of(change(api))
    cached = cache.cache.snapshot_for(ref)
    assert isinstance(cached, IndexedSnapshot)
    assert node_views(cached) == node_views(read_snapshot(cache.cache.reader.api_client, ref))
    assert node_views(cached)["gpu-a10-full"] == a10_full
    # the sums the funnel reads of every node at once count the fetched pod as well
    assert isinstance(a10_full, tuple)
    names = [node["metadata"]["name"] for node in cached.nodes]
    summed = cached.requested_of(names)[names.index("gpu-a10-full")]
    assert {resource: n for resource, n in summed.items() if n} == a10_full[1]


def test_nodes_of_a_pool_share_what_they_have_alike_and_keep_their_own() -> None:
    node = next(n for n in json.loads((SEVEN / "nodes.json").read_text())["items"]
                if n["metadata"]["name"] == "gpu-a100-1")
    twin = copy.deepcopy(node)
    twin["metadata"].update(name="gpu-a100-twin", uid="twin-uid")
    twin["metadata"]["labels"]["kubernetes.io/hostname"] = "gpu-a100-twin"
    store = NodeStore()
    store.replace([store.slim(node), store.slim(twin)])
    kept = {n["metadata"]["name"]: n for n in store.view()[0]}
    first, second = kept["gpu-a100-1"], kept["gpu-a100-twin"]
    assert json.dumps(first) == json.dumps(slim_node(node))
    assert json.dumps(second) == json.dumps(slim_node(twin))
    assert first["status"]["capacity"] is second["status"]["capacity"]
    assert first["metadata"]["labels"] is not second["metadata"]["labels"]
    broken = copy.deepcopy(twin)
    broken["status"]["allocatable"]["nvidia.com/gpu"] = "0"
    store.upsert(broken)
    rows = {row.name: row for row in store.view()[1]}
    assert rows["gpu-a100-twin"].raw["status"]["allocatable"]["nvidia.com/gpu"] == "0"
    assert rows["gpu-a100-1"].raw == slim_node(node)  # its twin's event left it alone


def test_a_list_builds_the_node_table_so_the_first_answer_reads_it_built(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The table a triage reads of every node is built as the list replaces the nodes (in
    the reflector's thread); a node event leaves the next triage to build it again."""
    listed = json.loads((SEVEN / "nodes.json").read_text())["items"]
    store = NodeStore()
    store.replace([store.slim(node) for node in reversed(listed)])

    def not_here(rows: object) -> object:
        raise AssertionError("the node table was built by its reader")

    monkeypatch.setattr("triage.cache.stores.node_columns", not_here)
    names = sorted(node["metadata"]["name"] for node in listed)
    assert store.table()[3].names == tuple(names)
    cordoned = copy.deepcopy(listed[0])
    cordoned["spec"]["unschedulable"] = True
    store.upsert(cordoned)
    with pytest.raises(AssertionError, match="built by its reader"):
        store.table()


def test_a_node_status_report_that_changes_only_times_keeps_the_node_table() -> None:
    """The kubelet reports every node's status every few minutes: a report that changes only
    heartbeat times and the resourceVersion leaves the node table as built; one that changes
    what gpuwhy keeps (a condition, a label, an annotation) builds it again."""
    listed = json.loads((SEVEN / "nodes.json").read_text())["items"]
    store = NodeStore()
    store.replace([store.slim(node) for node in listed])
    table = store.table()

    def reported(change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
        node = copy.deepcopy(listed[0])
        node["metadata"]["resourceVersion"] = "999999"
        for condition in node["status"]["conditions"]:
            condition["lastHeartbeatTime"] = "2026-12-02T07:00:00Z"
        change(node)
        return node

    store.upsert(reported(lambda node: None))
    assert store.table() is table
    store.upsert(listed[0])  # the same node again
    assert store.table() is table
    for change in (lambda node: node["status"]["conditions"][-1].update(status="Unknown"),
                   lambda node: node["metadata"]["labels"].update(pool="moved"),
                   lambda node: node["metadata"].setdefault("annotations", {}).update(a="b")):
        store.upsert(reported(change))
        rebuilt = store.table()
        assert rebuilt is not table
        [row] = [row for row in rebuilt[1] if row.name == listed[0]["metadata"]["name"]]
        assert row.raw == slim_node(reported(change))
        table = rebuilt


def test_pods_of_one_kind_share_what_they_have_alike_and_keep_their_own() -> None:
    pod = json.loads((SEVEN / "pods.json").read_text())["items"][0]
    twin = copy.deepcopy(pod)
    twin["metadata"].update(name=pod["metadata"]["name"] + "-twin", uid="twin-uid")
    twin["spec"]["nodeName"] = "elsewhere"
    store = PodStore()
    store.replace([store.slim(pod), store.slim(twin)])
    kept = {p["metadata"]["name"]: p for p in store.all()}
    first, second = kept[pod["metadata"]["name"]], kept[twin["metadata"]["name"]]
    # kept as a slim copy keeps it, field for field and in order
    assert json.dumps(first) == json.dumps(slim_pod(pod))
    assert json.dumps(second) == json.dumps(slim_pod(twin))
    assert first["spec"]["containers"] is second["spec"]["containers"]
    assert first["metadata"]["labels"] is second["metadata"]["labels"]
    assert first["status"] is second["status"]
    assert (first["spec"]["nodeName"], second["spec"]["nodeName"]) == (
        pod["spec"]["nodeName"], "elsewhere")
    relabelled = copy.deepcopy(twin)
    relabelled["metadata"]["labels"] = {"app": "other"}
    relabelled["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "7"
    store.upsert(relabelled)
    after = {p["metadata"]["name"]: p for p in store.all()}
    assert after[twin["metadata"]["name"]]["metadata"]["labels"] == {"app": "other"}
    assert after[pod["metadata"]["name"]] == slim_pod(pod)  # its twin's event left it alone
    assert store.by_node_view()[1]["elsewhere"]["cpu"] == Decimal(7)


def test_a_listed_node_sums_its_kinds_of_pod_as_a_pod_by_pod_sum_does() -> None:
    """Pods of two namespaces and three specs, interleaved on one node: its requests and
    holdings in the bulk index are the Snapshot's own (summed pod by pod)."""
    pods = json.loads((SEVEN / "pods.json").read_text())["items"]
    gpu = next(p for p in pods if "nvidia.com/gpu" in json.dumps(p["spec"]["containers"]))
    plain = next(p for p in pods if "nvidia.com/gpu" not in json.dumps(p["spec"]))
    listed = []
    for index, (template, namespace, cpu) in enumerate([
            (plain, "zeta", "1"), (gpu, "alpha", None), (plain, "alpha", "250m"),
            (gpu, "zeta", None), (plain, "zeta", "1"), (gpu, "alpha", None)]):
        pod = copy.deepcopy(template)
        pod["metadata"].update(name=f"pod-{index}", namespace=namespace, uid=f"uid-{index}")
        pod["spec"]["nodeName"] = "node-a"
        pod["status"]["phase"] = "Running"
        if cpu is not None:
            pod["spec"]["containers"][0]["resources"] = {"requests": {"cpu": cpu}}
        listed.append(pod)
    store = PodStore()
    store.replace([store.slim(pod) for pod in listed])
    by_node, requested, holdings = store.by_node_view()
    whole = Snapshot(pods=[slim_pod(pod) for pod in listed])
    assert requested["node-a"] == whole.requested_on("node-a")
    assert json.dumps(holdings["node-a"]) == json.dumps(whole.holdings_on("node-a"))
    assert holdings["node-a"]["alpha"]["nvidia.com/gpu"][1] == 2
    assert [p["metadata"]["name"] for p in by_node["node-a"]] == [
        p["metadata"]["name"] for p in whole.pods_on("node-a")]


def test_pods_alike_but_for_their_node_share_one_requests_answer() -> None:
    pod = json.loads((SEVEN / "pods.json").read_text())["items"][0]
    twin = copy.deepcopy(pod)
    twin["metadata"]["name"] += "-twin"
    twin["spec"]["nodeName"] = "elsewhere"
    bigger = copy.deepcopy(twin)
    bigger["metadata"]["name"] += "-bigger"
    bigger["spec"]["containers"][0].setdefault("resources", {})["requests"] = {"cpu": "99"}
    store = PodStore()
    store.replace([pod, twin])
    store.upsert(bigger)
    shares = {key: store._share(cached) for key, cached in store._pods.items()}
    assert shares[object_key(pod)] is shares[object_key(twin)]
    assert shares[object_key(bigger)]["cpu"] == Decimal(99)
    assert store.by_node_view()[1]["elsewhere"]["pods"] == 2


def test_a_slim_pod_keeps_a_condition_only_for_its_time_held() -> None:
    """150,000 cached pods keep no conditions; one without a startTime keeps PodScheduled's
    time (when it was bound: since then it holds its node's resources), cut to three keys."""
    pods = json.loads((FIXTURES / "scenarios" / "seven-states" / "pods.json").read_text())["items"]
    started = next(p for p in pods if p["metadata"]["name"] == "train-b")
    never_started = copy.deepcopy(started)
    del never_started["status"]["startTime"]
    assert "conditions" not in slim_pod(copy.deepcopy(started))["status"]
    assert slim_pod(never_started)["status"]["conditions"] == [
        {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-11-30T12:50:44Z"}]
