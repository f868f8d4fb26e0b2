"""deploy/ renders with the machine's `kubectl kustomize` (every overlay, every component), and
the objects are what a cluster admin expects: read-only RBAC, Secret references, probes, a
locked-down container, the store kept where each overlay says."""

from __future__ import annotations

import functools
import os
import re
import subprocess
import textwrap
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.cli.doctor import READ_RESOURCES, READ_VERBS, kueue_reads
from bot.config import load_config
from tests.conftest import kubectl_or_skip
from tests.paths import REPO
from triage.cluster import EVENTS, NODES, PODS, QUOTAS, RUNTIME_CLASSES, WORKLOADS
from triage.cluster.resources import JOB_RESOURCES

DEPLOY = REPO / "deploy"
COMPONENTS = ("http", "dry-run-preflight", "digest-cronjob", "large-cluster")
Objects = list[dict[str, Any]]


@functools.cache
def _rendered(directory: Path) -> str:
    result = subprocess.run([kubectl_or_skip(), "kustomize", str(directory)], capture_output=True,
                            text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    return result.stdout


def render(directory: Path) -> Objects:
    return [document for document in yaml.safe_load_all(_rendered(directory)) if document]


Compose = Callable[..., Objects]


@pytest.fixture(scope="module")
def compose(tmp_path_factory: pytest.TempPathFactory) -> Compose:
    """Render an overlay of the user's own: an overlay of deploy/ plus components of deploy/
    (each combination rendered once per module)."""

    @functools.cache
    def rendered(overlay: str, *components: str) -> Objects:
        return _compose(tmp_path_factory.mktemp("mine"), overlay, *components)

    return rendered


def _compose(root: Path, overlay: str, *components: str) -> Objects:
    relative = os.path.relpath(DEPLOY, root)  # kustomize refuses absolute paths
    (root / "kustomization.yaml").write_text(yaml.safe_dump({
        "resources": [f"{relative}/overlays/{overlay}"],
        "components": [f"{relative}/components/{name}" for name in components],
    }))
    return render(root)


def one(objects: Objects, kind: str, name: str | None = None) -> dict[str, Any]:
    [found] = [o for o in objects if o["kind"] == kind
               and (name is None or o["metadata"]["name"] == name)]
    return found


def containers(objects: Objects) -> Iterator[dict[str, Any]]:
    for o in objects:
        if o["kind"] == "Deployment":
            yield from o["spec"]["template"]["spec"]["containers"]
        elif o["kind"] == "CronJob":
            yield from o["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]


def pod_specs(objects: Objects) -> Iterator[dict[str, Any]]:
    for o in objects:
        if o["kind"] == "Deployment":
            yield o["spec"]["template"]["spec"]
        elif o["kind"] == "CronJob":
            yield o["spec"]["jobTemplate"]["spec"]["template"]["spec"]


def env(container: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {item["name"]: item for item in container.get("env", [])}


def verbs(objects: Objects, role: str) -> dict[tuple[str, str], set[str]]:
    granted: dict[tuple[str, str], set[str]] = {}
    for rule in one(objects, "ClusterRole", role)["rules"]:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                granted.setdefault((group, resource), set()).update(rule["verbs"])
    return granted


ALL = [("sqlite", ()), ("postgres", ()), ("sqlite", ("http",)), ("postgres", ("http",)),
       ("postgres", COMPONENTS), ("sqlite", ("dry-run-preflight",))]


@pytest.fixture(params=ALL, ids=lambda p: "+".join((p[0], *p[1])))
def rendered(request: pytest.FixtureRequest, compose: Compose) -> Objects:
    overlay, components = request.param
    return compose(overlay, *components)


def test_deploy_directory_renders_the_sqlite_overlay() -> None:
    assert render(DEPLOY) == render(DEPLOY / "overlays" / "sqlite")


def test_the_reader_role_covers_every_read_and_writes_nothing(rendered: Objects) -> None:
    granted = verbs(rendered, "gpuwhy-reader")
    assert {verb for found in granted.values() for verb in found} == {"get", "list", "watch"}
    # Everything `gpuwhy doctor` checks, which is everything triage reads (DRA and, where
    # served, Kueue included).
    assert granted == {**{(r.group, r.plural): set(READ_VERBS)
                          for r in (*READ_RESOURCES, *kueue_reads("v1beta2"),
                                    *JOB_RESOURCES.values())},
                       # optional: a queued answer's position (doctor does not require it)
                       ("visibility.kueue.x-k8s.io", "clusterqueues/pendingworkloads"): {"get"}}
    for resource in (NODES, PODS, EVENTS, QUOTAS, RUNTIME_CLASSES, *WORKLOADS.values()):
        assert resource in READ_RESOURCES


def test_only_the_opt_in_component_writes(rendered: Objects) -> None:
    roles = {o["metadata"]["name"] for o in rendered if o["kind"] == "ClusterRole"}
    if "gpuwhy-preflight" not in roles:
        assert roles == {"gpuwhy-reader"}
        return
    assert verbs(rendered, "gpuwhy-preflight") == {("", "pods"): {"create"}}
    binding = one(rendered, "ClusterRoleBinding", "gpuwhy-preflight")
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "gpuwhy",
                                    "namespace": "gpuwhy"}]


def test_no_secret_value_is_inline(rendered: Objects) -> None:
    assert [o for o in rendered if o["kind"] == "Secret"] == []
    for container in containers(rendered):
        for name, item in env(container).items():
            if name.startswith("SLACK_"):
                assert item["valueFrom"] == {"secretKeyRef": {"name": "gpuwhy-slack",
                                                              "key": name}}
            elif name == "GPUWHY_DATABASE_URL" and "value" in item:
                assert item["value"].startswith("sqlite:////")  # a file: no password
        assert "envFrom" not in container
    text = yaml.safe_dump_all(rendered)
    assert "xoxb-" not in text and "xapp-" not in text and "postgresql" not in text


def test_every_container_is_locked_down(rendered: Objects) -> None:
    for spec in pod_specs(rendered):
        assert spec["securityContext"]["runAsNonRoot"] is True
        assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    for container in containers(rendered):
        assert container["securityContext"] == {
            "allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
            "runAsNonRoot": True, "capabilities": {"drop": ["ALL"]}}
        resources = container["resources"]
        assert {"cpu", "memory"} <= set(resources["requests"]) and \
            {"cpu", "memory"} <= set(resources["limits"])


def test_images_come_from_the_images_entry(rendered: Objects) -> None:
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    images = {container["image"] for container in containers(rendered)}
    assert images == {f"gpuwhy:{version}"}


def test_probes_and_the_metrics_port(rendered: Objects) -> None:
    [bot] = [c for c in containers(rendered) if c["name"] == "gpuwhy"]
    assert bot["ports"] == [{"name": "http", "containerPort": 8080}]
    assert bot["args"] == ["serve", "--port", "8080"]
    assert bot["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert bot["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    metrics = one(rendered, "Service", "gpuwhy-metrics")
    assert metrics["spec"]["ports"] == [{"name": "metrics", "port": 8080, "targetPort": "http"}]


def test_the_config_map_is_a_valid_config(rendered: Objects, tmp_path: Path) -> None:
    [config_map] = [o for o in rendered if o["kind"] == "ConfigMap"]
    path = tmp_path / "gpuwhy.yaml"
    path.write_text(config_map["data"]["gpuwhy.yaml"])
    assert load_config({"GPUWHY_CONFIG": str(path)}).cluster == "prod-gpu"
    for spec, container in zip(pod_specs(rendered), containers(rendered), strict=True):
        assert env(container)["GPUWHY_CONFIG"]["value"] == "/etc/gpuwhy/gpuwhy.yaml"
        [volume] = [v for v in spec["volumes"] if v["name"] == "config"]
        assert volume["configMap"]["name"] == config_map["metadata"]["name"]


def test_sqlite_keeps_the_store_on_a_claim() -> None:
    objects = render(DEPLOY / "overlays" / "sqlite")
    deployment = one(objects, "Deployment")
    assert deployment["spec"]["replicas"] == 1
    assert deployment["spec"]["strategy"] == {"type": "Recreate"}
    claim = one(objects, "PersistentVolumeClaim")
    spec = deployment["spec"]["template"]["spec"]
    [data] = [v for v in spec["volumes"] if v["name"] == "data"]
    assert data == {"name": "data", "persistentVolumeClaim": {
        "claimName": claim["metadata"]["name"]}}
    [bot] = spec["containers"]
    [mount] = [m for m in bot["volumeMounts"] if m["name"] == "data"]
    assert env(bot)["GPUWHY_DATABASE_URL"]["value"] == f"sqlite:///{mount['mountPath']}/gpuwhy.db"


def test_postgres_runs_two_replicas_on_the_secret_url() -> None:
    objects = render(DEPLOY / "overlays" / "postgres")
    deployment = one(objects, "Deployment")
    assert deployment["spec"]["replicas"] == 2
    assert "strategy" not in deployment["spec"]  # rolling: replicas share the store
    [bot] = deployment["spec"]["template"]["spec"]["containers"]
    assert env(bot)["GPUWHY_DATABASE_URL"]["valueFrom"] == {
        "secretKeyRef": {"name": "gpuwhy-database", "key": "GPUWHY_DATABASE_URL"}}
    assert [o for o in objects if o["kind"] == "PersistentVolumeClaim"] == []
    assert one(objects, "PodDisruptionBudget")["spec"]["minAvailable"] == 1


def test_http_component_serves_slack_through_a_service(compose: Compose) -> None:
    objects = compose("postgres", "http")
    service = one(objects, "Service", "gpuwhy")
    assert service["spec"]["ports"] == [{"name": "http", "port": 80, "targetPort": "http"}]
    deployment = one(objects, "Deployment")
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]
    [bot] = deployment["spec"]["template"]["spec"]["containers"]
    variables = env(bot)
    assert "SLACK_APP_TOKEN" not in variables  # without it, serve runs in HTTP mode
    assert variables["SLACK_SIGNING_SECRET"]["valueFrom"] == {
        "secretKeyRef": {"name": "gpuwhy-slack", "key": "SLACK_SIGNING_SECRET"}}
    assert "SLACK_BOT_TOKEN" in variables


def test_socket_mode_is_the_default() -> None:
    [bot] = containers(render(DEPLOY / "overlays" / "sqlite"))
    assert set(env(bot)) >= {"SLACK_BOT_TOKEN", "SLACK_APP_TOKEN"}
    assert "SLACK_SIGNING_SECRET" not in env(bot)


def test_digest_cronjob_posts_weekly_from_the_shared_store(compose: Compose) -> None:
    objects = compose("postgres", "digest-cronjob")
    cronjob = one(objects, "CronJob")
    assert cronjob["spec"]["schedule"] == "0 9 * * 1"
    assert cronjob["spec"]["concurrencyPolicy"] == "Forbid"
    [job] = [c for c in containers(objects) if c["name"] == "digest"]
    assert job["args"] == ["digest", "--post"]
    assert env(job)["GPUWHY_DATABASE_URL"]["valueFrom"] == env(
        one(objects, "Deployment")["spec"]["template"]["spec"]["containers"][0],
    )["GPUWHY_DATABASE_URL"]["valueFrom"]


def gibibytes(quantity: str) -> float:
    number, unit = quantity[:-2], quantity[-2:]
    return float(number) / {"Mi": 1024, "Gi": 1}[unit]


# The watch cache's RSS after 30 answers at 100,000 nodes / 1,000,000 pods (README,
# Performance): what the large-cluster component must hold with room to spare.
CACHE_GIB_AT_100K_NODES = 1.97


def test_large_cluster_component_holds_the_cache_of_100k_nodes(compose: Compose) -> None:
    [base] = containers(compose("sqlite"))
    [bot] = containers(compose("sqlite", "large-cluster"))
    assert gibibytes(base["resources"]["limits"]["memory"]) < CACHE_GIB_AT_100K_NODES * 1.25
    resources = bot["resources"]
    assert gibibytes(resources["requests"]["memory"]) >= CACHE_GIB_AT_100K_NODES
    assert gibibytes(resources["limits"]["memory"]) >= 1.5 * CACHE_GIB_AT_100K_NODES
    assert {k: v for k, v in bot.items() if k != "resources"} == \
        {k: v for k, v in base.items() if k != "resources"}


def test_slack_manifest_has_the_command_and_interactivity() -> None:
    manifest = yaml.safe_load((DEPLOY / "slack-app-manifest.yaml").read_text())
    assert manifest["features"]["slash_commands"][0]["command"] == "/gpuwhy"
    assert manifest["settings"]["interactivity"]["is_enabled"] is True
    assert manifest["features"]["app_home"]["home_tab_enabled"] is True
    assert "app_home_opened" in manifest["settings"]["event_subscriptions"]["bot_events"]


def test_the_readme_overlay_renders(tmp_path: Path) -> None:
    """The Deploy section's own overlay, beside a checkout named gpuwhy, with the README's
    example config: the image and the config are replaced, nothing else needs editing."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    deploy_section = readme.split("## Deploy", 1)[1]
    overlay = re.search(r"```yaml\n(.*?)```", deploy_section, re.S)
    config = re.search(r"```yaml\n(.*?)```", readme.split("## Configuration", 1)[1], re.S)
    assert overlay is not None and config is not None
    (tmp_path / "gpuwhy").symlink_to(REPO)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "kustomization.yaml").write_text(textwrap.dedent(overlay.group(1)))
    (mine / "gpuwhy.yaml").write_text(config.group(1))
    objects = render(mine)
    assert {c["image"] for c in containers(objects)} == {"REGISTRY/gpuwhy:0.1.0"}
    [config_map] = [o for o in objects if o["kind"] == "ConfigMap"]
    assert config_map["data"]["gpuwhy.yaml"] == config.group(1)
    assert one(objects, "PersistentVolumeClaim")["metadata"]["name"] == "gpuwhy-data"


@pytest.mark.parametrize("overlay", ["sqlite", "postgres"])
def test_a_renamed_namespace_keeps_its_permissions(tmp_path: Path, overlay: str) -> None:
    """An overlay with `namespace: my-gpuwhy`: every binding names the ServiceAccount where it
    now lives, else the bot runs with no permissions at all."""
    relative = os.path.relpath(DEPLOY, tmp_path)
    (tmp_path / "kustomization.yaml").write_text(yaml.safe_dump({
        "namespace": "my-gpuwhy",
        "resources": [f"{relative}/overlays/{overlay}"],
        "components": [f"{relative}/components/{name}" for name in COMPONENTS],
    }))
    objects = render(tmp_path)
    account = one(objects, "ServiceAccount", "gpuwhy")
    assert account["metadata"]["namespace"] == "my-gpuwhy"
    bindings = [o for o in objects if o["kind"] == "ClusterRoleBinding"]
    assert {o["metadata"]["name"] for o in bindings} == {"gpuwhy-reader", "gpuwhy-preflight"}
    for binding in bindings:
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": "gpuwhy", "namespace": "my-gpuwhy"}]
    namespaced = {o["metadata"].get("namespace") for o in objects
                  if o["kind"] not in ("Namespace", "ClusterRole", "ClusterRoleBinding")}
    assert namespaced == {"my-gpuwhy"}
    assert one(objects, "Namespace")["metadata"]["name"] == "my-gpuwhy"
