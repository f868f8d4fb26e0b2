"""The shipped RBAC grants every read triage makes, and no write."""

from __future__ import annotations

from pathlib import Path

import yaml

from triage.cluster import EVENTS, NODES, PODS, QUOTAS, RUNTIME_CLASSES, WORKLOADS

DEPLOY = Path(__file__).resolve().parents[1] / "deploy"


def _cluster_role() -> dict[str, object]:
    documents = list(yaml.safe_load_all((DEPLOY / "kubernetes.yaml").read_text()))
    return next(d for d in documents if d["kind"] == "ClusterRole")


def test_cluster_role_covers_every_resource_triage_reads() -> None:
    granted = {(group, resource): set(rule["verbs"])
               for rule in _cluster_role()["rules"]  # type: ignore[attr-defined]
               for group in rule["apiGroups"] for resource in rule["resources"]}
    for resource in (NODES, PODS, EVENTS, QUOTAS, RUNTIME_CLASSES, *WORKLOADS.values()):
        assert {"get", "list", "watch"} <= granted[(resource.group, resource.plural)], resource


def test_cluster_role_grants_no_write() -> None:
    verbs = {verb for rule in _cluster_role()["rules"]  # type: ignore[attr-defined]
             for verb in rule["verbs"]}
    assert verbs == {"get", "list", "watch"}


def test_slack_manifest_asks_for_the_scopes_the_bot_uses() -> None:
    manifest = yaml.safe_load((DEPLOY / "slack-app-manifest.yaml").read_text())
    assert set(manifest["oauth_config"]["scopes"]["bot"]) == {
        "commands", "chat:write", "channels:history", "groups:history"}
    assert manifest["features"]["slash_commands"][0]["command"] == "/gpuwhy"
    assert manifest["settings"]["interactivity"]["is_enabled"] is True
