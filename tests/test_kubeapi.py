"""tests/kubeapi.py answers lists from each object's stored JSON: the same bytes as encoding
the whole list document, before and after changes."""

from __future__ import annotations

import copy
import json
import urllib.request
from typing import Any
from urllib.parse import quote

from tests.kubeapi import FakeKubeAPI
from tests.paths import FIXTURES

SEVEN = FIXTURES / "scenarios" / "seven-states"


def listed(api: FakeKubeAPI, path: str) -> bytes:
    with urllib.request.urlopen(f"{api.url}{path}") as response:
        body: bytes = response.read()
    return body


def expected(items: list[dict[str, Any]], resource_version: str,
             namespace: str = "") -> bytes:
    chosen = sorted((i for i in items if not namespace
                     or i["metadata"].get("namespace") == namespace),
                    key=lambda i: (i["metadata"].get("namespace", ""), i["metadata"]["name"]))
    return json.dumps({"kind": "PodList", "apiVersion": "v1",
                       "metadata": {"resourceVersion": resource_version},
                       "items": [{k: v for k, v in i.items() if k not in ("kind", "apiVersion")}
                                 for i in chosen]}).encode()


def test_a_list_is_the_encoded_list_document_byte_for_byte() -> None:
    pods = json.loads((SEVEN / "pods.json").read_text())["items"]
    with FakeKubeAPI(SEVEN) as api:
        first = listed(api, "/api/v1/pods")
        version = json.loads(first)["metadata"]["resourceVersion"]
        assert first == expected(pods, version)
        assert listed(api, "/api/v1/namespaces/ml/pods") == expected(pods, version, "ml")

        changed = copy.deepcopy(pods[0])
        changed["metadata"]["labels"] = {"changed": "yes"}
        stored = api.apply(changed)
        gone = pods[1]
        api.delete("Pod", gone["metadata"]["namespace"], gone["metadata"]["name"])
        after = listed(api, "/api/v1/pods")
        version = json.loads(after)["metadata"]["resourceVersion"]
        rest = [stored, *pods[2:]]
        assert after == expected(rest, version)
        assert b'"changed": "yes"' in after


def test_pages_are_encoded_list_documents_that_add_up_to_the_list() -> None:
    with FakeKubeAPI(SEVEN) as api:
        whole = json.loads(listed(api, "/api/v1/pods"))["items"]
        items, token = [], ""
        while True:
            more = f"&continue={quote(token)}" if token else ""
            page = listed(api, f"/api/v1/pods?limit=2{more}")
            document = json.loads(page)
            assert page == json.dumps(document).encode()
            items += document["items"]
            token = document["metadata"].get("continue", "")
            if not token:
                break
    assert items == whole and len(whole) > 2


def test_a_node_s_pods_are_listed_by_spec_node_name_as_they_move_and_go() -> None:
    pods = json.loads((SEVEN / "pods.json").read_text())["items"]

    def on(api: FakeKubeAPI, node: str) -> list[str]:
        document = json.loads(listed(api, f"/api/v1/pods?fieldSelector=spec.nodeName%3D{node}"
                                          "%2Cstatus.phase%21%3DSucceeded&limit=2"))
        return [i["metadata"]["name"] for i in document["items"]]

    with FakeKubeAPI(SEVEN) as api:
        assert on(api, "gpu-a10-full") == ["train-a", "crashed"]  # a page of 2; done is out
        assert sorted(p["metadata"]["name"] for p in pods
                      if p["spec"].get("nodeName") == "gpu-a100-1") == on(api, "gpu-a100-1")
        moved = copy.deepcopy(next(p for p in pods if p["metadata"]["name"] == "train-a"))
        moved["spec"]["nodeName"] = "gpu-a100-1"
        api.apply(moved)
        api.delete("Pod", "research", "ok")
        assert on(api, "gpu-a100-1") == ["train-a", "no-request"]
        assert on(api, "gpu-a10-full") == ["crashed", "train-b"]
        assert sum(size for request, size in api.sent if request.query.get("fieldSelector")) > 0
