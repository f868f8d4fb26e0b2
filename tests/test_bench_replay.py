"""bench/replay.py, the cold answer's floor: the same requests replayed in parallel, each
body read and, with --decode, decoded where it is received."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

from bench.podfields import pod_page
from bench.replay import DECODE_MODES
from tests.kubeapi import FakeKubeAPI
from triage.cluster.resources import NON_TERMINATED

SCENARIO = Path(__file__).parent / "fixtures" / "scenarios" / "seven-states"
PAGE = 3  # pods a page: the recorded cluster's pods on several pages
GPU = "nvidia.com/gpu"


@pytest.fixture(scope="module")
def server() -> Iterator[FakeKubeAPI]:
    with FakeKubeAPI(SCENARIO) as api:
        yield api


def _pod_pages(server: FakeKubeAPI) -> list[str]:
    """The paths of the non-terminated pod list's pages, continue tokens as sent."""
    paths, token = [], ""
    while True:
        query = {"fieldSelector": NON_TERMINATED, "limit": str(PAGE)} | (
            {"continue": token} if token else {})
        paths.append(f"/api/v1/pods?{urlencode(query)}")
        with urllib.request.urlopen(server.url + paths[-1]) as response:
            token = json.loads(response.read())["metadata"].get("continue") or ""
        if not token:
            return paths


def _non_terminated() -> list[Any]:
    pods = json.loads((SCENARIO / "pods.json").read_text())["items"]
    return [p for p in pods if p["status"].get("phase") not in ("Succeeded", "Failed")]


def _replay(server: FakeKubeAPI, tmp_path: Path, paths: list[str],
            mode: str | None) -> tuple[int, int, int]:
    """(bytes printed, items printed, bytes the server sent) of one replay process."""
    plan = tmp_path / "requests.json"
    plan.write_text(json.dumps({"server": server.url, "token": "test-token", "paths": paths}))
    mark = len(server.sent)
    done = subprocess.run([sys.executable, "-m", "bench.replay", str(plan),
                           *(["--decode", mode] if mode else [])],
                          capture_output=True, text=True, check=True,
                          cwd=Path(__file__).resolve().parents[1])
    received, items = (int(part) for part in done.stdout.split())
    return received, items, sum(size for _, size in server.sent[mark:])


@pytest.mark.parametrize("mode", [None, *DECODE_MODES])
def test_each_mode_reads_every_body_and_decodes_every_listed_item(
        server: FakeKubeAPI, tmp_path: Path, mode: str | None) -> None:
    pages = _pod_pages(server)
    nodes = json.loads((SCENARIO / "nodes.json").read_text())["items"]
    pod = _non_terminated()[0]["metadata"]
    paths = ["/api/v1/nodes", *pages,
             f"/api/v1/namespaces/{pod['namespace']}/pods/{pod['name']}"]
    received, items, sent = _replay(server, tmp_path, paths, mode)
    assert len(pages) > 2
    assert received == sent > 0
    assert len(server.sent) >= len(paths)
    assert items == (0 if mode is None else len(nodes) + len(_non_terminated()))


def test_the_fields_pages_hold_each_nodes_gpu_requests(server: FakeKubeAPI) -> None:
    expected: dict[str, Decimal] = {}
    for pod in _non_terminated():
        for container in pod["spec"]["containers"]:
            wanted = (container.get("resources") or {}).get("requests") or {}
            if GPU in wanted and pod["spec"].get("nodeName"):
                node = pod["spec"]["nodeName"]
                expected[node] = expected.get(node, Decimal(0)) + Decimal(wanted[GPU])
    decoded: dict[str, Decimal] = {}
    names = []
    for path in _pod_pages(server):
        with urllib.request.urlopen(server.url + path) as response:
            page = pod_page(response.read())
        for item in page.items or ():
            assert item.metadata is not None and item.spec is not None
            assert item.status is not None and item.status.phase in ("Pending", "Running")
            names.append((item.metadata.namespace, item.metadata.name))
            for container in [*(item.spec.containers or ()), *(item.spec.initContainers or ())]:
                wanted = (container.resources.requests if container.resources else None) or {}
                if GPU in wanted and item.spec.nodeName:
                    decoded[item.spec.nodeName] = decoded.get(item.spec.nodeName, Decimal(0)) \
                        + Decimal(wanted[GPU])
    assert names == sorted((p["metadata"]["namespace"], p["metadata"]["name"])
                           for p in _non_terminated())
    assert decoded == expected
    assert expected
