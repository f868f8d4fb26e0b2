"""Gangs (scheduling.k8s.io PodGroups): judged as a whole, on the gang-dra-basics recording."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bot.cli.bundle import write_bundle
from scoring.gang import place_gang, pods_per_node
from tests.conftest import SCENARIOS, find, load_lists
from triage.classify import triage
from triage.refs import parse_ref
from triage.snapshot import Snapshot, SnapshotError

Lists = dict[str, list[dict[str, Any]]]
ToSnapshot = Callable[[Lists], Snapshot]


@pytest.fixture
def gangs() -> Lists:
    return load_lists("gang-dra-basics")


def _triage(snapshot: Snapshot, ref: str) -> Any:
    return triage(snapshot, parse_ref(ref))


def test_an_exhausted_gang_says_how_many_fit_now_and_who_holds_the_rest(
        gangs: Lists, to_snapshot: ToSnapshot) -> None:
    for ref in ("train/moe-train-0", "train/moe-train-2"):
        verdict = _triage(to_snapshot(gangs), ref)
        assert verdict.cause == "exhausted"
        assert "3 of 4 gang pods fit now" in verdict.action
        assert "gang-h100-b4 has 4/8 nvidia.com/gpu held by research/eval-4g" in verdict.action
        assert any(e.field == "spec.schedulingPolicy.gang.minCount" and e.value == "4"
                   for e in verdict.evidence)
    # moe-train-2 got the ordinary filter message, counted with the other gang pods assumed
    assert ('The scheduler\'s "4 Insufficient nvidia.com/gpu" counts the nodes the other pods '
            "of moe-train-workers were placed on") in verdict.action
    first = _triage(to_snapshot(gangs), "train/moe-train-0")
    assert "counts the nodes" not in first.action  # it was told "waiting for minCount"
    assert verdict.node_summary.endswith(
        "; gang moe-train-workers (minCount 4): 3 pods fit now on 3 nodes, 4 with every GPU free")
    details = {n.name: n.detail for n in verdict.nodes}
    assert "gang: 1 pod(s) now, 1 empty" in details["gang-h100-b1"]
    assert "gang: 0 pod(s) now, 1 empty" in details["gang-h100-b4"]


def test_the_gang_fits_once_the_holder_finishes(gangs: Lists, to_snapshot: ToSnapshot) -> None:
    find(gangs["pods"], "eval-4g", "research")["status"]["phase"] = "Succeeded"
    verdict = _triage(to_snapshot(gangs), "train/moe-train-0")
    assert verdict.cause == "other-constraint"
    assert "GPU-wise the whole gang fits now" in verdict.action  # the scheduler will retry


@pytest.mark.parametrize(("ref", "cause", "phrases"), [
    # 3 a100 nodes for 4 pods of 8 GPUs: never
    ("train/big-sweep-0", "too-large", ("could hold only 3 of them even with every GPU free",
                                        "waiting never helps")),
    # the scheduler says nothing of an incomplete gang: not "start the scheduler"
    ("train/llama-pretrain-0", "other-constraint", ("gang minCount 4, only 3 pods",
                                                    "llama-pretrain-workers"))])
def test_a_gang_too_large_or_incomplete(gangs: Lists, to_snapshot: ToSnapshot, ref: str,
                                        cause: str, phrases: tuple[str, ...]) -> None:
    verdict = _triage(to_snapshot(gangs), ref)
    assert verdict.cause == cause
    assert all(phrase in verdict.action for phrase in phrases), verdict.action


def test_an_incomplete_gang_that_could_not_fit_gets_the_gpu_cause(
        gangs: Lists, to_snapshot: ToSnapshot) -> None:
    for index in range(3):
        pod = find(gangs["pods"], f"llama-pretrain-{index}", "train")
        pod["spec"]["nodeSelector"] = {"pool": "a100"}  # 3 nodes for a gang of 4
    verdict = _triage(to_snapshot(gangs), "train/llama-pretrain-0")
    assert verdict.cause == "too-large"
    assert "only 3 of its 4 pods exist" in verdict.action


def test_a_quota_keeping_the_rest_from_being_created_is_named(
        gangs: Lists, to_snapshot: ToSnapshot) -> None:
    gangs["resourcequotas"] = [{
        "apiVersion": "v1", "kind": "ResourceQuota",
        "metadata": {"name": "gpus", "namespace": "train"},
        "spec": {"hard": {"requests.nvidia.com/gpu": "40"}},
        "status": {"hard": {"requests.nvidia.com/gpu": "40"},
                   "used": {"requests.nvidia.com/gpu": "40"}}}]
    verdict = _triage(to_snapshot(gangs), "train/llama-pretrain-0")
    assert (verdict.cause, verdict.action) == (
        "other-constraint",
        "gang incomplete: PodGroup train/llama-pretrain-workers (Workload llama-pretrain) has"
        " gang minCount 4, only 3 pods (llama-pretrain-0, llama-pretrain-1, llama-pretrain-2)"
        " name it. GPU-wise the gang would fit, but kube-scheduler holds its pods back before"
        " any scheduling attempt until 4 exist (no event, no PodScheduled condition)."
        " ResourceQuota train/gpus leaves no room for another: requests.nvidia.com/gpu hard 40,"
        " used 40, one pod asks 8. Create the missing 1 pod, or lower minCount.")
    assert [(e.object, e.field, e.value) for e in verdict.evidence][-1] == (
        "ResourceQuota train/gpus", "requests.nvidia.com/gpu", "hard 40, used 40")


def test_a_missing_pod_group_is_named(gangs: Lists, to_snapshot: ToSnapshot) -> None:
    gangs["gangs"] = [g for g in gangs["gangs"] if g["metadata"]["name"] != "moe-train-workers"]
    verdict = _triage(to_snapshot(gangs), "train/moe-train-0")
    assert verdict.cause == "other-constraint"
    assert "PodGroup train/moe-train-workers, which does not exist" in verdict.action


def test_a_basic_policy_is_no_gang(gangs: Lists, to_snapshot: ToSnapshot) -> None:
    group = find(gangs["gangs"], "llama-pretrain-workers", "train")
    group["spec"]["schedulingPolicy"] = {"basic": {}}
    verdict = _triage(to_snapshot(gangs), "train/llama-pretrain-0")
    assert verdict.cause == "scheduler-unavailable" and "minCount" not in verdict.action


def test_without_gangs_json_the_pods_are_judged_alone(gangs: Lists,
                                                      to_snapshot: ToSnapshot) -> None:
    gangs["gangs"] = []
    assert _triage(to_snapshot(gangs), "train/moe-train-0").cause == "other-constraint"


@pytest.mark.parametrize(("ref", "kind", "cause"), [
    ("train/moe-train", "Workload", "exhausted"),
    ("train/big-sweep-workers", "PodGroup", "too-large"),
    ("train/llama-pretrain", "Workload", "other-constraint")])
def test_a_ref_naming_the_workload_answers_for_the_gang(
        gangs: Lists, to_snapshot: ToSnapshot, ref: str, kind: str, cause: str) -> None:
    verdict = _triage(to_snapshot(gangs), ref)
    assert (verdict.kind, verdict.cause) == (kind, cause)
    assert verdict.pods_total == (3 if "llama" in ref else 4)


def test_gangs_json_round_trips_through_a_dump(tmp_path: Path) -> None:
    snapshot = Snapshot.from_dir(SCENARIOS / "gang-dra-basics")
    write_bundle(snapshot, tmp_path / "copy")  # what `gpuwhy snapshot` writes
    written = json.loads((tmp_path / "copy" / "gangs.json").read_text())
    assert {(g["kind"], g["metadata"]["name"]) for g in written["items"]} >= {
        ("Workload", "moe-train"), ("PodGroup", "moe-train-workers")}
    again = Snapshot.from_dir(tmp_path / "copy")
    assert _triage(again, "train/moe-train-0").cause == "exhausted"


def test_a_node_takes_as_many_gang_pods_as_its_free_gpus_divide_into() -> None:
    assert pods_per_node([8], [4]) == 2
    assert pods_per_node([7], [4]) == 1
    assert pods_per_node([-1], [4]) == 0  # over-committed: none
    assert pods_per_node([0, 8], [1, 1]) == 0  # one resource missing: none
    assert pods_per_node([8, 3], [2, 1]) == 3
    placement = place_gang([("a", [8], [4]), ("b", [8], [8])], [4])
    assert (placement.fit_empty, placement.fit_now) == (4, 3)
    assert placement.held_back() == ["a"]


def test_a_jobs_failed_create_is_what_keeps_the_rest_from_being_created(
        gangs: Lists, to_snapshot: ToSnapshot) -> None:
    job = {"apiVersion": "batch/v1", "kind": "Job",
           "metadata": {"name": "llama-pretrain", "namespace": "train", "uid": "job-uid"},
           "spec": {"parallelism": 4, "completions": 4, "completionMode": "Indexed",
                    "template": {"spec": {"containers": []}}}}
    gangs["workloads"].append(job)
    workload = find(gangs["gangs"], "llama-pretrain", "train")
    workload["metadata"]["ownerReferences"] = [
        {"apiVersion": "batch/v1", "kind": "Job", "name": "llama-pretrain", "uid": "job-uid",
         "controller": True}]
    refused = ('Error creating: pods "llama-pretrain-3" is forbidden: exceeded quota: gpus, '
               "requested: requests.nvidia.com/gpu=8, used: requests.nvidia.com/gpu=24, "
               "limited: requests.nvidia.com/gpu=24")
    gangs["events"].append({
        "apiVersion": "v1", "kind": "Event", "reason": "FailedCreate", "type": "Warning",
        "metadata": {"name": "llama-pretrain.1", "namespace": "train"},
        "involvedObject": {"kind": "Job", "namespace": "train", "name": "llama-pretrain",
                           "uid": "job-uid"},
        "message": refused, "lastTimestamp": "2026-12-01T20:50:00Z"})
    verdict = _triage(to_snapshot(gangs), "train/llama-pretrain-0")
    assert (verdict.cause, verdict.action) == (
        "other-constraint",
        "gang incomplete: PodGroup train/llama-pretrain-workers (Workload llama-pretrain) has"
        " gang minCount 4, only 3 pods (llama-pretrain-0, llama-pretrain-1, llama-pretrain-2)"
        " name it. GPU-wise the gang would fit, but kube-scheduler holds its pods back before"
        " any scheduling attempt until 4 exist (no event, no PodScheduled condition). Job"
        f" train/llama-pretrain cannot create them: {refused}. Create the missing 1 pod, or"
        " lower minCount.")
    assert [(e.object, e.field, e.value) for e in verdict.evidence] == [
        ("PodGroup train/llama-pretrain-workers", "spec.schedulingPolicy.gang.minCount", "4"),
        ("Pod train/llama-pretrain-0", "spec.schedulingGroup.podGroupName",
         "llama-pretrain-workers"),
        ("Job train/llama-pretrain", "event FailedCreate", refused)]


def test_a_ref_naming_the_job_answers_for_its_gang(gangs: Lists,
                                                   to_snapshot: ToSnapshot) -> None:
    gangs["workloads"].append({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "moe-train", "namespace": "train", "uid": "moe-job"},
        "spec": {"parallelism": 4, "completions": 4, "completionMode": "Indexed",
                 "template": {"spec": {"containers": []}}}})
    for index in range(4):
        pod = find(gangs["pods"], f"moe-train-{index}", "train")
        pod["metadata"]["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job",
                                               "name": "moe-train", "uid": "moe-job",
                                               "controller": True}]
    gangs["gangs"] = [g for g in gangs["gangs"] if g["kind"] != "Workload"
                      or g["metadata"]["name"] != "moe-train"]  # the Job's name only
    verdict = _triage(to_snapshot(gangs), "train/moe-train")
    assert (verdict.kind, verdict.cause, verdict.pods_total) == ("Job", "exhausted", 4)
    assert "3 of 4 gang pods fit now" in verdict.action


@pytest.mark.parametrize("policy", [{"gang": {"minCount": "four"}}, {"gang": "4"}, {},
                                    {"gang": {"minCount": -3}}])
def test_an_unreadable_gang_policy_is_no_gang(gangs: Lists, to_snapshot: ToSnapshot,
                                              policy: dict[str, Any]) -> None:
    find(gangs["gangs"], "llama-pretrain-workers", "train")["spec"]["schedulingPolicy"] = policy
    verdict = _triage(to_snapshot(gangs), "train/llama-pretrain-0")
    assert "minCount" not in verdict.action


def test_a_broken_gangs_json_is_named(tmp_path: Path) -> None:
    for item in (SCENARIOS / "gang-dra-basics").iterdir():
        (tmp_path / item.name).write_bytes(item.read_bytes())
    (tmp_path / "gangs.json").write_text('{"kind": "List", "items": [')
    with pytest.raises(SnapshotError) as broken:
        Snapshot.from_dir(tmp_path)
    assert "gangs.json" in str(broken.value) and "\n" not in str(broken.value)
