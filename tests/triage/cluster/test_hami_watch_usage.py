"""The watch cache keeps HAMi's per-node usage (PodStore.hami_usage_on): summed once from
the rows of a node's HAMi pods, shared by the triages until a pod event on that node."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from bot.clusters.sources import WatchSource
from scoring.hami import Usage
from tests.kubeapi import FakeKubeAPI
from tests.paths import FIXTURES
from tests.triage.cluster.conftest import eventually, ready_cache, ref_of
from triage.cache import PodStore

HAMI = FIXTURES / "scenarios" / "hami-sharing"
A100, T4 = "hami-a100-1", "hami-t4-1"


@pytest.fixture
def api() -> Iterator[FakeKubeAPI]:
    with FakeKubeAPI(HAMI, bookmark_interval=0.05) as server:
        yield server


@pytest.fixture
def cache(api: FakeKubeAPI, tmp_path: Path) -> Iterator[WatchSource]:
    with ready_cache(api, tmp_path) as source:
        yield source


def usage_on(source: WatchSource, node: str, ref: str = "hami/needs-40g") -> Mapping[str, Usage]:
    """HAMi's usage of the node as a triage of ``ref`` from the cache sees it."""
    snapshot = source.cache.snapshot_for(ref_of(ref))  # the Rows live as long as it does
    return snapshot.rows.hami_usage(node)


def holders(usage: Mapping[str, Usage]) -> list[str]:
    return sorted({holder for card in usage.values() for holder in card.holders})


def test_triages_with_no_event_between_share_a_nodes_usage(cache: WatchSource) -> None:
    first = usage_on(cache, A100)
    assert holders(first) == ["hami/llm-chat-0", "hami/llm-chat-1", "hami/trainer-lora"]
    assert usage_on(cache, A100) is first
    assert usage_on(cache, T4) is usage_on(cache, T4)
    assert cache.triage(ref_of("hami/needs-40g")).cause == "device-unfit"


def test_a_pod_event_gives_its_node_new_usage_and_leaves_the_others(
        api: FakeKubeAPI, cache: WatchSource) -> None:
    a100, t4 = usage_on(cache, A100), usage_on(cache, T4)
    relabelled = copy.deepcopy(api.get_object("Pod", "hami", "llm-chat-0"))
    relabelled["metadata"]["labels"] = {"app": "relabelled"}
    api.apply(relabelled)
    eventually(lambda: usage_on(cache, A100) is not a100)
    assert holders(usage_on(cache, A100)) == holders(a100)
    assert usage_on(cache, T4) is t4

    api.delete("Pod", "hami", "trainer-lora")
    eventually(lambda: holders(usage_on(cache, A100)) == ["hami/llm-chat-0", "hami/llm-chat-1"])
    assert usage_on(cache, T4) is t4


def test_a_node_a_fetched_pod_is_bound_to_sums_its_usage_for_that_triage(
        cache: WatchSource) -> None:
    kept = usage_on(cache, T4)
    # hami/placed is read fresh, and runs on the T4 node: its usage is summed with that copy
    fresh = usage_on(cache, T4, ref="hami/placed")
    assert fresh is not kept
    assert holders(fresh) == holders(kept) == ["hami/placed"]
    assert usage_on(cache, A100, ref="hami/placed") is usage_on(cache, A100)


def test_a_view_taken_before_an_event_gets_no_kept_usage() -> None:
    pods = json.loads((HAMI / "pods.json").read_text())["items"]
    store = PodStore()
    for pod in pods:
        store.upsert(pod)
    on_node = store.by_node_view()[0]
    kept = store.hami_usage_on(A100, on_node[A100])
    assert kept is not None and store.hami_usage_on(A100, on_node[A100]) is kept
    assert holders(kept) == ["hami/llm-chat-0", "hami/llm-chat-1", "hami/trainer-lora"]
    store.remove(next(p for p in pods if p["metadata"]["name"] == "trainer-lora"))
    # that view's A100 pods are not the cache's now: the triage sums its own
    assert store.hami_usage_on(A100, on_node[A100]) is None
    assert store.hami_usage_on(T4, on_node[T4]) is not None
    now = store.by_node_view()[0]
    assert holders(store.hami_usage_on(A100, now[A100]) or {}) == ["hami/llm-chat-0",
                                                                   "hami/llm-chat-1"]
