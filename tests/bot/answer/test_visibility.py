"""What a channel may see: holders named by HAMi, DRA and DCGM, and the pod / claim names in
a node's detail, from namespaces the channel may not describe, are counted, not named."""

from __future__ import annotations

import json

from bot.answer.blocks import verdict_blocks, verdict_text
from bot.answer.visibility import visible_answer, visible_verdict
from bot.clusters.sources import SnapshotSource
from bot.clusters.telemetry import PrometheusClient, PrometheusSettings, TelemetrySource
from scoring.verdict import NodeReport, NodeReports, Verdict
from tests.paths import FIXTURES
from tests.prometheus import AT, URL, seven_states_prometheus
from triage.refs import parse_ref

HAMI_NAMESPACES = FIXTURES / "scenarios-extra" / "hami-namespaces"
DRA_NAMESPACES = FIXTURES / "scenarios-extra" / "dra-namespaces"
SEVEN_STATES = FIXTURES / "scenarios" / "seven-states"
ONE = "1 pod in another namespace"


def node(verdict: Verdict, name: str) -> NodeReport:
    return next(n for n in verdict.nodes if n.name == name)


def device_holders(report: NodeReport) -> list[tuple[int, list[str], str | None]]:
    return [(d.index, d.holders, d.holder_source) for d in report.devices]


def test_hami_holders_of_hidden_namespaces_are_counted_per_device() -> None:
    verdict = SnapshotSource(HAMI_NAMESPACES).triage(parse_ref("hami/needs-40g"))
    shown = visible_verdict(verdict, lambda namespace: namespace == "hami")
    assert device_holders(node(shown, "hami-a100-1")) == [
        (0, ["hami/llm-chat-0"], "hami"), (1, [ONE], "hami"), (2, [ONE], "hami"), (3, [], "hami")]
    assert device_holders(node(shown, "hami-t4-1")) == [(0, ["hami/placed"], "hami"),
                                                        (1, [], "hami")]
    assert "team-b" not in json.dumps(shown.to_dict())
    assert "trainer-lora" not in json.dumps(shown.to_dict())
    # the stored Verdict keeps every name
    assert device_holders(node(verdict, "hami-a100-1"))[1:3] == [
        (1, ["team-b/llm-chat-1"], "hami"), (2, ["ml/trainer-lora"], "hami")]


def test_a_channel_that_sees_a_holders_namespace_sees_its_name_on_the_device() -> None:
    verdict = SnapshotSource(HAMI_NAMESPACES).triage(parse_ref("hami/needs-40g"))
    shown = visible_verdict(verdict, lambda namespace: namespace in ("hami", "ml"))
    assert [d.holders for d in node(shown, "hami-a100-1").devices] == [
        ["hami/llm-chat-0"], [ONE], ["ml/trainer-lora"], []]


def test_a_device_that_fits_keeps_no_code() -> None:
    verdict = SnapshotSource(HAMI_NAMESPACES).triage(parse_ref("hami/fits-small"))
    shown = visible_verdict(verdict, lambda namespace: namespace == "hami")
    assert [(d.holders, d.code) for d in node(shown, "hami-t4-1").devices] == [
        (["hami/placed"], None), ([], None)]


def test_dra_holders_and_claims_of_hidden_namespaces_leave_device_and_detail() -> None:
    verdict = SnapshotSource(DRA_NAMESPACES).triage(parse_ref("vision/pinned-a"))
    assert "team-b/holder-b" in node(verdict, "dra-a100-1").detail  # the stored one names it
    shown = visible_verdict(verdict, lambda namespace: namespace == "vision")
    report = node(shown, "dra-a100-1")
    assert device_holders(report) == [(0, ["vision/holder-a"], "dra"),
                                      (1, ["vision/holder-a"], "dra"),
                                      (2, [ONE], "dra"), (3, [ONE], "dra")]
    assert report.detail.startswith(
        "vision/pinned-a-gpu-q8nlw request gpu needs 1, 4/4 matching device(s) allocated to "
        "claim vision/holder-a-gpu-8jq68 (pod vision/holder-a): gpu-0,gpu-1, claim ")
    # the devices table's code column: "allocated to <claim>" names the claim too
    assert [d.code for d in report.devices] == ["allocated to vision/holder-a-gpu-8jq68"] * 2 + [
        f"allocated to {ONE}"] * 2
    said = json.dumps(shown.to_dict())
    assert "team-b" not in said and "holder-b" not in said


def test_dcgm_holders_of_hidden_namespaces_are_counted_per_device() -> None:
    with seven_states_prometheus():
        verdict = TelemetrySource(SnapshotSource(SEVEN_STATES),
                                  PrometheusClient(PrometheusSettings(URL)),
                                  clock=lambda: AT).triage(parse_ref("research/full"))
    assert device_holders(node(verdict, "gpu-a10-full")) == [
        (0, ["ml/train-a"], "dcgm"), (1, ["team-b/train-b"], "dcgm")]
    shown = visible_verdict(verdict, lambda namespace: namespace in ("research", "ml"))
    assert device_holders(node(shown, "gpu-a10-full")) == [
        (0, ["ml/train-a"], "dcgm"), (1, [ONE], "dcgm")]
    assert "team-b" not in json.dumps(shown.to_dict())


def test_a_channel_for_every_namespace_sees_every_holder_and_detail_as_stored() -> None:
    verdict = SnapshotSource(DRA_NAMESPACES).triage(parse_ref("vision/pinned-a"))
    shown = visible_verdict(verdict, lambda namespace: True)
    assert shown.to_dict() == verdict.to_dict()


def test_the_answer_is_hidden_alike_without_a_copy_of_each_report() -> None:
    """The answer's text and blocks read no node report: ``visible_answer`` gives the same
    as the whole ``visible_verdict`` and makes no report. Each ref's channel sees only its
    own namespace."""
    for directory in (HAMI_NAMESPACES, DRA_NAMESPACES):
        source = SnapshotSource(directory)
        for ref in json.loads((directory / "expected.json").read_text()):
            verdict = source.triage(parse_ref(ref))
            nodes = verdict.nodes
            assert isinstance(nodes, NodeReports)
            made = nodes.table.made
            own = ref.split("/")[0]
            answer = visible_answer(verdict, own.__eq__)
            assert nodes.table.made == made, ref
            whole = visible_verdict(verdict, own.__eq__)
            assert verdict_text(answer, "by") == verdict_text(whole, "by"), ref
            assert verdict_blocks(answer, "by") == verdict_blocks(whole, "by"), ref
