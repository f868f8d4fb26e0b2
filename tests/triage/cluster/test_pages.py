"""List pages decoded straight into what the watch cache keeps (triage/pages.py)."""

from __future__ import annotations

import copy
import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from bot.clusters.sources import WatchSource
from scoring.nodetable import node_info
from tests.kubeapi import FakeKubeAPI, status_body
from tests.paths import FIXTURES
from tests.triage.cluster.conftest import eventually
from triage.cache import NodeStore, PodStore, listpages
from triage.cluster import load_api_client
from triage.cluster.reader import ClusterReader, head_token
from triage.cluster.resources import NODES, NON_TERMINATED, PODS, Resource
from triage.errors import ClusterError
from triage.pages import ItemShape, with_kind
from triage.refs import PodRef
from triage.slim import SLIM_NODE, SLIM_POD, slim

SEVEN = FIXTURES / "scenarios" / "seven-states"
RECORDED = sorted(d for folder in ("scenarios", "scenarios-extra")
                  for d in (FIXTURES / folder).iterdir() if (d / "pods.json").exists())
SHAPES = {"pods.json": PodStore().slim, "nodes.json": NodeStore().slim}


def as_page(items: list[dict[str, Any]]) -> bytes:
    """A list page as kube-apiserver sends it: items without kind / apiVersion."""
    return json.dumps({"kind": "List", "apiVersion": "v1",
                       "metadata": {"resourceVersion": "7", "continue": "next"},
                       "items": [{k: v for k, v in item.items() if k not in ("kind", "apiVersion")}
                                 for item in items]}).encode()


@pytest.mark.parametrize("directory", RECORDED, ids=[d.name for d in RECORDED])
@pytest.mark.parametrize("file", sorted(SHAPES))
def test_a_recorded_page_is_cut_as_slim_cuts_each_whole_item(directory: Path, file: str) -> None:
    shape = SHAPES[file]
    page = as_page(json.loads((directory / file).read_text())["items"])
    cut = shape.cut_page(page)
    assert cut is not None  # recorded objects fit the kept fields' types
    metadata, items = cut
    assert metadata == {"resourceVersion": "7", "continue": "next"}
    whole = [slim(item, shape.keep) for item in json.loads(page)["items"]]
    assert json.dumps(items) == json.dumps(whole)  # the same fields, in the same order
    assert "managedFields" not in json.dumps(items)


def odd_pods() -> list[dict[str, Any]]:
    """Pods whose kept fields have JSON types the decoder's types do not expect."""
    base = json.loads((SEVEN / "pods.json").read_text())["items"][0]
    odd = []
    for path, value in ((("spec", "containers"), ["not-an-object"]), (("status",), "Running"),
                        (("spec", "initContainers"), 7), (("metadata",), "x")):
        pod = copy.deepcopy(base)
        pod["metadata"]["name"] += f"-odd-{len(odd)}"
        target = pod
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
        odd.append(pod)
    return odd


@pytest.mark.parametrize("pod", odd_pods(), ids=["container", "status", "init", "metadata"])
def test_a_page_the_types_do_not_fit_is_not_cut(pod: dict[str, Any]) -> None:
    assert PodStore().slim.cut_page(as_page([pod])) is None


def test_a_page_the_types_do_not_fit_is_kept_as_slim_keeps_it(tmp_path: Path) -> None:
    with FakeKubeAPI(SEVEN) as api:
        odd = odd_pods()
        for pod in (odd[0], odd[2]):  # of the others, the cache's own reads make nothing
            api.apply(pod)
        reader = ClusterReader(load_api_client(str(api.kubeconfig(tmp_path / "kubeconfig"))))
        shape = PodStore().slim
        listed, _ = reader.list_all(PODS, field_selector=NON_TERMINATED, page_size=3, keep=shape)
        one_by_one, _ = reader.list_all(PODS, field_selector=NON_TERMINATED, page_size=3,
                                        keep=lambda item: shape(item))
    assert listed == one_by_one  # the same fields and values (an odd key keeps its place)
    assert {"-odd-0", "-odd-2"} <= {p["metadata"]["name"][-6:] for p in listed}


def test_an_item_shape_finishes_each_cut_item() -> None:
    shape = ItemShape("Thing", {"metadata": {"name": True}},
                      lambda item: None if item["metadata"]["name"] == "b" else item)
    page = json.dumps({"items": [{"metadata": {"name": n, "uid": n}} for n in "abc"]}).encode()
    assert shape.cut_page(page) == ({}, [{"metadata": {"name": n}} for n in "abc"])
    assert shape({"metadata": {"name": "b", "uid": "b"}}) is None
    assert shape({"metadata": {"name": "c", "uid": "c"}}) == {"metadata": {"name": "c"}}


def test_a_truncated_first_page_is_the_answer_until_a_list_works(tmp_path: Path) -> None:
    with FakeKubeAPI(SEVEN) as api:
        api.inject("truncate", "^/api/v1/pods$", query="fieldSelector=", times=2)
        client = load_api_client(str(api.kubeconfig(tmp_path / "kubeconfig")))
        source = WatchSource(api_client=client, retry_delay=0.3).start()
        try:
            pods = source.cache._reflectors[1]
            assert pods.resource is PODS
            eventually(lambda: pods.list_error is not None)
            assert pods.list_error == (f"The Kubernetes API server at {api.url} sent a "
                                       "truncated or invalid JSON answer to list pods.")
            assert source.wait_ready(5)
            assert source.triage(PodRef("research", "full")).cause == "exhausted"
        finally:
            source.stop()


def test_a_list_read_ahead_is_the_list_read_page_by_page(tmp_path: Path) -> None:
    with FakeKubeAPI(SEVEN) as api:
        reader = ClusterReader(load_api_client(str(api.kubeconfig(tmp_path / "kubeconfig"))))
        shape = PodStore().slim
        mark = api.mark()
        by_page, version = reader.list_all(PODS, field_selector=NON_TERMINATED, page_size=2,
                                           keep=shape)
        sent = api.mark() - mark
        ahead, ahead_version = reader.list_all(PODS, field_selector=NON_TERMINATED,
                                               page_size=2, keep=shape, ahead=True)
        assert api.mark() - mark == 2 * sent > 2  # the same pages, each asked for once
    assert json.dumps(ahead) == json.dumps(by_page)
    assert ahead_version == version


class PageByPage(list[dict[str, Any]]):
    """A listing that notes how many items each ``extend`` brought (a page's)."""

    def __init__(self) -> None:
        super().__init__()
        self.pages: list[int] = []

    def extend(self, items: Iterable[dict[str, Any]], /) -> None:
        page = list(items)
        self.pages.append(len(page))
        super().extend(page)


@pytest.mark.parametrize("ahead", [False, True], ids=["by page", "ahead"])
def test_a_list_puts_each_page_into_its_listing_as_the_page_is_read(tmp_path: Path,
                                                                     ahead: bool) -> None:
    with FakeKubeAPI(SEVEN) as api:
        reader = ClusterReader(load_api_client(str(api.kubeconfig(tmp_path / "kubeconfig"))))
        listing, _ = reader.list_into(PageByPage, PODS, field_selector=NON_TERMINATED,
                                      page_size=2, keep=PodStore().slim, ahead=ahead)
        whole_list, _ = reader.list_all(PODS, field_selector=NON_TERMINATED, page_size=500,
                                        keep=PodStore().slim)
        pages = [r for r in api.requests if r.path == "/api/v1/pods" and
                 r.query.get("limit") == "2"]
    assert len(listing.pages) == len(pages) > 2
    assert max(listing.pages) == 2  # one page at a time, not the list at its end
    assert json.dumps(listing) == json.dumps(whole_list)


def test_a_list_started_again_from_its_first_page_starts_a_new_listing(tmp_path: Path) -> None:
    made: list[PageByPage] = []

    def listing() -> PageByPage:
        made.append(PageByPage())
        return made[-1]

    with FakeKubeAPI(SEVEN) as api:
        api.inject("status", path="^/api/v1/pods$", query="continue=", status=status_body(
            410, "Expired", "The provided continue parameter is too old to display a "
            "consistent list result."))
        reader = ClusterReader(load_api_client(str(api.kubeconfig(tmp_path / "kubeconfig"))))
        listed, _ = reader.list_into(listing, PODS, field_selector=NON_TERMINATED,
                                     page_size=2, keep=PodStore().slim, ahead=True)
        whole_list, _ = reader.list_all(PODS, field_selector=NON_TERMINATED, page_size=500,
                                        keep=PodStore().slim)
    assert len(made) == 2 and listed is made[1]
    assert made[0] == whole_list[:2]  # the first page, then 410 on the second
    assert json.dumps(listed) == json.dumps(whole_list)  # each pod once


def store_state(store: PodStore) -> str:
    """Everything a triage reads of the pod store, as JSON."""
    by_node, requested, holdings = store.by_node_view()
    namespaces = sorted({pod["metadata"]["namespace"] for pod in store.all()})
    return json.dumps({"by_node": by_node, "requested": requested, "holdings": holdings,
                       "waiting": store.waiting(), "all": store.all(),
                       "namespaces": {ns: store.in_namespace(ns) for ns in namespaces}},
                      default=str, sort_keys=True)


@pytest.mark.parametrize("directory", RECORDED, ids=[d.name for d in RECORDED])
def test_pods_indexed_page_by_page_are_the_pods_indexed_at_once(directory: Path,
                                                                tmp_path: Path) -> None:
    paged, at_once = PodStore(), PodStore()
    with FakeKubeAPI(directory) as api:
        reader = ClusterReader(load_api_client(str(api.kubeconfig(tmp_path / "kubeconfig"))))
        listing, _ = reader.list_into(paged.listing, PODS, field_selector=NON_TERMINATED,
                                      page_size=2, keep=paged.slim, ahead=True)
        items, _ = reader.list_all(PODS, field_selector=NON_TERMINATED, page_size=500,
                                   keep=at_once.slim)
    assert json.dumps(list(listing)) == json.dumps(items)  # the pods listed, in list order
    paged.replace(listing)
    at_once.replace(items)
    assert len(paged) == len(at_once) > 0
    assert store_state(paged) == store_state(at_once)


def test_a_continue_token_is_read_from_a_pages_own_metadata_only() -> None:
    assert head_token(b'{"kind":"PodList","metadata":{"resourceVersion":"7","continue":"t1"},'
                      b'"items":[]}') == "t1"
    assert head_token(b'{"kind": "PodList", "metadata": {"continue": "t2"}, "items": []}') == "t2"
    # an item's metadata is not the list's: a label or annotation is a level deeper
    assert head_token(b'{"kind":"PodList","metadata":{},"items":[{"metadata":{"labels":'
                      b'{"continue":"no"}}}]}') == ""
    assert head_token(b'{"kind":"PodList","metadata":{"resourceVersion":"7"},"items":[]}') == ""


def test_a_failing_page_read_ahead_fails_the_list_with_one_sentence(tmp_path: Path) -> None:
    with FakeKubeAPI(SEVEN) as api:
        api.inject("truncate", "^/api/v1/pods$", query="continue=", times=1)
        reader = ClusterReader(load_api_client(str(api.kubeconfig(tmp_path / "kubeconfig"))))
        with pytest.raises(ClusterError) as failed:
            reader.list_all(PODS, page_size=2, keep=PodStore().slim, ahead=True)
    assert "\n" not in str(failed.value) and str(failed.value).endswith(".")


def whole(page: bytes, resource: Resource = PODS) -> list[dict[str, Any]]:
    """What the watch cache keeps of a page's pods (or nodes), each item parsed whole and cut
    one by one (the reader's way with a page no decoder's types fit)."""
    shape = (PodStore() if resource is PODS else NodeStore()).slim
    return [kept for item in with_kind(resource, json.loads(page)["items"])
            if (kept := shape(item)) is not None]


def test_the_shared_decoders_read_the_fields_slim_keeps() -> None:
    def fields(struct: Any) -> set[str]:
        return set(struct.__struct_fields__)

    assert fields(listpages._Pod) == set(SLIM_POD) == fields(listpages._Node) == set(SLIM_NODE)
    assert fields(listpages._Metadata) == set(SLIM_POD["metadata"]) == set(SLIM_NODE["metadata"])
    assert fields(listpages._Spec) == set(SLIM_POD["spec"])
    assert fields(listpages._Status) == set(SLIM_POD["status"])
    assert fields(listpages._NodeSpec) == set(SLIM_NODE["spec"])
    assert fields(listpages._NodeStatus) == set(SLIM_NODE["status"])


@pytest.mark.parametrize("directory", RECORDED, ids=[d.name for d in RECORDED])
@pytest.mark.parametrize("resource", [PODS, NODES], ids=["pods", "nodes"])
def test_a_recorded_page_is_kept_as_each_whole_item_is(directory: Path,
                                                       resource: Resource) -> None:
    page = as_page(json.loads((directory / f"{resource.plural}.json").read_text())["items"])
    shape = (PodStore() if resource is PODS else NodeStore()).slim
    kept = shape.kept_page(resource, page)
    assert kept is not None
    metadata, items = kept
    assert metadata == {"resourceVersion": "7", "continue": "next"}
    assert items == whole(page, resource)  # the same fields and values
    if resource is NODES:
        assert "lastHeartbeatTime" not in json.dumps(items)


def replicas(count: int) -> list[dict[str, Any]]:
    """``count`` pods of one ReplicaSet, each on a node of its own: node-0, node-1, ..."""
    base = json.loads((SEVEN / "pods.json").read_text())["items"][0]
    made = []
    for number in range(count):
        pod = copy.deepcopy(base)
        pod["metadata"]["name"] = f"replica-{number}"
        pod["metadata"]["ownerReferences"] = [{"kind": "ReplicaSet", "name": "rs", "uid": "u"}]
        pod["spec"]["nodeName"] = f"node-{number}"
        made.append(pod)
    return made


def test_pods_of_a_kind_share_their_spec_labels_and_owners_but_not_their_node() -> None:
    pods = replicas(3)
    kept = PodStore().slim.kept_page(PODS, as_page(pods))
    assert kept is not None
    first, *others = kept[1]
    assert [pod["spec"]["nodeName"] for pod in kept[1]] == ["node-0", "node-1", "node-2"]
    for other in others:
        assert other["spec"]["containers"] is first["spec"]["containers"]
        assert other["metadata"]["labels"] is first["metadata"]["labels"]
        assert other["metadata"]["ownerReferences"] is first["metadata"]["ownerReferences"]
        assert other["spec"] is not first["spec"]
    assert kept[1] == whole(as_page(pods))


def test_nodes_running_alike_pods_share_their_sums_and_holdings() -> None:
    base = json.loads((SEVEN / "pods.json").read_text())["items"][0]
    pods = []
    for number, node in enumerate(("node-a", "node-b", "node-c", "node-c")):
        pod = copy.deepcopy(base)
        pod["metadata"]["name"] = f"replica-{number}"
        pod["spec"]["nodeName"] = node
        pod["spec"]["containers"] = [{"name": "a", "resources": {"requests": {
            "cpu": "1", "nvidia.com/gpu": "2"}}}]
        pods.append(pod)
    store = PodStore()
    kept = store.slim.kept_page(PODS, as_page(pods))
    assert kept is not None
    store.replace(kept[1])
    _, requested, holdings = store.by_node_view()
    namespace = base["metadata"]["namespace"]
    assert holdings["node-a"] == {namespace: {"nvidia.com/gpu": (2, 1)}}
    assert holdings["node-c"] == {namespace: {"nvidia.com/gpu": (4, 2)}}
    assert requested["node-c"]["nvidia.com/gpu"] == 2 * requested["node-a"]["nvidia.com/gpu"]
    assert holdings["node-b"] is holdings["node-a"]
    assert requested["node-b"] is requested["node-a"]


# (field path, value; None: the field is left out) a pod may differ in from the one before it
NEXT_POD_CHANGES = {
    "unbound": (("spec", "nodeName"), None),
    "another label": (("metadata", "labels"), {"app": "other"}),
    "another owner": (("metadata", "ownerReferences"),
                      [{"kind": "ReplicaSet", "name": "rs-2", "uid": "u-2"}]),
    "another request": (("spec", "containers"),
                        [{"name": "a", "resources": {"requests": {"nvidia.com/gpu": "2"}}}]),
    "a device annotation": (("metadata", "annotations"), {
        "hami.io/vgpu-devices-allocated": "GPU-a00c0de,NVIDIA,20000,100:;"}),
}


@pytest.mark.parametrize("label", sorted(NEXT_POD_CHANGES))
def test_a_pod_unlike_the_one_before_it_in_one_field_keeps_its_own(label: str) -> None:
    pods = replicas(4)
    with_field(pods[2], *NEXT_POD_CHANGES[label])
    kept = PodStore().slim.kept_page(PODS, as_page(pods))
    assert kept is not None
    assert kept[1] == whole(as_page(pods))
    assert kept[1][2] != kept[1][1]


@pytest.mark.parametrize("resource", [PODS, NODES], ids=["pods", "nodes"])
def test_a_page_is_let_go_once_its_items_are_kept(resource: Resource) -> None:
    page = as_page(json.loads((SEVEN / f"{resource.plural}.json").read_text())["items"])
    held = sys.getrefcount(page)
    kept = (PodStore() if resource is PODS else NodeStore()).slim.kept_page(resource, page)
    assert kept is not None and kept[1]
    assert sys.getrefcount(page) == held  # no slice of it kept (each holds the page)


# (field path, value; None: the field is left out) the decoder's types may not expect
ODD_FIELDS = {
    "no metadata": (("metadata",), None), "no spec": (("spec",), None),
    "no status": (("status",), None), "spec null": (("spec",), "null"),
    "metadata null": (("metadata",), "null"), "status null": (("status",), "null"),
    "status a string": (("status",), "Running"),
    "no startTime": (("status", "startTime"), None),
    "labels a list": (("metadata", "labels"), ["a"]),
    "annotations a list": (("metadata", "annotations"), ["hami.io/x"]),
    "annotations a string": (("metadata", "annotations"), "hami.io/x"),
    "containers a string": (("spec", "containers"), "train"),
    "resources a string": (("spec", "containers"), [{"name": "a", "resources": "4"}]),
    "requests a list": (("spec", "containers"), [{"name": "a", "resources": {"requests": []}}]),
    "initContainers a number": (("spec", "initContainers"), 7),
    "initContainers of strings": (("spec", "initContainers"), ["setup"]),
    "phase a number": (("status", "phase"), 3),
    "startTime a number": (("status", "startTime"), 5),
    "conditions an object": (("status", "conditions"), {"type": "PodScheduled"}),
    "conditions of strings": (("status", "conditions"), ["PodScheduled"]),
    "nodeName a number": (("spec", "nodeName"), 5),
    "name a number": (("metadata", "name"), 5),
    "namespace null": (("metadata", "namespace"), "null"),
}


def with_field(obj: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    """The object with the field at ``path`` set to ``value`` ("null": JSON null; None: the
    field left out)."""
    target: Any = obj
    for key in path[:-1]:
        target = target[key]
    if value is None:
        target.pop(path[-1], None)
    else:
        target[path[-1]] = None if value == "null" else value
    return obj


def odd_pod(label: str) -> dict[str, Any]:
    pod = copy.deepcopy(json.loads((SEVEN / "pods.json").read_text())["items"][0])
    pod["metadata"]["name"] = f"odd-{sorted(ODD_FIELDS).index(label):02d}"
    return with_field(pod, *ODD_FIELDS[label])


@pytest.mark.parametrize("label", sorted(ODD_FIELDS))
def test_an_odd_pod_is_kept_as_the_whole_pod_is(label: str) -> None:
    page = as_page([odd_pod(label)])
    kept = PodStore().slim.kept_page(PODS, page)
    # None: not a page msgspec fits either way; the reader then cuts each whole pod
    assert (kept[1] if kept is not None else whole(page)) == whole(page)


def test_a_page_not_json_is_left_to_the_reader() -> None:
    assert PodStore().slim.kept_page(PODS, b'{"items": [{"metadata": ') is None


# Shapes kube-apiserver never serves (every object it stores has metadata and a string name);
# the test API server keys its objects by them too. The decoders read them (above).
NEVER_SERVED = {"no metadata", "metadata null", "name a number"}


def test_the_watch_cache_keeps_odd_pods_as_whole_pods_and_answers(tmp_path: Path) -> None:
    odd = [odd_pod(label) for label in sorted(set(ODD_FIELDS) - NEVER_SERVED)]
    with FakeKubeAPI(SEVEN) as api:
        for pod in odd:
            api.apply(pod)
        client = load_api_client(str(api.kubeconfig(tmp_path / "kubeconfig")))
        source = WatchSource(api_client=client, retry_delay=0.3).start()
        try:
            assert source.wait_ready(10)
            cached = {pod["metadata"]["name"]: pod for pod in source.cache.pods.all()}
            shape = PodStore().slim
            served, _ = ClusterReader(client).list_all(
                PODS, field_selector=NON_TERMINATED, keep=lambda item: shape(item))
            expected = [pod for pod in served if pod["metadata"]["name"].startswith("odd-")]
            assert len(expected) == len(odd)
            assert [cached[pod["metadata"]["name"]] for pod in expected] == expected
            assert source.triage(PodRef("research", "full")).cause == "exhausted"
        finally:
            source.stop()


def pool(count: int) -> list[dict[str, Any]]:
    """``count`` nodes of one pool, gpu-0, gpu-1, ..., each with its own heartbeats."""
    base = json.loads((SEVEN / "nodes.json").read_text())["items"][0]
    made = []
    for number in range(count):
        node = copy.deepcopy(base)
        node["metadata"]["name"] = node["metadata"]["labels"]["kubernetes.io/hostname"] = \
            f"gpu-{number}"
        for condition in node["status"]["conditions"]:
            condition["lastHeartbeatTime"] = f"2026-11-30T12:5{number}:00Z"
        made.append(node)
    return made


def test_the_nodes_of_a_pool_share_their_parts_but_not_their_labels() -> None:
    nodes = pool(3)
    kept = NodeStore().slim.kept_page(NODES, as_page(nodes))
    assert kept is not None
    first, *others = kept[1]
    for other in others:
        for field in ("capacity", "allocatable", "conditions"):
            assert other["status"][field] is first["status"][field]
        assert other["spec"] is first["spec"]
        assert other["metadata"]["labels"] is not first["metadata"]["labels"]
    assert [node["metadata"]["labels"]["kubernetes.io/hostname"] for node in kept[1]] == \
        ["gpu-0", "gpu-1", "gpu-2"]
    assert kept[1] == whole(as_page(nodes), NODES)


def test_the_nodes_of_a_pool_share_their_resources_row_a_node_unlike_them_has_its_own() -> None:
    nodes = pool(4)
    nodes[2]["status"]["allocatable"]["cpu"] = "31500m"  # the kubelet reserves more there
    store = NodeStore()
    kept = store.slim.kept_page(NODES, as_page(nodes))
    assert kept is not None
    store.replace(kept[1][:3])
    store.upsert(nodes[3])  # a node an event brings joins its pool's row too
    rows = store.view()[1]
    assert [row.name for row in rows] == ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]
    assert rows == tuple(node_info(row.raw) for row in rows)  # each its own node's
    for other in (rows[1], rows[3]):
        assert other.capacity is rows[0].capacity
        assert other.allocatable is rows[0].allocatable
    assert rows[2].allocatable["cpu"] == 31 != rows[0].allocatable["cpu"]
    assert rows[2].resources != rows[0].resources


ODD_NODE_FIELDS = {
    "no status": (("status",), None), "no spec": (("spec",), None),
    "status null": (("status",), "null"), "spec null": (("spec",), "null"),
    "labels a list": (("metadata", "labels"), ["a"]),
    "labels a string": (("metadata", "labels"), "pool=a100"),
    "annotations a list": (("metadata", "annotations"), ["hami.io/x"]),
    "taints a string": (("spec", "taints"), "gpu"),
    "taints of strings": (("spec", "taints"), ["dedicated=llm-team:NoSchedule"]),
    "allocatable a list": (("status", "allocatable"), ["nvidia.com/gpu"]),
    "capacity null": (("status", "capacity"), "null"),
    "conditions an object": (("status", "conditions"), {"type": "Ready"}),
    "conditions of strings": (("status", "conditions"), ["Ready"]),
    "a condition's status a number": (("status", "conditions", 0, "status"), 1),
    "status a list": (("status",), ["Ready"]),
}


@pytest.mark.parametrize("label", sorted(ODD_NODE_FIELDS))
def test_an_odd_node_is_kept_as_the_whole_node_is(label: str) -> None:
    node = copy.deepcopy(json.loads((SEVEN / "nodes.json").read_text())["items"][0])
    page = as_page([with_field(node, *ODD_NODE_FIELDS[label])])
    kept = NodeStore().slim.kept_page(NODES, page)
    # None: not a page msgspec fits either way; the reader then cuts each whole node
    assert (kept[1] if kept is not None else whole(page, NODES)) == whole(page, NODES)
