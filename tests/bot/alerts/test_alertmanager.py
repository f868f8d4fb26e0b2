"""Alertmanager's webhook (payload version 4, as its documentation gives it): firing alerts
that name a pod or workload get one enriched post, resolved ones a line in its thread,
unmappable ones are acknowledged and counted; no credentials, no entry."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from bot.alerts.alertmanager import PayloadError, parse_payload
from bot.alerts.receiver import AlertmanagerReceiver, AlertTarget, Credentials
from bot.web.server import Request
from tests.alertkit import Counted, Harness, Replica, harness, settings, seven_states_with_trainer
from tests.paths import FIXTURES as ALL_FIXTURES
from triage.refs import PodRef

FIXTURES = ALL_FIXTURES / "alertmanager"
FIRING = (FIXTURES / "firing.json").read_bytes()
RESOLVED = (FIXTURES / "resolved.json").read_bytes()
TOKEN = "am-token-123"
ROUTES = {"alerts": {"channel": "C0ALERTS"},
          "routes": [{"causes": ["allocatable-zero"], "channel": "C0NODES",
                      "mention": "<!subteam^S0NODES>"}]}


def test_the_documented_payload_is_read() -> None:
    pod, job, disk = parse_payload(FIRING)
    assert (pod.status, pod.name, pod.ref, pod.kind) == (
        "firing", "KubePodNotReady", PodRef("research", "broken-node"), "Pod")
    assert pod.summary == "Pod has been in a non-ready state for more than 15 minutes."
    assert pod.key == "3b1f6d2c9a0e7f41/2026-11-30T13:05:45.123Z"
    assert (job.ref, job.kind) == (PodRef("ml", "finetune"), "Job")
    assert disk.ref is None  # a node's disk names no pod
    [resolved] = parse_payload(RESOLVED)
    assert resolved.status == "resolved" and resolved.key == pod.key


@pytest.mark.parametrize(("labels", "ref"), [
    ({"namespace": "lab", "deployment": "web"}, PodRef("lab", "web")),
    ({"namespace": "lab", "statefulset": "db"}, PodRef("lab", "db")),
    ({"namespace": "lab", "pod": "db-1", "statefulset": "db"}, PodRef("lab", "db-1")),
    ({"pod": "db-1"}, None),  # no namespace
    ({"namespace": "lab", "pod": "Not_A_Name"}, None),
    ({"namespace": "lab", "container": "x"}, None),
])
def test_labels_that_name_a_pod_or_workload(labels: dict[str, str], ref: PodRef | None) -> None:
    body = {"version": "4", "alerts": [{"status": "firing", "labels": labels}]}
    [alert] = parse_payload(json.dumps(body).encode())
    assert alert.ref == ref
    assert alert.fingerprint  # made from the labels when the sender gives none


@pytest.mark.parametrize(("body", "message"), [
    (b"not json", "the body is not JSON"),
    (b"\xff\xfe", "the body is not JSON"),
    (b"[]", "the body must be a JSON object"),
    (b'{"version": "3", "alerts": []}', "payload version '3'; gpuwhy reads version 4"),
    (b'{"version": "4"}', "alerts must be a list"),
    (b'{"version": "4", "alerts": [1]}', "each entry of alerts must be an object"),
    (b'{"version": "4", "alerts": [{"status": "pending"}]}', "alert status must be"),
    (b'{"version": "4", "alerts": [{"status": "firing", "labels": []}]}', "labels must be"),
])
def test_bad_payloads_are_one_line(body: bytes, message: str) -> None:
    with pytest.raises(PayloadError, match="^" + message.replace("(", r"\(")):
        parse_payload(body)


@pytest.mark.parametrize(("environ", "header", "allowed"), [
    ({"GPUWHY_ALERTMANAGER_TOKEN": TOKEN}, f"Bearer {TOKEN}", True),
    ({"GPUWHY_ALERTMANAGER_TOKEN": TOKEN}, f"bearer  {TOKEN} ", True),
    ({"GPUWHY_ALERTMANAGER_TOKEN": TOKEN}, "Bearer wrong", False),
    ({"GPUWHY_ALERTMANAGER_TOKEN": TOKEN}, None, False),
    ({"GPUWHY_ALERTMANAGER_TOKEN": TOKEN}, "Basic " + base64.b64encode(b"a:b").decode(), False),
    ({"GPUWHY_ALERTMANAGER_PASSWORD": "pw"},
     "Basic " + base64.b64encode(b"alertmanager:pw").decode(), True),
    ({"GPUWHY_ALERTMANAGER_PASSWORD": "pw", "GPUWHY_ALERTMANAGER_USERNAME": "am"},
     "Basic " + base64.b64encode(b"alertmanager:pw").decode(), False),
    ({"GPUWHY_ALERTMANAGER_PASSWORD": "pw"}, "Basic !!!", False),
    ({"GPUWHY_ALERTMANAGER_PASSWORD": "pw"}, "Bearer pw", False),
    ({}, "Bearer ", False),  # nothing configured: nobody gets in
])
def test_credentials(environ: dict[str, str], header: str | None, allowed: bool) -> None:
    assert Credentials(environ).allow(header) is allowed


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Harness]:
    yield from harness(tmp_path, seven_states_with_trainer())


def receiver(made: Harness, replica: Replica) -> tuple[AlertmanagerReceiver, ThreadPoolExecutor]:
    workers = ThreadPoolExecutor(2)
    targets = {"test-cluster": AlertTarget(replica.poster, made.cluster.triage)}
    return AlertmanagerReceiver(Credentials({"GPUWHY_ALERTMANAGER_TOKEN": TOKEN}), targets,
                                "test-cluster", workers, made.clock), workers


def test_firing_gives_one_enriched_post_and_resolved_one_thread_line(cluster: Harness) -> None:
    replica = cluster.replica(settings(ROUTES))
    am, workers = receiver(cluster, replica)
    counted = Counted()
    assert am.handle(f"Bearer {TOKEN}", FIRING) == (200, "3 alerts received")
    assert am.handle(f"Bearer {TOKEN}", FIRING) == (200, "3 alerts received")  # repeat_interval
    workers.shutdown(wait=True)
    posts = cluster.posts(root=True)
    by_channel = {post["channel"]: post for post in posts}
    assert len(posts) == 2 and set(by_channel) == {"C0NODES", "C0ALERTS"}
    pod_post = by_channel["C0NODES"]
    assert pod_post["text"].startswith(
        "<!subteam^S0NODES> 🔔 *KubePodNotReady*: Pod has been in a non-ready state for more "
        "than 15 minutes.\n_gpuwhy's answer:_\n🩺 allocatable-zero — research/broken-node")
    assert "quota-exceeded — ml/finetune (Job)" in by_channel["C0ALERTS"]["text"]
    assert counted("gpuwhy_alertmanager_alerts", outcome="unmapped") == 2
    assert counted("gpuwhy_alertmanager_alerts", outcome="firing") == 4
    assert counted("gpuwhy_alertmanager_alerts", outcome="repeated") == 2

    am, workers = receiver(cluster, replica)
    assert am.handle(f"Bearer {TOKEN}", RESOLVED) == (200, "1 alerts received")
    assert am.handle(f"Bearer {TOKEN}", RESOLVED) == (200, "1 alerts received")
    workers.shutdown(wait=True)
    [line] = cluster.posts(root=False)
    [root] = [c for c in cluster.slack.calls_to("chat.postMessage")
              if c.params["channel"] == "C0NODES" and not c.params.get("thread_ts")]
    assert line["thread_ts"] == root.answer["ts"]
    assert line["text"] == "✅ Resolved: KubePodNotReady."


def test_without_the_token_401_and_nothing_happens(cluster: Harness) -> None:
    replica = cluster.replica(settings(ROUTES))
    am, workers = receiver(cluster, replica)
    assert am.handle(None, FIRING) == (401, "unauthorized")
    assert am.handle("Bearer nope", FIRING) == (401, "unauthorized")
    assert am.handle(None, b"garbage")[0] == 401  # the body is not even read
    assert am.handle(f"Bearer {TOKEN}", b"garbage") == (400, "the body is not JSON")
    workers.shutdown(wait=True)
    assert cluster.posts() == []


def _handled(am: AlertmanagerReceiver, workers: ThreadPoolExecutor, body: bytes) -> None:
    assert am.handle(f"Bearer {TOKEN}", body)[0] == 200
    workers.shutdown(wait=True)


def test_the_alerts_channel_sees_every_namespace_channels_does_not_limit(
        cluster: Harness) -> None:
    """As the README shows it: answers in C0SUPPORT for team-b only, alerts to C0ALERTS."""
    replica = cluster.replica(settings({"channels": {"C0SUPPORT": ["team-b"]},
                                        "alerts": {"channel": "C0ALERTS"}}))
    _handled(*receiver(cluster, replica), FIRING)
    posts = cluster.posts(root=True)
    assert [post["channel"] for post in posts] == ["C0ALERTS", "C0ALERTS"]
    assert any("allocatable-zero — research/broken-node" in post["text"] for post in posts)


def test_an_alerts_channel_channels_limits_says_why_it_posts_nothing(
        cluster: Harness, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("INFO", "bot.alerts.poster")
    replica = cluster.replica(settings({"channels": {"C0ALERTS": ["team-b"]},
                                        "alerts": {"channel": "C0ALERTS"}}))
    _handled(*receiver(cluster, replica), FIRING)
    assert cluster.posts() == []
    assert ("alert KubePodNotReady on research/broken-node (allocatable-zero): not posted: "
            "namespace research may not be posted to alerts.channel C0ALERTS (channels: limits "
            "it to team-b)") in caplog.messages
    assert not any("no route and no alerts.channel" in m for m in caplog.messages)


def test_a_resolve_with_an_earlier_start_closes_the_firing(cluster: Harness) -> None:
    """Alertmanager merged the alert with an older instance's: same fingerprint, earlier
    startsAt. The resolved line still goes into the firing's thread, and a repeat of the
    firing with that start is not a second post."""
    replica = cluster.replica(settings(ROUTES))
    _handled(*receiver(cluster, replica), FIRING)
    [root] = [c for c in cluster.slack.calls_to("chat.postMessage")
              if c.params["channel"] == "C0NODES"]
    earlier = RESOLVED.replace(b'"startsAt": "2026-11-30T13:05:45.123Z"',
                               b'"startsAt": "2026-11-30T12:58:02.000Z"')
    assert earlier != RESOLVED
    refired = FIRING.replace(b'"startsAt": "2026-11-30T13:05:45.123Z"',
                             b'"startsAt": "2026-11-30T12:58:02.000Z"')
    _handled(*receiver(cluster, replica), refired)
    assert len(cluster.posts(root=True)) == 2
    _handled(*receiver(cluster, replica), earlier)
    [line] = cluster.posts(root=False)
    assert line["thread_ts"] == root.answer["ts"]
    assert line["text"] == "✅ Resolved: KubePodNotReady."


def test_a_wrong_token_is_a_warning(cluster: Harness, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("INFO", "bot.alerts.receiver")
    am, workers = receiver(cluster, cluster.replica(settings(ROUTES)))
    request = Request("POST", "/alertmanager", "", {"authorization": "Bearer old-token"},
                      FIRING, "10.0.0.7")
    assert am.respond(request).status == 401
    workers.shutdown(wait=True)
    [record] = caplog.records
    assert record.levelname == "WARNING"
    assert record.getMessage() == (
        "alertmanager: refused a request from 10.0.0.7: wrong credentials "
        "(GPUWHY_ALERTMANAGER_TOKEN or GPUWHY_ALERTMANAGER_PASSWORD)")
