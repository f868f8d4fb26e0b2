"""Which pods are stuck (pure): GPU pods unscheduled past the threshold, or bound and not
started; grouped per workload; what became of them later."""

from __future__ import annotations

import copy
from datetime import timedelta

from bot.alerts.stuck import Progress, StuckGroup, Workload, owning_workload, progress, stuck_groups
from tests.alertkit import CREATED, TRAINER_PODS, seven_states_with_trainer
from tests.conftest import find, load_lists
from triage.config import DEFAULT_CONFIG, TriageConfig

AFTER = timedelta(minutes=10)


def names(groups: list[StuckGroup]) -> dict[str, list[str]]:
    return {group.workload.key: [pod.name for pod in group.pods] for group in groups}


def test_unscheduled_gpu_pods_past_the_threshold_grouped_per_workload() -> None:
    pods = seven_states_with_trainer()["pods"]
    groups = stuck_groups(pods, CREATED + AFTER, AFTER, DEFAULT_CONFIG)
    assert names(groups) == {
        "Deployment/research/trainer": list(TRAINER_PODS),
        **{f"Pod/research/{name}": [name] for name in
           ("big", "broken-node", "full", "no-plugin", "tainted", "wrong-pool")},
    }
    # no-request asks for no GPU; bound Running pods and the finished team-b pods are not
    # stuck; wrong-pool was created a second before the others, so it is first past the mark
    earlier = stuck_groups(pods, CREATED + AFTER - timedelta(seconds=1), AFTER, DEFAULT_CONFIG)
    assert names(earlier) == {"Pod/research/wrong-pool": ["wrong-pool"]}


def test_not_before_the_threshold() -> None:
    pods = seven_states_with_trainer()["pods"]
    assert stuck_groups(pods, CREATED + AFTER - timedelta(seconds=2), AFTER, DEFAULT_CONFIG) == []


def test_bound_but_pending_counts_running_does_not() -> None:
    lists = load_lists("seven-states")
    pod = find(lists["pods"], "ok", "research")
    assert stuck_groups([pod], CREATED + AFTER * 2, AFTER, DEFAULT_CONFIG) == []
    pending = copy.deepcopy(pod)
    pending["status"]["phase"] = "Pending"
    [group] = stuck_groups([pending], CREATED + AFTER * 2, AFTER, DEFAULT_CONFIG)
    assert group.pods[0].bound


def test_a_dra_claim_asks_for_a_gpu_and_other_resources_do_not() -> None:
    pod = copy.deepcopy(find(load_lists("seven-states")["pods"], "broken-node", "research"))
    container = pod["spec"]["containers"][0]["resources"]
    del container["limits"]["nvidia.com/gpu"], container["requests"]["nvidia.com/gpu"]
    now = CREATED + AFTER * 2
    assert stuck_groups([pod], now, AFTER, DEFAULT_CONFIG) == []
    pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]
    assert len(stuck_groups([pod], now, AFTER, DEFAULT_CONFIG)) == 1
    # configured GPU resources count, and only they
    del pod["spec"]["resourceClaims"]
    container["limits"]["example.com/tpu"] = "1"
    assert stuck_groups([pod], now, AFTER, DEFAULT_CONFIG) == []
    tpu = TriageConfig(gpu_resources=("example.com/tpu",))
    assert len(stuck_groups([pod], now, AFTER, tpu)) == 1


def test_terminating_and_finished_pods_are_not_stuck() -> None:
    pod = copy.deepcopy(find(load_lists("seven-states")["pods"], "broken-node", "research"))
    now = CREATED + AFTER * 2
    pod["metadata"]["deletionTimestamp"] = "2026-11-30T13:00:00Z"
    assert stuck_groups([pod], now, AFTER, DEFAULT_CONFIG) == []
    del pod["metadata"]["deletionTimestamp"]
    pod["status"]["phase"] = "Failed"
    assert stuck_groups([pod], now, AFTER, DEFAULT_CONFIG) == []
    pod["status"]["phase"] = "Pending"
    pod["metadata"]["creationTimestamp"] = "not a time"
    assert stuck_groups([pod], now, AFTER, DEFAULT_CONFIG) == []


def test_owning_workloads() -> None:
    extra = load_lists("seven-states")
    trainer = find(seven_states_with_trainer()["pods"], TRAINER_PODS[0], "research")
    assert owning_workload(trainer) == Workload("research", "Deployment", "trainer")
    assert owning_workload(find(extra["pods"], "full", "research")) == \
        Workload("research", "Pod", "full")
    orphan_rs = copy.deepcopy(trainer)
    del orphan_rs["metadata"]["labels"]["pod-template-hash"]
    assert owning_workload(orphan_rs) == Workload("research", "ReplicaSet", "trainer-6f9d8c7b5")
    job_pod = copy.deepcopy(trainer)
    job_pod["metadata"]["ownerReferences"] = [{"kind": "Job", "name": "train", "controller": True}]
    assert owning_workload(job_pod) == Workload("research", "Job", "train")
    assert str(Workload("research", "Job", "train")) == "Job research/train"


def test_progress_of_posted_pods() -> None:
    pods = seven_states_with_trainer()["pods"]
    states = progress(pods, ["uid-" + TRAINER_PODS[0], "376574e0-c106-4d65-8fcc-07d47562d480",
                             find(pods, "ok", "research")["metadata"]["uid"],
                             find(pods, "done", "team-b")["metadata"]["uid"], "uid-deleted"])
    assert list(states.values()) == [Progress.STUCK, Progress.STUCK, Progress.RUNNING,
                                     Progress.GONE, Progress.GONE]
