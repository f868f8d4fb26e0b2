"""`queued` answers of triage/classify/checks/queue.py on kueue-basics, changed the way the
cluster itself would change: each whole answer worked out by hand from the objects."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import find, load_lists
from tests.paths import FIXTURES
from tests.triage.test_queues import queue_object
from tests.triage.test_traps import Lists, answer

EVAL_QUOTA = ("ClusterQueue team-a-cq: flavor a100 has 8 nvidia.com/gpu (borrowingLimit 0: it "
              "cannot borrow from cohort research), 8 reserved (team-a/train-bert 4, "
              "team-a/llm-finetune 4): 0 free, {short} short. Job team-a/eval-nightly needs "
              "{need} ({how}): wait (1 pending ahead of it in team-a-cq), lower the request, "
              "or ask for quota / borrowing in cohort research.")


@pytest.fixture
def kueue() -> Lists:
    return load_lists("kueue-basics")


def _eval_job(lists: Lists) -> dict[str, Any]:
    return find(lists["workloads"], "eval-nightly", "team-a")


# -- a Workload that does not count its pods: the Job's parallelism does ------------------------

@pytest.mark.parametrize(("parallelism", "short", "need", "how"), [
    (3, 6, 6, "3 pods × 2"),
    (None, 2, 2, "1 pod × 2"),     # unset: the API's default, one pod
    (0, 2, 2, "1 pod × 2"),        # not positive: one pod still asks
    ("3", 2, 2, "1 pod × 2"),      # not a number
], ids=["three", "unset", "zero", "text"])
def test_a_workload_without_a_pod_count_counts_the_jobs_parallelism(
        kueue: Lists, parallelism: Any, short: int, need: int, how: str) -> None:
    queue_object(kueue, "Workload", "job-eval-nightly-5ca2b")["spec"]["podSets"][0][
        "count"] = "one"
    spec = _eval_job(kueue)["spec"]
    if parallelism is None:
        spec.pop("parallelism")
    else:
        spec["parallelism"] = parallelism
    verdict = answer(kueue, "team-a/eval-nightly")
    assert verdict.action == EVAL_QUOTA.format(short=short, need=need, how=how)


def _workload(lists: Lists, name: str) -> dict[str, Any]:
    return queue_object(lists, "Workload", name)


def _condition(workload: dict[str, Any], kind: str) -> dict[str, Any]:
    found: dict[str, Any] = next(c for c in workload["status"]["conditions"]
                                 if c["type"] == kind)
    return found


RESNET_QUOTA = ("ClusterQueue team-a-cq: flavor a100 has 8 nvidia.com/gpu (borrowingLimit 0: it "
                "cannot borrow from cohort research), 8 reserved (team-a/train-bert 4, "
                "team-a/llm-finetune 4): 0 free, 4 short. Job team-a/resnet-sweep needs 4 (1 pod "
                "× 4): wait (first in line in team-a-cq), lower the request, or ask for quota / "
                "borrowing in cohort research.")
RESNET = "job-resnet-sweep-ee294"


# -- evicted, preempted: by whom, when, why --------------------------------------------------------

def test_evicted_for_another_reason_names_the_reason_and_the_requeue(kueue: Lists) -> None:
    evicted = _condition(_workload(kueue, RESNET), "Evicted")
    evicted.update(reason="PodsReadyTimeout", message="Exceeded the PodsReady timeout")
    verdict = answer(kueue, "team-a/resnet-sweep")
    assert verdict.action == ("Kueue evicted it at 2026-12-01T20:57:20Z (PodsReadyTimeout) and "
                              "re-queued it. " + RESNET_QUOTA)
    assert ("Workload team-a/job-resnet-sweep-ee294", "status.conditions[Evicted]",
            "PodsReadyTimeout: Exceeded the PodsReady timeout") in [
        (e.object, e.field, e.value) for e in verdict.evidence]


def test_evicted_without_a_reason_a_time_or_a_requeue(kueue: Lists) -> None:
    workload = _workload(kueue, RESNET)
    evicted = _condition(workload, "Evicted")
    evicted.update(reason="", message="")
    evicted.pop("lastTransitionTime")
    workload["status"]["conditions"].remove(_condition(workload, "Requeued"))
    verdict = answer(kueue, "team-a/resnet-sweep")
    assert verdict.action == "Kueue evicted it at ? (no reason given). " + RESNET_QUOTA


def test_an_eviction_no_longer_true_is_not_told(kueue: Lists) -> None:
    _condition(_workload(kueue, RESNET), "Evicted")["status"] = "False"
    assert answer(kueue, "team-a/resnet-sweep").action == RESNET_QUOTA


def test_a_preemptor_without_a_priority_class_and_no_requeue(kueue: Lists) -> None:
    workload = _workload(kueue, RESNET)
    workload["status"]["conditions"].remove(_condition(workload, "Requeued"))
    _workload(kueue, "job-llm-finetune-5d706")["spec"].pop("priorityClassRef")
    assert answer(kueue, "team-a/resnet-sweep").action == (
        "Kueue preempted it at 2026-12-01T20:57:20Z to admit team-a/llm-finetune (priority "
        "1000 > 100 batch-low). " + RESNET_QUOTA)


# -- admitted, not started yet ------------------------------------------------------------------

def _admit(workload: dict[str, Any], admission: dict[str, Any] | None) -> None:
    for kind in ("QuotaReserved", "Admitted"):
        _condition(workload, kind).update(status="True", reason=kind, message="")
    if admission is not None:
        workload["status"]["admission"] = admission


def test_admitted_but_still_suspended_names_its_queue_and_flavor(kueue: Lists) -> None:
    _admit(_workload(kueue, "job-eval-nightly-5ca2b"), {
        "clusterQueue": "team-a-cq",
        "podSetAssignments": [{"name": "main", "count": 1,
                               "flavors": {"cpu": "default-cpu", "nvidia.com/gpu": "a100"},
                               "resourceUsage": {"cpu": "4", "nvidia.com/gpu": "2"}}]})
    assert answer(kueue, "team-a/eval-nightly").action == (
        "Kueue admitted Job team-a/eval-nightly in ClusterQueue team-a-cq (flavor default-cpu, "
        "a100), but it is not started yet: Kueue unsuspends it (or removes its gates) next. If "
        "it stays so, check Kueue's controller manager.")


def test_admitted_without_an_admission_says_what_is_unknown(kueue: Lists) -> None:
    _admit(_workload(kueue, "job-eval-nightly-5ca2b"), None)
    assert answer(kueue, "team-a/eval-nightly").action == (
        "Kueue admitted Job team-a/eval-nightly in ClusterQueue ? (flavor ?), but it is not "
        "started yet: Kueue unsuspends it (or removes its gates) next. If it stays so, check "
        "Kueue's controller manager.")


# -- nothing evaluated yet, no Kueue -------------------------------------------------------------

LABEL = "metadata.labels[kueue.x-k8s.io/queue-name]"


def _evidence(verdict: Any) -> list[tuple[str, str, str]]:
    return [(e.object, e.field, e.value) for e in verdict.evidence]


def test_no_workload_yet_whole_answer(kueue: Lists) -> None:
    kueue["queues"].remove(_workload(kueue, "job-eval-nightly-5ca2b"))
    verdict = answer(kueue, "team-a/eval-nightly")
    assert verdict.action == (
        "Job team-a/eval-nightly waits for Kueue, but no Kueue Workload exists for it yet: "
        "Kueue creates one as soon as it sees the object. If none appears, check that Kueue's "
        "controller manager is running and its integrations include this kind.")
    assert _evidence(verdict) == [("Job team-a/eval-nightly", LABEL, "team-a-lq"),
                                  ("Job team-a/eval-nightly", "spec.suspend", "true")]


def test_a_workload_without_status_whole_answer(kueue: Lists) -> None:
    _workload(kueue, "job-eval-nightly-5ca2b").pop("status")
    verdict = answer(kueue, "team-a/eval-nightly")
    assert verdict.action == (
        "Job team-a/eval-nightly waits for Kueue: its Workload team-a/job-eval-nightly-5ca2b "
        "has no status yet (Kueue has not evaluated it). If it stays so, check that Kueue's "
        "controller manager is running.")
    assert _evidence(verdict) == [
        ("Job team-a/eval-nightly", LABEL, "team-a-lq"),
        ("Job team-a/eval-nightly", "spec.suspend", "true"),
        ("Workload team-a/job-eval-nightly-5ca2b", "status",
         "no QuotaReserved condition (not evaluated yet)")]


def test_without_kueue_objects_whole_answer(kueue: Lists) -> None:
    verdict = answer({**kueue, "queues": []}, "team-a/eval-nightly")
    assert verdict.action == (
        "Job team-a/eval-nightly waits for Kueue (queue team-a-lq), but gpuwhy sees no Kueue "
        "objects in this cluster (kueue.x-k8s.io not served or not readable): if Kueue is not "
        "installed nothing will admit it; remove the label and recreate it, or install Kueue.")


def test_a_gated_pod_without_a_queue_label_and_no_kueue(kueue: Lists) -> None:
    pod = find(kueue["pods"], "notebook-gpu", "team-b")
    pod["metadata"]["labels"].pop("kueue.x-k8s.io/queue-name")
    verdict = answer({**kueue, "queues": []}, "team-b/notebook-gpu")
    assert verdict.action == (
        "Pod team-b/notebook-gpu waits for Kueue (queue unnamed), but gpuwhy sees no Kueue "
        "objects in this cluster (kueue.x-k8s.io not served or not readable): if Kueue is not "
        "installed nothing will admit it; remove the label and recreate it, or install Kueue.")
    assert _evidence(verdict) == [
        ("Pod team-b/notebook-gpu", LABEL, "(none)"),
        ("Pod team-b/notebook-gpu", "spec.schedulingGates",
         "kueue.x-k8s.io/admission, kueue.x-k8s.io/topology")]


# -- a quota gpuwhy cannot judge: Kueue's own word -----------------------------------------------

@pytest.mark.parametrize(("reason", "message", "said"), [
    ("Pending", "", "Pending"),
    ("", "", "no reason given"),
], ids=["reason-only", "nothing"])
def test_an_unjudged_quota_quotes_kueues_reason(kueue: Lists, reason: str, message: str,
                                                said: str) -> None:
    queue_object(kueue, "ClusterQueue", "team-a-cq")["spec"]["resourceGroups"][0]["flavors"][0][
        "resources"][2]["nominalQuota"] = "lots"
    _condition(_workload(kueue, "job-eval-nightly-5ca2b"), "QuotaReserved").update(
        reason=reason, message=message)
    assert answer(kueue, "team-a/eval-nightly").action == (
        f"Job team-a/eval-nightly waits for admission in ClusterQueue team-a-cq: {said}.")


# -- several pod sets: each one's pods times what each asks ---------------------------------------

@pytest.mark.parametrize("submitter", [True, False], ids=["three-pod-sets", "two-pod-sets"])
def test_every_pod_set_asking_gpus_is_counted(submitter: bool) -> None:
    jobsets = load_lists(FIXTURES / "scenarios-extra" / "kueue-jobsets")
    pod_sets = _workload(jobsets, "rayjob-tune-ray-69349")["spec"]["podSets"]
    pod_sets[0]["template"]["spec"]["containers"][0]["resources"]["limits"][
        "nvidia.com/gpu"] = "1"
    if not submitter:
        pod_sets.pop()
    assert answer(jobsets, "team-a/tune-ray").action == (
        "RayJob team-a/tune-ray needs 17 nvidia.com/gpu (head: 1 pod × 1 + gpu-workers: 4 pods "
        "× 4), more than ClusterQueue team-a-cq can ever give: at most 8 in flavor a100 "
        "(nominal 8 + borrowingLimit 0). It will wait forever: split it into smaller jobs, or "
        "ask for quota in team-a-cq.")


def test_a_gated_pod_whose_workload_counts_no_pods_is_one_pod(kueue: Lists) -> None:
    _workload(kueue, "pod-notebook-gpu-54473")["spec"]["podSets"][0]["count"] = "one"
    assert answer(kueue, "team-b/notebook-gpu").action == (
        "ClusterQueue team-b-cq: flavor h100 has 16 nvidia.com/gpu (cohort research has 0 "
        "unused to lend), 16 reserved (team-b/video-gen 8, team-b/sd-train 8): 0 free, 1 short. "
        "Pod team-b/notebook-gpu needs 1 (1 pod × 1): wait (first in line in team-b-cq), lower "
        "the request, or ask for quota / borrowing in cohort research.")


def test_quota_reserved_in_a_cluster_queue_gone_since(kueue: Lists) -> None:
    workload = _workload(kueue, "job-eval-nightly-5ca2b")
    _condition(workload, "QuotaReserved").update(
        status="True", reason="QuotaReserved", message="Quota reserved in ClusterQueue gone-cq")
    workload["status"]["admission"] = {"clusterQueue": "gone-cq", "podSetAssignments": []}
    assert answer(kueue, "team-a/eval-nightly").action == (
        "Job team-a/eval-nightly waits for admission in ClusterQueue ?: Quota reserved in "
        "ClusterQueue gone-cq.")
