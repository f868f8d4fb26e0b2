"""`queued`: Kueue holds the workload (kueue-basics, recorded on v1.36.2 with Kueue's objects):
the answers name the queue's numbers, computed from the objects; bad Kueue objects give an
answer, never a traceback."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from bot.cli.bundle import write_bundle
from tests.conftest import find, load_lists
from tests.kubeapi import as_v1beta1
from tests.paths import FIXTURES
from tests.triage.test_traps import Lists, answer
from triage.queues import QueueIndex, QueueOwner
from triage.snapshot import Snapshot


@pytest.fixture
def kueue() -> Lists:
    return load_lists("kueue-basics")


def queue_object(lists: Lists, kind: str, name: str) -> dict[str, Any]:
    return next(o for o in lists["queues"] if o["kind"] == kind and o["metadata"]["name"] == name)


# -- every sub-case, with its numbers ---------------------------------------------------------

def test_quota_short_names_nominal_reserved_holders_and_the_gpus_missing(kueue: Lists) -> None:
    verdict = answer(kueue, "team-a/eval-nightly")
    assert verdict.cause == "queued" and verdict.kind == "Job"
    assert ("flavor a100 has 8 nvidia.com/gpu (borrowingLimit 0: it cannot borrow from cohort "
            "research), 8 reserved (team-a/train-bert 4, team-a/llm-finetune 4): 0 free, "
            "2 short") in verdict.action
    assert "needs 2 (1 pod × 2)" in verdict.action
    # resnet-sweep (same priority, queued earlier) is tried first
    assert "1 pending ahead of it in team-a-cq" in verdict.action
    # Kueue's own words are evidence; the numbers above come from the objects
    assert any(e.field == "status.conditions[QuotaReserved]" and "2 more needed" in e.value
               for e in verdict.evidence)


def test_the_numbers_come_from_the_objects_not_from_kueues_message(kueue: Lists) -> None:
    workload = queue_object(kueue, "Workload", "job-eval-nightly-5ca2b")
    workload["status"]["conditions"][0]["message"] = "couldn't assign flavors"
    queue_object(kueue, "ClusterQueue", "team-a-cq")["spec"]["resourceGroups"][0]["flavors"][0][
        "resources"][2]["nominalQuota"] = "9"
    verdict = answer(kueue, "team-a/eval-nightly")
    assert "has 9 nvidia.com/gpu" in verdict.action and "1 free, 1 short" in verdict.action


def test_borrowing_in_the_cohort_counts_what_the_others_leave_unused(kueue: Lists) -> None:
    # team-b-cq has no borrowingLimit: team-a-cq lends its unused h100 (it gets 4 here)
    team_a = queue_object(kueue, "ClusterQueue", "team-a-cq")
    team_a["spec"]["resourceGroups"][0]["flavors"].append(
        {"name": "h100", "resources": [{"name": "cpu", "nominalQuota": "0"},
                                       {"name": "memory", "nominalQuota": "0"},
                                       {"name": "nvidia.com/gpu", "nominalQuota": "4"}]})
    verdict = answer(kueue, "team-b/notebook-gpu")
    assert "cohort research has 4 unused to lend" in verdict.action
    assert "4 free, 0 short" in verdict.action


SUB_CASES = {
    # a missing LocalQueue names the ones that exist
    "team-b/render-batch": ("LocalQueue 'team-b-queue'", "the namespace has LocalQueue team-b-lq",
                            "kueue.x-k8s.io/queue-name: team-b-lq"),
    # an inactive ClusterQueue says why
    "team-c/sim-h200": ("ClusterQueue team-c-cq is inactive",
                        "ResourceFlavor h200, which does not exist (existing: a100, h100)"),
    # larger than the queue can ever give: it waits forever
    "team-a/big-pretrain": ("needs 16 nvidia.com/gpu (2 pods × 8)",
                            "at most 8 in flavor a100 (nominal 8 + borrowingLimit 0)",
                            "wait forever"),
    # preempted: by whom, when, the priorities; then what it waits for now
    "team-a/resnet-sweep": ("Kueue preempted it at 2026-12-01T20:57:20Z to admit "
                            "team-a/llm-finetune (priority 1000 prod-high > 100 batch-low) and "
                            "re-queued it.", "0 free, 4 short"),
}


@pytest.mark.parametrize("ref", sorted(SUB_CASES))
def test_each_sub_case_says_its_numbers(kueue: Lists, ref: str) -> None:
    verdict = answer(kueue, ref)
    assert verdict.cause == "queued"
    for phrase in SUB_CASES[ref]:
        assert phrase in verdict.action


def test_inactive_cluster_queue_quotes_its_active_condition(kueue: Lists) -> None:
    assert any(e.field == "status.conditions[Active]" and "FlavorNotFound" in e.value
               for e in answer(kueue, "team-c/sim-h200").evidence)


def test_a_stopped_cluster_queue_says_so(kueue: Lists) -> None:
    queue_object(kueue, "ClusterQueue", "team-a-cq")["spec"]["stopPolicy"] = "Hold"
    verdict = answer(kueue, "team-a/eval-nightly")
    assert "ClusterQueue team-a-cq is stopped (stopPolicy Hold)" in verdict.action


def test_a_gated_pod_is_queued_with_its_queues_numbers(kueue: Lists) -> None:
    verdict = answer(kueue, "team-b/notebook-gpu")
    assert verdict.cause == "queued" and verdict.kind == "Pod"
    assert "16 reserved (team-b/video-gen 8, team-b/sd-train 8): 0 free, 1 short" in (
        verdict.action)
    assert ("spec.schedulingGates", "kueue.x-k8s.io/admission, kueue.x-k8s.io/topology") in [
        (e.field, e.value) for e in verdict.evidence]
    assert verdict.nodes == []  # the funnel has nothing to judge before admission


@pytest.mark.parametrize("ref", ["team-b/sd-train", "team-b/sd-train-n7lxm"])
def test_admitted_by_kueue_the_flavor_that_set_the_selector_is_named(kueue: Lists,
                                                                     ref: str) -> None:
    verdict = answer(kueue, ref)
    assert verdict.cause == "exhausted"
    assert ("Kueue admitted it in ClusterQueue team-b-cq and flavor h100 set nodeSelector "
            "pool=h100 and toleration nvidia.com/gpu=present:NoSchedule") in verdict.action
    # its quota had room: a pod Kueue did not admit holds the h100 node Kueue counted free
    assert ("Outside Kueue, ops/h100-burnin 8 holds nvidia.com/gpu on the flavor's nodes: "
            "Kueue's quota does not count it.") in verdict.action


def test_a_suspended_job_without_the_queue_label_is_not_kueues(kueue: Lists) -> None:
    verdict = answer(kueue, "sandbox/debug-job")
    assert verdict.cause == "pod-not-found" and "suspended" in verdict.action


def test_v1beta1_shapes_give_the_same_answers(kueue: Lists) -> None:
    older = {**kueue, "queues": [as_v1beta1(o) for o in kueue["queues"]]}
    assert queue_object(older, "ClusterQueue", "team-a-cq")["spec"]["cohort"] == "research"
    for ref in ("team-a/eval-nightly", "team-a/resnet-sweep", "team-b/notebook-gpu",
                "team-c/sim-h200", "team-b/sd-train"):
        assert answer(older, ref).action == answer(kueue, ref).action, ref


def test_older_pending_reason_is_judged_by_the_objects(kueue: Lists) -> None:
    # releases before the granular reasons wrote "Pending" for every wait
    for name in ("job-eval-nightly-5ca2b", "job-big-pretrain-16711"):
        queue_object(kueue, "Workload", name)["status"]["conditions"][0]["reason"] = "Pending"
    assert "2 short" in answer(kueue, "team-a/eval-nightly").action
    assert "wait forever" in answer(kueue, "team-a/big-pretrain").action


# -- bad Kueue objects: an answer or one clear sentence ----------------------------------------

def test_a_workload_without_status(kueue: Lists) -> None:
    queue_object(kueue, "Workload", "job-eval-nightly-5ca2b").pop("status")
    verdict = answer(kueue, "team-a/eval-nightly")
    assert verdict.cause == "queued"
    assert "has no status yet (Kueue has not evaluated it)" in verdict.action


def test_no_workload_at_all(kueue: Lists) -> None:
    kueue["queues"].remove(queue_object(kueue, "Workload", "job-eval-nightly-5ca2b"))
    verdict = answer(kueue, "team-a/eval-nightly")
    assert verdict.cause == "queued" and "no Kueue Workload exists for it yet" in verdict.action


def test_a_cluster_without_kueue_objects(kueue: Lists) -> None:
    verdict = answer({**kueue, "queues": []}, "team-a/eval-nightly")
    assert verdict.cause == "queued" and "gpuwhy sees no Kueue objects" in verdict.action


def test_an_unknown_api_version_and_odd_fields(kueue: Lists) -> None:
    for obj in kueue["queues"]:
        obj["apiVersion"] = "kueue.x-k8s.io/v1"
    cluster_queue = queue_object(kueue, "ClusterQueue", "team-a-cq")
    cluster_queue["spec"]["resourceGroups"][0]["flavors"][0]["resources"][2][
        "nominalQuota"] = "lots"
    cluster_queue["status"]["flavorsReservation"] = None
    workload = queue_object(kueue, "Workload", "job-eval-nightly-5ca2b")
    workload["spec"]["podSets"][0]["count"] = "one"
    workload["spec"]["priority"] = "high"
    verdict = answer(kueue, "team-a/eval-nightly")
    assert verdict.cause == "queued"
    # a quota that is not a quantity is not judged: Kueue's own word is the answer
    assert verdict.action.startswith("Job team-a/eval-nightly waits for admission in "
                                     "ClusterQueue team-a-cq: couldn't assign flavors")


def test_a_cluster_queue_naming_a_missing_flavor_without_status(kueue: Lists) -> None:
    queue_object(kueue, "ClusterQueue", "team-c-cq").pop("status")
    verdict = answer(kueue, "team-c/sim-h200")
    assert "ResourceFlavor h200, which does not exist" in verdict.action


def test_a_local_queue_pointing_at_no_cluster_queue(kueue: Lists) -> None:
    queue_object(kueue, "LocalQueue", "team-a-lq")["spec"]["clusterQueue"] = "gone-cq"
    verdict = answer(kueue, "team-a/eval-nightly")
    assert "ClusterQueue gone-cq, which does not exist" in verdict.action


@pytest.mark.parametrize("label", ["Team B/../lq", "", "x" * 300])
def test_odd_queue_name_labels(kueue: Lists, label: str) -> None:
    find(kueue["workloads"], "eval-nightly", "team-a")["metadata"]["labels"][
        "kueue.x-k8s.io/queue-name"] = label
    verdict = answer(kueue, "team-a/eval-nightly")
    assert verdict.cause == "queued"
    assert "the namespace has LocalQueue team-a-lq" in verdict.action
    if label:
        assert "not even a valid object name" in verdict.action


def test_bundles_round_trip_queues_json_and_leave_it_out_without_kueue(tmp_path: Any) -> None:
    lists = load_lists("kueue-basics")
    write_bundle(Snapshot(**copy.deepcopy(lists)), tmp_path / "with")
    assert Snapshot.from_dir(tmp_path / "with").queues == lists["queues"]
    write_bundle(Snapshot(**{**lists, "queues": []}), tmp_path / "without")
    assert not (tmp_path / "without" / "queues.json").exists()


ODD_VALUES = ["text", [1, "x"], None]
PATHS = [("spec",), ("status",), ("spec", "resourceGroups"), ("spec", "podSets"),
         ("status", "conditions"), ("status", "admission"), ("status", "flavorsReservation"),
         ("spec", "nodeLabels"), ("spec", "tolerations"), ("metadata", "ownerReferences"),
         ("spec", "clusterQueue"), ("spec", "queueName"), ("spec", "priorityClassRef"),
         ("spec", "cohortName"), ("spec", "stopPolicy"), ("spec", "nodeTaints"),
         ("status", "schedulingStats")]


@pytest.mark.parametrize("value", ODD_VALUES, ids=repr)
@pytest.mark.parametrize("path", PATHS, ids=".".join)
def test_odd_shapes_anywhere_give_an_answer(kueue: Lists, path: tuple[str, ...],
                                            value: Any) -> None:
    for obj in kueue["queues"]:
        parent = obj
        for step in path[:-1]:
            parent = parent.get(step) if isinstance(parent, dict) else None
        if isinstance(parent, dict):
            parent[path[-1]] = copy.deepcopy(value)
    for ref in ("team-a/eval-nightly", "team-b/notebook-gpu", "team-c/sim-h200",
                "team-a/resnet-sweep", "team-b/sd-train", "team-b/render-batch"):
        assert answer(kueue, ref).cause in ("queued", "exhausted"), ref


@pytest.mark.parametrize("containers", ["text", [1, "x"], [{"resources": "lots"}],
                                        [{"resources": {"limits": {"nvidia.com/gpu": "two"}}}]],
                         ids=repr)
def test_a_pod_set_template_of_an_odd_shape_gives_an_answer(kueue: Lists,
                                                             containers: Any) -> None:
    workload = queue_object(kueue, "Workload", "job-eval-nightly-5ca2b")
    workload["spec"]["podSets"][0]["template"]["spec"]["containers"] = containers
    verdict = answer(kueue, "team-a/eval-nightly")
    assert verdict.cause == "queued" and "2 short" in verdict.action


# -- JobSets and RayJobs: Kueue admits them whole -----------------------------------------------

@pytest.fixture
def jobsets() -> Lists:
    return load_lists(FIXTURES / "scenarios-extra" / "kueue-jobsets")


def test_a_queued_jobset_counts_its_replicated_jobs_pods(jobsets: Lists) -> None:
    verdict = answer(jobsets, "team-a/trainer-js")
    assert (verdict.cause, verdict.kind) == ("queued", "JobSet")
    assert ("flavor a100 has 8 nvidia.com/gpu (no cohort to borrow from), 4 reserved "
            "(team-a/pretrain-js 4): 4 free, 4 short") in verdict.action
    assert "JobSet team-a/trainer-js needs 8 (2 pods × 4)" in verdict.action


def test_a_rayjob_counts_its_gpu_workers_not_its_head(jobsets: Lists) -> None:
    verdict = answer(jobsets, "team-a/tune-ray")
    assert (verdict.cause, verdict.kind) == ("queued", "RayJob")
    # head (no GPU) 1 and submitter 1 count no GPU: 4 workers × 4
    assert verdict.action.startswith("RayJob team-a/tune-ray needs 16 nvidia.com/gpu "
                                     "(gpu-workers: 4 pods × 4), more than ClusterQueue "
                                     "team-a-cq can ever give: at most 8 in flavor a100")


def test_an_admitted_jobset_is_its_pods_answer(jobsets: Lists) -> None:
    verdict = answer(jobsets, "team-a/pretrain-js")
    assert (verdict.cause, verdict.kind) == ("scheduled", "JobSet")
    assert verdict.pods == ["team-a/pretrain-js-workers-0-0-x7k2p"]


# (a spec that is not a mapping at all fails every kind's checks alike, and the API server's
# schema for both CRDs refuses it)
JOB_PATHS = [("spec", "replicatedJobs"), ("spec", "rayClusterSpec"),
             ("spec", "suspend"), ("metadata", "labels"), ("spec", "rayClusterSpec",
                                                          "workerGroupSpecs")]


@pytest.mark.parametrize("value", ODD_VALUES, ids=repr)
@pytest.mark.parametrize("path", JOB_PATHS, ids=".".join)
def test_jobsets_and_rayjobs_of_odd_shapes_give_an_answer(jobsets: Lists, path: tuple[str, ...],
                                                          value: Any) -> None:
    for obj in jobsets["workloads"]:
        if obj["kind"] not in ("JobSet", "RayJob"):
            continue
        parent = obj
        for step in path[:-1]:
            parent = parent.get(step) if isinstance(parent, dict) else None
        if isinstance(parent, dict):
            parent[path[-1]] = copy.deepcopy(value)
    for ref in ("team-a/trainer-js", "team-a/tune-ray", "team-a/pretrain-js"):
        assert answer(jobsets, ref).cause in ("queued", "scheduled", "pod-not-found",
                                              "no-gpu-request"), ref


@pytest.mark.parametrize("ref", ["team-a/trainer-js", "team-a/tune-ray"])
def test_a_full_resourcequota_does_not_stop_a_suspended_jobset_or_rayjob(jobsets: Lists,
                                                                         ref: str) -> None:
    # suspended, their controllers make no pods: the namespace's quota refuses nothing yet
    jobsets["resourcequotas"] = [{
        "apiVersion": "v1", "kind": "ResourceQuota",
        "metadata": {"name": "gpus", "namespace": "team-a", "uid": "q-1",
                     "resourceVersion": "1", "creationTimestamp": "2026-12-01T21:00:00Z"},
        "spec": {"hard": {"requests.nvidia.com/gpu": "4"}},
        "status": {"hard": {"requests.nvidia.com/gpu": "4"},
                   "used": {"requests.nvidia.com/gpu": "4"}}}]
    assert answer(jobsets, ref).cause == "queued"


# -- a Job or pod as Kueue sees it: the row the queue checks read -----------------------------

@pytest.mark.parametrize(("spec", "parallelism"), [
    ({"parallelism": 4}, 4), ({}, 1), ({"parallelism": 0}, 1), ({"parallelism": "4"}, 1),
])
def test_a_queue_owner_counts_only_a_positive_parallelism(spec: dict[str, Any],
                                                          parallelism: int) -> None:
    job = {"apiVersion": "batch/v1", "kind": "Job",
           "metadata": {"namespace": "ml", "name": "train"}, "spec": spec}
    assert QueueOwner.of(job).parallelism == parallelism


def test_a_queue_owner_of_a_gated_pod_names_its_queue_gates_and_workload() -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "namespace": "ml", "name": "p", "uid": "u1",
        "labels": {"kueue.x-k8s.io/queue-name": "team-a"},
        "annotations": {"kueue.x-k8s.io/workload": "w1"},
        "ownerReferences": [{"uid": "o1", "controller": True}, {"uid": "o2"}]},
        "spec": {"schedulingGates": [{"name": "kueue.x-k8s.io/admission"}, {"name": "other"}]}}
    owner = QueueOwner.of(pod)
    assert (owner.label, owner.queue, owner.gates, owner.involved, owner.workload_name,
            owner.controller_uids, owner.suspended) == (
        "Pod ml/p", "team-a", ("kueue.x-k8s.io/admission",), True, "w1", ("o1",), False)
    bare = QueueOwner.of({"kind": "Pod", "metadata": {"namespace": "ml", "name": "q"}})
    assert (bare.queue, bare.gates, bare.involved, bare.controller_uids) == (None, (), False, ())


@pytest.mark.parametrize(("metadata", "found"), [
    ({"uid": "job-uid"}, True),  # the Workload's controller owner
    ({"uid": "pod-uid", "annotations": {"kueue.x-k8s.io/workload": "job-train"}}, True),
    ({"uid": "pod-uid", "ownerReferences": [{"uid": "job-uid", "controller": True}]}, True),
    ({"uid": "pod-uid", "ownerReferences": [{"uid": "job-uid"}]}, False),  # not its controller
    ({"uid": "pod-uid", "annotations": {"kueue.x-k8s.io/workload": "other"}}, False),
])
def test_the_workload_kueue_made_for_an_owner(metadata: dict[str, Any], found: bool) -> None:
    workload = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
                "metadata": {"namespace": "ml", "name": "job-train", "uid": "w-uid",
                             "ownerReferences": [{"kind": "Job", "name": "train",
                                                  "uid": "job-uid", "controller": True}]}}
    owner = QueueOwner.of({"kind": "Pod", "metadata": {"namespace": "ml", "name": "p",
                                                        **metadata}})
    row = QueueIndex([workload]).workload_for(owner)
    assert (row.key if row is not None else None) == ("ml/job-train" if found else None)
