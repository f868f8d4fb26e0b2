"""Shared fixtures: recorded clusters as JSON, loaded fresh for each test."""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.kubeapi import find_kubectl
from tests.paths import FIXTURES
from tests.slackfake import FakeSlack
from triage.snapshot import DUMP_FILES, Snapshot

# The database_url (SQLite file and PostgreSQL), own_postgres and store fixtures.
pytest_plugins = ("tests.pg",)

SCENARIOS = FIXTURES / "scenarios"
SCENARIO_NAMES = sorted(p.name for p in SCENARIOS.iterdir() if p.is_dir())


def load_lists(name: str | Path) -> dict[str, list[dict[str, Any]]]:
    """A scenario's objects as the API server returned them, one list per dump file (``name``
    a recorded scenario, or the directory of a derived one)."""
    directory = name if isinstance(name, Path) else SCENARIOS / name
    lists = {}
    for filename, attribute in DUMP_FILES.items():
        path = directory / filename
        lists[attribute] = json.loads(path.read_text())["items"] if path.exists() else []
    return copy.deepcopy(lists)


def find(items: list[dict[str, Any]], name: str, namespace: str | None = None) -> dict[str, Any]:
    for item in items:
        meta = item["metadata"]
        if meta["name"] == name and (namespace is None or meta.get("namespace") == namespace):
            return item
    raise KeyError(f"{namespace}/{name}")


def kubectl_or_skip() -> str:
    """The kubectl to run; the test is skipped without one (failed when CI is set)."""
    found = find_kubectl()
    if found is None:
        reason = "kubectl is not installed (.ci/run installs it)"
        if os.environ.get("CI", "").lower() in ("true", "1", "yes"):
            pytest.fail(f"{reason}; CI is set: the kubectl cases must run", pytrace=False)
        pytest.skip(reason)
    return found


@pytest.fixture(autouse=True)
def private_incident_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing a test runs may write to the user's real incident store."""
    monkeypatch.setenv("GPUWHY_DATABASE_URL", f"sqlite:///{tmp_path / 'incidents.db'}")


@pytest.fixture
def seven_states() -> dict[str, list[dict[str, Any]]]:
    return load_lists("seven-states")


@pytest.fixture
def hami_sharing() -> dict[str, list[dict[str, Any]]]:
    return load_lists("hami-sharing")


@pytest.fixture
def to_snapshot() -> Callable[[dict[str, list[dict[str, Any]]]], Snapshot]:
    def build(lists: dict[str, list[dict[str, Any]]]) -> Snapshot:
        return Snapshot(**copy.deepcopy(lists))
    return build


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    """A local Slack Web API (and response_url target) recording every call."""
    fake = FakeSlack()
    yield fake
    fake.close()


def slice_uuids(name: str) -> dict[tuple[str, str], str]:
    """(node, device name) -> the GPU UUID its ResourceSlice publishes (attribute uuid), as
    recorded in the scenario's dra.json."""
    items = json.loads((SCENARIOS / name / "dra.json").read_text())["items"]
    return {(item["spec"]["nodeName"], device["name"]): device["attributes"]["uuid"]["string"]
            for item in items if item["kind"] == "ResourceSlice" and item["spec"].get("nodeName")
            for device in item["spec"].get("devices", [])
            if "uuid" in device.get("attributes", {})}
