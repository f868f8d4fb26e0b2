"""Fixtures shared by the cluster-reading tests: the seven-states cluster on a real HTTP server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client import ApiClient

from tests.kubeapi import FakeKubeAPI
from triage.cluster import load_api_client
from triage.refs import PodRef

FIXTURES = Path(__file__).parents[1] / "fixtures"
SEVEN = FIXTURES / "scenarios" / "seven-states"


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
