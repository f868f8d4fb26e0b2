"""The stuck-pod watch reading the watch cache of `gpuwhy serve` (tests/kubeapi.py behind the
real kubernetes client) and a dump directory: the same posts, and no cluster-wide request."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from slack_sdk import WebClient

from bot.alerts.poster import AlertPoster
from bot.alerts.store import AlertStore
from bot.alerts.stuck import stuck_groups
from bot.alerts.watch import StuckPodWatch
from bot.alerts.webhook import WebhookSender
from bot.clusters.sources import SnapshotSource, WatchSource
from bot.slack.listeners.state import BotState
from bot.store import Store
from tests.alertkit import settings
from tests.conftest import find, load_lists
from tests.kubeapi import FakeKubeAPI
from tests.paths import FIXTURES
from tests.slackfake import FakeSlack
from tests.triage.cluster.conftest import eventually, watch_source
from tests.triage.cluster.test_watch import CLUSTER_WIDE

SEVEN = FIXTURES / "scenarios" / "seven-states"
NOW = datetime(2026, 11, 30, 13, 30, tzinfo=UTC)
CONFIG = settings({
    "alerts": {"channel": "C0ALERTS"},
    "routes": [{"causes": ["allocatable-zero", "no-gpu-node"], "channel": "C0NODES",
                "mention": "<!subteam^S0NODES>"}]})


@pytest.fixture
def api() -> Iterator[FakeKubeAPI]:
    with FakeKubeAPI(SEVEN, bookmark_interval=0.05) as server:
        yield server


def watch_over(source: WatchSource | SnapshotSource, slack: FakeSlack,
               store: Store) -> tuple[StuckPodWatch, AlertPoster, BotState]:
    state = BotState(config=CONFIG, source=source, store=store, clock=lambda: NOW)
    client = WebClient(token="xoxb-test", base_url=slack.api_url)
    poster = AlertPoster(CONFIG, AlertStore(store, source.cluster), client, state.remember,
                         WebhookSender(CONFIG.alerts, {}))
    ready = source.ready if isinstance(source, WatchSource) else (lambda: True)
    return StuckPodWatch(CONFIG, poster, source.pods, ready, source.triage, lambda: NOW), \
        poster, state


def posted(slack: FakeSlack) -> list[tuple[str, str, str]]:
    """(channel, headline, cause line up to its colon) of each post."""
    found = []
    for call in slack.calls_to("chat.postMessage"):
        headline, answer = call.params["text"].split("\n")[:2]
        found.append((call.params["channel"], headline, answer.partition(":")[0]))
    return sorted(found)


def test_the_cache_and_the_dump_give_the_same_posts_and_no_cluster_wide_request(
        api: FakeKubeAPI, tmp_path: Path) -> None:
    results = []
    for name, source in (("dump", SnapshotSource(SEVEN)),
                         ("cache", watch_source(api, tmp_path).start())):
        slack = FakeSlack()
        store = Store(f"sqlite:///{tmp_path / f'{name}.db'}")
        store.upgrade()
        watch, poster, state = watch_over(source, slack, store)
        try:
            if isinstance(source, WatchSource):
                assert source.wait_ready(5)
                before = api.mark()
            assert watch.run_once() == 6  # six stuck pods, each its own workload
            if isinstance(source, WatchSource):
                wide = [r.path for r in api.requests[before:]
                        if r.path in CLUSTER_WIDE and r.query.get("watch") != "1"]
                assert wide == []
                assert api.count(before) == 6 * 2  # per pending pod: get it, list its events
                before = api.mark()
                assert watch.run_once() == 0  # nothing due: the cache alone is read
                assert api.count(before) == 0
            results.append(posted(slack))
        finally:
            poster.close()
            state.close()
            store.close()
            slack.close()
            if isinstance(source, WatchSource):
                source.stop()
    # The same posts; only the exhausted action differs, as every live read does: the cache
    # holds no finished pods to say they "hold nothing" (see README, The live cluster).
    dump, cache = results
    assert len(dump) == 6
    assert cache == dump
    assert ("C0NODES", "<!subteam^S0NODES> *research/broken-node* asks for GPUs and is not "
            "scheduled after 39 min.", "🩺 allocatable-zero — research/broken-node") in dump


def test_a_dra_pod_in_the_cache_is_watched(api: FakeKubeAPI, tmp_path: Path) -> None:
    pod = copy.deepcopy(find(load_lists("seven-states")["pods"], "ok", "research"))
    pod["metadata"].update(name="dra-job", uid="uid-dra-job")
    pod["metadata"].pop("resourceVersion", None)
    del pod["spec"]["nodeName"]
    pod["status"] = {"phase": "Pending"}
    del pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"]
    del pod["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"]
    pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]
    source = watch_source(api, tmp_path).start()
    try:
        assert source.wait_ready(5)
        api.apply(pod)
        eventually(lambda: any(p["metadata"]["name"] == "dra-job" for p in source.pods()))
        [cached] = [p for p in source.pods() if p["metadata"]["name"] == "dra-job"]
        assert cached["spec"]["resourceClaims"] == pod["spec"]["resourceClaims"]
        groups = stuck_groups(source.pods(), NOW, CONFIG.alerts.pending_after, CONFIG.triage)
        assert "Pod/research/dra-job" in {group.workload.key for group in groups}
    finally:
        source.stop()
