from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bot.cli.bundle import write_bundle
from tests.conftest import SCENARIOS
from triage.snapshot import Snapshot, SnapshotError, event_time


def _copy(tmp_path: Path) -> Path:
    target = tmp_path / "dump"
    shutil.copytree(SCENARIOS / "seven-states", target)
    for path in target.iterdir():
        path.chmod(0o644)
    return target


def test_reads_every_list() -> None:
    snapshot = Snapshot.from_dir(SCENARIOS / "seven-states")
    assert (len(snapshot.nodes), len(snapshot.pods), len(snapshot.workloads)) == (6, 12, 3)
    assert snapshot.cluster == "seven-states"


def test_missing_file_means_none(tmp_path: Path) -> None:
    directory = _copy(tmp_path)
    (directory / "resourcequotas.json").unlink()
    assert Snapshot.from_dir(directory).resourcequotas == []


@pytest.mark.parametrize(("content", "says"), [
    ("{not json", "not valid JSON"),
    ('{"kind": "Pod", "metadata": {"name": "x"}}', "not a Kubernetes List"),
    ('{"kind": "List", "items": [1]}', "item 0 is not a Kubernetes object"),
    ("[]", "not a Kubernetes List"),
])
def test_bad_file_is_named(tmp_path: Path, content: str, says: str) -> None:
    directory = _copy(tmp_path)
    (directory / "pods.json").write_text(content)
    with pytest.raises(SnapshotError) as error:
        Snapshot.from_dir(directory)
    assert "pods.json" in str(error.value) and says in str(error.value)


def test_not_a_directory(tmp_path: Path) -> None:
    with pytest.raises(SnapshotError, match="not a directory"):
        Snapshot.from_dir(tmp_path / "absent")


def test_round_trip_through_a_directory(tmp_path: Path) -> None:
    snapshot = Snapshot.from_dir(SCENARIOS / "hami-sharing")
    write_bundle(snapshot, tmp_path / "out")
    again = Snapshot.from_dir(tmp_path / "out", cluster="hami-sharing")
    assert again.pods == snapshot.pods and again.nodes == snapshot.nodes
    document = json.loads((tmp_path / "out" / "nodes.json").read_text())
    assert document["kind"] == "List"


def test_pods_indexed_by_node_terminated_included() -> None:
    snapshot = Snapshot.from_dir(SCENARIOS / "seven-states")
    names = sorted(p["metadata"]["name"] for p in snapshot.pods_on("gpu-a10-full"))
    assert names == ["crashed", "done", "train-a", "train-b"]
    assert snapshot.requested_on("gpu-a10-full")["nvidia.com/gpu"] == 2  # terminal excluded


def test_events_newest_first_across_time_fields() -> None:
    old = {"lastTimestamp": "2026-11-30T12:00:00Z", "metadata": {}}
    new = {"eventTime": "2026-11-30T12:30:00.123456Z", "lastTimestamp": None, "metadata": {}}
    assert event_time(new) > event_time(old)
    snapshot = Snapshot(events=[{**old, "involvedObject": {"kind": "Pod", "namespace": "a",
                                                           "name": "p"}, "reason": "old"},
                                {**new, "involvedObject": {"kind": "Pod", "namespace": "a",
                                                           "name": "p"}, "reason": "new"}])
    assert [e["reason"] for e in snapshot.events_for("Pod", "a", "p")] == ["new", "old"]
