"""The digest's "repair these" list: nodes decisive for allocatable-zero, no-gpu-node or
node-runtime-error answers in two or more of the last four weeks, from a real store."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from bot.clusters.sources import SnapshotSource
from bot.digest import BrokenNode, digest_blocks, digest_text, load_digest
from bot.store import Store
from tests.paths import FIXTURES
from triage.refs import parse_ref

SEVEN_STATES = FIXTURES / "scenarios" / "seven-states"
FUNNEL_EDGES = FIXTURES / "scenarios-extra" / "funnel-edges"
BERLIN = ZoneInfo("Europe/Berlin")
DIGEST_WEEK = datetime(2026, 11, 23, tzinfo=BERLIN)  # Monday of 2026-W48


def record(store: Store, source: SnapshotSource, ref: str, at: datetime) -> None:
    store.record(source.triage(parse_ref(ref)), cluster="prod", asked_by="U1", source="slack",
                 at=at)


def test_a_node_decisive_in_two_different_weeks_is_listed(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'digest.db'}")
    store.upgrade()
    seven = SnapshotSource(SEVEN_STATES)
    edges = SnapshotSource(FUNNEL_EDGES)
    # gpu-v100-broken: allocatable-zero three weeks ago and in the digest's week
    record(store, seven, "research/broken-node", DIGEST_WEEK - timedelta(weeks=3, hours=-30))
    record(store, seven, "research/broken-node", DIGEST_WEEK + timedelta(days=2))
    record(store, seven, "research/broken-node", DIGEST_WEEK + timedelta(days=3))
    # gpu-t4-noplugin: no-gpu-node twice, but in one week only
    record(store, seven, "research/no-plugin", DIGEST_WEEK + timedelta(days=1))
    record(store, seven, "research/no-plugin", DIGEST_WEEK + timedelta(days=4))
    # gpu-a10-full: exhausted in two weeks; full is not broken
    record(store, seven, "research/full", DIGEST_WEEK - timedelta(weeks=1))
    record(store, seven, "research/full", DIGEST_WEEK + timedelta(days=1))
    # node-runtime-error on gpu-rt-1 in two weeks, one of them five weeks ago: too long ago
    record(store, edges, "lab/sandbox-state-only", DIGEST_WEEK - timedelta(weeks=5))
    record(store, edges, "lab/sandbox-state-only", DIGEST_WEEK + timedelta(days=5))
    digest = load_digest(store, DIGEST_WEEK, BERLIN)
    assert digest.broken_nodes == (
        BrokenNode("gpu-v100-broken", weeks=2, answers=3, causes=("allocatable-zero",)),)
    text = digest_text(digest)
    assert ("Repair these (node-side answers in 2+ of the last 4 weeks):\n"
            "  gpu-v100-broken: 2 weeks, 3 answers (allocatable-zero)") in text
    blocks = digest_blocks(digest)
    [section] = [b for b in blocks if "Repair these" in b.get("text", {}).get("text", "")]
    assert "• gpu-v100-broken: 2 weeks, 3 answers (`allocatable-zero`)" in section["text"]["text"]
    # the node-runtime-error node, once in range twice, is listed too
    record(store, edges, "lab/sandbox-state-only", DIGEST_WEEK - timedelta(weeks=2))
    names = [node.name for node in load_digest(store, DIGEST_WEEK, BERLIN).broken_nodes]
    assert names == ["gpu-v100-broken", "gpu-rt-1"]
    store.close()


def test_no_list_without_repeat_offenders(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'digest.db'}")
    store.upgrade()
    record(store, SnapshotSource(SEVEN_STATES), "research/broken-node",
           DIGEST_WEEK + timedelta(days=1))
    digest = load_digest(store, DIGEST_WEEK, BERLIN)
    assert digest.broken_nodes == ()
    assert "Repair these" not in digest_text(digest)
    assert "Repair these" not in str(digest_blocks(digest))
    store.close()
