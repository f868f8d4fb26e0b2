"""The node reports of an answer are kept column by column: a NodeReport is made when it is
read, and an answer reads only those it shows; the Verdict still lists, compares and stores
every node's report."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.generate import generate, pending_refs
from scoring.verdict import NodeOutcomes, NodeReport, NodeReports, ReportTable, Verdict
from triage.classify import triage
from triage.classify.report import MAX_DEVICE_NODES
from triage.dcgm import GpuFacts, Telemetry, with_telemetry
from triage.refs import parse_ref
from triage.snapshot import Snapshot

NODES = 300


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Snapshot:
    directory: Path = tmp_path_factory.mktemp("nodes")
    generate(directory, nodes=NODES, pods=3000, seed=9)
    return Snapshot.from_dir(directory)


def _kinds() -> list[str]:
    """One pending pod of each kind the generator makes, but HAMi's: a HAMi pod is scored
    node by node (its devices' usage), and HAMi's proposal line lists every fit node, so all
    of its reports are made."""
    first: dict[str, str] = {}
    for ref in pending_refs():
        first.setdefault(ref.rsplit("-", 1)[0], ref)
    return [ref for kind, ref in first.items() if not kind.startswith("bench/hami")]


@pytest.mark.parametrize("ref", _kinds())
def test_an_answer_makes_only_the_reports_it_shows(cluster: Snapshot, ref: str) -> None:
    verdict = triage(cluster, parse_ref(ref))
    nodes = verdict.nodes
    assert isinstance(nodes, NodeReports)
    assert len(nodes) == NODES
    # the described nodes, and the few a check's sentence names (three at most)
    assert nodes.table.made <= MAX_DEVICE_NODES + 3
    # stored and read back, every node's report is there and equal, field for field
    stored = verdict.to_dict()
    assert [n["name"] for n in stored["nodes"]] == [r.name for r in nodes]
    assert len({n["name"] for n in stored["nodes"]}) == NODES
    assert Verdict.from_dict(stored) == verdict


def _table() -> ReportTable:
    names = ("a", "b", "c", "d")
    return ReportTable(names, ["fit", "exhausted", "fit", "selector-mismatch"],
                       ["fits", "0 free", "fits", "pool=x"], {n: i for i, n in enumerate(names)})


def test_a_report_is_made_once_and_keeps_what_is_set_on_it() -> None:
    table = _table()
    first = table.report(2)
    first.allocatable = 8
    assert table.report(2) is first
    table.set_scores([0, 2], [0.5, 0.25])
    assert (first.score, table.report(0).score, table.report(1).score) == (0.25, 0.5, None)
    assert table.made == 3


def test_a_changed_table_leaves_the_earlier_one_as_it_was() -> None:
    table = _table()
    held = table.report(1)
    changed = table.with_changes({0: "taint-untolerated"}, {1: "0 free; gang: 1 pod(s) now"})
    assert (table.report(0).outcome, held.detail) == ("fit", "0 free")
    assert (changed.report(0).outcome, changed.report(1).detail) == (
        "taint-untolerated", "0 free; gang: 1 pod(s) now")
    assert changed.report(1) is not held


def test_outcomes_by_name_in_their_order() -> None:
    outcomes = NodeOutcomes(_table(), [3, 0, 1, 2])
    assert list(outcomes) == ["d", "a", "b", "c"]
    assert outcomes["b"].detail == "0 free"
    assert "c" in outcomes and "z" not in outcomes
    with pytest.raises(KeyError):
        outcomes["z"]
    assert [r.name for r in outcomes.where("fit".__eq__)] == ["a", "c"]
    assert outcomes.table.made == 3  # "b", then the two fit ones: "d" was never read
    assert len(NodeOutcomes.none()) == 0


def test_reports_are_a_sequence_equal_to_their_list() -> None:
    reports = NodeReports(_table(), [1, 3, 0, 2])
    listed = [NodeReport("b", "exhausted", "0 free"), NodeReport("d", "selector-mismatch",
              "pool=x"), NodeReport("a", "fit", "fits"), NodeReport("c", "fit", "fits")]
    assert reports == listed and listed == reports
    assert reports != listed[:3]
    assert reports[1:3] == listed[1:3] and isinstance(reports[1:3], list)
    assert reports[-1].name == "c"
    assert reports.outcomes() == ["exhausted", "selector-mismatch", "fit", "fit"]
    assert Verdict("ns/p", "exhausted", "wait", nodes=reports).to_dict()["nodes"][0] == {
        "name": "b", "outcome": "exhausted", "detail": "0 free", "score": None, "devices": [],
        "allocatable": None, "held": []}


def test_names_where_makes_no_report() -> None:
    outcomes = NodeOutcomes(_table(), [3, 0, 1, 2])
    assert list(outcomes.names_where("fit".__ne__)) == ["d", "b"]
    assert outcomes.table.made == 0


def test_scores_must_match_their_nodes() -> None:
    table = _table()
    with pytest.raises(ValueError, match="2 positions, 1 scores"):
        table.set_scores([0, 2], [0.5])
    assert table.scores == [None] * 4


def test_reports_replaced_by_name_keep_the_order_and_the_rest() -> None:
    table = _table()
    nodes = NodeReports(table, [1, 3, 0, 2])
    nodes[0].detail = "set by a reader"
    assert [r.name for r in nodes.in_order(["c", "b", "nowhere"])] == ["b", "c"]
    replacement = NodeReport("c", "fit", "changed", devices=[])
    changed = nodes.replacing([replacement])
    assert [r.name for r in changed] == ["b", "d", "a", "c"]
    assert changed[3] is replacement and nodes[3].detail == "fits"
    assert changed[0] is nodes[0]  # a report read before: the same, what was set on it too
    changed.table.set_scores([0], [9.0])
    assert (changed[2].score, nodes[2].score) == (9.0, None)


def test_telemetry_changes_only_the_reports_of_the_nodes_it_read(cluster: Snapshot) -> None:
    verdict = triage(cluster, parse_ref(_kinds()[-1]))
    nodes = verdict.nodes
    assert isinstance(nodes, NodeReports)
    read = [nodes[3].name, nodes[1].name]
    facts = {name: [GpuFacts(name, 0, f"GPU-{name}", "A100", utilisation=7)] for name in read}
    made = nodes.table.made
    merged = with_telemetry(verdict, Telemetry(1796043120.0, facts), "Prometheus")
    assert isinstance(merged.nodes, NodeReports)
    assert merged.nodes.table.made <= made + 2  # no report made for the others
    for position, report in enumerate(merged.nodes):
        before = nodes[position]
        assert report.name == before.name
        if report.name in read:
            assert [(d.uuid, d.utilisation) for d in report.devices][-1:] == [
                (f"GPU-{report.name}", 7)]
            assert all(d.utilisation is None for d in before.devices)
        else:
            assert report == before
