"""Reading what a triage needs from a live cluster: the real kubernetes client against
tests/kubeapi.py over HTTP."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client import ApiClient

from bot.clusters.sources import LiveSource, SnapshotSource
from scoring import nodetable
from scoring.objects import is_terminated, object_key
from tests.kubeapi import FakeKubeAPI, status_body
from tests.paths import FIXTURES
from tests.triage.cluster.conftest import by_name, ready_cache, ref_of
from triage import pods
from triage.cluster import load_api_client, read_snapshot
from triage.cluster import read as cold
from triage.pods import merge_pods
from triage.slim import slim_node, slim_pod
from triage.snapshot import DUMP_FILES, NodesReadSnapshot, PodsNotRead, Snapshot

SCENARIOS = FIXTURES / "scenarios"
SEVEN = SCENARIOS / "seven-states"
ALL_SCENARIOS = sorted(d for folder in ("scenarios", "scenarios-extra")
                       for d in (FIXTURES / folder).iterdir() if (d / "expected.json").exists())
# The one remark a live read cannot make: it lists only non-terminated pods (at 150,000 pods,
# finished Job pods can outnumber the running ones), so it never sees the finished holders.
FINISHED_REMARK = re.compile(r" \([^()]* (?:is|are) finished and holds? nothing\)")



# -- the live path gives the dump path's answers -------------------------------------------

def as_kubectl_dumps_it(directory: Path, copy: Path) -> Path:
    """The dump in the API server's list order (namespace, name), as `kubectl get -o json`
    writes it. The recorded scenarios are in that order already; the hand-built extra ones are
    not, and a Verdict lists nodes and same-second events in the order they were read."""
    copy.mkdir()
    for filename in DUMP_FILES:
        if (directory / filename).exists():
            document = json.loads((directory / filename).read_text())
            if filename != "workloads.json":  # several kinds: kubectl writes them kind by kind
                document["items"].sort(key=lambda o: (o["metadata"].get("namespace", ""),
                                                      o["metadata"]["name"]))
            (copy / filename).write_text(json.dumps(document))
    return copy


# How a cold read may read pods: every pod listed; each pinned pod's nodes read one by one
# (whatever their share of the nodes), more nodes read as the answer asks; or the same, with
# no read beyond the pinned nodes' (the answer that asks for one gets every pod instead).
POD_READS = {"listed": (0.0, 16), "pinned": (1.0, 16), "pinned-then-listed": (1.0, 0)}


@pytest.mark.parametrize("reads", POD_READS)
@pytest.mark.parametrize("directory", ALL_SCENARIOS, ids=lambda d: f"{d.parent.name}/{d.name}")
def test_every_scenario_gets_the_dumps_verdict_live(directory: Path, tmp_path: Path, reads: str,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    share, extra = POD_READS[reads]
    monkeypatch.setattr(cold, "PINNED_SHARE", share)
    monkeypatch.setattr(cold, "MAX_EXTRA_READS", extra)
    expected = json.loads((directory / "expected.json").read_text())
    dump = SnapshotSource(as_kubectl_dumps_it(directory, tmp_path / "dump"))
    with FakeKubeAPI(directory) as server:
        live = LiveSource(kubeconfig=str(server.kubeconfig(tmp_path / "kubeconfig")))
        verdicts = {ref: live.triage(ref_of(ref)).to_dict() for ref in expected}
        node_reads = [r for r in server.requests
                      if "spec.nodeName=" in r.query.get("fieldSelector", "")]
    assert bool(node_reads) == (reads != "listed" and any(
        cold.may_pin(dump.snapshot.pod(*ref.split("/"))) for ref in expected))
    remarks = 0
    for ref, verdict in verdicts.items():
        from_dump = dump.triage(ref_of(ref)).to_dict()
        action = FINISHED_REMARK.sub("", from_dump["action"])
        remarks += action != from_dump["action"]
        assert verdict == {**from_dump, "action": action}, ref
        if directory.parent == SCENARIOS:
            assert verdict["cause"] == expected[ref]["cause"], ref
    # the remark the live read leaves out is there in the dump where finished pods held GPUs
    # (funnel-edges: init-big, needs-three and preemptor wait on gpu-a100-2)
    assert remarks == {"funnel-edges": 3, "seven-states": 1}.get(directory.name, 0)


# (ref, whether its triage reads quotas, whether it reads RuntimeClasses)
POLICY_READS = [("research/full", False, False), ("research/ok", False, False),
                ("infer/vllm", True, True), ("ml/finetune", True, True),
                ("research/typo", False, False)]


@pytest.mark.parametrize(("ref", "quotas", "runtime_classes"), POLICY_READS)
def test_live_snapshot_holds_the_dumped_objects(client: ApiClient, ref: str, quotas: bool,
                                                runtime_classes: bool,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cold, "PINNED_SHARE", 0.0)  # every pod listed
    dump = Snapshot.from_dir(SEVEN)
    live = read_snapshot(client, ref_of(ref), page_size=2)
    # nodes and pods as the watch cache keeps them (slim), the ref's own pod whole
    assert by_name(live.nodes) == by_name([slim_node(n) for n in dump.nodes])
    running = [p for p in dump.pods if not is_terminated(p)]
    assert by_name([slim_pod(p) for p in live.pods]) == by_name([slim_pod(p) for p in running])
    own = [p for p in dump.pods if object_key(p) == (ref_of(ref).namespace, ref_of(ref).name)]
    assert [p for p in live.pods if p in own] == own
    # quotas and RuntimeClasses only where the answer can depend on them (workloads)
    assert live.resourcequotas == (dump.namespace_objects(dump.resourcequotas,
                                                          ref_of(ref).namespace) if quotas else [])
    assert live.runtimeclasses == (dump.runtimeclasses if runtime_classes else [])
    for obj in live.workloads + live.events:
        assert obj in dump.workloads + dump.events


RECORDED = sorted(d for folder in ("scenarios", "scenarios-extra")
                  for d in (FIXTURES / folder).iterdir() if (d / "pods.json").exists())


@pytest.mark.parametrize("directory", RECORDED, ids=lambda d: f"{d.parent.name}/{d.name}")
def test_a_cold_read_keeps_of_each_pod_and_node_what_the_dump_and_the_watch_cache_keep(
        directory: Path, tmp_path: Path) -> None:
    """Listed (in pages of two: a kind's parts shared across pages) or read node by node,
    each non-terminated pod is kept with every field and value slim keeps of the dumped pod,
    in the API server's order, as the watch cache keeps it (to its keys' order); each node
    likewise."""
    dump = Snapshot.from_dir(directory)
    running = sorted((slim_pod(p) for p in dump.pods if not is_terminated(p)), key=object_key)
    nodes = sorted((slim_node(n) for n in dump.nodes), key=object_key)
    with FakeKubeAPI(directory) as server:
        client = load_api_client(str(server.kubeconfig(tmp_path / "kubeconfig")))
        live = read_snapshot(client, ref_of("nobody/absent"), page_size=2)
        on_nodes = cold.read_pods_on(cold.ClusterReader(client), sorted(
            {name for p in running if (name := p["spec"].get("nodeName"))}), page_size=2)
        with ready_cache(server, tmp_path) as source:
            cached = sorted(source.cache.all_pods(), key=object_key)
            cached_nodes = source.cache.cluster_snapshot().nodes
    listed = live.pods
    assert listed == running  # kubectl's key order, the dump's own where it has another
    assert json.dumps(listed) == json.dumps(cached)
    assert live.nodes == nodes
    assert json.dumps(live.nodes) == json.dumps(cached_nodes)
    assert sorted(on_nodes, key=object_key) == [p for p in running if p["spec"].get("nodeName")]


def test_a_cold_read_works_out_each_kind_of_pods_requests_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Three more replicas of ml/train-a (4 cpu, 32Gi, 1 GPU) scheduled on gpu-a100-1, as its
    ReplicaSet would make them: five pods of one kind on the GPU nodes, two of their own."""
    train = next(p for p in Snapshot.from_dir(SEVEN).pods if object_key(p) == ("ml", "train-a"))
    with FakeKubeAPI(SEVEN) as server:
        for replica in range(2, 5):
            server.apply({**train, "metadata": {**train["metadata"], "name": f"train-a-{replica}",
                                                "uid": f"train-a-{replica}"},
                          "spec": {**train["spec"], "nodeName": "gpu-a100-1"}})
        client = load_api_client(str(server.kubeconfig(tmp_path / "kubeconfig")))
        live = read_snapshot(client, ref_of("nobody/absent"), page_size=2)
    worked_out: list[object] = []
    counted = pods.effective_requests
    monkeypatch.setattr(pods, "effective_requests",
                        lambda spec: worked_out.append(spec) or counted(spec))
    sums = {node: live.requested_on(node) for node in ("gpu-a10-full", "gpu-a100-1")}
    gi = Decimal(2 ** 30)
    assert sums == {
        "gpu-a10-full": {"cpu": Decimal(8), "memory": 64 * gi, "nvidia.com/gpu": Decimal(2),
                         "pods": Decimal(2)},  # ml/train-a, team-b/train-b
        # research/ok (8 cpu, 32Gi, 2 GPUs), research/no-request (2 cpu, 8Gi), three replicas
        "gpu-a100-1": {"cpu": Decimal(22), "memory": 136 * gi, "nvidia.com/gpu": Decimal(5),
                       "pods": Decimal(5)}}
    assert len(worked_out) == 3  # train-a's kind, research/ok, research/no-request


def test_a_cold_reads_node_table_reads_a_pools_capacity_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """gpu-a100-1's pool grown by three nodes alike but for their names, as a node group
    scales up: the node table reads their capacity and allocatable once, to the same rows
    as the dump's nodes would give one by one."""
    a100 = next(n for n in Snapshot.from_dir(SEVEN).nodes if n["metadata"]["name"] == "gpu-a100-1")
    with FakeKubeAPI(SEVEN) as server:
        for number in range(2, 5):
            name = f"gpu-a100-{number}"
            labels = {**a100["metadata"]["labels"], "kubernetes.io/hostname": name}
            server.apply({**a100, "metadata": {**a100["metadata"], "name": name,
                                               "uid": name, "labels": labels}})
        client = load_api_client(str(server.kubeconfig(tmp_path / "kubeconfig")))
        live = read_snapshot(client, ref_of("nobody/absent"), page_size=2)
    read: list[object] = []
    counted = nodetable.quantity_int
    monkeypatch.setattr(nodetable, "quantity_int", lambda value: read.append(value) or counted(
        value))
    rows = live.node_table
    one_by_one = [nodetable.node_info(node) for node in sorted(live.nodes, key=object_key)]
    assert [(r.name, r.capacity, r.allocatable, r.resources, r.shape) for r in rows] == [
        (r.name, r.capacity, r.allocatable, r.resources, r.shape) for r in one_by_one]
    per_node = [len(n["status"].get("capacity") or {}) + len(n["status"].get("allocatable") or {})
                for n in live.nodes]
    a100_values = len(a100["status"]["capacity"]) + len(a100["status"]["allocatable"])
    assert len(read) == 2 * sum(per_node) - 3 * a100_values  # the table's, then one by one


def test_fetched_pods_replace_listed_ones_in_place_or_join_at_the_end() -> None:
    def pod(namespace: str, name: str, version: str) -> dict[str, Any]:
        return {"metadata": {"namespace": namespace, "name": name, "resourceVersion": version}}

    listed = [pod("a", "x", "1"), pod("a", "y", "1"), pod("b", "x", "1")]
    merged = merge_pods(listed, [pod("b", "x", "2"), pod("c", "z", "2")])
    assert merged == [pod("a", "x", "1"), pod("a", "y", "1"), pod("b", "x", "2"),
                      pod("c", "z", "2")]
    assert merge_pods(listed, []) == listed


def test_list_items_get_their_kind_back(client: ApiClient, api: FakeKubeAPI) -> None:
    live = read_snapshot(client, ref_of("infer/vllm"))
    kinds = {(w["apiVersion"], w["kind"]) for w in live.workloads}
    assert kinds == {("apps/v1", "Deployment"), ("apps/v1", "ReplicaSet")}
    assert {n["kind"] for n in live.nodes} == {"Node"}
    listed = [r for r in api.requests if r.path == "/api/v1/nodes"]
    assert listed, "nodes were listed, and the server's items had no kind"


def test_generated_pod_names_resolve_through_failedcreate_events(client: ApiClient) -> None:
    source = LiveSource(api_client=client)
    assert source.triage(ref_of("ml/finetune-2dtfx")).cause == "quota-exceeded"
    assert source.triage(ref_of("infer/vllm-79f7bb9f55-x2x9k")).cause == "runtimeclass-missing"


def test_a_pending_pod_ref_costs_five_requests(client: ApiClient, api: FakeKubeAPI) -> None:
    # The fifth, ResourceSlices: whether a node publishes its GPUs as DRA devices. Quotas and
    # RuntimeClasses matter only to a workload's admission and a bound pod's runtime handler.
    # research/big asks for any node: every non-terminated pod is listed.
    read_snapshot(client, ref_of("research/big"))
    # nodes and pods are listed alongside, in their own threads: the order is not fixed
    assert sorted((r.path, r.query.get("fieldSelector", "")) for r in api.requests) == [
        ("/api/v1/namespaces/research/events",
         "involvedObject.name=big,involvedObject.namespace=research"),
        ("/api/v1/namespaces/research/pods/big", ""),
        ("/api/v1/nodes", ""),
        ("/api/v1/pods", "status.phase!=Succeeded,status.phase!=Failed"),
        ("/apis/resource.k8s.io/v1/resourceslices", ""),
    ]
    assert all(r.method == "GET" for r in api.requests)


def test_a_pod_pinned_to_a_pool_reads_only_its_nodes_pods(client: ApiClient,
                                                           api: FakeKubeAPI) -> None:
    # research/full's nodeSelector pool=a10-full matches one node of six
    live = read_snapshot(client, ref_of("research/full"))
    assert sorted((r.path, r.query.get("fieldSelector", "")) for r in api.requests) == [
        ("/api/v1/namespaces/research/events",
         "involvedObject.name=full,involvedObject.namespace=research"),
        ("/api/v1/namespaces/research/pods/full", ""),
        ("/api/v1/nodes", ""),
        ("/api/v1/pods",
         "spec.nodeName=gpu-a10-full,status.phase!=Succeeded,status.phase!=Failed"),
        ("/apis/resource.k8s.io/v1/resourceslices", ""),
    ]
    dump = Snapshot.from_dir(SEVEN)
    on_the_node = [slim_pod(p) for p in dump.pods_on("gpu-a10-full") if not is_terminated(p)]
    assert by_name([slim_pod(p) for p in live.pods]) == by_name(
        [*on_the_node, slim_pod(dump.pod("research", "full") or {})])
    assert isinstance(live, NodesReadSnapshot)
    with pytest.raises(PodsNotRead):
        live.pods_on("gpu-a100-1")  # never an answer from pods that were not read


def test_pods_an_answer_asks_for_beyond_the_pinned_nodes_are_read(
        client: ApiClient, api: FakeKubeAPI) -> None:
    asked: list[str] = []

    def answer(snapshot: Snapshot) -> int:
        # a triage that, like exhausted's "or relax the selector", looks at another node
        asked.append(type(snapshot).__name__)
        return len(snapshot.pods_on("gpu-a100-1"))

    assert cold.answer_cold(client, ref_of("research/full"), answer) == 2
    assert asked == ["NodesReadSnapshot", "NodesReadSnapshot"]
    # with gpu-a100-1, the unread nodes after it in the node list (read alongside)
    node_reads = [r.query["fieldSelector"].split(",")[0].removeprefix("spec.nodeName=")
                  for r in api.requests if "spec.nodeName=" in r.query.get("fieldSelector", "")]
    assert node_reads[0] == "gpu-a10-full"
    assert sorted(node_reads[1:]) == [
        "gpu-a100-1", "gpu-h100-reserved", "gpu-t4-noplugin", "gpu-v100-broken"]


def test_an_answer_going_through_the_nodes_in_list_order_runs_once_per_batch_read(
        client: ApiClient, api: FakeKubeAPI, monkeypatch: pytest.MonkeyPatch) -> None:
    # Exhausted's way out asks node after node in list order. Two lists at a time here: the
    # node asked for and the next unread one come in one round trip, so three nodes asked
    # for one by one cost two more runs of the answer, not three.
    monkeypatch.setattr(cold, "POD_READERS", 2)
    read_on: list[list[str]] = []
    asked = ("gpu-a100-1", "gpu-h100-reserved", "gpu-t4-noplugin")

    def answer(snapshot: Snapshot) -> list[int]:
        assert isinstance(snapshot, NodesReadSnapshot)
        read_on.append(sorted(snapshot.read_on))
        return [len(snapshot.pods_on(name)) for name in asked]

    dump = Snapshot.from_dir(SEVEN)
    assert cold.answer_cold(client, ref_of("research/full"), answer) == [
        len([p for p in dump.pods_on(name) if not is_terminated(p)]) for name in asked]
    assert read_on == [
        ["gpu-a10-full"],
        ["gpu-a10-full", "gpu-a100-1", "gpu-h100-reserved"],
        ["gpu-a10-full", "gpu-a100-1", "gpu-h100-reserved", "gpu-t4-noplugin",
         "gpu-v100-broken"]]
    assert sorted(r.query["fieldSelector"].split(",")[0] for r in api.requests
                  if "spec.nodeName=" in r.query.get("fieldSelector", "")) == [
        f"spec.nodeName={name}" for name in read_on[-1]]


def test_an_answer_read_again_with_more_pods_keeps_the_node_table(
        client: ApiClient, api: FakeKubeAPI) -> None:
    # Nodes are not read again, so they are not parsed again: the retries' node rows are the
    # first read's own objects, with one more node's pods and then with every pod.
    tables: list[tuple[int, ...]] = []

    def answer(snapshot: Snapshot) -> int:
        tables.append(tuple(id(row) for row in snapshot.node_table))
        if len(tables) == 1:
            snapshot.pods_on("gpu-a100-1")
        elif len(tables) == 2:
            snapshot.pods_in("research")
        return len(tables)

    assert cold.answer_cold(client, ref_of("research/full"), answer) == 3
    assert len(tables[0]) == 6 and tables[0] == tables[1] == tables[2]


def test_an_answer_asking_for_pods_by_namespace_gets_every_pod(
        client: ApiClient, api: FakeKubeAPI) -> None:
    def answer(snapshot: Snapshot) -> list[str]:
        return sorted(object_key(p)[1] for p in snapshot.pods_in("research"))

    names = cold.answer_cold(client, ref_of("research/full"), answer)
    assert names == sorted(object_key(p)[1] for p in Snapshot.from_dir(SEVEN).pods_in("research")
                           if not is_terminated(p))
    assert [r.query.get("fieldSelector") for r in api.requests if r.path == "/api/v1/pods"] == [
        "spec.nodeName=gpu-a10-full,status.phase!=Succeeded,status.phase!=Failed",
        "status.phase!=Succeeded,status.phase!=Failed"]


# -- paging ----------------------------------------------------------------------------------

def test_small_pages_read_everything(client: ApiClient, api: FakeKubeAPI) -> None:
    whole = read_snapshot(client, ref_of("research/full"), page_size=500)
    before = api.mark()
    paged = read_snapshot(client, ref_of("research/full"), page_size=2)
    assert by_name(paged.nodes) == by_name(whole.nodes)
    assert by_name(paged.pods) == by_name(whole.pods)
    node_pages = [r for r in api.requests[before:] if r.path == "/api/v1/nodes"]
    assert len(node_pages) == 3  # 6 nodes, 2 per page
    assert [("continue" in r.query) for r in node_pages] == [False, True, True]


def test_an_expired_continue_token_restarts_the_list(client: ApiClient, api: FakeKubeAPI) -> None:
    api.inject("status", path="^/api/v1/nodes$", query="continue=", status=status_body(
        410, "Expired", "The provided continue parameter is too old to display a consistent "
        "list result."))
    snapshot = read_snapshot(client, ref_of("research/full"), page_size=4)
    assert len(snapshot.nodes) == 6
    node_pages = [r for r in api.requests if r.path == "/api/v1/nodes"]
    assert [("continue" in r.query) for r in node_pages] == [False, True, False, True]



# -- read only ------------------------------------------------------------------------------------

@pytest.mark.parametrize(("method", "path", "query"), [
    ("DELETE", "/api/v1/nodes/cpu-1", []),
    ("PATCH", "/api/v1/nodes/cpu-1", []),
    ("PUT", "/api/v1/namespaces/research/pods/full", []),
    ("POST", "/api/v1/namespaces/research/pods", []),
    ("POST", "/api/v1/namespaces/research/pods", [("dryRun", "None")]),
    ("POST", "/apis/batch/v1/namespaces/ml/jobs", [("dryRun", "All")]),
    ("POST", "/api/v1/namespaces/research/pods/full/eviction", [("dryRun", "All")]),
    ("POST", "/api/v1/namespaces/research/pods/full/binding", []),
    ("POST", "/version", []),
])
def test_the_test_server_catches_every_write_but_a_pod_dry_run(
        tmp_path: Path, method: str, path: str, query: list[tuple[str, str]]) -> None:
    server = FakeKubeAPI(SEVEN).start()
    try:
        client = load_api_client(str(server.kubeconfig(tmp_path / "kubeconfig")))
        params = client.param_serialize(method=method, resource_path=path, query_params=query,
                                        body={"kind": "Pod", "metadata": {"name": "x"}},
                                        auth_settings=["BearerToken"])
        client.call_api(*params).read()  # type: ignore[no-untyped-call]
        with pytest.raises(AssertionError, match="writes to the cluster"):
            server.__exit__(None, None, None)
    finally:
        server.stop()
    assert [(w.method, w.path) for w in server.unexpected_writes] == [(method, path)]
