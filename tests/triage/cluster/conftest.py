"""Fixtures shared by the cluster-reading tests: the seven-states cluster on a real HTTP server."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client import ApiClient

from bot.clusters.sources import WatchSource
from tests.kubeapi import FakeKubeAPI
from tests.paths import FIXTURES
from triage.cluster import load_api_client
from triage.refs import PodRef

SEVEN = FIXTURES / "scenarios" / "seven-states"


def ref_of(text: str) -> PodRef:
    namespace, name = text.split("/")
    return PodRef(namespace, name)


def eventually(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the cache did not catch up"
        time.sleep(0.01)


@contextmanager
def ready_cache(server: FakeKubeAPI, tmp_path: Path, timeout: float = 5.0,
                **options: object) -> Iterator[WatchSource]:
    """A started watch cache over the server, ready (its first lists made), stopped after."""
    source = watch_source(server, tmp_path, **options).start()
    try:
        assert source.wait_ready(timeout)
        yield source
    finally:
        source.stop()


def watch_source(server: FakeKubeAPI, tmp_path: Path, **options: object) -> WatchSource:
    client = load_api_client(str(server.kubeconfig(tmp_path / "kubeconfig")))
    return WatchSource(api_client=client, **{"retry_delay": 0.05, **options})  # type: ignore[arg-type]


@pytest.fixture
def api() -> Iterator[FakeKubeAPI]:
    with FakeKubeAPI(SEVEN) as server:
        yield server


@pytest.fixture
def client(api: FakeKubeAPI, tmp_path: Path) -> ApiClient:
    return load_api_client(str(api.kubeconfig(tmp_path / "kubeconfig")))


def by_name(objects: list[dict[str, Any]]) -> dict[tuple[str, str], object]:
    return {(o["metadata"].get("namespace", ""), o["metadata"]["name"]): o for o in objects}
