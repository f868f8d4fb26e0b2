"""The devices table: only the nodes that matter, holders only from a source, telemetry as
the answer read it; through `gpuwhy devices` and the Slack thread ("show devices")."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import requests
import responses
from slack_bolt import App, BoltRequest

from bot.answer.devices import devices_terminal, held_line, node_table, relevant_nodes
from bot.answer.visibility import visible_verdict
from bot.cli.main import main
from bot.clusters.sources import LiveSource, SnapshotSource, TriageSource, WatchSource
from bot.clusters.telemetry import PrometheusClient, PrometheusSettings, TelemetrySource
from bot.config import BotConfig
from bot.slack.app import create_app, slack_client
from scoring.verdict import Device, Holding, NodeReport, Verdict
from tests.kubeapi import FakeKubeAPI
from tests.paths import FIXTURES
from tests.prometheus import AT, QUERY_URL, URL, sent_queries, seven_states_prometheus
from tests.slackfake import FakeSlack, block_kit_problems, command_body, message_event, sign
from triage.cluster import load_api_client
from triage.refs import parse_ref

SEVEN_STATES = FIXTURES / "scenarios" / "seven-states"
AT_DATETIME = datetime.fromtimestamp(AT, UTC)


@pytest.fixture(scope="module")
def seven_states() -> SnapshotSource:
    return SnapshotSource(SEVEN_STATES)


def with_dcgm(source: SnapshotSource) -> TelemetrySource:
    return TelemetrySource(source, PrometheusClient(PrometheusSettings(URL)), clock=lambda: AT)


def names(nodes: list[NodeReport]) -> list[str]:
    return [n.name for n in nodes]


# --- which nodes ---------------------------------------------------------------------------

def test_tainted_pod_shows_only_its_tainted_candidate_and_counts_the_rest(
        seven_states: SnapshotSource) -> None:
    relevant = relevant_nodes(seven_states.triage(parse_ref("research/tainted")))
    assert names(relevant.shown) == ["gpu-h100-reserved"]
    assert relevant.scope == "nodes its selector matches, all tainted"
    assert relevant.others == {"selector-mismatch": 5}
    text = devices_terminal(seven_states.triage(parse_ref("research/tainted")), AT_DATETIME)
    assert "gpu-h100-reserved · taint-untolerated · 8 × NVIDIA-H100-80GB-HBM3" in text
    assert "+5 other nodes: 5 selector-mismatch" in text
    assert "gpu-a100-1" not in text


@pytest.mark.parametrize(("ref", "shown", "others"), [
    ("research/ok", ["gpu-a100-1"], {}),
    ("research/full", ["gpu-a10-full"], {"selector-mismatch": 5}),
    ("research/big", ["cpu-1", "gpu-t4-noplugin", "gpu-v100-broken", "gpu-a10-full",
                      "gpu-a100-1"], {"taint-untolerated": 1}),
    ("research/wrong-pool", [], {"selector-mismatch": 6}),
    ("ml/finetune", [], {}),
])
def test_relevant_nodes_of_every_kind_of_answer(ref: str, shown: list[str],
                                                others: dict[str, int],
                                                seven_states: SnapshotSource) -> None:
    relevant = relevant_nodes(seven_states.triage(parse_ref(ref)))
    assert (names(relevant.shown), relevant.others) == (shown, others)


def test_rest_is_counted_in_vocabulary_order_with_hami_codes_as_device_unfit() -> None:
    nodes = [NodeReport("a", "fit", score=0.5), NodeReport("b", "taint-untolerated"),
             NodeReport("c", "selector-mismatch"), NodeReport("d", "2/4 NumaNotFit"),
             NodeReport("e", "exhausted")]
    relevant = relevant_nodes(Verdict(ref="r/p", cause="exhausted", action="a", nodes=nodes),
                              limit=1)
    assert names(relevant.shown) == ["e"]
    assert relevant.others == {"selector-mismatch": 1, "taint-untolerated": 1,
                               "device-unfit": 1, "fit": 1}


# --- holders: never a guess ------------------------------------------------------------------

def test_device_plugin_node_without_a_source_names_no_holder_per_device(
        seven_states: SnapshotSource) -> None:
    report = next(n for n in seven_states.triage(parse_ref("research/full")).nodes
                  if n.name == "gpu-a10-full")
    assert [(d.holders, d.holder_source) for d in report.devices] == [([], None), ([], None)]
    assert held_line(report) == "2/2 held by ml/train-a (1), team-b/train-b (1)"
    table = node_table(report)
    assert "holder" not in table.header
    assert table.held == "2/2 held by ml/train-a (1), team-b/train-b (1)"


def test_held_line_lists_a_few_names() -> None:
    report = NodeReport("n", "exhausted", allocatable=8,
                        held=[Holding(f"ml/p{i}", 1) for i in range(8)])
    assert held_line(report) == ("8/8 held by ml/p0 (1), ml/p1 (1), ml/p2 (1), ml/p3 (1), "
                                 "ml/p4 (1), ml/p5 (1) +2 more")
    assert held_line(NodeReport("n", "fit")) == ""


def test_columns_without_data_are_left_out_and_telemetry_columns_appear_with_it() -> None:
    plain = node_table(NodeReport("n", "fit", devices=[Device("", 0, "A10")]))
    assert plain.header.split() == ["#", "model", "this", "pod"]
    read = node_table(NodeReport("n", "fit", devices=[
        Device("GPU-8f48e026-101e", 0, "A10", memory_used=512, memory_total=23028,
               utilisation=0, temperature=62, xid=0, holders=["ml/a"], holder_source="dcgm"),
        Device("GPU-a4c4c615-907f", 1, "A10", xid=79, xid_at="2026-11-30T12:42:00Z",
               xid_new=True),
        Device("GPU-c1", 2, "A10", xid=48, xid_at="2026-11-30T11:53:00Z")]))
    assert read.header.split() == ["#", "uuid", "model", "memory", "MiB", "util", "temp",
                                   "xid", "holder", "this", "pod"]
    assert [row.split("  ")[0] for row in read.rows] == ["#0", "#1", "#2"]
    assert "512/23028" in read.rows[0] and "0 %" in read.rows[0] and "62 °C" in read.rows[0]
    assert "none" in read.rows[0] and "ml/a" in read.rows[0]
    assert "79 at 12:42" in read.rows[1] and "48 before 11:53" in read.rows[2]
    assert "GPU-8f48…" in read.rows[0]


# --- `gpuwhy devices` ------------------------------------------------------------------------

def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_devices_with_prometheus(capsys: pytest.CaptureFixture[str],
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("bot.clusters.telemetry.wall_clock", lambda: AT)
    with seven_states_prometheus() as prometheus:
        code, out, _ = run(["devices", "research/full", "--snapshot", str(SEVEN_STATES),
                            "--prometheus", URL], capsys)
        assert len(sent_queries(prometheus)) == 6
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "⏳ Devices for exhausted — research/full: nodes it could use, worst first"
    assert ("gpu-a10-full · exhausted · 2 × NVIDIA-A10 · "
            "2/2 held by ml/train-a (1), team-b/train-b (1)") in lines
    row0 = next(line for line in lines if line.strip().startswith("#0"))
    row1 = next(line for line in lines if line.strip().startswith("#1"))
    assert "ml/train-a" in row0 and "87 %" in row0 and "20480/23028" in row0
    assert "team-b/train-b" in row1 and "0 %" in row1 and "ml/train-a" not in row1
    assert "+5 other nodes: 5 selector-mismatch" in lines
    assert "telemetry: DCGM via Prometheus at 12:52 UTC" in lines


def test_cli_devices_json(capsys: pytest.CaptureFixture[str],
                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("bot.clusters.telemetry.wall_clock", lambda: AT)
    with seven_states_prometheus():
        code, out, _ = run(["devices", "research/broken-node", "--snapshot",
                            str(SEVEN_STATES), "--prometheus", URL, "--format", "json"], capsys)
    assert code == 0
    data: dict[str, Any] = json.loads(out)
    assert (data["ref"], data["cause"], data["others"]) == (
        "research/broken-node", "allocatable-zero", {"selector-mismatch": 5})
    [node] = data["nodes"]
    assert node["name"] == "gpu-v100-broken"
    assert [(d["index"], d["xid"], d["xid_new"]) for d in node["devices"]] == [
        (0, 0, False), (1, 48, False), (2, 0, False), (3, 79, True)]
    assert data["telemetry"] == "telemetry: DCGM via Prometheus at 12:52 UTC"


def test_cli_devices_with_prometheus_down_still_prints_the_table(
        capsys: pytest.CaptureFixture[str]) -> None:
    with responses.RequestsMock() as mock:
        mock.add(responses.POST, QUERY_URL, status=503, body="upstream connect error")
        code, out, _ = run(["devices", "research/full", "--snapshot", str(SEVEN_STATES),
                            "--prometheus", URL], capsys)
    assert code == 0
    assert "gpu-a10-full · exhausted · 2 × NVIDIA-A10 · 2/2 held by" in out
    assert f"no telemetry: Prometheus at {URL} answered HTTP 503" in out.splitlines()


def test_cli_devices_without_prometheus_makes_no_request_and_says_nothing_of_it(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GPUWHY_PROMETHEUS_URL", raising=False)
    with responses.RequestsMock() as mock:
        code, out, _ = run(["devices", "research/ok", "--snapshot", str(SEVEN_STATES)], capsys)
        assert len(mock.calls) == 0
    assert code == 0 and "telemetry" not in out
    assert "gpu-a100-1 · fit · 4 × NVIDIA-A100-SXM4-80GB · 2/4 held by research/ok (2)" in out


@pytest.mark.parametrize(("argv", "message"), [
    (["devices", "research"], "usage: gpuwhy devices"),
    (["devices", "research/full", "--snapshot", "/nonexistent"], "not a directory"),
])
def test_cli_devices_bad_input_is_one_line(argv: list[str], message: str,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(argv, capsys)
    assert code in (2, 3) and out == ""
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


# --- telemetry in the answers --------------------------------------------------------------

def test_exhausted_answer_says_how_busy_each_holder_is(seven_states: SnapshotSource) -> None:
    with seven_states_prometheus():
        verdict = with_dcgm(seven_states).triage(parse_ref("research/full"))
    assert [e.value for e in verdict.evidence if e.field == "DCGM_FI_DEV_GPU_UTIL"] == [
        "ml/train-a holds 1 GPU at 87 % for 1 min",
        "team-b/train-b holds 1 GPU at 0 % for 1 min"]


@pytest.mark.parametrize("ref", ["research/full", "research/ok", "research/tainted",
                                 "research/no-plugin"])
def test_no_hami_line_on_answers_for_pods_hami_does_not_schedule(
        ref: str, seven_states: SnapshotSource) -> None:
    assert seven_states.triage(parse_ref(ref)).scheduler_summary is None


def test_hami_line_stays_for_pods_hami_schedules() -> None:
    verdict = SnapshotSource(FIXTURES / "scenarios" / "hami-sharing").triage(
        parse_ref("hami/needs-40g"))
    assert verdict.scheduler_summary is not None
    assert verdict.scheduler_summary.startswith("no available node")


def test_a_verdict_stored_before_telemetry_still_loads() -> None:
    old = {"ref": "r/p", "cause": "exhausted", "action": "a",
           "nodes": [{"name": "n", "outcome": "exhausted",
                      "devices": [{"uuid": "", "index": 0, "type": "A10", "holders": ["x/y"]}]}]}
    verdict = Verdict.from_dict(old)
    assert verdict.telemetry is None and verdict.nodes[0].held == []
    assert verdict.nodes[0].devices[0].holder_source is None


# --- the Slack thread ------------------------------------------------------------------------

CHANNEL = "C0SUPPORT"
SECRET = "8f742231b10e8888abcd99yyyzzz85a5"


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    fake = FakeSlack()
    yield fake
    fake.close()


def slack_app(slack: FakeSlack, source: TriageSource) -> App:
    client = slack_client({"SLACK_BOT_TOKEN": "xoxb-test", "SLACK_API_URL": slack.api_url})
    return create_app(BotConfig(database_url="sqlite://"), source, None, client,
                      signing_secret=SECRET, clock=lambda: AT_DATETIME)


def signed(app: App, body: str, content_type: str) -> None:
    headers: dict[str, str | Sequence[str]] = {"content-type": content_type,
                                               **sign(SECRET, body)}
    assert app.dispatch(BoltRequest(body=body, headers=headers)).status == 200


def ask_then_show_devices(slack: FakeSlack, source: TriageSource, ref: str
                          ) -> tuple[dict[str, Any], dict[str, Any]]:
    """The answer's and the "show devices" reply's chat.postMessage parameters."""
    app = slack_app(slack, source)
    signed(app, command_body(ref, response_url=slack.response_url()),
           "application/x-www-form-urlencoded")
    answer = slack.wait_for("chat.postMessage", 1)[0]
    ts = str(answer.answer["ts"])
    deadline = time.monotonic() + 5
    while (len(slack.calls_to("chat.postMessage")) < 2 and time.monotonic() < deadline):
        signed(app, json.dumps(message_event("show devices", thread_ts=ts,
                                             event_id=f"Ev{time.monotonic_ns()}")),
               "application/json")
        time.sleep(0.05)
    reply = slack.wait_for("chat.postMessage", 2)[1]
    assert reply.params["thread_ts"] == ts
    return answer.params, reply.params


def texts(blocks: list[dict[str, Any]]) -> str:
    found = []
    for block in blocks:
        if "text" in block:
            found.append(block["text"]["text"])
        found += [element["text"] for element in block.get("elements", [])
                  if isinstance(element.get("text"), str)]
    return "\n".join(found)


def test_slack_show_devices_with_dcgm(slack: FakeSlack, seven_states: SnapshotSource) -> None:
    with seven_states_prometheus():
        answer, reply = ask_then_show_devices(slack, with_dcgm(seven_states), "research/full")
    assert block_kit_problems(answer["blocks"]) == []
    assert block_kit_problems(reply["blocks"]) == []
    said = texts(answer["blocks"])
    assert "team-b/train-b holds 1 GPU at 0 % for 1 min" in said
    assert "telemetry: DCGM via Prometheus at 12:52 UTC" in said
    table = texts(reply["blocks"])
    assert ("*gpu-a10-full* · exhausted · 2 × NVIDIA-A10 · "
            "2/2 held by ml/train-a (1), team-b/train-b (1)") in table
    rows = [line for line in table.splitlines() if line.startswith(("#0", "#1"))]
    assert len(rows) == 2
    assert "ml/train-a" in rows[0] and "team-b/train-b" not in rows[0] and "87 %" in rows[0]
    assert "team-b/train-b" in rows[1] and "ml/train-a" not in rows[1] and "0 %" in rows[1]
    assert "+5 other nodes: 5 selector-mismatch" in table
    assert "`no available node" not in said  # HAMi does not schedule this pod


def test_slack_answer_and_devices_go_out_when_prometheus_is_down(
        slack: FakeSlack, seven_states: SnapshotSource) -> None:
    with responses.RequestsMock() as mock:
        mock.add(responses.POST, QUERY_URL, body=requests.ConnectionError("refused"))
        answer, reply = ask_then_show_devices(slack, with_dcgm(seven_states),
                                              "research/broken-node")
    note = f"no telemetry: Prometheus at {URL} is unreachable (ConnectionError)"
    assert note in texts(answer["blocks"]).splitlines()
    table = texts(reply["blocks"])
    assert "*gpu-v100-broken* · allocatable-zero · 4 × Tesla-V100-SXM2-16GB" in table
    assert note in table


def test_slack_broken_node_answer_names_the_xid(slack: FakeSlack,
                                                 seven_states: SnapshotSource) -> None:
    with seven_states_prometheus():
        answer, reply = ask_then_show_devices(slack, with_dcgm(seven_states),
                                              "research/broken-node")
    assert ("GPU 3 on gpu-v100-broken: XID 79 at 12:42 UTC (GPU has fallen off the bus)"
            in texts(answer["blocks"]))
    row3 = next(line for line in texts(reply["blocks"]).splitlines() if line.startswith("#3"))
    assert "79 at 12:42" in row3


# --- the three readers ---------------------------------------------------------------------

@pytest.mark.parametrize("ref", ["research/full", "research/broken-node", "research/ok"])
def test_dump_live_and_watch_cache_give_the_same_devices_and_evidence(
        ref: str, tmp_path: Path, seven_states: SnapshotSource) -> None:
    with FakeKubeAPI(SEVEN_STATES) as api, seven_states_prometheus():
        client = load_api_client(str(api.kubeconfig(tmp_path / "kubeconfig")))
        watch = WatchSource(api_client=client).start()
        try:
            assert watch.wait_ready(5)
            answers = [with_dcgm(source).triage(parse_ref(ref)) for source in
                       (seven_states, LiveSource(api_client=client), watch)]
        finally:
            watch.stop()
    dump, live, cached = answers
    assert live.evidence == dump.evidence == cached.evidence
    assert live.nodes == cached.nodes
    # A live read lists only non-terminated pods; the nodes the table shows are the same.
    assert relevant_nodes(live).shown == relevant_nodes(dump).shown
    assert dump.telemetry == live.telemetry == cached.telemetry


def test_holders_of_namespaces_a_channel_may_not_see_are_counted_not_named() -> None:
    report = NodeReport("gpu-a10-full", "exhausted", allocatable=3, held=[
        Holding("ml/train-a", 1, "2026-11-30T12:50:43Z"), Holding("team-b/train-b", 1),
        Holding("team-c/eval", 1)])
    verdict = Verdict(ref="ml/x", cause="exhausted", action="a", nodes=[report])
    shown = visible_verdict(verdict, lambda namespace: namespace == "ml")
    assert held_line(shown.nodes[0]) == ("3/3 held by ml/train-a (1), "
                                         "2 pods in other namespaces (2)")
    assert held_line(verdict.nodes[0]).endswith("team-c/eval (1)")  # the stored one is whole
