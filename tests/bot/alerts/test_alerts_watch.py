"""The stuck-pod watch end to end: recorded cluster → triage → posts in a local Slack Web API,
claims in a real SQLite store shared by restarts and replicas, a local webhook receiver."""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from slack_bolt import BoltRequest
from slack_sdk import WebClient

from bot.slack.app import bolt_app
from tests.alertkit import (
    CREATED,
    TRAINER_PODS,
    Counted,
    Harness,
    WebhookReceiver,
    harness,
    only_pods,
    settings,
    seven_states_with_trainer,
)
from tests.conftest import find, load_lists
from tests.slackfake import message_event
from triage.refs import PodRef

NODES_ROUTE = {"causes": ["allocatable-zero", "no-gpu-node", "node-runtime-error"],
               "channel": "C0NODES", "mention": "<!subteam^S0NODES>"}
BASE = {"alerts": {"pending_after": "10m", "channel": "C0ALERTS"}, "routes": [NODES_ROUTE]}


@pytest.fixture
def broken_only(database_url: str) -> Iterator[Harness]:
    """One stuck pod: research/broken-node (allocatable-zero), and the bound pods; the store
    on SQLite and on PostgreSQL."""
    yield from harness(database_url, only_pods(seven_states_with_trainer(), {"broken-node"}))


@pytest.fixture
def trainer_only(tmp_path: Path) -> Iterator[Harness]:
    """Deployment research/trainer with 3 stuck replicas, and the bound pods."""
    yield from harness(tmp_path, only_pods(seven_states_with_trainer(), set(TRAINER_PODS)))


def texts(posts: list[dict[str, Any]]) -> list[str]:
    return [post["text"] for post in posts]


def test_not_posted_before_the_threshold(broken_only: Harness) -> None:
    broken_only.clock.now = CREATED + timedelta(minutes=9, seconds=59)
    replica = broken_only.replica(settings(BASE))
    assert replica.watch.run_once() == 0
    broken_only.slack.settle(0.1)
    assert broken_only.posts() == []


def test_posted_once_after_the_threshold_to_the_route_with_its_mention(
        broken_only: Harness) -> None:
    counted = Counted()
    replica = broken_only.replica(settings(BASE))
    replica.watch.run_once()
    [post] = broken_only.posts()
    assert post["channel"] == "C0NODES"
    assert post["text"].startswith("<!subteam^S0NODES> *research/broken-node* asks for GPUs "
                                   "and is not scheduled after 11 min.")
    assert "allocatable-zero" in post["text"]
    # later rounds, also once the recheck is due: nothing new, nothing posted
    broken_only.clock.now += timedelta(minutes=6)
    replica.watch.run_once()
    broken_only.clock.now += timedelta(minutes=6)
    replica.watch.run_once()
    assert len(broken_only.posts()) == 1
    assert counted("gpuwhy_alert_repeats_suppressed") == 2
    assert counted("gpuwhy_alert_posts", kind="root") == 1


def test_not_again_after_a_restart_or_by_a_second_replica(broken_only: Harness) -> None:
    first = broken_only.replica(settings(BASE))
    first.watch.run_once()
    first.close()
    broken_only.replicas.remove(first)
    restarted = broken_only.replica(settings(BASE))
    other = broken_only.replica(settings(BASE))
    counted = Counted()
    restarted.watch.run_once()
    other.watch.run_once()
    assert len(broken_only.posts()) == 1
    assert counted("gpuwhy_alert_repeats_suppressed") == 2


def test_two_replicas_racing_post_once(broken_only: Harness) -> None:
    replicas = [broken_only.replica(settings(BASE)) for _ in range(4)]
    threads = [threading.Thread(target=r.watch.run_once) for r in replicas]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(broken_only.posts()) == 1


def test_a_deployments_three_stuck_pods_are_one_post_that_says_three(
        trainer_only: Harness) -> None:
    replica = trainer_only.replica(settings(BASE))
    assert replica.watch.run_once() == 1  # one triage for the workload, not one per pod
    [post] = trainer_only.posts()
    assert "*3 pods of Deployment research/trainer* ask for GPUs and are stuck" in post["text"]
    assert (f"allocatable-zero — research/{TRAINER_PODS[0]} (Deployment)" in post["text"])


def test_a_cause_change_is_one_reply_in_the_first_posts_thread(broken_only: Harness) -> None:
    replica = broken_only.replica(settings(BASE))
    replica.watch.run_once()
    [root] = broken_only.slack.calls_to("chat.postMessage")
    # the node's device plugin comes back, but its 4 GPUs are taken: now exhausted
    node = find(broken_only.cluster.lists["nodes"], "gpu-v100-broken")
    node["status"]["allocatable"]["nvidia.com/gpu"] = "4"
    holder = copy.deepcopy(find(broken_only.cluster.lists["pods"], "train-a", "ml"))
    holder["metadata"].update(name="holder", uid="uid-holder")
    holder["spec"]["nodeName"] = "gpu-v100-broken"
    holder["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "4"
    holder["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "4"
    broken_only.cluster.lists["pods"].append(holder)
    broken_only.clock.now += timedelta(minutes=6)
    replica.watch.run_once()
    broken_only.clock.now += timedelta(minutes=6)
    replica.watch.run_once()
    replies = broken_only.posts(root=False)
    assert len(replies) == 1 and len(broken_only.posts(root=True)) == 1
    assert replies[0]["thread_ts"] == root.answer["ts"]
    assert replies[0]["channel"] == "C0NODES"  # the first post's thread, whatever the route
    assert replies[0]["text"].startswith("The cause changed: `allocatable-zero` → `exhausted`.")


def test_a_namespace_filter_excludes(broken_only: Harness) -> None:
    ml_only = {**NODES_ROUTE, "namespaces": ["ml"]}
    replica = broken_only.replica(settings({**BASE, "routes": [ml_only]}))
    replica.watch.run_once()
    [post] = broken_only.posts()
    assert post["channel"] == "C0ALERTS"  # research is not ml: the default channel
    assert "subteam" not in post["text"]


def test_without_a_route_or_default_channel_nothing_is_posted(broken_only: Harness) -> None:
    replica = broken_only.replica(settings({"routes": [{"causes": ["exhausted"],
                                                        "channel": "C0CAP"}]}))
    replica.watch.run_once()
    broken_only.slack.settle(0.1)
    assert broken_only.posts() == []


def test_the_webhook_gets_the_verdict_json_and_retries_on_500(broken_only: Harness) -> None:
    receiver = WebhookReceiver()
    receiver.statuses = [500, 500]
    route = {**NODES_ROUTE, "webhook": receiver.url,
             "webhook_header": "Authorization: Bearer ${NODE_HOOK_TOKEN}"}
    data = {"alerts": {**BASE["alerts"], "webhook_backoff": "1s"}, "routes": [route]}
    replica = broken_only.replica(settings(data), environ={"NODE_HOOK_TOKEN": "s3cret"})
    counted = Counted()
    try:
        replica.watch.run_once()
        calls = receiver.wait_for(3)
        replica.poster.close()  # waits for the delivery to be counted
        headers, body = calls[-1]
        assert headers["Authorization"] == "Bearer s3cret"
        assert body["ref"] == "research/broken-node" and body["cause"] == "allocatable-zero"
        assert body == calls[0][1]
        assert body == broken_only.cluster.triage(PodRef("research", "broken-node")).to_dict()
        assert counted("gpuwhy_webhook_deliveries", result="delivered") == 1
    finally:
        receiver.close()


def test_the_rate_limit_holds_and_ends_in_one_summary(tmp_path: Path) -> None:
    stuck = {"broken-node", "no-plugin", "full", "big", "tainted", "wrong-pool"}
    for made in harness(tmp_path, only_pods(seven_states_with_trainer(), stuck)):
        data = {"alerts": {"channel": "C0ALERTS", "max_posts_per_hour": 2}}
        replica = made.replica(settings(data))
        counted = Counted()
        replica.watch.run_once()
        posts = made.posts("C0ALERTS")
        answers = [p for p in posts if "gpuwhy posted" not in p["text"]]
        summaries = [p for p in posts if "gpuwhy posted" in p["text"]]
        assert len(answers) == 2 and len(summaries) == 1
        assert "held back for now" in summaries[0]["text"]
        assert counted("gpuwhy_alert_posts_rate_limited", channel="C0ALERTS") == 4
        assert counted("gpuwhy_alert_posts", kind="summary") == 1
        # the next round in the same hour: still held back, no second summary
        made.clock.now += timedelta(minutes=6)
        replica.watch.run_once()
        assert len(made.posts("C0ALERTS")) == 3
        # an hour later the held-back answers follow, two at a time
        made.clock.now += timedelta(minutes=61)
        replica.watch.run_once()
        assert len([p for p in made.posts("C0ALERTS") if "gpuwhy posted" not in p["text"]]) == 4


def test_pod_started_or_gone_is_one_line_in_the_thread(trainer_only: Harness) -> None:
    replica = trainer_only.replica(settings(BASE))
    replica.watch.run_once()
    [root] = trainer_only.slack.calls_to("chat.postMessage")
    pods = trainer_only.cluster.lists["pods"]
    first, second, third = (find(pods, name, "research") for name in TRAINER_PODS)
    first["spec"]["nodeName"], first["status"]["phase"] = "gpu-a100-1", "Running"
    replica.watch.run_once()
    assert trainer_only.posts(root=False) == []  # two are still stuck
    second["spec"]["nodeName"], second["status"]["phase"] = "gpu-a100-1", "Running"
    pods.remove(third)
    replica.watch.run_once()
    replica.watch.run_once()
    [line] = trainer_only.posts(root=False)
    assert line["thread_ts"] == root.answer["ts"]
    assert line["text"] == "▶️ All 3 pods are running or gone: 2 running, 1 gone."


def test_show_devices_works_in_the_posts_thread(broken_only: Harness) -> None:
    replica = broken_only.replica(settings(BASE))
    replica.watch.run_once()
    [root] = broken_only.slack.calls_to("chat.postMessage")
    # a restart: the answer is found in the store, not in memory
    replica.close()
    broken_only.replicas.remove(replica)
    fresh = broken_only.replica(settings(BASE))
    app = bolt_app(fresh.state, WebClient(token="xoxb-test", base_url=broken_only.slack.api_url))
    event = message_event("show devices", channel="C0NODES", thread_ts=root.answer["ts"],
                          event_id="Ev1")
    response = app.dispatch(BoltRequest(body=json.dumps(event), mode="socket_mode"))
    assert response.status == 200
    [_, reply] = broken_only.slack.wait_for("chat.postMessage", 2)
    assert reply.params["thread_ts"] == root.answer["ts"]
    assert reply.params["text"].startswith("Devices for allocatable-zero — research/broken-node")
    assert "gpu-v100-broken" in json.dumps(reply.params["blocks"])


# -- queued (Kueue has not admitted it): normal waiting, posted only when asked for ------------

NOTEBOOK_CREATED = datetime(2026, 12, 1, 20, 57, 29, tzinfo=UTC)  # team-b/notebook-gpu, gated


@pytest.fixture
def gated_notebook(tmp_path: Path) -> Iterator[Harness]:
    """kueue-basics with one stuck pod: team-b/notebook-gpu, gated by Kueue (queued)."""
    yield from harness(tmp_path, only_pods(load_lists("kueue-basics"), {"notebook-gpu"}))


def test_a_queued_pod_is_not_posted_to_the_default_channel(gated_notebook: Harness) -> None:
    gated_notebook.clock.now = NOTEBOOK_CREATED + timedelta(hours=3)
    replica = gated_notebook.replica(settings(BASE))
    assert replica.watch.run_once() == 1  # triaged: queued
    gated_notebook.slack.settle(0.1)
    assert gated_notebook.posts() == []


def test_a_route_naming_queued_posts_it(gated_notebook: Harness) -> None:
    gated_notebook.clock.now = NOTEBOOK_CREATED + timedelta(minutes=11)
    routes = [{"causes": ["queued"], "channel": "C0QUEUES"}, NODES_ROUTE]
    replica = gated_notebook.replica(settings({**BASE, "routes": routes}))
    assert replica.watch.run_once() == 1
    posts = gated_notebook.slack.wait_for("chat.postMessage", 1)
    assert [p.params["channel"] for p in posts] == ["C0QUEUES"]
    assert "queued" in posts[0].params["text"] and "team-b-cq" in posts[0].params["text"]


def test_a_queued_pod_waiting_past_queued_after_is_posted(gated_notebook: Harness) -> None:
    config = {**BASE, "alerts": {**BASE["alerts"], "queued_after": "2h"}}
    gated_notebook.clock.now = NOTEBOOK_CREATED + timedelta(hours=1)
    replica = gated_notebook.replica(settings(config))
    assert replica.watch.run_once() == 1
    gated_notebook.slack.settle(0.1)
    assert gated_notebook.posts() == []
    gated_notebook.clock.now = NOTEBOOK_CREATED + timedelta(hours=2, minutes=10)
    assert replica.watch.run_once() == 1  # recheck_every (5m) has passed
    posts = gated_notebook.slack.wait_for("chat.postMessage", 1)
    assert [p.params["channel"] for p in posts] == ["C0ALERTS"]
