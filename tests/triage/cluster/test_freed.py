"""An answer's Snapshot is freed by reference counting the moment its last reference goes,
through the dump, the live read and the watch cache: no cycle among it and its Rows leaves
it (and the per-node dicts it holds) to the garbage collector, nor does any other cycle
leave it the answer's own objects. The collector stays off throughout, as it is while an
answer runs (triage.dumpfile.one_answer)."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.clusters.sources import LiveSource
from tests.kubeapi import FakeKubeAPI
from tests.paths import FIXTURES
from tests.triage.cluster.conftest import SEVEN, ready_cache, ref_of
from triage.classify import triage
from triage.cluster import load_api_client
from triage.cluster.read import answer_cold
from triage.snapshot import Snapshot

DRA = FIXTURES / "scenarios" / "dra-basics"
# (scenario, ref): a whole-GPU pod judged on every node; a DRA claim's pod
ANSWERS = [pytest.param(SEVEN, "research/tainted", id="seven-states"),
           pytest.param(DRA, "vision/big-8g", id="dra-basics")]


@pytest.fixture
def collector_off() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def answered_and_dropped(snapshot: Snapshot, ref: str) -> weakref.ref[Snapshot]:
    """A weak reference to the Snapshot, once it has answered and its last reference gone."""
    gone = weakref.ref(snapshot)
    verdict = triage(snapshot, ref_of(ref))
    assert verdict.nodes  # the answer read the Snapshot's rows
    del snapshot, verdict
    return gone


@pytest.mark.parametrize(("scenario", "ref"), ANSWERS)
@pytest.mark.usefixtures("collector_off")
def test_a_dump_dirs_snapshot_is_freed_after_its_answer(scenario: Path, ref: str) -> None:
    gone = answered_and_dropped(Snapshot.from_dir(scenario), ref)
    assert gone() is None


@pytest.mark.parametrize(("scenario", "ref"), ANSWERS)
def test_an_answer_leaves_the_collector_nothing(scenario: Path, ref: str) -> None:
    answered_and_dropped(Snapshot.from_dir(scenario), ref)  # what is built once per process
    snapshot = Snapshot.from_dir(scenario)
    gc.collect()
    gc.disable()
    try:
        answered_and_dropped(snapshot, ref)
        del snapshot
        assert gc.collect() == 0
    finally:
        gc.enable()


@pytest.mark.parametrize(("scenario", "ref"), ANSWERS)
@pytest.mark.usefixtures("collector_off")
def test_a_cold_reads_snapshot_is_freed_after_its_answer(scenario: Path, ref: str,
                                                          tmp_path: Path) -> None:
    read: list[weakref.ref[Snapshot]] = []

    def answer(snapshot: Snapshot) -> int:
        read.append(weakref.ref(snapshot))
        return len(triage(snapshot, ref_of(ref)).nodes)

    with FakeKubeAPI(scenario) as server:
        client = load_api_client(str(server.kubeconfig(tmp_path / "kubeconfig")))
        assert answer_cold(client, ref_of(ref), answer)
    assert read and all(snapshot() is None for snapshot in read)


@pytest.mark.usefixtures("collector_off")
def test_a_one_shot_triage_keeps_its_read_until_the_process_ends(tmp_path: Path) -> None:
    """`gpuwhy triage` answers once and ends without a teardown: its Snapshot is kept rather
    than freed object by object after the answer; a source that answers again frees it."""
    with FakeKubeAPI(SEVEN) as server:
        client = load_api_client(str(server.kubeconfig(tmp_path / "kubeconfig")))
        once, serving = LiveSource(api_client=client, one_shot=True), LiveSource(api_client=client)
        for source in (once, serving):
            assert source.triage(ref_of("research/tainted")).nodes
    assert once.read is not None and once.read.pod("research", "tainted") is not None
    assert serving.read is None


@pytest.mark.parametrize(("scenario", "ref"), ANSWERS)
def test_the_watch_caches_snapshot_is_freed_after_its_answer(scenario: Path, ref: str,
                                                              tmp_path: Path) -> None:
    with FakeKubeAPI(scenario) as server, ready_cache(server, tmp_path) as source:
        gc.collect()
        gc.disable()
        try:
            gone = answered_and_dropped(source.cache.snapshot_for(ref_of(ref)), ref)
            assert gone() is None
        finally:
            gc.enable()
