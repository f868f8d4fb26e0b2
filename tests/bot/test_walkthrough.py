"""The operator's walkthrough before adopting gpuwhy, as the README describes the setup: two
clusters in `clusters:` (one of them dead), `default_cluster`, an alerts channel that
`channels:` does not list. The terminal commands read the configured default cluster, record
its configured name, and doctor checks every cluster, one line each."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from bot.cli.main import main
from tests.conftest import SCENARIOS
from tests.kubeapi import FakeKubeAPI
from tests.slackfake import FakeSlack, ServeProcess, http

SEVEN = SCENARIOS / "seven-states"


@pytest.fixture
def ambient(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeKubeAPI]:
    """The kubeconfig kubectl would use (KUBECONFIG): another cluster, which must not be read
    while `clusters:` names the ones to use."""
    for name in ("GPUWHY_CLUSTER", "GPUWHY_DIGEST_CHANNEL", "SLACK_APP_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    with FakeKubeAPI(SCENARIOS / "hami-sharing") as server:
        monkeypatch.setenv("KUBECONFIG", str(server.kubeconfig(tmp_path / "ambient.yaml")))
        yield server


@pytest.fixture
def prod(tmp_path: Path, ambient: FakeKubeAPI, monkeypatch: pytest.MonkeyPatch,
         slack: FakeSlack) -> Iterator[FakeKubeAPI]:
    """prod answers; lab's API server is gone (its port refuses connections)."""
    with FakeKubeAPI() as gone:
        lab = gone.kubeconfig(tmp_path / "lab.yaml")
    with FakeKubeAPI(SEVEN) as server:
        config = tmp_path / "gpuwhy.yaml"
        config.write_text(yaml.safe_dump({
            "clusters": {"prod": {"kubeconfig": str(server.kubeconfig(tmp_path / "prod.yaml"))},
                         "lab": {"kubeconfig": str(lab)}},
            "default_cluster": "prod",
            "channels": {"C0SUPPORT": ["team-b"]},
            "alerts": {"channel": "C0ALERTS"},
        }))
        monkeypatch.setenv("GPUWHY_CONFIG", str(config))
        monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-test")
        monkeypatch.setenv("SLACK_SIGNING_SECRET", "secret")
        monkeypatch.setenv("SLACK_API_URL", slack.api_url)
        yield server


def test_triage_and_devices_read_the_default_cluster_and_record_its_name(
        prod: FakeKubeAPI, ambient: FakeKubeAPI, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "cli.db"
    assert main(["triage", "research/full", "--db", f"sqlite:///{db}"]) == 0
    assert capsys.readouterr().out.startswith("⏳ exhausted — research/full\n")
    assert main(["devices", "research/full", "--format", "json"]) == 0
    assert '"gpu-a10-full"' in capsys.readouterr().out
    assert any(r.path == "/api/v1/namespaces/research/pods/full" for r in prod.requests)
    assert ambient.requests == []
    with sqlite3.connect(db) as connection:
        assert connection.execute("SELECT cluster FROM incidents").fetchall() == [("prod",)]
    # The other configured cluster, by name: why it cannot answer, in one line.
    assert main(["triage", "research/full", "--cluster", "lab", "--no-record"]) == 3
    assert capsys.readouterr().err.startswith(
        "gpuwhy: Cannot reach the Kubernetes API server at http://127.0.0.1:")


def test_kubeconfig_on_the_command_line_still_wins(prod: FakeKubeAPI, ambient: FakeKubeAPI,
                                                   tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    other = str(ambient.kubeconfig(tmp_path / "other.yaml"))
    assert main(["triage", "hami/needs-40g", "--kubeconfig", other, "--no-record"]) == 0
    assert capsys.readouterr().out.startswith("🧮 device-unfit — hami/needs-40g\n")


def test_doctor_checks_every_configured_cluster(prod: FakeKubeAPI, ambient: FakeKubeAPI,
                                                tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    db = f"sqlite:///{tmp_path / 'doctor.db'}"
    assert main(["db", "upgrade", "--db", db]) == 0
    capsys.readouterr()
    assert main(["doctor", "--db", db]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith("gpuwhy.yaml: valid (clusters lab, prod; default prod)")
    assert lines[2] == "ok    alerts   alerts.channel C0ALERTS can post"
    # In the order of clusters: (lab, prod; the file was written with sorted keys).
    assert lines[3].startswith("FAIL  cluster  lab: Cannot reach the Kubernetes API server at "
                               "http://127.0.0.1:")
    assert lines[4] == "FAIL  access   lab: not checked: the cluster did not answer"
    assert lines[5] == f"ok    cluster  prod: {prod.url}: Kubernetes v1.36.2"
    assert lines[6] == ("ok    access   prod: all 51 reads allowed (get, list, watch on 17 "
                        "resources)")
    assert lines[-1] == "gpuwhy doctor: 2 of 8 checks failed (cluster, access)"
    assert ambient.requests == []


def test_doctor_flags_an_alerts_channel_that_could_never_post(
        prod: FakeKubeAPI, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = Path(str(prod.kubeconfig(tmp_path / "prod.yaml")))
    (tmp_path / "gpuwhy.yaml").write_text(yaml.safe_dump({
        "clusters": {"prod": {"kubeconfig": str(config)}},
        "channels": {"C0ALERTS": ["team-b"], "C0NODES": ["ml"]},
        "alerts": {"channel": "C0ALERTS"},
        "routes": [{"causes": ["allocatable-zero"], "namespaces": ["research"],
                    "channel": "C0NODES"}]}))
    assert main(["doctor", "--db", f"sqlite:///{tmp_path / 'd.db'}"]) == 1
    [alerts] = [line for line in capsys.readouterr().out.splitlines()
                if line.startswith("FAIL  alerts")]
    assert alerts == ("FAIL  alerts   routes[0] (C0NODES) can never post: channels: limits "
                      "C0NODES to ml, the route takes only research")


@pytest.mark.parametrize(("config", "environment", "recorded"), [
    ("cluster: prod-gpu\n", {}, "prod-gpu"),
    ("", {"GPUWHY_CLUSTER": "from-env"}, "from-env"),
])
def test_the_cli_records_the_configured_cluster_name_not_the_url(
        ambient: FakeKubeAPI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, config: str,
        environment: dict[str, str], recorded: str) -> None:
    (tmp_path / "gpuwhy.yaml").write_text(config)
    monkeypatch.setenv("GPUWHY_CONFIG", str(tmp_path / "gpuwhy.yaml"))
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    db = tmp_path / "named.db"
    assert main(["triage", "hami/needs-40g", "--db", f"sqlite:///{db}"]) == 0
    with sqlite3.connect(db) as connection:
        assert connection.execute("SELECT cluster FROM incidents").fetchall() == [(recorded,)]


def test_serve_with_a_dead_cluster_and_an_unlisted_alerts_channel(tmp_path: Path,
                                                                  slack: FakeSlack) -> None:
    """`gpuwhy serve` on that setup: stuck pods of research (a namespace C0SUPPORT may not
    describe) are posted to C0ALERTS; /readyz is ready with prod and says why lab is not."""
    with FakeKubeAPI() as gone:
        lab = gone.kubeconfig(tmp_path / "lab.yaml")
    config = tmp_path / "gpuwhy.yaml"
    config.write_text(yaml.safe_dump({
        "clusters": {"prod": {"snapshot": str(SEVEN)}, "lab": {"kubeconfig": str(lab)}},
        "default_cluster": "prod",
        "channels": {"C0SUPPORT": ["team-b"]},
        "alerts": {"channel": "C0ALERTS", "pending_after": "10m", "check_every": "1s"}}))
    served = ServeProcess([], {
        "SLACK_BOT_TOKEN": "xoxb-walk", "SLACK_SIGNING_SECRET": "secret",
        "SLACK_API_URL": slack.api_url, "GPUWHY_CONFIG": str(config),
        "GPUWHY_DATABASE_URL": f"sqlite:///{tmp_path / 'serve.db'}"})
    try:
        port = served.port()
        posts = slack.wait_for("chat.postMessage", 6)  # seven-states' six stuck research pods
        assert {post.params["channel"] for post in posts} == {"C0ALERTS"}
        assert all(" · cluster *prod*" in post.params["text"] for post in posts)
        deadline = time.monotonic() + 20
        while "cluster lab: unavailable" not in (ready := http(port, "/readyz"))[1]:
            assert time.monotonic() < deadline, ready
            time.sleep(0.05)
        assert ready[0] == 200
        assert ready[1].splitlines()[:2] == ["ready", "clusters: 1 of 2 answering"]
        assert (f"cluster lab: unavailable: Cannot reach the Kubernetes API server at "
                f"{gone.url}: connection refused.") in ready[1].splitlines()
    finally:
        assert served.stop() == 0
    lab_warnings = [line for line in served.stderr if "cluster lab" in line]
    assert 1 <= len(lab_warnings) <= 2, lab_warnings
