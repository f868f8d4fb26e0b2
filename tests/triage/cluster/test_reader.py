"""Failures of the API reader: one sentence each, and the next request works."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from kubernetes.client import ApiClient

from bot.clusters.sources import LiveSource
from tests.kubeapi import FakeKubeAPI, forbidden_status, status_body
from tests.paths import FIXTURES
from tests.triage.cluster.conftest import ref_of
from triage.errors import ClusterError

SEVEN = FIXTURES / "scenarios" / "seven-states"



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
# Quotas and RuntimeClasses are read for a workload: infer/vllm (its answer is the missing
# RuntimeClass, whatever the quotas) and ml/finetune (its quota, whatever the RuntimeClasses).
CORROBORATING_FAULTS = [
    pytest.param("status", "/resourcequotas$",
                 {"status": forbidden_status("list", "resourcequotas", namespace="infer")},
                 'Forbidden: User "system:serviceaccount:gpuwhy:gpuwhy" cannot list '
                 'resourcequotas in namespace "infer" (RBAC needs verb "list" on resource '
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
    ref, cause = {"resourcequotas": ("infer/vllm", "runtimeclass-missing"),
                  "runtimeclasses": ("ml/finetune", "quota-exceeded")}.get(
        path.strip("/$"), ("research/full", "exhausted"))
    source = LiveSource(api_client=client, timeout=0.4)
    api.inject(kind, path, **options)  # type: ignore[arg-type]
    verdict = source.triage(ref_of(ref))
    assert (verdict.cause, verdict.error) == (cause, sentence.format(url=api.url))
    assert source.triage(ref_of(ref)).error is None


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
