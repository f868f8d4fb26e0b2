"""Which cluster and credentials, the way kubectl resolves them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.clusters.sources import LiveSource
from tests.kubeapi import FakeKubeAPI, make_certificates
from tests.paths import FIXTURES
from tests.triage.cluster.conftest import ref_of
from triage.cluster import kubeconfig_namespace, load_api_client
from triage.errors import ClusterError

SEVEN = FIXTURES / "scenarios" / "seven-states"


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
