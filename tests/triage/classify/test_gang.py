"""Gang answers read as whole sentences, on the gang-dra-basics recording changed the way the
cluster would change: a PodGroup that is missing, a gang too large for every node, one of its
pods already bound, an incomplete gang and what keeps its other pods from being created.

The recording (see its README): pods train/moe-train-0..3 (PodGroup moe-train-workers,
minCount 4, 8 nvidia.com/gpu each, pool=h100-b: gang-h100-b1..b4 of 8 GPUs, b4 half held by
research/eval-4g); train/llama-pretrain-0..2 (llama-pretrain-workers, minCount 4, pool=h100-a,
four empty nodes of 8).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from scoring.verdict import Verdict
from tests.conftest import find, load_lists
from triage.classify import triage
from triage.refs import parse_ref
from triage.snapshot import Snapshot

Lists = dict[str, list[dict[str, Any]]]
MOE = "PodGroup train/moe-train-workers (Workload moe-train)"
LLAMA = "PodGroup train/llama-pretrain-workers (Workload llama-pretrain)"
WAITING = ("pod group is unschedulable, waiting for minCount pods from a gang to be scheduled,"
           " one or more plugins asked to wait and no plugin rejected pod")


@pytest.fixture
def gangs() -> Lists:
    return load_lists("gang-dra-basics")


def _answer(lists: Lists, ref: str) -> Verdict:
    return triage(Snapshot(**copy.deepcopy(lists)), parse_ref(ref))


def _evidence(verdict: Verdict) -> list[tuple[str, str, str]]:
    return [(e.object, e.field, e.value) for e in verdict.evidence]


def _gang_evidence(group: str, pod: str, min_count: int) -> list[tuple[str, str, str]]:
    return [(f"PodGroup train/{group}", "spec.schedulingPolicy.gang.minCount", str(min_count)),
            (f"Pod train/{pod}", "spec.schedulingGroup.podGroupName", group)]


def test_a_missing_pod_group_keeps_the_pod_back(gangs: Lists) -> None:
    gangs["gangs"] = [g for g in gangs["gangs"] if g["metadata"]["name"] != "moe-train-workers"]
    verdict = _answer(gangs, "train/moe-train-0")
    assert (verdict.cause, verdict.action) == (
        "other-constraint",
        "train/moe-train-0 joins PodGroup train/moe-train-workers, which does not exist: the"
        " scheduler keeps the pod back until it does (and says nothing). Create the PodGroup (or"
        " its Workload), or fix spec.schedulingGroup.podGroupName.")
    assert _evidence(verdict) == [("Pod train/moe-train-0", "spec.schedulingGroup.podGroupName",
                                   "moe-train-workers: no such PodGroup")]


def test_a_gang_larger_than_every_node_together(gangs: Lists) -> None:
    # Without their nodeSelector and with minCount 20: the 13 nodes of 8 GPUs take one pod
    # each even empty (gang-a100-1..3, gang-a40-1/2, gang-h100-a1..a4, gang-h100-b1..b4).
    for index in range(4):
        del find(gangs["pods"], f"moe-train-{index}", "train")["spec"]["nodeSelector"]
    group = find(gangs["gangs"], "moe-train-workers", "train")
    group["spec"]["schedulingPolicy"]["gang"]["minCount"] = 20
    verdict = _answer(gangs, "train/moe-train-0")
    assert (verdict.cause, verdict.action) == (
        "too-large",
        f"{MOE} needs 20 pods × 8 nvidia.com/gpu at once (gang minCount 20); the nodes the node"
        " selection and taints leave could hold only 13 of them even with every GPU free"
        " (gang-a100-1: 1, gang-a100-2: 1, gang-a100-3: 1, gang-a40-1: 1 +9 more). The"
        " scheduler binds none of the gang until 20 fit together: waiting never helps. Lower"
        " minCount, make each pod smaller, or send the gang to a pool with room for all of it."
        " Besides, only 4 of its 20 pods exist yet.")
    assert _evidence(verdict) == [
        *_gang_evidence("moe-train-workers", "moe-train-0", 20),
        ("PodGroup train/moe-train-workers", "status.conditions[PodGroupScheduled]",
         "False Unschedulable: pod group is unschedulable"),
        ("Pod train/moe-train-0", "scheduler message", WAITING),
        *[(f"Node/{name}", "gang pods it could take empty", "1")
          for name in ("gang-a100-1", "gang-a100-2", "gang-a100-3", "gang-a40-1", "gang-a40-2")]]
    details = {n.name: n.detail for n in verdict.nodes}
    assert (details["gang-a40-1"], details["gang-h100-a1"]) == (
        "fits; gang: 0 pod(s) now, 1 empty", "fits; gang: 1 pod(s) now, 1 empty")


def test_a_gang_pod_already_bound_counts_toward_min_count(gangs: Lists) -> None:
    pod = find(gangs["pods"], "moe-train-1", "train")
    pod["spec"]["nodeName"] = "gang-h100-b1"
    pod["status"]["phase"] = "Running"
    verdict = _answer(gangs, "train/moe-train-0")
    assert (verdict.cause, verdict.action) == (
        "exhausted",
        f"{MOE} needs 4 pods × 8 nvidia.com/gpu at once (gang minCount 4): 1 already bound, 3"
        " of 4 gang pods fit now (gang-h100-b2: 1, gang-h100-b3: 1); gang-h100-b4 has 4/8"
        " nvidia.com/gpu held by research/eval-4g. With every GPU free the nodes would hold 4."
        " Wait for them to finish, or add capacity: the scheduler binds none of the gang until"
        " 4 fit.")
    assert verdict.node_summary.endswith(
        "; gang moe-train-workers (minCount 4): 2 pods fit now on 2 nodes, 4 with every GPU free")


def test_an_incomplete_gang_too_large_for_its_pool_says_both(gangs: Lists) -> None:
    for index in range(3):
        pod = find(gangs["pods"], f"llama-pretrain-{index}", "train")
        pod["spec"]["nodeSelector"] = {"pool": "a100"}  # 3 nodes of 8 for 4 pods of 8
    verdict = _answer(gangs, "train/llama-pretrain-0")
    assert (verdict.cause, verdict.action) == (
        "too-large",
        f"{LLAMA} needs 4 pods × 8 nvidia.com/gpu at once (gang minCount 4); the nodes"
        " nodeSelector pool=a100 and taints leave could hold only 3 of them even with every GPU"
        " free (gang-a100-1: 1, gang-a100-2: 1, gang-a100-3: 1). The scheduler binds none of the"
        " gang until 4 fit together: waiting never helps. Lower minCount, make each pod smaller,"
        " or send the gang to a pool with room for all of it. Besides, only 3 of its 4 pods"
        " exist yet.")


def test_a_gang_of_one_pod_yet_says_it_in_the_singular(gangs: Lists) -> None:
    for index in (1, 2):
        gangs["pods"].remove(find(gangs["pods"], f"llama-pretrain-{index}", "train"))
    find(gangs["pods"], "llama-pretrain-0", "train")["spec"]["nodeSelector"] = {"pool": "a100"}
    verdict = _answer(gangs, "train/llama-pretrain-0")
    assert verdict.cause == "too-large"
    assert verdict.action.endswith(" Besides, only 1 of its 4 pods exists yet.")


def test_an_incomplete_gang_missing_several_pods(gangs: Lists) -> None:
    for index in (1, 2):
        gangs["pods"].remove(find(gangs["pods"], f"llama-pretrain-{index}", "train"))
    verdict = _answer(gangs, "train/llama-pretrain-0")
    assert (verdict.cause, verdict.action) == (
        "other-constraint",
        f"gang incomplete: {LLAMA} has gang minCount 4, only 1 pod (llama-pretrain-0) names it."
        " GPU-wise the gang would fit, but kube-scheduler holds its pods back before any"
        " scheduling attempt until 4 exist (no event, no PodScheduled condition). Create the"
        " missing 3 pods, or lower minCount.")
    assert _evidence(verdict) == _gang_evidence("llama-pretrain-workers", "llama-pretrain-0", 4)


MOE_EXHAUSTED = (
    f"{MOE} needs 4 pods × 8 nvidia.com/gpu at once (gang minCount 4): 3 of 4 gang pods fit now"
    " (gang-h100-b1: 1, gang-h100-b2: 1, gang-h100-b3: 1); gang-h100-b4 has 4/8 nvidia.com/gpu"
    " held by research/eval-4g. With every GPU free the nodes would hold 4. Wait for them to"
    " finish, or add capacity: the scheduler binds none of the gang until 4 fit.")


def _events_expired(lists: Lists) -> None:
    lists["events"] = [e for e in lists["events"]
                       if not e["involvedObject"].get("name", "").startswith("moe-train-")]


def test_the_filter_message_in_the_condition_alone_still_gets_its_note(gangs: Lists) -> None:
    # moe-train-2's PodScheduled=False condition keeps the "4 Insufficient nvidia.com/gpu"
    # filter message after its events expired.
    _events_expired(gangs)
    verdict = _answer(gangs, "train/moe-train-2")
    assert (verdict.cause, verdict.action) == (
        "exhausted",
        f"{MOE_EXHAUSTED} (The scheduler's \"4 Insufficient nvidia.com/gpu\" counts the nodes"
        " the other pods of moe-train-workers were placed on in the same try: they hold nothing"
        " now.)")


def test_an_exhausted_gang_with_no_word_from_the_scheduler_gets_no_note(gangs: Lists) -> None:
    _events_expired(gangs)
    find(gangs["pods"], "moe-train-0", "train")["status"]["conditions"] = []
    verdict = _answer(gangs, "train/moe-train-0")
    assert (verdict.cause, verdict.action) == ("exhausted", MOE_EXHAUSTED)
    assert _evidence(verdict) == [
        *_gang_evidence("moe-train-workers", "moe-train-0", 4),
        ("PodGroup train/moe-train-workers", "status.conditions[PodGroupScheduled]",
         "False Unschedulable: pod group is unschedulable"),
        ("Node/gang-h100-b4", "status.allocatable[nvidia.com/gpu] − requests",
         "4/8 held by research/eval-4g")]


def test_an_incomplete_pod_group_whose_workload_is_gone(gangs: Lists) -> None:
    gangs["gangs"] = [g for g in gangs["gangs"] if not (
        g["kind"] == "Workload" and g["metadata"]["name"] == "llama-pretrain")]
    verdict = _answer(gangs, "train/llama-pretrain-0")
    assert (verdict.cause, verdict.action) == (
        "other-constraint",
        f"gang incomplete: {LLAMA} has gang minCount 4, only 3 pods (llama-pretrain-0,"
        " llama-pretrain-1, llama-pretrain-2) name it. GPU-wise the gang would fit, but"
        " kube-scheduler holds its pods back before any scheduling attempt until 4 exist (no"
        " event, no PodScheduled condition). Create the missing 1 pod, or lower minCount.")


@pytest.mark.parametrize(("relabelled", "min_count", "taking"), [
    # pool h100-b as recorded: four nodes of 8 GPUs, all named
    ((), 5, "gang-h100-b1: 1, gang-h100-b2: 1, gang-h100-b3: 1, gang-h100-b4: 1"),
    # gang-a100-1 moved into pool h100-b: five nodes, the fifth counted
    (("gang-a100-1",), 6, "gang-a100-1: 1, gang-h100-b1: 1, gang-h100-b2: 1, gang-h100-b3: 1"
                          " +1 more"),
])
def test_the_nodes_a_too_large_gang_could_use_are_named_up_to_four(
        gangs: Lists, relabelled: tuple[str, ...], min_count: int, taking: str) -> None:
    for name in relabelled:
        find(gangs["nodes"], name)["metadata"]["labels"]["pool"] = "h100-b"
    find(gangs["gangs"], "moe-train-workers", "train")["spec"]["schedulingPolicy"]["gang"][
        "minCount"] = min_count
    verdict = _answer(gangs, "train/moe-train-0")
    assert verdict.cause == "too-large"
    assert (f"could hold only {min_count - 1} of them even with every GPU free ({taking}). The"
            f" scheduler binds none of the gang until {min_count} fit together") in verdict.action
    assert {n.name: n.outcome for n in verdict.nodes}["gang-h100-b1"] == "fit"
