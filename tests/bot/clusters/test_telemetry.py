"""bot.clusters.telemetry: Prometheus queries made with requests (mocked by `responses`, and a real
slow server for the timeout), and answers that go out with or without telemetry."""

from __future__ import annotations

import http.server
import json
import os
import socketserver
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
import responses

from bot.clusters.sources import SnapshotSource
from bot.clusters.telemetry import (
    PrometheusClient,
    PrometheusSettings,
    TelemetrySource,
    add_telemetry,
    prometheus_settings,
    with_prometheus,
)
from bot.config import BotConfig, ConfigError, load_config
from bot.web.metrics import REGISTRY
from scoring.verdict import Verdict
from tests.paths import FIXTURES
from tests.prometheus import AT, QUERY_URL, URL, answer_query, sent_queries, seven_states_prometheus
from triage.dcgm import DcgmLabels
from triage.refs import parse_ref


@pytest.fixture(scope="module")
def seven_states() -> SnapshotSource:
    return SnapshotSource(FIXTURES / "scenarios" / "seven-states")


def settings(url: str = URL, timeout: float = 2.0, token: str | None = None
             ) -> PrometheusSettings:
    return PrometheusSettings(url=url, timeout=timeout, token=token)


@pytest.fixture
def prometheus() -> Iterator[responses.RequestsMock]:
    with seven_states_prometheus() as mock:
        yield mock


def test_one_query_per_family_for_the_shown_nodes_only(
        prometheus: responses.RequestsMock, seven_states: SnapshotSource) -> None:
    source = TelemetrySource(seven_states, PrometheusClient(settings(token="s3cret")),
                             clock=lambda: AT)
    verdict = source.triage(parse_ref("research/full"))
    forms = sent_queries(prometheus)
    assert sorted(form["query"][0] for form in forms) == [
        'DCGM_FI_DEV_FB_FREE{Hostname=~"gpu-a10-full"}',
        'DCGM_FI_DEV_FB_USED{Hostname=~"gpu-a10-full"}',
        'DCGM_FI_DEV_GPU_TEMP{Hostname=~"gpu-a10-full"}',
        'DCGM_FI_DEV_GPU_UTIL{Hostname=~"gpu-a10-full"}',
        'DCGM_FI_DEV_XID_ERRORS{Hostname=~"gpu-a10-full"}[1h]',
        '{__name__=~"DCGM_FI_DEV_ECC_DBE_(VOL|AGG)_TOTAL",Hostname=~"gpu-a10-full"}']
    assert {form["time"][0] for form in forms} == {"1796043120.000"}
    assert {form["timeout"][0] for form in forms} == {"2s"}
    assert {call.request.headers["Authorization"] for call in prometheus.calls} == {
        "Bearer s3cret"}
    devices = next(n for n in verdict.nodes if n.name == "gpu-a10-full").devices
    assert [d.holders for d in devices] == [["ml/train-a"], ["team-b/train-b"]]
    assert verdict.evidence[-1].value == "team-b/train-b holds 1 GPU at 0 % for 1 min"
    assert verdict.telemetry == "telemetry: DCGM via Prometheus at 12:52 UTC"


def test_a_bound_pod_reads_its_node(prometheus: responses.RequestsMock,
                                    seven_states: SnapshotSource) -> None:
    source = TelemetrySource(seven_states, PrometheusClient(settings()), clock=lambda: AT)
    source.triage(parse_ref("research/ok"))
    assert {form["query"][0].split("{")[1].split("}")[0] for form in sent_queries(prometheus)
            } - {'__name__=~"DCGM_FI_DEV_ECC_DBE_(VOL|AGG)_TOTAL",Hostname=~"gpu-a100-1"'} == {
        'Hostname=~"gpu-a100-1"'}


def test_an_answer_without_nodes_queries_nothing(seven_states: SnapshotSource) -> None:
    with responses.RequestsMock() as mock:  # any request would fail the test
        verdict = TelemetrySource(seven_states, PrometheusClient(settings())).triage(
            parse_ref("ml/finetune"))
        assert len(mock.calls) == 0
    assert verdict.telemetry is None


def test_no_prometheus_configured_means_the_source_itself(seven_states: SnapshotSource) -> None:
    assert with_prometheus(seven_states, None) is seven_states
    assert prometheus_settings(BotConfig(), environ={}) is None


def test_settings_from_config_environment_and_command_line(tmp_path: Path) -> None:
    config_file = tmp_path / "gpuwhy.yaml"
    config_file.write_text("prometheus:\n  url: https://127.0.0.1:9091/\n  timeout: 1.5\n"
                           "  labels: {node: node, pod: exported_pod}\n")
    env = {"GPUWHY_CONFIG": str(config_file), "GPUWHY_PROMETHEUS_TOKEN": "t",
           "GPUWHY_PROMETHEUS_CA": "/etc/ssl/prom.pem"}
    config = load_config(env)
    assert prometheus_settings(config, environ=env) == PrometheusSettings(
        url="https://127.0.0.1:9091", timeout=1.5, token="t", ca_file="/etc/ssl/prom.pem",
        labels=DcgmLabels(node="node", pod="exported_pod"))
    chosen = prometheus_settings(config, "http://127.0.0.1:9092", environ={})
    assert chosen is not None and (chosen.url, chosen.token) == ("http://127.0.0.1:9092", None)
    from_env = load_config({**env, "GPUWHY_PROMETHEUS_URL": "http://127.0.0.1:9093"})
    assert from_env.prometheus.url == "http://127.0.0.1:9093"


def test_each_cluster_reads_its_own_prometheus(tmp_path: Path) -> None:
    config_file = tmp_path / "gpuwhy.yaml"
    config_file.write_text(
        "prometheus: {url: 'http://127.0.0.1:9090'}\n"
        "clusters:\n"
        "  prod:\n    snapshot: /srv/prod\n"
        "    prometheus: {url: 'https://127.0.0.1:9443', token_env: PROD_PROMETHEUS_TOKEN,"
        " labels: {node: node}}\n"
        "  lab: {snapshot: /srv/lab}\n")
    env = {"GPUWHY_CONFIG": str(config_file), "PROD_PROMETHEUS_TOKEN": "prod-token",
           "GPUWHY_PROMETHEUS_TOKEN": "shared-token"}
    config = load_config(env)
    prod = prometheus_settings(config, cluster="prod", environ=env)
    lab = prometheus_settings(config, cluster="lab", environ=env)
    assert prod is not None and lab is not None
    assert (prod.url, prod.token, prod.labels.node) == (
        "https://127.0.0.1:9443", "prod-token", "node")
    assert (lab.url, lab.token, lab.labels.node) == (
        "http://127.0.0.1:9090", "shared-token", "Hostname")


@pytest.mark.parametrize(("text", "message"), [
    ("prometheus: {url: 127.0.0.1:9090}",
     "prometheus.url = '127.0.0.1:9090': not an http:// or https:// URL without query"),
    ("prometheus: {timeout: 0}", "prometheus.timeout = 0: must be more than 0"),
    ("prometheus: {timeout: '2s'}", "prometheus.timeout = '2s': must be a number"),
    ("prometheus: {token: abc}", "prometheus.token: unknown key (did you mean token_env?)"),
    ("prometheus: {labels: {node: 'host name'}}",
     "prometheus.labels.node = 'host name': not a Prometheus label name"),
    ("prometheus: {labels: {hostname: node}}", "prometheus.labels.hostname: unknown key"),
    ("prometheus: {token_env: 'MY TOKEN'}",
     "prometheus.token_env = 'MY TOKEN': not an environment variable name"),
])
def test_bad_prometheus_config_is_one_line(text: str, message: str, tmp_path: Path) -> None:
    config_file = tmp_path / "gpuwhy.yaml"
    config_file.write_text(text + "\n")
    with pytest.raises(ConfigError) as caught:
        load_config({"GPUWHY_CONFIG": str(config_file)})
    assert str(caught.value) == f"config {config_file}: {message}"


def plain(seven_states: SnapshotSource, ref: str = "research/full") -> Verdict:
    return seven_states.triage(parse_ref(ref))


@pytest.mark.parametrize(("reply", "why"), [
    ({"body": requests.ConnectionError("refused")},
     "Prometheus at http://127.0.0.1:9090 is unreachable (ConnectionError)"),
    ({"body": requests.ReadTimeout("slow")},
     "Prometheus at http://127.0.0.1:9090 did not answer within 2 s"),
    ({"status": 500, "body": "<html>Internal Server Error</html>"},
     "Prometheus at http://127.0.0.1:9090 answered HTTP 500"),
    ({"status": 502, "json": {"message": "bad gateway"}},
     "Prometheus at http://127.0.0.1:9090 answered HTTP 502"),
    ({"status": 200, "body": "{\"status\": \"succ"},
     "Prometheus at http://127.0.0.1:9090 answered something that is not JSON"),
    ({"status": 200, "json": {"hello": "world"}},
     "Prometheus at http://127.0.0.1:9090 answered, but not with query results "
     "(utilisation: the answer is not a Prometheus query result)"),
    ({"status": 400, "json": {"status": "error", "errorType": "bad_data",
                              "error": "1:10: parse error"}},
     "Prometheus at http://127.0.0.1:9090 answered, but not with query results "
     "(utilisation: bad_data: 1:10: parse error)"),
])
def test_prometheus_failures_leave_the_answer_without_telemetry(
        reply: dict[str, object], why: str, seven_states: SnapshotSource) -> None:
    before = plain(seven_states)
    with responses.RequestsMock() as mock:
        mock.add(responses.POST, QUERY_URL, **reply)  # type: ignore[arg-type]
        verdict = add_telemetry(before, PrometheusClient(settings()), clock=lambda: AT)
    assert verdict.telemetry == f"no telemetry: {why}"
    assert (verdict.evidence, verdict.nodes, verdict.action) == (
        before.evidence, before.nodes, before.action)


def test_one_failing_family_leaves_the_others(seven_states: SnapshotSource) -> None:
    def callback(request: requests.PreparedRequest) -> tuple[int, dict[str, str], str]:
        if "XID" in str(request.body):
            return 503, {}, json.dumps({"status": "error", "errorType": "timeout",
                                        "error": "query timed out in expression evaluation"})
        return answer_query(request)

    with responses.RequestsMock() as mock:
        mock.add_callback(responses.POST, QUERY_URL, callback=callback)
        verdict = add_telemetry(plain(seven_states, "research/broken-node"),
                                PrometheusClient(settings()), clock=lambda: AT)
    assert verdict.telemetry == ("telemetry: DCGM via Prometheus at 12:52 UTC (incomplete: "
                                 "xid: timeout: query timed out in expression evaluation)")
    assert not any("XID" in e.value for e in verdict.evidence)
    assert any("ECC" in e.value for e in verdict.evidence)


class SlowHandler(http.server.BaseHTTPRequestHandler):
    """Accepts the query, then sends a byte every quarter second: never a whole answer."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "1000")
        self.end_headers()
        for _ in range(20):
            if self.server.closing.is_set():  # type: ignore[attr-defined]
                return
            try:
                self.wfile.write(b" ")
                self.wfile.flush()
            except OSError:
                return
            time.sleep(0.25)

    def log_message(self, format: str, *args: object) -> None:
        return


@pytest.fixture
def slow_prometheus() -> Iterator[str]:
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), SlowHandler)
    server.daemon_threads = True
    server.closing = threading.Event()  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.closing.set()  # type: ignore[attr-defined]
        server.shutdown()
        server.server_close()


def test_a_slow_prometheus_never_holds_the_answer_past_the_timeout(
        slow_prometheus: str, seven_states: SnapshotSource) -> None:
    before = plain(seven_states)
    started = time.monotonic()
    verdict = add_telemetry(before, PrometheusClient(settings(slow_prometheus, timeout=0.5)),
                            clock=lambda: AT)
    elapsed = time.monotonic() - started
    assert elapsed < 1.5, f"waited {elapsed:.2f} s for a 0.5 s timeout"
    assert verdict.telemetry == (f"no telemetry: Prometheus at {slow_prometheus} did not "
                                 "answer within 0.5 s")
    assert verdict.nodes == before.nodes
    late = REGISTRY.get_sample_value("gpuwhy_prometheus_queries_total",
                                     {"family": "xid", "result": "late"})
    assert late is not None and late >= 1


def test_a_closed_port_is_unreachable_at_once(seven_states: SnapshotSource) -> None:
    with socketserver.TCPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler) as taken:
        port = taken.server_address[1]
    verdict = add_telemetry(plain(seven_states), PrometheusClient(
        settings(f"http://127.0.0.1:{port}")), clock=lambda: AT)
    assert verdict.telemetry == (f"no telemetry: Prometheus at http://127.0.0.1:{port} is "
                                 "unreachable (ConnectionError)")


def test_the_cli_says_no_telemetry_once(tmp_path: Path) -> None:
    """The answer's own line on stdout, and no warning on stderr saying it again."""
    with socketserver.TCPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler) as taken:
        port = taken.server_address[1]
    seven = FIXTURES / "scenarios" / "seven-states"
    env = {key: value for key, value in os.environ.items() if not key.startswith("GPUWHY_")}
    result = subprocess.run(
        [sys.executable, "-m", "bot.cli", "triage", "research/full", "--snapshot", str(seven),
         "--prometheus", f"http://127.0.0.1:{port}", "--no-record"],
        capture_output=True, text=True, env=env, timeout=60, check=False)
    assert (result.returncode, result.stderr) == (0, "")
    line = (f"no telemetry: Prometheus at http://127.0.0.1:{port} is unreachable "
            "(ConnectionError)")
    assert result.stdout.count("no telemetry") == 1 and line in result.stdout
