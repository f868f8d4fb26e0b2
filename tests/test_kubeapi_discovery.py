"""tests/kubeapi.py answers discovery the way kube-apiserver does, so kubectl itself works
against it (the benchmark's floor is `kubectl describe pod` against this server)."""

from __future__ import annotations

import json
import os
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SCENARIOS, kubectl_or_skip
from tests.kubeapi import FakeKubeAPI


@pytest.fixture
def api() -> Iterator[FakeKubeAPI]:
    with FakeKubeAPI(SCENARIOS / "seven-states") as server:
        yield server


def get(api: FakeKubeAPI, path: str) -> Any:
    with urllib.request.urlopen(api.url + path, timeout=10) as response:
        return json.load(response)


def kubectl(api: FakeKubeAPI, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """kubectl with its own HOME (a fresh discovery cache) and the server's kubeconfig."""
    env = {**os.environ, "HOME": str(tmp_path)}
    env.pop("KUBECONFIG", None)
    kubeconfig = api.kubeconfig(tmp_path / "kubeconfig")
    return subprocess.run([kubectl_or_skip(), "--kubeconfig", str(kubeconfig), *args],
                          capture_output=True, text=True, env=env, timeout=60, check=False)


def test_kubectl_describe_pod_works(api: FakeKubeAPI, tmp_path: Path) -> None:
    described = kubectl(api, tmp_path, "describe", "pod", "-n", "research", "full")
    assert described.returncode == 0, described.stderr
    assert described.stderr == ""
    lines = described.stdout.splitlines()
    assert "Name:             full" in lines
    assert "Node-Selectors:              pool=a10-full" in lines
    # the pod's events, listed the way describe lists them
    assert any("FailedScheduling" in line and "0/6 nodes are available" in line
               for line in lines)
    paths = [r.path for r in api.requests]
    assert {"/api", "/apis", "/api/v1", "/apis/apps/v1"} <= set(paths)
    assert "/api/v1/namespaces/research/pods/full" in paths


def test_kubectl_finds_resources_by_short_name_and_group(api: FakeKubeAPI,
                                                         tmp_path: Path) -> None:
    listed = kubectl(api, tmp_path, "get", "deploy,rs", "-n", "infer", "-o", "name")
    assert listed.returncode == 0, listed.stderr
    assert "deployment.apps/vllm" in listed.stdout.splitlines()
    unknown = kubectl(api, tmp_path, "get", "widgets")
    assert unknown.returncode != 0
    assert 'the server doesn\'t have a resource type "widgets"' in unknown.stderr


def test_discovery_documents_have_kube_apiservers_shapes(api: FakeKubeAPI) -> None:
    versions = get(api, "/api")
    assert versions["kind"] == "APIVersions" and versions["versions"] == ["v1"]
    groups = get(api, "/apis")
    assert groups["kind"] == "APIGroupList"
    by_name = {g["name"]: g for g in groups["groups"]}
    assert {"apps", "batch", "node.k8s.io", "resource.k8s.io", "authorization.k8s.io",
            "scheduling.k8s.io"} == set(by_name)
    assert by_name["scheduling.k8s.io"]["preferredVersion"]["version"] == "v1alpha2"
    # GA preferred over the beta DeviceTaintRules version, both listed
    assert [v["version"] for v in by_name["resource.k8s.io"]["versions"]] == ["v1", "v1beta2"]
    assert by_name["resource.k8s.io"]["preferredVersion"]["version"] == "v1"
    assert by_name["apps"]["preferredVersion"] == {"groupVersion": "apps/v1", "version": "v1"}
    assert get(api, "/apis/batch")["kind"] == "APIGroup"
    core = get(api, "/api/v1")
    assert core["kind"] == "APIResourceList" and core["groupVersion"] == "v1"
    resources = {r["name"]: r for r in core["resources"]}
    assert resources["pods"] == {"name": "pods", "singularName": "pod", "namespaced": True,
                                 "kind": "Pod", "verbs": ["get", "list", "watch", "create"],
                                 "shortNames": ["po"]}
    assert resources["nodes"]["namespaced"] is False
    apps = get(api, "/apis/apps/v1")
    assert apps["groupVersion"] == "apps/v1"
    assert {r["kind"] for r in apps["resources"]} == {"Deployment", "ReplicaSet", "StatefulSet",
                                                      "DaemonSet"}


def test_an_unserved_group_is_left_out_of_discovery() -> None:
    with FakeKubeAPI(SCENARIOS / "seven-states", unserved=["resource.k8s.io/v1"]) as api:
        # DeviceTaintRules' v1beta2 alone is left: the group stays, preferring it
        group = next(g for g in get(api, "/apis")["groups"] if g["name"] == "resource.k8s.io")
        assert [v["version"] for v in group["versions"]] == ["v1beta2"]
    with FakeKubeAPI(SCENARIOS / "seven-states",
                     unserved=["resource.k8s.io/v1", "resource.k8s.io/v1beta2"]) as api:
        assert "resource.k8s.io" not in {g["name"] for g in get(api, "/apis")["groups"]}
        with pytest.raises(urllib.error.HTTPError) as refused:
            get(api, "/apis/resource.k8s.io/v1")
        assert refused.value.code == 404


def test_kubectl_reads_kueues_group_in_both_versions(tmp_path: Path) -> None:
    with FakeKubeAPI(SCENARIOS / "kueue-basics") as server:
        group = get(server, "/apis/kueue.x-k8s.io")
        assert group["preferredVersion"]["version"] == "v1beta2"
        assert [v["version"] for v in group["versions"]] == ["v1beta2", "v1beta1"]
        listed = kubectl(server, tmp_path, "get", "workloads.kueue.x-k8s.io", "-A", "-o", "name")
        older = kubectl(server, tmp_path, "get", "clusterqueues.v1beta1.kueue.x-k8s.io",
                        "team-a-cq", "-o", "json")
    assert listed.returncode == 0, listed.stderr
    assert "workload.kueue.x-k8s.io/job-eval-nightly-5ca2b" in listed.stdout.splitlines()
    assert older.returncode == 0, older.stderr
    served = json.loads(older.stdout)
    assert served["apiVersion"] == "kueue.x-k8s.io/v1beta1"
    assert served["spec"]["cohort"] == "research" and "cohortName" not in served["spec"]


def test_a_cluster_without_kueue_does_not_list_its_group(api: FakeKubeAPI) -> None:
    assert "kueue.x-k8s.io" not in {g["name"] for g in get(api, "/apis")["groups"]}
