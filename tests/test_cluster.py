"""Reading a live cluster: the real kubernetes client against tests/kubeapi.py over HTTP."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes.client import ApiClient

from bot.sources import LiveSource, SnapshotSource
from tests.kubeapi import FakeKubeAPI, forbidden_status, status_body
from triage.cluster import load_api_client, read_snapshot
from triage.errors import ClusterError
from triage.refs import PodRef
from triage.snapshot import Snapshot, is_terminated

SCENARIOS = Path(__file__).parent / "fixtures" / "scenarios"
SEVEN = SCENARIOS / "seven-states"
CASES = [(directory.name, ref, expected["cause"])
         for directory in sorted(SCENARIOS.iterdir()) if (directory / "expected.json").exists()
         for ref, expected in json.loads((directory / "expected.json").read_text()).items()]


def ref_of(text: str) -> PodRef:
    namespace, name = text.split("/")
    return PodRef(namespace, name)


@pytest.fixture
def api() -> Iterator[FakeKubeAPI]:
    with FakeKubeAPI(SEVEN) as server:
        yield server


@pytest.fixture
def client(api: FakeKubeAPI, tmp_path: Path) -> ApiClient:
    return load_api_client(str(api.kubeconfig(tmp_path / "kubeconfig")))


def by_name(objects: list[dict[str, object]]) -> dict[tuple[str, str], object]:
    return {(o["metadata"].get("namespace", ""), o["metadata"]["name"]): o  # type: ignore[index,union-attr]
            for o in objects}


# -- the live path gives the dump path's answers -------------------------------------------

@pytest.mark.parametrize(("scenario", "ref", "cause"), CASES)
def test_every_scenario_ref_gets_the_recorded_cause_live(scenario: str, ref: str, cause: str,
                                                        tmp_path: Path) -> None:
    with FakeKubeAPI(SCENARIOS / scenario) as server:
        source = LiveSource(kubeconfig=str(server.kubeconfig(tmp_path / "kubeconfig")))
        live = source.triage(ref_of(ref))
    assert live.cause == cause
    assert SnapshotSource(SCENARIOS / scenario).triage(ref_of(ref)).cause == cause


@pytest.mark.parametrize("ref", ["research/full", "infer/vllm", "ml/finetune", "research/typo"])
def test_live_snapshot_holds_the_dumped_objects(client: ApiClient, ref: str) -> None:
    dump = Snapshot.from_dir(SEVEN)
    live = read_snapshot(client, ref_of(ref), page_size=2)
    assert by_name(live.nodes) == by_name(dump.nodes)
    running = [p for p in dump.pods if not is_terminated(p)]
    assert by_name([p for p in live.pods if not is_terminated(p)]) == by_name(running)
    assert live.resourcequotas == dump.namespace_objects(dump.resourcequotas, ref_of(ref).namespace)
    assert live.runtimeclasses == dump.runtimeclasses
    for obj in live.workloads + live.events:
        assert obj in dump.workloads + dump.events


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


def test_a_pod_ref_costs_six_requests(client: ApiClient, api: FakeKubeAPI) -> None:
    read_snapshot(client, ref_of("research/full"))
    assert [(r.path, r.query.get("fieldSelector", "")) for r in api.requests] == [
        ("/api/v1/namespaces/research/pods/full", ""),
        ("/api/v1/namespaces/research/events",
         "involvedObject.name=full,involvedObject.namespace=research"),
        ("/api/v1/nodes", ""),
        ("/api/v1/pods", "status.phase!=Succeeded,status.phase!=Failed"),
        ("/api/v1/namespaces/research/resourcequotas", ""),
        ("/apis/node.k8s.io/v1/runtimeclasses", ""),
    ]
    assert all(r.method == "GET" for r in api.requests)


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


# -- failures: one sentence each, and the next request works -----------------------------------

SERVER_ERROR = status_body(500, "InternalError", "etcdserver: request timed out")
FAULTS = [
    pytest.param("status", "^/api/v1/nodes$", {"status": forbidden_status("list", "nodes")},
                 'Forbidden: User "system:serviceaccount:gpuwhy:gpuwhy" cannot list nodes at the '
                 'cluster scope (RBAC needs verb "list" on resource "nodes").', id="forbidden"),
    pytest.param("status", "/resourcequotas$",
                 {"status": forbidden_status("list", "resourcequotas", namespace="research")},
                 'Forbidden: User "system:serviceaccount:gpuwhy:gpuwhy" cannot list '
                 'resourcequotas in namespace "research" (RBAC needs verb "list" on resource '
                 '"resourcequotas").', id="forbidden-namespaced"),
    pytest.param("status", "runtimeclasses",
                 {"status": forbidden_status("list", "runtimeclasses", group="node.k8s.io")},
                 'Forbidden: User "system:serviceaccount:gpuwhy:gpuwhy" cannot list '
                 "runtimeclasses.node.k8s.io at the cluster scope (RBAC needs verb \"list\" on "
                 'resource "runtimeclasses.node.k8s.io").', id="forbidden-group"),
    pytest.param("status", "runtimeclasses",
                 {"status": status_body(404, "NotFound", "the server could not find the "
                                        "requested resource")},
                 "Not found: the Kubernetes API server at {url} has nothing for list "
                 "runtimeclasses.node.k8s.io (the server could not find the requested resource).",
                 id="not-found"),
    pytest.param("status", "^/api/v1/pods$", {"status": SERVER_ERROR},
                 "The Kubernetes API server at {url} failed to list pods: 500 Internal Server "
                 "Error: etcdserver: request timed out.", id="server-error"),
    pytest.param("status", "/pods/full$", {"status": status_body(
        401, "Unauthorized", "Unauthorized")},
                 "The Kubernetes API server at {url} did not accept gpuwhy's credentials (401 "
                 "Unauthorized); check the kubeconfig or service account token.",
                 id="unauthorized"),
    pytest.param("delay", "/pods/full$", {"seconds": 2.0},
                 "The Kubernetes API server at {url} did not answer within 0.4 s (get pods "
                 "research/full).", id="timeout"),
    pytest.param("reset", "^/api/v1/nodes$", {},
                 "The connection to the Kubernetes API server at {url} broke during list nodes "
                 "(reset or closed early).", id="connection-reset"),
    pytest.param("truncate", "/events$", {},
                 "The Kubernetes API server at {url} sent a truncated or invalid JSON answer to "
                 "list events in namespace research.", id="truncated-json"),
]


@pytest.mark.parametrize(("kind", "path", "options", "sentence"), FAULTS)
def test_each_fault_is_one_sentence_and_the_next_triage_works(
        client: ApiClient, api: FakeKubeAPI, kind: str, path: str, options: dict[str, object],
        sentence: str) -> None:
    source = LiveSource(api_client=client, timeout=0.4)
    api.inject(kind, path, **options)  # type: ignore[arg-type]
    with pytest.raises(ClusterError) as failure:
        source.triage(ref_of("research/full"))
    assert str(failure.value) == sentence.format(url=api.url)
    assert source.triage(ref_of("research/full")).cause == "exhausted"


def test_an_unreachable_server_is_named(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "gone",
        "clusters": [{"name": "gone", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "gone", "context": {"cluster": "gone", "user": "u"}}]}))
    source = LiveSource(kubeconfig=str(kubeconfig))
    with pytest.raises(ClusterError) as failure:
        source.triage(ref_of("research/full"))
    assert str(failure.value) == (
        f"Cannot reach the Kubernetes API server at http://127.0.0.1:{port}: connection refused.")


# -- configuration, the way kubectl resolves it -------------------------------------------------

def test_kubeconfig_env_is_used_without_the_flag(api: FakeKubeAPI, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", str(api.kubeconfig(tmp_path / "from-env")))
    assert LiveSource().triage(ref_of("research/ok")).cause == "scheduled"


def test_context_selects_the_cluster(api: FakeKubeAPI, tmp_path: Path) -> None:
    path = api.kubeconfig(tmp_path / "kubeconfig")
    config = json.loads(path.read_text())
    config["clusters"].append({"name": "other", "cluster": {"server": "http://127.0.0.1:9"}})
    config["contexts"].append({"name": "other", "context": {"cluster": "other", "user": "tester"}})
    config["current-context"] = "other"
    path.write_text(json.dumps(config))
    source = LiveSource(kubeconfig=str(path), context="fake")
    assert source.cluster == api.url
    assert source.triage(ref_of("research/ok")).cause == "scheduled"


@pytest.mark.parametrize(("setup", "sentence"), [
    ("missing-file", "The kubeconfig file {tmp}/nope does not exist."),
    ("unknown-context", 'The kubeconfig {tmp}/kubeconfig has no context "prod" (it has: fake).'),
    ("not-yaml", "Cannot use {tmp}/kubeconfig: it is not valid YAML."),
    ("nothing", "No kubeconfig found (--kubeconfig, KUBECONFIG, ~/.kube/config) and gpuwhy is not "
     "running inside a cluster."),
])
def test_configuration_problems_are_one_sentence(setup: str, sentence: str, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    kubeconfig, context = None, None
    if setup == "missing-file":
        kubeconfig = str(tmp_path / "nope")
    elif setup == "unknown-context":
        kubeconfig = str(tmp_path / "kubeconfig")
        (tmp_path / "kubeconfig").write_text(json.dumps({
            "apiVersion": "v1", "kind": "Config", "clusters": [], "users": [],
            "contexts": [{"name": "fake", "context": {"cluster": "x", "user": "y"}}]}))
        context = "prod"
    elif setup == "not-yaml":
        kubeconfig = str(tmp_path / "kubeconfig")
        (tmp_path / "kubeconfig").write_text(": : [\n")
    with pytest.raises(ClusterError) as failure:
        load_api_client(kubeconfig, context)
    assert str(failure.value) == sentence.format(tmp=tmp_path)


# -- read only ------------------------------------------------------------------------------------

def test_the_test_server_catches_a_write(tmp_path: Path) -> None:
    server = FakeKubeAPI(SEVEN).start()
    try:
        client = load_api_client(str(server.kubeconfig(tmp_path / "kubeconfig")))
        params = client.param_serialize(method="DELETE", resource_path="/api/v1/nodes/cpu-1",
                                        auth_settings=["BearerToken"])
        client.call_api(*params).read()
    finally:
        server.stop()
    assert [(w.method, w.path) for w in server.unexpected_writes] == [
        ("DELETE", "/api/v1/nodes/cpu-1")]
