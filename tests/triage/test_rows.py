"""triage.rows: the rows the checks read, built from recorded objects."""

from __future__ import annotations

import copy
import json
from decimal import Decimal
from typing import Any

import pytest

from scoring.rows import OwnerRef
from tests.paths import FIXTURES
from triage.rows import event_row, pod_row, spec_facts
from triage.snapshot import Snapshot

SEVEN = FIXTURES / "scenarios" / "seven-states"


def recorded(name: str) -> dict[str, Any]:
    pods = json.loads((SEVEN / "pods.json").read_text())["items"]
    return copy.deepcopy(next(p for p in pods if p["metadata"]["name"] == name))


def test_a_running_holder_as_a_row() -> None:
    row = pod_row(recorded("train-b"))
    assert (row.label, row.node, row.phase, row.terminated, row.terminating) == (
        "team-b/train-b", "gpu-a10-full", "Running", False, False)
    assert (row.scheduler, row.priority, row.created) == (
        "default-scheduler", 0, "2026-11-30T12:50:44Z")
    assert dict(row.requests) == {"cpu": Decimal(4), "memory": Decimal(32 * 2 ** 30),
                                  "nvidia.com/gpu": Decimal(1)}
    assert row.request("nvidia.com/gpu.shared") == 0
    assert row.held_since == "2026-11-30T12:50:44Z"


def test_requests_count_init_containers_sidecars_and_the_overhead() -> None:
    pod = recorded("train-b")
    main = pod["spec"]["containers"][0]
    pod["spec"]["initContainers"] = [
        {"name": "fetch", "resources": {"limits": {"nvidia.com/gpu": "2", "cpu": "1"}}},
        {"name": "proxy", "restartPolicy": "Always", "resources": {"requests": {"cpu": "500m"}}}]
    pod["spec"]["overhead"] = {"cpu": "250m", "example.com/sandbox": "1"}
    main["resources"] = {"limits": {"nvidia.com/gpu": "1"}, "requests": {"cpu": "4"}}
    requests = pod_row(pod).requests
    # init peak 2 GPUs over the one the app container asks; cpu 4 + the sidecar's 0.5, plus
    # the overhead's 0.25; a resource only the overhead names is asked for too
    assert dict(requests) == {"nvidia.com/gpu": Decimal(2), "cpu": Decimal("4.75"),
                              "example.com/sandbox": Decimal(1)}


@pytest.mark.parametrize(("start_time", "scheduled_at", "held_since"), [
    ("2026-11-30T12:50:44Z", "2026-11-30T09:00:00Z", "2026-11-30T12:50:44Z"),
    (None, "2026-11-30T09:00:00Z", "2026-11-30T09:00:00Z"),
    (None, None, None),
])
def test_held_since_is_the_start_else_the_binding(start_time: str | None,
                                                  scheduled_at: str | None,
                                                  held_since: str | None) -> None:
    pod = recorded("train-b")
    if start_time is None:
        del pod["status"]["startTime"]
    conditions = pod["status"]["conditions"]
    if scheduled_at is None:
        conditions[:] = [c for c in conditions if c["type"] != "PodScheduled"]
    else:
        next(c for c in conditions if c["type"] == "PodScheduled")[
            "lastTransitionTime"] = scheduled_at
    assert pod_row(pod).held_since == held_since


def test_a_pending_pod_unbound_with_owner_and_gates() -> None:
    pod = recorded("train-b")
    del pod["spec"]["nodeName"]
    pod["status"] = {"phase": "Pending"}
    pod["metadata"]["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job",
                                           "name": "train", "uid": "u-1", "controller": True}]
    pod["metadata"]["deletionTimestamp"] = "2026-11-30T12:55:00Z"
    pod["spec"]["schedulingGates"] = [{"name": "example.com/wait"}]
    row = pod_row(pod)
    assert (row.node, row.phase, row.held_since, row.terminating) == ("", "Pending", None, True)
    assert row.owners == (OwnerRef("Job", "train", "u-1", True),)
    assert row.gates == ("example.com/wait",)


def test_spec_facts_of_a_template() -> None:
    facts = spec_facts(recorded("train-b")["spec"])
    assert (facts.node, facts.scheduler, facts.runtime_class) == (
        "gpu-a10-full", "default-scheduler", "")
    assert dict(facts.node_selector) == {"pool": "a10-full"}
    assert facts.affinity_terms is None
    assert [t["key"] for t in facts.tolerations] == ["node.kubernetes.io/not-ready",
                                                   "node.kubernetes.io/unreachable"]
    assert facts.resources == {"cpu", "memory", "nvidia.com/gpu"}
    assert facts.limits == {"cpu": 0, "memory": Decimal(32 * 2 ** 30), "ephemeral-storage": 0}


def test_events_of_either_api_read_alike() -> None:
    core = {"apiVersion": "v1", "kind": "Event", "reason": "FailedScheduling", "type": "Warning",
            "message": "0/6 nodes are available.", "count": 3,
            "involvedObject": {"kind": "Pod", "namespace": "ml", "name": "train", "uid": "u-2"},
            "lastTimestamp": "2026-11-30T12:51:00Z", "metadata": {"name": "train.1"},
            "source": {"component": "default-scheduler"}}
    events_api = {"apiVersion": "events.k8s.io/v1", "kind": "Event", "reason": "Scheduled",
                  "type": "Normal", "note": "Successfully assigned ml/train to gpu-1",
                  "regarding": {"kind": "Pod", "namespace": "ml", "name": "train"},
                  "eventTime": "2026-11-30T12:52:00.123456Z", "series": {"count": 2},
                  "reportingComponent": "default-scheduler", "metadata": {"name": "train.2"}}
    first, second = event_row(core), event_row(events_api)
    assert (first.kind, first.namespace, first.name, first.uid, first.count, first.time,
            first.text) == ("Pod", "ml", "train", "u-2", 3, "2026-11-30T12:51:00",
                            "0/6 nodes are available.")
    assert (second.uid, second.count, second.time, second.text, second.component) == (
        "", 2, "2026-11-30T12:52:00", "Successfully assigned ml/train to gpu-1",
        "default-scheduler ")


def test_a_nodes_holders_are_its_live_pods_holding_the_resource() -> None:
    snapshot = Snapshot.from_dir(SEVEN)  # the Rows live as long as their Snapshot
    rows = snapshot.rows
    holders = rows.holders_on("gpu-a10-full", "nvidia.com/gpu")
    assert [(pod.label, amount) for pod, amount in holders] == [("ml/train-a", 1),
                                                                ("team-b/train-b", 1)]
    assert rows.holders_on("gpu-a10-full", "nvidia.com/gpu") is holders  # once per node
    assert rows.pod("team-b", "train-b") is holders[1][0]  # one row per pod
