"""The alerts inside a real `gpuwhy serve` process: the stuck-pod watch posts from the dump,
POST /alertmanager takes Alertmanager's documented payload behind the token, and a webhook
header naming an unset variable stops serve at start with one line."""

from __future__ import annotations

import base64
import json
import re
import sqlite3
from pathlib import Path

import yaml

from tests.bot.web.test_serve import SEVEN_STATES, environment
from tests.paths import FIXTURES as ALL_FIXTURES
from tests.slackfake import FakeSlack, ServeProcess, http

FIXTURES = ALL_FIXTURES / "alertmanager"
TOKEN = "am-serve-token"
CONFIG = {
    "alerts": {"pending_after": "10m", "channel": "C0ALERTS", "check_every": "1s"},
    "routes": [{"causes": ["allocatable-zero", "no-gpu-node", "node-runtime-error"],
                "channel": "C0NODES", "mention": "<!subteam^S0NODES>"}],
}
# research/* in seven-states: six pods with no node, recorded a day before these tests' clock
STUCK = {"big", "broken-node", "full", "no-plugin", "tainted", "wrong-pool"}


def ref_of(text: str) -> str:
    found = re.search(r"— research/([a-z-]+)", text)
    assert found is not None, text
    return found.group(1)


def test_serve_posts_stuck_pods_and_enriches_alertmanager_alerts(tmp_path: Path,
                                                                slack: FakeSlack) -> None:
    config = tmp_path / "gpuwhy.yaml"
    config.write_text(yaml.safe_dump(CONFIG))
    env = environment(slack, tmp_path, GPUWHY_CONFIG=str(config),
                      GPUWHY_ALERTMANAGER_TOKEN=TOKEN)
    served = ServeProcess(["--snapshot", SEVEN_STATES], env)
    try:
        port = served.port()
        roots = slack.wait_for("chat.postMessage", len(STUCK))
        by_ref = {ref_of(call.params["text"]): call for call in roots}
        assert set(by_ref) == STUCK
        assert not any("· cluster *" in call.params["text"] for call in roots)  # the only one
        assert by_ref["broken-node"].params["channel"] == "C0NODES"
        assert by_ref["full"].params["channel"] == "C0ALERTS"

        firing = (FIXTURES / "firing.json").read_text()
        assert http(port, "/alertmanager", firing, {"Content-Type": "application/json"})[0] == 401
        wrong = {"Authorization": "Bearer nope"}
        assert http(port, "/alertmanager", firing, wrong)[0] == 401
        bearer = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
        assert http(port, "/alertmanager", firing, bearer) == (200, "3 alerts received\n")
        calls = slack.wait_for("chat.postMessage", len(STUCK) + 2)
        alert_posts = [c for c in calls[len(STUCK):] if "KubePodNotReady" in c.params["text"]
                       or "KubeJobNotCompleted" in c.params["text"]]
        assert len(alert_posts) == 2
        resolved = (FIXTURES / "resolved.json").read_text()
        assert http(port, "/alertmanager", resolved, bearer)[0] == 200
        line = slack.wait_for("chat.postMessage", len(STUCK) + 3)[-1]
        [pod_alert] = [c for c in alert_posts if "KubePodNotReady" in c.params["text"]]
        assert line.params["thread_ts"] == pod_alert.answer["ts"]
        assert line.params["text"] == "✅ Resolved: KubePodNotReady."
        assert http(port, "/alertmanager", "{", bearer) == (400, "the body is not JSON\n")
        slack.settle(1.5)  # more watch rounds: nothing is posted twice
        assert len(slack.calls_to("chat.postMessage")) == len(STUCK) + 3
    finally:
        assert served.stop() == 0
    with sqlite3.connect(tmp_path / "gpuwhy.db") as db:
        sources = dict(db.execute("SELECT source, count(*) FROM incidents GROUP BY source"))
    assert sources == {"watch": len(STUCK), "alert": 2}


def test_basic_auth_is_accepted(tmp_path: Path, slack: FakeSlack) -> None:
    config = tmp_path / "gpuwhy.yaml"
    config.write_text(yaml.safe_dump({"alerts": {"channel": "C0ALERTS",
                                                 "pending_after": "1000h"}}))
    env = environment(slack, tmp_path, GPUWHY_CONFIG=str(config),
                      GPUWHY_ALERTMANAGER_PASSWORD="pw")
    served = ServeProcess(["--snapshot", SEVEN_STATES], env)
    try:
        port = served.port()
        body = json.dumps({"version": "4", "alerts": []})
        basic = "Basic " + base64.b64encode(b"alertmanager:pw").decode()
        assert http(port, "/alertmanager", body, {"Authorization": basic}) == \
            (200, "0 alerts received\n")
        assert http(port, "/alertmanager", body, {"Authorization": f"Bearer {TOKEN}"})[0] == 401
    finally:
        assert served.stop() == 0


def test_without_alerts_configured_there_is_no_receiver(tmp_path: Path,
                                                        slack: FakeSlack) -> None:
    served = ServeProcess(["--snapshot", SEVEN_STATES],
                          environment(slack, tmp_path, GPUWHY_ALERTMANAGER_TOKEN=TOKEN))
    try:
        port = served.port()
        body = json.dumps({"version": "4", "alerts": []})
        assert http(port, "/alertmanager", body, {"Authorization": f"Bearer {TOKEN}"})[0] == 404
        slack.settle(0.5)
        assert slack.calls_to("chat.postMessage") == []
    finally:
        assert served.stop() == 0


def test_an_unset_webhook_token_stops_serve_with_one_line(tmp_path: Path,
                                                          slack: FakeSlack) -> None:
    config = tmp_path / "gpuwhy.yaml"
    config.write_text(yaml.safe_dump({"routes": [{
        "webhook": "http://127.0.0.1:9/hook",
        "webhook_header": "Authorization: Bearer ${QUOTA_HOOK_TOKEN}"}]}))
    served = ServeProcess(["--snapshot", SEVEN_STATES],
                          environment(slack, tmp_path, GPUWHY_CONFIG=str(config)))
    assert served.wait() == 1
    assert served.stderr == ["gpuwhy serve: routes: a webhook_header refers to "
                             "${QUOTA_HOOK_TOKEN}, which is not set in the environment\n"]


def test_serve_watches_every_cluster_and_routes_alerts_by_their_cluster_label(
        tmp_path: Path, slack: FakeSlack) -> None:
    config = tmp_path / "gpuwhy.yaml"
    config.write_text(yaml.safe_dump({
        "clusters": {"prod": {"snapshot": SEVEN_STATES}, "staging": {"snapshot": SEVEN_STATES}},
        "default_cluster": "prod",
        "alerts": {"pending_after": "10m", "channel": "C0ALERTS", "check_every": "1s",
                   "max_posts_per_hour": 100}}))
    env = environment(slack, tmp_path, GPUWHY_CONFIG=str(config),
                      GPUWHY_ALERTMANAGER_TOKEN=TOKEN)
    served = ServeProcess([], env)
    try:
        port = served.port()
        roots = slack.wait_for("chat.postMessage", 2 * len(STUCK))
        for cluster in ("prod", "staging"):
            named = [c for c in roots if f" · cluster *{cluster}*\n" in c.params["text"]]
            assert {ref_of(c.params["text"]) for c in named} == STUCK
            assert len(named) == len(STUCK)

        def alert(pod: str, cluster: str) -> dict[str, object]:
            return {"status": "firing", "fingerprint": f"{cluster}-{pod}",
                    "startsAt": "2026-11-30T13:05:45Z",
                    "labels": {"alertname": "KubePodNotReady", "namespace": "research",
                               "pod": pod, "cluster": cluster}}

        body = json.dumps({"version": "4", "alerts": [
            alert("broken-node", "staging"), alert("full", "nowhere")]})
        bearer = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
        assert http(port, "/alertmanager", body, bearer) == (200, "2 alerts received\n")
        post = slack.wait_for("chat.postMessage", 2 * len(STUCK) + 1)[-1]
        assert post.params["text"].startswith("🔔 *KubePodNotReady*")
        assert " · cluster *staging*\n" in post.params["text"]
        assert ref_of(post.params["text"]) == "broken-node"
        status, metrics = http(port, "/metrics")
        assert status == 200
        assert 'gpuwhy_alertmanager_alerts_total{outcome="unknown-cluster"} 1.0' in metrics
        slack.settle(1.5)  # the alert about an unknown cluster posts nothing
        assert len(slack.calls_to("chat.postMessage")) == 2 * len(STUCK) + 1
    finally:
        assert served.stop() == 0
    with sqlite3.connect(tmp_path / "gpuwhy.db") as db:
        clusters = dict(db.execute("SELECT cluster, count(*) FROM incidents GROUP BY cluster"))
    assert clusters == {"prod": len(STUCK), "staging": len(STUCK) + 1}
