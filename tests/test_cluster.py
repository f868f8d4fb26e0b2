"""Reading a live cluster: the real kubernetes client against tests/kubeapi.py over HTTP."""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client import ApiClient

from bot.sources import LiveSource, SnapshotSource
from tests.kubeapi import FakeKubeAPI, forbidden_status, make_certificates, status_body
from triage.cluster import kubeconfig_namespace, load_api_client, read_snapshot
from triage.errors import ClusterError
from triage.objects import is_terminated
from triage.refs import PodRef
from triage.snapshot import DUMP_FILES, Snapshot

FIXTURES = Path(__file__).parent / "fixtures"
SCENARIOS = FIXTURES / "scenarios"
SEVEN = SCENARIOS / "seven-states"
ALL_SCENARIOS = sorted(d for folder in ("scenarios", "scenarios-extra")
                       for d in (FIXTURES / folder).iterdir() if (d / "expected.json").exists())
# The one remark a live read cannot make: it lists only non-terminated pods (at 150,000 pods,
# finished Job pods can outnumber the running ones), so it never sees the finished holders.
FINISHED_REMARK = re.compile(r" \([^()]* (?:is|are) finished and hold nothing\)")


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


def by_name(objects: list[dict[str, Any]]) -> dict[tuple[str, str], object]:
    return {(o["metadata"].get("namespace", ""), o["metadata"]["name"]): o for o in objects}


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


@pytest.mark.parametrize("directory", ALL_SCENARIOS, ids=lambda d: f"{d.parent.name}/{d.name}")
def test_every_scenario_gets_the_dumps_verdict_live(directory: Path, tmp_path: Path) -> None:
    expected = json.loads((directory / "expected.json").read_text())
    dump = SnapshotSource(as_kubectl_dumps_it(directory, tmp_path / "dump"))
    with FakeKubeAPI(directory) as server:
        live = LiveSource(kubeconfig=str(server.kubeconfig(tmp_path / "kubeconfig")))
        verdicts = {ref: live.triage(ref_of(ref)).to_dict() for ref in expected}
    remarks = 0
    for ref, verdict in verdicts.items():
        from_dump = dump.triage(ref_of(ref)).to_dict()
        action = FINISHED_REMARK.sub("", from_dump["action"])
        remarks += action != from_dump["action"]
        assert verdict == {**from_dump, "action": action}, ref
        if directory.parent == SCENARIOS:
            assert verdict["cause"] == expected[ref]["cause"], ref
    # the remark the live read leaves out is there in the dump where finished pods held GPUs
    assert remarks == {"funnel-edges": 2, "seven-states": 1}.get(directory.name, 0)


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
    pytest.param("status", "/pods/full$", {"status": status_body(410, "Gone", "gone away")},
                 "The Kubernetes API server at {url} failed to get pods research/full: 410 Gone: "
                 "gone away.", id="gone-on-get"),
    pytest.param("status", "^/api/v1/nodes$", {"status": status_body(
        410, "Expired", "too old resource version"), "times": 3},
                 "The Kubernetes API server at {url} kept expiring the paged list (list nodes); "
                 "the cluster changes faster than gpuwhy can page through it, try a larger page "
                 "size.", id="gone-on-every-list"),
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
]


# Events, quotas and RuntimeClasses only corroborate: refused, the triage goes on and says so.
CORROBORATING_FAULTS = [
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


@pytest.mark.parametrize(("kind", "path", "options", "sentence"), CORROBORATING_FAULTS)
def test_a_failed_corroborating_read_is_recorded_in_the_verdict(
        client: ApiClient, api: FakeKubeAPI, kind: str, path: str, options: dict[str, object],
        sentence: str) -> None:
    source = LiveSource(api_client=client, timeout=0.4)
    api.inject(kind, path, **options)  # type: ignore[arg-type]
    verdict = source.triage(ref_of("research/full"))
    assert (verdict.cause, verdict.error) == ("exhausted", sentence.format(url=api.url))
    assert source.triage(ref_of("research/full")).error is None


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


def config_document(server: str, context: str = "fake", cluster: str = "fake",
                    current: str | None = "fake") -> dict[str, object]:
    document: dict[str, object] = {
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": cluster, "cluster": {"server": server}}],
        "users": [{"name": "tester", "user": {"token": "test-token"}}],
        "contexts": [{"name": context, "context": {"cluster": cluster, "user": "tester",
                                                   "namespace": f"ns-of-{context}"}}]}
    if current is not None:
        document["current-context"] = current
    return document


def test_kubeconfig_lists_several_files_merged_as_kubectl_does(
        api: FakeKubeAPI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first file to name a context, or a current-context, wins; missing and empty files
    are skipped. The kubernetes client alone would take the last current-context."""
    dead = "http://127.0.0.1:9"
    first, empty, second = tmp_path / "first", tmp_path / "empty", tmp_path / "second"
    first.write_text(json.dumps(config_document(api.url, cluster="live")))
    empty.write_text("")
    second.write_text(json.dumps({
        **config_document(dead, context="other", cluster="dead", current="other"),
        "contexts": [{"name": n, "context": {"cluster": "dead", "user": "tester"}}
                     for n in ("fake", "other")]}))
    monkeypatch.setenv("KUBECONFIG", f"{first}::{tmp_path / 'missing'}:{empty}:{second}")
    source = LiveSource()
    assert source.cluster == api.url
    assert source.triage(ref_of("research/ok")).cause == "scheduled"
    assert kubeconfig_namespace() == "ns-of-fake"
    assert LiveSource(context="other").cluster == dead  # a context from the second file
    assert kubeconfig_namespace(context="other") == "default"


def test_in_cluster_service_account(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No kubeconfig anywhere: KUBERNETES_SERVICE_HOST/PORT, the token and the CA file."""
    ca_file, tls = make_certificates(tmp_path)
    account = tmp_path / "serviceaccount"
    account.mkdir()
    (account / "token").write_text("sa-token")
    (account / "ca.crt").write_bytes(ca_file.read_bytes())
    (account / "namespace").write_text("gpuwhy-system\n")
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    with FakeKubeAPI(SEVEN, tls=tls) as server:
        monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
        monkeypatch.setenv("KUBERNETES_SERVICE_PORT", server.url.rpartition(":")[2])
        source = LiveSource(api_client=load_api_client(service_account=account))
        assert source.cluster == server.url
        assert source.triage(ref_of("research/full")).cause == "exhausted"
    assert {r.authorization for r in server.requests} == {"bearer sa-token"}
    assert kubeconfig_namespace(service_account=account) == "gpuwhy-system"
    (account / "token").unlink()
    with pytest.raises(ClusterError) as failure:
        load_api_client(service_account=account)
    assert str(failure.value) == (f"Cannot use the in-cluster service account ({account}): "
                                  "Service token file does not exist.")


GONE = "http://127.0.0.1:9"


@pytest.mark.parametrize(("content", "context", "sentence"), [
    (None, None, "The kubeconfig file {file} does not exist."),
    (config_document(GONE), "prod", 'The kubeconfig {file} has no context "prod" (it has: fake).'),
    (": : [\n", None, "Cannot use {file}: it is not valid YAML."),
    ("", None, "The kubeconfig {file} is empty."),
    ("- a\n- b\n", None, "Cannot use {file}: it is not a kubeconfig (a YAML mapping with lists "
     "of named clusters, contexts and users)."),
    ({"contexts": 5}, None, "Cannot use {file}: it is not a kubeconfig (a YAML mapping with "
     "lists of named clusters, contexts and users)."),
    (config_document(GONE, current=None), None,
     "The kubeconfig {file} sets no current-context; pass --context (it has: fake)."),
    ({**config_document(GONE), "clusters": []}, None,
     'The kubeconfig {file}: context "fake" names cluster "fake", which it does not define.'),
    ({**config_document(GONE), "clusters": [{"name": "fake", "cluster": {
        "server": "https://127.0.0.1:9", "certificate-authority": "/nonexistent/ca.crt"}}]},
     None, "Cannot use {file}: File does not exist: /nonexistent/ca.crt."),
    (b"\xff\xfe\x00", None, "Cannot use {file}: it is not UTF-8 text."),
], ids=["missing-file", "unknown-context", "not-yaml", "empty", "a-list", "wrong-types",
        "no-current-context", "undefined-cluster", "missing-ca-file", "binary"])
def test_kubeconfig_problems_are_one_sentence(content: object, context: str | None,
                                              sentence: str, tmp_path: Path) -> None:
    file = tmp_path / "kubeconfig"
    if isinstance(content, bytes):
        file.write_bytes(content)
    elif isinstance(content, dict):
        file.write_text(json.dumps(content))
    elif isinstance(content, str):
        file.write_text(content)
    with pytest.raises(ClusterError) as failure:
        load_api_client(str(file), context)
    assert str(failure.value) == sentence.format(file=file)


@pytest.mark.parametrize(("kubeconfig_env", "sentence"), [
    (None, "No kubeconfig found (--kubeconfig, KUBECONFIG, ~/.kube/config) and gpuwhy is not "
     "running inside a cluster."),
    ("{tmp}/a:{tmp}/b", "No kubeconfig found (none of the files KUBECONFIG lists exists: "
     "{tmp}/a:{tmp}/b) and gpuwhy is not running inside a cluster."),
])
def test_no_configuration_at_all_is_one_sentence(kubeconfig_env: str | None, sentence: str,
                                                 tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    if kubeconfig_env is None:
        monkeypatch.delenv("KUBECONFIG", raising=False)
    else:
        monkeypatch.setenv("KUBECONFIG", kubeconfig_env.format(tmp=tmp_path))
    with pytest.raises(ClusterError) as failure:
        load_api_client()
    assert str(failure.value) == sentence.format(tmp=tmp_path)


def test_an_untrusted_certificate_is_one_sentence(tmp_path: Path) -> None:
    ca_file, tls = make_certificates(tmp_path)
    with FakeKubeAPI(SEVEN, tls=tls) as server:
        trusted = LiveSource(kubeconfig=str(server.kubeconfig(tmp_path / "ok", ca_file=ca_file)))
        untrusted = LiveSource(kubeconfig=str(server.kubeconfig(tmp_path / "no-ca")))
        with pytest.raises(ClusterError) as failure:
            untrusted.triage(ref_of("research/full"))
        assert trusted.triage(ref_of("research/full")).cause == "exhausted"
    assert str(failure.value) == (
        f"Cannot reach the Kubernetes API server at {server.url}: the TLS handshake failed "
        "(unable to get local issuer certificate); check the cluster's certificate-authority "
        "in the kubeconfig.")


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
