"""gpuwhy's metrics move where the work happens: answers, triage time, Slack errors, store
writes, digest posts; readings of live objects appear only while registered."""

from __future__ import annotations

import gc
import time
import urllib.request
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from prometheus_client.parser import text_string_to_metric_families
from slack_sdk.errors import SlackApiError

from bot.cli.main import main
from bot.clusters.sources import LiveSource
from bot.digest import load_digest, post_once
from bot.slack.app import slack_client
from bot.store import RecordingStore, Store
from bot.web.metrics import READINGS, REGISTRY, CacheReading, page, resource_of
from scoring.verdict import Verdict
from tests.conftest import SCENARIOS
from tests.kubeapi import FakeKubeAPI, forbidden_status
from tests.slackfake import FakeSlack, FakeSocketMode, ServeProcess, command_body, http, sign
from triage.cluster import load_api_client
from triage.errors import ClusterError
from triage.refs import PodRef

SEVEN = str(SCENARIOS / "seven-states")
SECRET = "e3b0c44298fc1c149afbf4c8996fb924"


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_a_dump_read_is_timed_and_a_cli_answer_not_counted(
        capsys: pytest.CaptureFixture[str]) -> None:
    """The dump reader is timed (``gpuwhy serve --snapshot`` serves the figure); a one-shot
    ``gpuwhy triage`` has no /metrics, so its answer is not counted (see test_cli_startup:
    a live one does not load the metrics at all)."""
    answers = sample("gpuwhy_answers_total", cause="exhausted", source="cli")
    timed = sample("gpuwhy_triage_duration_seconds_count", reader="snapshot")
    assert main(["triage", "research/full", "--snapshot", SEVEN, "--no-record"]) == 0
    assert "exhausted" in capsys.readouterr().out
    assert sample("gpuwhy_triage_duration_seconds_count", reader="snapshot") == timed + 1
    assert sample("gpuwhy_answers_total", cause="exhausted", source="cli") == answers


def test_slack_errors_are_counted_by_method_and_error(slack: FakeSlack) -> None:
    client = slack_client({"SLACK_BOT_TOKEN": "xoxb-test", "SLACK_API_URL": slack.api_url})
    slack.fail("chat.postMessage", "channel_not_found")
    before = sample("gpuwhy_slack_api_errors_total", method="chat.postMessage",
                    error="channel_not_found")
    with pytest.raises(SlackApiError):
        client.chat_postMessage(channel="C0NOPE", text="hello")
    assert sample("gpuwhy_slack_api_errors_total", method="chat.postMessage",
                  error="channel_not_found") == before + 1
    client.auth_test()  # a call that works counts nothing
    assert sample("gpuwhy_slack_api_errors_total", method="auth.test",
                  error="channel_not_found") == 0


def test_slack_unreachable_is_counted() -> None:
    client = slack_client({"SLACK_BOT_TOKEN": "xoxb-test",
                           "SLACK_API_URL": "http://127.0.0.1:1/api/"})
    before = sample("gpuwhy_slack_api_errors_total", method="auth.test", error="unreachable")
    with pytest.raises(OSError):
        client.auth_test()
    assert sample("gpuwhy_slack_api_errors_total", method="auth.test",
                  error="unreachable") == before + 1


def test_refused_store_writes_are_counted(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'store.db'}")
    store.upgrade()
    with store.engine.begin() as connection:
        connection.exec_driver_sql("ALTER TABLE incidents RENAME TO incidents_away")
    recorder = RecordingStore(store)
    before = sample("gpuwhy_store_writes_failed_total")
    verdict = Verdict("ml/a", "exhausted", "wait")
    assert recorder.record(verdict, cluster="c", asked_by="U1", source="slack") is None
    assert recorder.flush() is False  # the retry fails too
    assert sample("gpuwhy_store_writes_failed_total") == before + 2
    with store.engine.begin() as connection:
        connection.exec_driver_sql("ALTER TABLE incidents_away RENAME TO incidents")
    assert recorder.flush() is True
    assert sample("gpuwhy_store_writes_failed_total") == before + 2
    store.close()


def test_digest_posts_are_counted_by_result(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'store.db'}")
    store.upgrade()
    utc = ZoneInfo("UTC")
    before = {result: sample("gpuwhy_digest_posts_total", result=result)
              for result in ("posted", "already-posted", "empty", "failed")}
    assert post_once(store, load_digest(store, datetime(2026, 11, 23, tzinfo=utc), utc), "C1",
                     lambda *_: pytest.fail("an empty digest is posted")) is False
    store.record(Verdict("ml/a", "exhausted", "wait"), cluster="prod", asked_by="U1",
                 source="slack", channel="C1", message_ts="1.1",
                 at=datetime(2026, 11, 25, tzinfo=utc))
    digest = load_digest(store, datetime(2026, 11, 23, tzinfo=utc), utc)

    def down(channel: str, text: str, blocks: object) -> None:
        raise ConnectionError("slack is down")

    with pytest.raises(ConnectionError):
        post_once(store, digest, "C1", down)
    assert post_once(store, digest, "C1", lambda *_: None) is True
    assert post_once(store, digest, "C1", lambda *_: None) is False
    after = {result: sample("gpuwhy_digest_posts_total", result=result) for result in before}
    assert {result: after[result] - before[result] for result in before} == {
        "posted": 1, "already-posted": 1, "empty": 1, "failed": 1}
    store.close()


def test_readings_appear_only_while_registered() -> None:
    assert sample("gpuwhy_watch_cache_age_seconds", cluster="prod") == 0
    READINGS.watch_caches(lambda: {"prod": CacheReading(12.5, {"nodes": 6, "pods": 40}),
                                   "lab": CacheReading(None, {"nodes": 0})})
    READINGS.incidents_waiting(lambda: 3)
    try:
        families = {family.name: family for family in
                    text_string_to_metric_families(page().decode())}
        assert [(s.labels, s.value) for s in families["gpuwhy_watch_cache_age_seconds"].samples
                ] == [({"cluster": "prod"}, 12.5)]  # lab never heard from its API server
        assert {(s.labels["cluster"], s.labels["kind"]): s.value
                for s in families["gpuwhy_watch_cache_objects"].samples} == {
            ("lab", "nodes"): 0, ("prod", "nodes"): 6, ("prod", "pods"): 40}
        assert families["gpuwhy_incidents_waiting"].samples[0].value == 3
    finally:
        READINGS.watch_caches(None)
        READINGS.incidents_waiting(None)
    names = {family.name for family in text_string_to_metric_families(page().decode())}
    assert "gpuwhy_watch_cache_age_seconds" not in names
    assert {"gpuwhy_answers", "gpuwhy_triage_duration_seconds",
            "gpuwhy_kubernetes_api_requests", "gpuwhy_slack_api_errors",
            "gpuwhy_store_writes_failed", "gpuwhy_digest_posts"} <= names


@pytest.mark.parametrize(("url", "resource"), [
    ("https://k:6443/api/v1/nodes?limit=500", "nodes"),
    ("https://k:6443/api/v1/namespaces/ml/pods/train-0", "pods"),
    ("https://k:6443/api/v1/namespaces/ml/events", "events"),
    ("https://k:6443/api/v1/namespaces", "namespaces"),
    ("https://k:6443/apis/apps/v1/namespaces/ml/deployments/web", "deployments.apps"),
    ("https://k:6443/apis/resource.k8s.io/v1/resourceslices", "resourceslices.resource.k8s.io"),
    ("https://k:6443/version", "/version"),
])
def test_requests_are_named_by_resource(url: str, resource: str) -> None:
    assert resource_of(url) == resource


def test_kubernetes_requests_are_counted_by_resource_and_code(tmp_path: Path) -> None:
    with FakeKubeAPI(SEVEN) as api:
        client = load_api_client(str(api.kubeconfig(tmp_path / "kubeconfig")))
        source = LiveSource(api_client=client)
        assert LiveSource(api_client=source.api_client).api_client is client  # counted once
        before = {(r, c): sample("gpuwhy_kubernetes_api_requests_total", resource=r, code=c)
                  for r in ("pods", "nodes") for c in ("200", "403", "0")}
        source.triage(PodRef("research", "full"))
        api.inject("status", "/api/v1/nodes", status=forbidden_status("list", "nodes"))
        with pytest.raises(ClusterError):
            source.triage(PodRef("research", "full"))
        api.inject("reset", "/api/v1/nodes")
        with pytest.raises(ClusterError):
            source.triage(PodRef("research", "full"))

        def moved(resource: str, code: str) -> float:
            return sample("gpuwhy_kubernetes_api_requests_total", resource=resource,
                          code=code) - before[(resource, code)]

        # Each triage gets the pod and lists the pods of its node(s); the nodes list fails
        # the second (403) and third (reset: no status) time.
        assert moved("nodes", "200") == 1 and moved("nodes", "403") == 1
        assert moved("nodes", "0") == 1 and moved("pods", "200") >= 3


def test_a_one_shot_source_counts_nothing_and_freezes_what_it_read(tmp_path: Path) -> None:
    """`gpuwhy triage`'s source: no metrics move, and the objects its read made are frozen
    (the process ends next) instead of walked by a collection."""
    with FakeKubeAPI(SEVEN) as api:
        client = load_api_client(str(api.kubeconfig(tmp_path / "kubeconfig")))
        source = LiveSource(api_client=client, one_shot=True)
        assert source.api_client is client  # not wrapped for counting
        requests = sample("gpuwhy_kubernetes_api_requests_total", resource="pods", code="200")
        timed = sample("gpuwhy_triage_duration_seconds_count", reader="live")
        frozen = gc.get_freeze_count()
        assert source.triage(PodRef("research", "full")).cause == "exhausted"
        assert api.count() >= 3  # it did read the cluster
    assert sample("gpuwhy_kubernetes_api_requests_total", resource="pods", code="200") == requests
    assert sample("gpuwhy_triage_duration_seconds_count", reader="live") == timed
    assert gc.get_freeze_count() > frozen


def test_metrics_move_after_a_slash_command(tmp_path: Path, slack: FakeSlack) -> None:
    """`gpuwhy serve` on a live cluster: /metrics on its port, counters moving."""
    with FakeKubeAPI(SEVEN) as api:
        served = ServeProcess(["--kubeconfig", str(api.kubeconfig(tmp_path / "kubeconfig"))], {
            "SLACK_BOT_TOKEN": "xoxb-test", "SLACK_SIGNING_SECRET": SECRET,
            "SLACK_API_URL": slack.api_url,
            "GPUWHY_DATABASE_URL": f"sqlite:///{tmp_path / 'gpuwhy.db'}"}, verbose=True)
        try:
            port = served.port()
            wait_ready(port)
            before = scrape(port)
            cluster = ("cluster", api.url)  # no configured name: the API server's URL
            assert before[("gpuwhy_watch_cache_objects", (cluster, ("kind", "nodes")))] == 6
            assert before[("gpuwhy_watch_cache_age_seconds", (cluster,))] < 120
            assert before[("gpuwhy_incidents_waiting", ())] == 0
            assert ("gpuwhy_answers_total", (("cause", "exhausted"), ("source", "slack"))) \
                not in before
            body = command_body("research/full", response_url=slack.response_url())
            signed = {"Content-Type": "application/x-www-form-urlencoded", **sign(SECRET, body)}
            assert http(port, "/slack/events", body, signed) == (200, "")
            [post] = slack.wait_for("chat.postMessage")
            served.wait_remembered(post.answer["ts"])
            after = scrape(port)
        finally:
            assert served.stop() == 0
    assert after[("gpuwhy_answers_total", (("cause", "exhausted"), ("source", "slack")))] == 1
    assert after[("gpuwhy_triage_duration_seconds_count", (("reader", "watch"),))] == 1
    pods = ("gpuwhy_kubernetes_api_requests_total", (("code", "200"), ("resource", "pods")))
    assert after[pods] > before[pods]  # the asked pod is read afresh


def test_socket_mode_serves_metrics_on_its_port(tmp_path: Path) -> None:
    fake = FakeSlack()
    fake.socket = FakeSocketMode()
    served = ServeProcess(["--snapshot", SEVEN], {
        "SLACK_BOT_TOKEN": "xoxb-test", "SLACK_APP_TOKEN": "xapp-test",
        "SLACK_API_URL": fake.api_url,
        "GPUWHY_DATABASE_URL": f"sqlite:///{tmp_path / 'gpuwhy.db'}"})
    try:
        port = served.port()
        request = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10)
        assert request.headers["Content-Type"].startswith("text/plain; version=")
        names = {f.name for f in text_string_to_metric_families(request.read().decode())}
        assert {"gpuwhy_answers", "gpuwhy_incidents_waiting"} <= names
        assert http(port, "/slack/events", "{}")[0] == 404  # Slack talks over the socket
    finally:
        assert served.stop() == 0
        fake.close()


def wait_ready(port: int, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while http(port, "/readyz")[0] != 200:
        assert time.monotonic() < deadline, "serve never became ready"
        time.sleep(0.05)


def scrape(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    status, text = http(port, "/metrics")
    assert status == 200
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}
