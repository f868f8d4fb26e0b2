"""triage.dcgm: PromQL for DCGM exporter's families, reading the Prometheus HTTP API's JSON
(the seven-states nodes, labelled as the exporter labels them), telemetry into a Verdict."""

from __future__ import annotations

import copy
import dataclasses
import json
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from bot.answer.devices import devices_terminal
from bot.answer.render import render_text
from bot.clusters.sources import LiveSource, SnapshotSource
from scoring.verdict import Device, Evidence, Holding, NodeReport, Verdict
from tests.conftest import slice_uuids
from tests.kubeapi import FakeKubeAPI
from tests.paths import FIXTURES
from tests.triage.cluster.conftest import watch_source
from triage.cluster import load_api_client
from triage.dcgm import (
    ECC,
    FAMILIES,
    MEMORY_FREE,
    MEMORY_USED,
    TEMPERATURE,
    UTILISATION,
    XID,
    DcgmLabels,
    Family,
    GpuFacts,
    Telemetry,
    TelemetryError,
    holder_evidence,
    parse_result,
    promql,
    read_families,
    with_telemetry,
    without_telemetry,
)
from triage.refs import parse_ref

DCGM = FIXTURES / "dcgm" / "seven-states"
AT = 1796043120.0  # 2026-11-30T12:52:00Z, when the fixture's queries were evaluated
FILES = {UTILISATION: "utilisation", MEMORY_USED: "memory-used", MEMORY_FREE: "memory-free",
         TEMPERATURE: "temperature", XID: "xid", ECC: "ecc"}
A10 = ("GPU-8f48e026-101e-2b00-718f-42fa8e2e51f5", "GPU-a4c4c615-907f-d51b-88c1-3a505e14bd38")


def answers() -> dict[Family, Any]:
    return {family: json.loads((DCGM / f"{name}.json").read_text())
            for family, name in FILES.items()}


@pytest.fixture(scope="module")
def seven_states() -> SnapshotSource:
    return SnapshotSource(FIXTURES / "scenarios" / "seven-states")


def gpus(telemetry: Telemetry, node: str) -> list[GpuFacts]:
    return list(telemetry.gpus[node])


# --- PromQL ----------------------------------------------------------------------------------

def test_one_query_per_family_selects_the_nodes_by_a_regex_on_the_node_label() -> None:
    labels = DcgmLabels()
    nodes = ["gpu-v100-broken", "gpu-a10-full", "gpu-a10-full"]
    assert promql(UTILISATION, nodes, labels) == (
        'DCGM_FI_DEV_GPU_UTIL{Hostname=~"gpu-a10-full|gpu-v100-broken"}')
    assert promql(XID, nodes, labels) == (
        'DCGM_FI_DEV_XID_ERRORS{Hostname=~"gpu-a10-full|gpu-v100-broken"}[1h]')
    assert promql(ECC, ["n1"], DcgmLabels(node="node")) == (
        '{__name__=~"DCGM_FI_DEV_ECC_DBE_(VOL|AGG)_TOTAL",node=~"n1"}')
    assert len(FAMILIES) == 6


def test_node_names_are_matched_literally_and_cannot_break_the_query() -> None:
    query = promql(TEMPERATURE, ["gpu.a10", 'x"}or vector(1)#', "a|b"], DcgmLabels())
    assert query == ('DCGM_FI_DEV_GPU_TEMP{Hostname=~"a\\\\|b|gpu\\\\.a10|'
                     'x\\"\\\\}or vector\\\\(1\\\\)#"}')


# --- the API's JSON ----------------------------------------------------------------------------

def test_vector_and_matrix_results_are_read() -> None:
    vector = parse_result({"status": "success", "data": {"resultType": "vector", "result": [
        {"metric": {"gpu": "0"}, "value": [1796043120.5, "42"]},
        {"metric": {"gpu": "1"}, "value": [1796043120.5, "NaN"]}]}})
    assert [(s.metric, s.points) for s in vector] == [({"gpu": "0"}, ((1796043120.5, 42.0),)),
                                                       ({"gpu": "1"}, ())]
    matrix = parse_result({"status": "success", "warnings": ["slow"], "data": {
        "resultType": "matrix", "result": [{"metric": {}, "values": [[2, "0"], [1, "79"]]}]}})
    assert matrix[0].points == ((1.0, 79.0), (2.0, 0.0))


@pytest.mark.parametrize(("payload", "why"), [
    ([], "not a JSON object"),
    ({"status": "error", "errorType": "bad_data", "error": "parse error at char 4"},
     "bad_data: parse error at char 4"),
    ({"status": "success"}, "not a Prometheus query result"),
    ({"status": "success", "data": {"resultType": "scalar", "result": [1, "2"]}},
     "unexpected result type 'scalar'"),
    ({"status": "success", "data": {"resultType": "vector", "result": [{"value": [1, "2"]}]}},
     "without its labels"),
    ({"status": "success", "data": {"resultType": "vector", "result": [{"metric": {}}]}},
     "not \\[time, value\\]"),
    ({"status": "success", "data": {"resultType": "vector",
                                    "result": [{"metric": {}, "value": [1, "lots"]}]}},
     "not a number"),
    ({"status": "success", "data": {"resultType": "matrix", "result": [{"metric": {}}]}},
     "without values"),
])
def test_garbage_is_a_clear_error(payload: object, why: str) -> None:
    with pytest.raises(TelemetryError, match=why):
        parse_result(payload)


def test_seven_states_facts_per_gpu() -> None:
    telemetry = read_families(answers(), DcgmLabels(), AT)
    assert telemetry.problems == ()
    assert sorted(telemetry.gpus) == ["gpu-a10-full", "gpu-a100-1", "gpu-h100-reserved",
                                      "gpu-t4-noplugin", "gpu-v100-broken"]
    a10 = gpus(telemetry, "gpu-a10-full")
    assert [(g.index, g.uuid, g.model, g.holders, g.utilisation, g.memory_used, g.memory_free,
             g.temperature, g.xid) for g in a10] == [
        (0, A10[0], "NVIDIA A10", ["ml/train-a"], 87, 20480, 2548, 61, 0),
        (1, A10[1], "NVIDIA A10", ["team-b/train-b"], 0, 512, 22516, 62, 0)]
    v100 = {g.index: g for g in gpus(telemetry, "gpu-v100-broken")}
    # GPU 3 fell off the bus at 12:42: only its XID series is left.
    assert (v100[3].xid, v100[3].xid_since, v100[3].xid_new) == (79, AT - 600, True)
    assert (v100[3].utilisation, v100[3].memory_used) == (None, None)
    # GPU 1 has reported XID 48 for the whole hour read: not news, and its time is unknown.
    assert (v100[1].xid, v100[1].xid_since, v100[1].xid_new) == (48, AT - 3540, False)
    assert v100[1].ecc_uncorrectable == 2  # the volatile count, not the aggregate 5
    assert [g.holders for g in gpus(telemetry, "gpu-a100-1")] == [
        ["research/ok"], ["research/ok"], [], []]


def test_label_names_are_configurable() -> None:
    renamed = {}
    for family, payload in answers().items():
        payload = copy.deepcopy(payload)
        for series in payload["data"]["result"]:
            metric = series["metric"]
            metric["node"] = metric.pop("Hostname")
            for name in ("pod", "namespace"):
                if name in metric:
                    metric[f"exported_{name}"] = metric.pop(name)
            metric["pod"], metric["namespace"] = "dcgm-exporter-x7k2p", "gpu-operator"
        renamed[family] = payload
    labels = DcgmLabels(node="node", pod="exported_pod", namespace="exported_namespace")
    a10 = gpus(read_families(renamed, labels, AT), "gpu-a10-full")
    assert [g.holders for g in a10] == [["ml/train-a"], ["team-b/train-b"]]
    # With the default names the scrape target's own labels would name the exporter: the
    # node label is missing, so nothing is attributed at all.
    assert read_families(renamed, DcgmLabels(), AT).gpus == {}


def test_several_pods_on_one_gpu_are_all_holders() -> None:
    series = [{"metric": {"Hostname": "n", "gpu": "0", "UUID": "GPU-1", "pod": pod,
                          "namespace": "ml"}, "value": [AT, "30"]} for pod in ("b", "a", "a")]
    telemetry = read_families({UTILISATION: {"status": "success", "data": {
        "resultType": "vector", "result": series}}}, DcgmLabels(), AT)
    assert [g.holders for g in gpus(telemetry, "n")] == [["ml/a", "ml/b"]]


def test_a_family_with_garbage_is_named_and_the_rest_kept() -> None:
    mixed = answers()
    mixed[TEMPERATURE] = {"status": "error", "errorType": "timeout", "error": "query timed out"}
    telemetry = read_families(mixed, DcgmLabels(), AT, ["ecc: no answer within 2 s"])
    assert telemetry.problems == ("ecc: no answer within 2 s",
                                  "temperature: timeout: query timed out")
    assert [g.temperature for g in gpus(telemetry, "gpu-a10-full")] == [None, None]
    assert [g.utilisation for g in gpus(telemetry, "gpu-a10-full")] == [87, 0]


# --- into the Verdict ------------------------------------------------------------------------

def answer(source: SnapshotSource, ref: str) -> Verdict:
    verdict = source.triage(parse_ref(ref))
    return with_telemetry(verdict, read_families(answers(), DcgmLabels(), AT), "Prometheus")


def node(verdict: Verdict, name: str) -> NodeReport:
    return next(n for n in verdict.nodes if n.name == name)


def test_exhausted_answer_holders_per_device_and_their_utilisation(
        seven_states: SnapshotSource) -> None:
    verdict = answer(seven_states, "research/full")
    devices = node(verdict, "gpu-a10-full").devices
    assert [(d.index, d.uuid, d.holders, d.holder_source, d.utilisation, d.memory_used,
             d.memory_total) for d in devices] == [
        (0, A10[0], ["ml/train-a"], "dcgm", 87, 20480, 23028),
        (1, A10[1], ["team-b/train-b"], "dcgm", 0, 512, 23028)]
    assert verdict.evidence[-2:] == [
        Evidence("Node/gpu-a10-full", "DCGM_FI_DEV_GPU_UTIL",
                 "ml/train-a holds 1 GPU at 87 % for 1 min"),
        Evidence("Node/gpu-a10-full", "DCGM_FI_DEV_GPU_UTIL",
                 "team-b/train-b holds 1 GPU at 0 % for 1 min")]
    assert verdict.telemetry == "telemetry: DCGM via Prometheus at 12:52 UTC"
    assert not any("XID" in e.value for e in verdict.evidence)


def test_allocatable_zero_answer_names_the_fresh_xid(seven_states: SnapshotSource) -> None:
    plain = seven_states.triage(parse_ref("research/broken-node"))
    verdict = answer(seven_states, "research/broken-node")
    assert verdict.evidence[:len(plain.evidence)] == plain.evidence
    assert verdict.evidence[len(plain.evidence):] == [
        Evidence("Node/gpu-v100-broken", "DCGM_FI_DEV_ECC_DBE_*_TOTAL",
                 "GPU 1 on gpu-v100-broken: 2 uncorrectable ECC errors since the driver loaded"),
        Evidence("Node/gpu-v100-broken", "DCGM_FI_DEV_XID_ERRORS",
                 "GPU 3 on gpu-v100-broken: XID 79 at 12:42 UTC (GPU has fallen off the bus)"),
    ]
    device = node(verdict, "gpu-v100-broken").devices[3]
    assert (device.xid, device.xid_at, device.xid_new) == (79, "2026-11-30T12:42:00Z", True)
    assert verdict.action == plain.action and verdict.cause == plain.cause


def test_scheduled_answer_without_xid_gains_figures_but_no_evidence(
        seven_states: SnapshotSource) -> None:
    plain = seven_states.triage(parse_ref("research/ok"))
    verdict = answer(seven_states, "research/ok")
    assert verdict.evidence == plain.evidence
    devices = node(verdict, "gpu-a100-1").devices
    assert [(d.holders, d.utilisation) for d in devices] == [
        (["research/ok"], 64), (["research/ok"], 71), ([], 0), ([], 0)]


def test_a_gpu_only_dcgm_knows_is_added(seven_states: SnapshotSource) -> None:
    verdict = seven_states.triage(parse_ref("research/no-plugin"))
    facts = GpuFacts(node="gpu-t4-noplugin", index=1, uuid="GPU-9", model="Tesla T4",
                     utilisation=0)
    merged = with_telemetry(verdict, Telemetry(AT, {"gpu-t4-noplugin": [facts]}), "Prometheus")
    assert [(d.index, d.uuid, d.type) for d in node(merged, "gpu-t4-noplugin").devices] == [
        (0, "", "Tesla-T4"), (1, "GPU-9", "Tesla T4")]


def test_hami_holders_stay_and_dcgm_fills_only_unknown_ones() -> None:
    devices = [Device(uuid="GPU-1", index=0, type="A100", holders=["hami/a"],
                      holder_source="hami", memory_used=70000, memory_total=81920),
               Device(uuid="GPU-2", index=1, type="A100", holders=[], holder_source="hami")]
    verdict = Verdict(ref="hami/x", cause="device-unfit", action="a",
                      nodes=[NodeReport("n", "1/2 CardInsufficientMemory", devices=devices)])
    facts = [GpuFacts("n", 0, "GPU-1", "A100", holders=["ml/other"], utilisation=5,
                      memory_used=20000, memory_free=61920),
             GpuFacts("n", 1, "GPU-2", "A100", holders=["ml/other"], utilisation=6)]
    merged = with_telemetry(verdict, Telemetry(AT, {"n": facts}), "Prometheus")
    assert [(d.holders, d.holder_source, d.utilisation) for d in merged.nodes[0].devices] == [
        (["hami/a"], "hami", 5), ([], "hami", 6)]
    assert merged.nodes[0].devices[0].memory_used == 70000  # HAMi's allocation, not DCGM's
    assert verdict.nodes[0].devices[0].utilisation is None  # the input is not changed


def test_incomplete_and_missing_telemetry_say_so(seven_states: SnapshotSource) -> None:
    verdict = seven_states.triage(parse_ref("research/full"))
    partial = with_telemetry(verdict, Telemetry(AT, {}, ("xid: HTTP 500",)), "Prometheus")
    assert partial.telemetry == ("telemetry: DCGM via Prometheus at 12:52 UTC "
                                 "(incomplete: xid: HTTP 500)")
    missing = without_telemetry(verdict, "Prometheus at http://127.0.0.1:1 is unreachable")
    assert missing.telemetry == "no telemetry: Prometheus at http://127.0.0.1:1 is unreachable"
    assert missing.nodes == verdict.nodes and missing.evidence == verdict.evidence
    assert Verdict.from_dict(partial.to_dict()) == partial


@pytest.mark.parametrize(("since", "held_for"), [
    ("2026-11-30T09:52:00Z", " for 3 h"), ("2026-11-30T12:07:00Z", " for 45 min"),
    ("2026-11-27T12:52:00Z", " for 3 days"), (None, ""), ("yesterday", " for an unknown time")])
def test_holder_evidence_says_for_how_long(since: str | None, held_for: str) -> None:
    devices = [Device("GPU-1", 0, "A10", holders=["team-b/train-b"], holder_source="dcgm",
                      utilisation=0),
               Device("GPU-2", 1, "A10", holders=["team-b/train-b"], holder_source="dcgm",
                      utilisation=2)]
    report = NodeReport("gpu-a10-full", "exhausted", devices=devices, allocatable=2,
                        held=[Holding("team-b/train-b", 2, since), Holding("ml/quiet", 1)])
    verdict = Verdict(ref="research/full", cause="exhausted", action="a", nodes=[report])
    # ml/quiet holds a GPU no device names it on: its utilisation is unknown, so no line.
    assert [e.value for e in holder_evidence(verdict, AT)] == [
        f"team-b/train-b holds 2 GPUs at 1 %{held_for}"]


def test_holder_evidence_without_holdings_counts_the_devices_dcgm_names() -> None:
    devices = [Device("GPU-1", 0, "A10", holders=["ml/a"], utilisation=40),
               Device("GPU-2", 1, "A10", holders=["ml/a"])]
    verdict = Verdict(ref="r/p", cause="exhausted", action="a",
                      nodes=[NodeReport("n", "exhausted", devices=devices)])
    assert [e.value for e in holder_evidence(verdict, AT)] == ["ml/a holds 2 GPUs at 40 %"]
    assert holder_evidence(dataclasses.replace(verdict, cause="too-large"), AT) == []


def test_dra_devices_match_by_index_and_keep_their_claims_holders() -> None:
    source = SnapshotSource(FIXTURES / "scenarios" / "dra-basics")
    verdict = source.triage(parse_ref("vision/pinned-a"))
    uuids = [slice_uuids("dra-basics")["dra-a100-1", f"gpu-{i}"] for i in range(4)]
    facts = [GpuFacts("dra-a100-1", i, uuids[i], "NVIDIA A100-SXM4-80GB",
                      holders=["vision/other"], utilisation=10 * i) for i in range(4)]
    merged = with_telemetry(verdict, Telemetry(AT, {"dra-a100-1": facts}), "Prometheus")
    devices = node(merged, "dra-a100-1").devices
    assert [(d.index, d.uuid, d.holders, d.holder_source, d.utilisation) for d in devices] == [
        (0, uuids[0], ["vision/holder-a"], "dra", 0),
        (1, uuids[1], ["vision/holder-a"], "dra", 10),
        (2, uuids[2], ["vision/holder-b"], "dra", 20),
        (3, uuids[3], ["vision/holder-b"], "dra", 30)]
    assert [e.value for e in merged.evidence if e.field == "DCGM_FI_DEV_GPU_UTIL"] == [
        "vision/holder-a holds 2 GPUs at 5 %", "vision/holder-b holds 2 GPUs at 25 %"]


def test_a_gpu_with_another_uuid_at_the_same_index_is_not_merged() -> None:
    devices = [Device("GPU-1", 0, "A100", holder_source="hami")]
    merged = with_telemetry(
        Verdict(ref="r/p", cause="scheduled", action="a",
                nodes=[NodeReport("n", "fit", devices=devices)]),
        Telemetry(AT, {"n": [GpuFacts("n", 0, "GPU-2", "A100", utilisation=1)]}), "Prometheus")
    assert [(d.uuid, d.utilisation) for d in merged.nodes[0].devices] == [
        ("GPU-1", None), ("GPU-2", 1)]


@pytest.mark.parametrize(("cause", "outcome", "named"), [
    ("node-runtime-error", "fit", True), ("scheduled", "fit", True),
    ("no-gpu-node", "no-gpu-node", True), ("allocatable-zero", "allocatable-zero", True),
    ("exhausted", "exhausted", False), ("too-large", "too-large", False),
    ("allocatable-zero", "fit", False),  # a node the answer does not name
])
def test_fresh_xids_are_evidence_only_where_node_health_is_the_question(
        cause: str, outcome: str, named: bool) -> None:
    report = NodeReport("gpu-1", outcome, devices=[Device("", 3, "T4")])
    verdict = Verdict(ref="lab/p", cause=cause, action="a", nodes=[report])
    facts = GpuFacts("gpu-1", 3, "GPU-3", "Tesla T4", xid=62, xid_since=AT - 60, xid_new=True)
    merged = with_telemetry(verdict, Telemetry(AT, {"gpu-1": [facts]}), "Prometheus")
    xids = [e.value for e in merged.evidence if e.field == "DCGM_FI_DEV_XID_ERRORS"]
    assert xids == (["GPU 3 on gpu-1: XID 62 at 12:51 UTC (internal micro-controller halt)"]
                    if named else [])


def test_pods_dcgm_names_that_hold_no_gpu_there_are_not_taken_as_holders(
        seven_states: SnapshotSource) -> None:
    # A ServiceMonitor without honorLabels: `pod` is the exporter's own pod, the holder went
    # to `exported_pod`, and the configuration still says `pod`.
    scraped = {}
    for family, payload in answers().items():
        for series in payload["data"]["result"]:
            metric = series["metric"]
            for name in ("pod", "namespace"):
                if name in metric:
                    metric[f"exported_{name}"] = metric.pop(name)
            metric["pod"], metric["namespace"] = "nvidia-dcgm-exporter-x7k2p", "gpu-operator"
        scraped[family] = payload
    verdict = with_telemetry(seven_states.triage(parse_ref("research/full")),
                             read_families(scraped, DcgmLabels(), AT), "Prometheus")
    devices = node(verdict, "gpu-a10-full").devices
    assert [(d.holders, d.holder_source, d.utilisation) for d in devices] == [
        ([], None, 87), ([], None, 0)]
    assert verdict.telemetry == (
        "telemetry: DCGM via Prometheus at 12:52 UTC; holders not taken from DCGM: it names "
        "gpu-operator/nvidia-dcgm-exporter-x7k2p, which holds no GPU there "
        "(check prometheus.labels.pod / namespace)")
    assert not any(e.field == "DCGM_FI_DEV_GPU_UTIL" for e in verdict.evidence)


def test_an_xid_79_on_the_gpu_of_a_scheduled_pod_changes_the_next_action(
        seven_states: SnapshotSource) -> None:
    """research/ok runs on GPUs 0 and 1 of gpu-a100-1; GPU 0 falls off the bus at 12:47."""
    plain = seven_states.triage(parse_ref("research/ok"))
    series = answers()
    [gpu0] = [r for r in series[XID]["data"]["result"]
              if r["metric"]["Hostname"] == "gpu-a100-1" and r["metric"]["gpu"] == "0"]
    gpu0["values"] = [[at, "79" if at >= AT - 300 else "0"] for at, _ in gpu0["values"]]
    verdict = with_telemetry(plain, read_families(series, DcgmLabels(), AT), "Prometheus")
    assert verdict.cause == "scheduled"
    assert verdict.action == (
        "GPU 0 (XID 79 (GPU has fallen off the bus)) on gpu-a100-1 failed under it: cordon "
        "and drain gpu-a100-1, have the GPU reset or replaced, then recreate the pod "
        f"elsewhere. {plain.action}")
    devices = node(verdict, "gpu-a100-1").devices
    assert [d.code for d in devices] == ["XID 79 at 12:47 UTC", None, None, None]
    assert "\nNext: GPU 0 (XID 79 (GPU has fallen off the bus)) on gpu-a100-1 failed" in \
        render_text(verdict)
    table = devices_terminal(verdict, datetime(2026, 11, 30, 12, 52, tzinfo=UTC))
    [row] = [line for line in table.splitlines() if "XID 79 at 12:47 UTC" in line]
    assert "fits" not in row
    # An XID the exporter carried over from before the window is not news.
    assert with_telemetry(plain, read_families(answers(), DcgmLabels(), AT),
                          "Prometheus").action == plain.action


def _seven_states_without_start_times(directory: Path) -> Path:
    """seven-states with its GPU holders written as the API server keeps a pod no kubelet
    started: no status.startTime; the scheduler bound them at 09:52 (PodScheduled=True)."""
    shutil.copytree(FIXTURES / "scenarios" / "seven-states", directory)
    pods = json.loads((directory / "pods.json").read_text())
    for pod in pods["items"]:
        if pod["metadata"]["name"] in ("train-a", "train-b"):
            del pod["status"]["startTime"]
            for condition in pod["status"]["conditions"]:
                condition["lastTransitionTime"] = ("2026-11-30T09:52:00Z"
                                                   if condition["type"] == "PodScheduled"
                                                   else "2026-11-30T12:50:43Z")
    (directory / "pods.json").write_text(json.dumps(pods))
    return directory


@pytest.mark.parametrize("reader", ["dump", "dump, other namespaces slim", "live", "watch"])
def test_a_holder_without_a_start_time_is_held_from_when_it_was_bound(
        reader: str, tmp_path: Path) -> None:
    directory = _seven_states_without_start_times(tmp_path / "seven-states")
    ref = parse_ref("research/full")
    if reader.startswith("dump"):
        verdict = SnapshotSource(directory, namespace="research" if "slim" in reader
                                 else None).triage(ref)
    else:
        with FakeKubeAPI(directory) as server:
            client = load_api_client(str(server.kubeconfig(tmp_path / "kubeconfig")))
            if reader == "live":
                verdict = LiveSource(api_client=client).triage(ref)
            else:
                source = watch_source(server, tmp_path).start()
                try:
                    assert source.wait_ready(5)
                    verdict = source.triage(ref)
                finally:
                    source.stop()
    merged = with_telemetry(verdict, read_families(answers(), DcgmLabels(), AT), "Prometheus")
    assert [e.value for e in merged.evidence[-2:]] == [
        "ml/train-a holds 1 GPU at 87 % for 3 h", "team-b/train-b holds 1 GPU at 0 % for 3 h"]
