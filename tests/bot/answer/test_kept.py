"""What gpuwhy keeps of an answer: every node's report on a small cluster; on a large one the
nodes "show devices" lists and the digest counts, the rest counted by outcome, so that the
thread, the store and the digest read the same from it as from the whole answer."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bench.generate import generate, pending_refs
from bot.answer.devices import devices_text, relevant_nodes
from bot.answer.kept import IMPLICATED_KEPT, KEEP_EVERY_NODE, implicated_nodes, kept_verdict
from bot.config import BotConfig
from bot.slack.listeners.state import BotState
from bot.store import Store
from scoring.verdict import NodeReports, Verdict
from tests.bot.slack.test_slack_app import FixedSource
from tests.conftest import SCENARIOS
from triage.classify import triage
from triage.refs import parse_ref
from triage.snapshot import Snapshot

NODES = 1200  # past KEEP_EVERY_NODE
TRIAGED_AT = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def large(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Snapshot]:
    directory = tmp_path_factory.mktemp("large")
    generate(directory, nodes=NODES, pods=3000, seed=9)
    yield Snapshot.from_dir(directory)


def _answers(snapshot: Snapshot) -> list[Verdict]:
    # one pending pod of each generated kind
    return [triage(snapshot, parse_ref(ref)) for ref in pending_refs()[:10]]


def test_an_answer_on_a_small_cluster_is_kept_whole() -> None:
    verdict = triage(Snapshot.from_dir(SCENARIOS / "seven-states"), parse_ref("research/full"))
    assert kept_verdict(verdict) is verdict
    assert "nodes_omitted" not in verdict.to_dict()


def test_a_large_answer_keeps_few_reports_and_counts_every_other_node(large: Snapshot) -> None:
    assert NODES > KEEP_EVERY_NODE
    for verdict in _answers(large):
        kept = kept_verdict(verdict)
        assert len(kept.nodes) <= 10 + IMPLICATED_KEPT, verdict.ref
        assert len(kept.nodes) + sum(kept.nodes_omitted.values()) == NODES, verdict.ref
        assert kept.node_summary == verdict.node_summary
        assert kept.action == verdict.action


def test_show_devices_lists_and_counts_the_same_from_a_kept_answer(large: Snapshot) -> None:
    for verdict in _answers(large):
        kept = kept_verdict(verdict)
        assert devices_text(kept, TRIAGED_AT) == devices_text(verdict, TRIAGED_AT), verdict.ref
        assert relevant_nodes(kept).others == relevant_nodes(verdict).others


def test_the_digest_counts_the_first_implicated_nodes_of_a_kept_answer(large: Snapshot) -> None:
    too_large = triage(large, parse_ref("bench/too-large-000"))
    implicated = implicated_nodes(too_large)
    assert len(implicated) > IMPLICATED_KEPT  # every 8-GPU node of the cluster is too small
    assert implicated_nodes(kept_verdict(too_large)) == implicated[:IMPLICATED_KEPT]
    exhausted = triage(large, parse_ref("bench/exhausted-000"))
    assert implicated_nodes(kept_verdict(exhausted)) == implicated_nodes(exhausted)


def test_a_kept_answer_reads_back_from_its_json_and_the_store(large: Snapshot,
                                                              tmp_path: Path) -> None:
    verdict = triage(large, parse_ref("bench/any-node-000"))
    kept = kept_verdict(verdict)
    assert Verdict.from_dict(json.loads(json.dumps(kept.to_dict()))) == kept
    store = Store(f"sqlite:///{tmp_path / 'gpuwhy.db'}")
    store.upgrade()
    try:
        store.record(verdict, cluster="big", asked_by="U1", source="slack", channel="C1",
                     message_ts="1.1")
        incident = store.incident_for_thread("C1", "1.1")
    finally:
        store.close()
    assert incident is not None and incident.verdict == kept
    # the whole answer's JSON is over 20 times the kept one's
    assert len(json.dumps(verdict.to_dict())) > 20 * len(json.dumps(kept.to_dict()))


def test_the_bot_keeps_the_kept_answer_for_its_thread(large: Snapshot) -> None:
    verdict = triage(large, parse_ref("bench/tainted-000"))
    state = BotState(config=BotConfig(), source=FixedSource(verdict))
    try:
        state.remember(verdict, cluster="big", asked_by="U1", channel="C1", message_ts="1.1")
        posted = state.recent.get("C1", "1.1")
    finally:
        state.close()
    assert posted is not None
    assert posted.verdict == kept_verdict(verdict)
    assert posted.verdict.nodes_omitted == kept_verdict(verdict).nodes_omitted != {}


def test_keeping_an_answer_makes_only_the_reports_it_keeps(large: Snapshot) -> None:
    for verdict in _answers(large):
        nodes = verdict.nodes
        assert isinstance(nodes, NodeReports)
        made = nodes.table.made
        kept = kept_verdict(verdict)
        assert nodes.table.made <= made + len(kept.nodes), verdict.ref
