"""triage.rows.subjects and triage.rows.would_be: what a ref names, found on a Snapshot's rows,
and the Snapshot of its own that ``where`` triages."""

from __future__ import annotations

import gc

import pytest

from tests.paths import FIXTURES
from triage.classify.resolve import pod_subject
from triage.config import DEFAULT_CONFIG
from triage.refs import parse_ref
from triage.rows.subjects import find_workload
from triage.rows.would_be import WOULD_BE_POD, with_would_be_pod
from triage.snapshot import Snapshot

SCENARIOS = FIXTURES / "scenarios"
SEVEN = SCENARIOS / "seven-states"


def test_a_subject_reads_the_snapshot_s_own_indexes_through_its_rows() -> None:
    snapshot = Snapshot.from_dir(SCENARIOS / "dra-basics")
    rows = snapshot.rows
    pod = rows.pod("vision", "big-8g")
    assert pod is not None
    subject = pod_subject(rows, DEFAULT_CONFIG, parse_ref("vision/big-8g"), pod)
    # built once per Snapshot, whoever asks first
    assert subject.dra_inventory is snapshot.dra_inventory(DEFAULT_CONFIG.gpu_drivers)
    assert subject.queue_index is snapshot.queue_index
    assert subject.node_table is snapshot.node_table
    assert subject.queue_positions is snapshot.queue_positions
    assert subject.dra is not None and subject.dra.inventory is subject.dra_inventory


@pytest.mark.parametrize(("ref", "found"), [
    ("infer/vllm", ("Deployment", "infer", "vllm")),
    # seven-states' events.json: FailedCreate on Job ml/finetune for pods "finetune-2dtfx",
    # ...; on ReplicaSet infer/vllm-79f7bb9f55 for pods "vllm-79f7bb9f55-" (a prefix)
    ("ml/finetune-2dtfx", ("Job", "ml", "finetune")),
    ("infer/vllm-79f7bb9f55-x8k2p", ("ReplicaSet", "infer", "vllm-79f7bb9f55")),
    ("ml/finetune-nope", None),
])
def test_a_name_a_person_pastes_finds_its_workload(ref: str,
                                                   found: tuple[str, str, str] | None) -> None:
    snapshot = Snapshot.from_dir(SEVEN)
    named = parse_ref(ref)
    workload = find_workload(snapshot.rows, named.namespace, named.name)
    if found is None:
        assert workload is None
        return
    assert workload is not None and (workload.kind, workload.namespace, workload.name) == found
    # its row is of the object the Snapshot holds, read once
    assert snapshot.rows.object_of(workload) is snapshot.workload(*found)
    assert snapshot.rows.workload(*found) is workload


def test_where_s_snapshot_lives_while_its_rows_are_read() -> None:
    snapshot = Snapshot.from_dir(SEVEN)
    would_be = with_would_be_pod(snapshot.rows, "research", "nvidia.com/gpu", 2,
                                 "default-scheduler", {}, (), by_class=False)
    gc.collect()
    rows = would_be.rows
    pod = rows.pod("research", WOULD_BE_POD)
    assert pod is not None and pod.request("nvidia.com/gpu") == 2
    assert snapshot.rows.pod("research", WOULD_BE_POD) is None  # the cluster's is untouched
    # nothing added to the DRA objects: the same list (the watch cache keeps its DRA rows
    # for its own list only)
    assert rows.snapshot.dra is snapshot.dra
    # the Rows refer to their Snapshot weakly: without WouldBe keeping it, it is gone
    with pytest.raises(ReferenceError):
        _ = snapshot.adding([]).rows.pod("research", WOULD_BE_POD)


def test_where_asking_devices_of_a_class_adds_its_claim_template() -> None:
    snapshot = Snapshot.from_dir(SCENARIOS / "dra-basics")
    before = list(snapshot.dra)
    would_be = with_would_be_pod(snapshot.rows, "vision", "gpu.nvidia.com", 2,
                                 "default-scheduler", {}, (), by_class=True)
    added = would_be.rows.snapshot.dra
    assert added[:-1] == before and snapshot.dra == before
    assert (added[-1]["kind"], added[-1]["metadata"]) == (
        "ResourceClaimTemplate", {"name": WOULD_BE_POD, "namespace": "vision"})
    pod = would_be.rows.pod("vision", WOULD_BE_POD)
    assert pod is not None and pod.claims == (WOULD_BE_POD,)  # the template it names
