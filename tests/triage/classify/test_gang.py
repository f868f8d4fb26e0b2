"""Gang answers read as whole sentences, on the gang-dra-basics recording changed the way the
cluster would change: a PodGroup that is missing, a gang too large for every node, one of its
pods already bound, an incomplete gang and what keeps its other pods from being created, a gang
asking two GPU resources, which gangs are judged as one, and who holds the nodes it waits for.

The recording (see its README): 17 nodes (13 of 8 nvidia.com/gpu, 4 DRA-only); pods
train/moe-train-0..3 (PodGroup moe-train-workers, minCount 4, 8 nvidia.com/gpu each,
pool=h100-b: gang-h100-b1..b4, b4 half held by research/eval-4g); train/llama-pretrain-0..2
(llama-pretrain-workers, minCount 4, pool=h100-a, four empty nodes); train/ft-gang-0/1
(ft-gang-workers, minCount 2, bound to gang-a40-2 / gang-a40-1, the whole pool a40, whose
PodGroupScheduled condition is True, reason Scheduled, without a message).
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


def _set_min_count(lists: Lists, group: str, min_count: int) -> None:
    find(lists["gangs"], group, "train")["spec"]["schedulingPolicy"]["gang"]["minCount"] = min_count


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
    _set_min_count(gangs, "moe-train-workers", 20)
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
    _set_min_count(gangs, "moe-train-workers", min_count)
    verdict = _answer(gangs, "train/moe-train-0")
    assert verdict.cause == "too-large"
    assert (f"could hold only {min_count - 1} of them even with every GPU free ({taking}). The"
            f" scheduler binds none of the gang until {min_count} fit together") in verdict.action
    assert {n.name: n.outcome for n in verdict.nodes}["gang-h100-b1"] == "fit"


def _pending_pod(lists: Lists, name: str, group: str, pool: str) -> None:
    """One more gang pod, created the way moe-train-0 was and not scheduled yet."""
    pod = copy.deepcopy(find(lists["pods"], "moe-train-0", "train"))
    pod["metadata"].update(name=name, uid=f"{name}-uid")
    pod["spec"].update(schedulingGroup={"podGroupName": group}, nodeSelector={"pool": pool})
    pod["status"] = {"phase": "Pending"}
    lists["pods"].append(pod)


def _running_pod(lists: Lists, name: str, node: str, gpus: int) -> None:
    """One more research pod holding ``gpus`` on ``node``, as eval-4g holds 4 on gang-h100-b4."""
    pod = copy.deepcopy(find(lists["pods"], "eval-4g", "research"))
    pod["metadata"].update(name=name, uid=f"{name}-uid")
    pod["spec"].update(nodeName=node, nodeSelector={"kubernetes.io/hostname": node})
    for part in ("limits", "requests"):
        pod["spec"]["containers"][0]["resources"][part]["nvidia.com/gpu"] = str(gpus)
    lists["pods"].append(pod)


def _bind(lists: Lists, pod: str, node: str) -> None:
    found = find(lists["pods"], pod, "train")
    found["spec"]["nodeName"] = node
    found["status"]["phase"] = "Running"


def _into_pool(lists: Lists, node: str, pool: str) -> None:
    find(lists["nodes"], node)["metadata"]["labels"]["pool"] = pool


def test_a_gang_asking_two_gpu_resources_fits_as_the_scarcer_one_allows(gangs: Lists) -> None:
    # MIG mixed strategy: one H100 of each h100-b node split into 7 slices, 7 whole GPUs left.
    # Each pod asks 2 GPUs and 4 slices: 3 pods by the GPUs, 1 by the slices, per node.
    for index in range(1, 5):
        status = find(gangs["nodes"], f"gang-h100-b{index}")["status"]
        for part in ("capacity", "allocatable"):
            status[part].update({"nvidia.com/gpu": "7", "nvidia.com/mig-1g.10gb": "7"})
    for index in range(4):
        resources = find(gangs["pods"], f"moe-train-{index}", "train")["spec"]["containers"][0][
            "resources"]
        for part in ("limits", "requests"):
            resources[part].update({"nvidia.com/gpu": "2", "nvidia.com/mig-1g.10gb": "4"})
    _set_min_count(gangs, "moe-train-workers", 5)
    verdict = _answer(gangs, "train/moe-train-0")
    assert (verdict.cause, verdict.action) == (
        "too-large",
        f"{MOE} needs 5 pods × 2 nvidia.com/gpu + 4 nvidia.com/mig-1g.10gb at once (gang"
        " minCount 5); the nodes nodeSelector pool=h100-b and taints leave could hold only 4 of"
        " them even with every GPU free (gang-h100-b1: 1, gang-h100-b2: 1, gang-h100-b3: 1,"
        " gang-h100-b4: 1). The scheduler binds none of the gang until 5 fit together: waiting"
        " never helps. Lower minCount, make each pod smaller, or send the gang to a pool with"
        " room for all of it. Besides, only 4 of its 5 pods exist yet.")
    # gang-h100-b4's 3 GPUs left by eval-4g still take one pod of 2
    assert {n.name: n.detail for n in verdict.nodes if n.outcome == "fit"} == {
        f"gang-h100-b{index}": "fits; gang: 1 pod(s) now, 1 empty" for index in range(1, 5)}
    assert verdict.node_summary.endswith(
        "; gang moe-train-workers (minCount 5): 4 pods fit now on 4 nodes, 4 with every GPU free")


def test_one_gang_pod_fitting_on_one_node_reads_in_the_singular(gangs: Lists) -> None:
    for node in ("gang-h100-b2", "gang-h100-b3"):
        _into_pool(gangs, node, "h100-a")  # pool h100-b keeps b1 (empty) and b4 (half held)
    verdict = _answer(gangs, "train/moe-train-0")
    assert verdict.cause == "too-large"
    assert verdict.node_summary.endswith(
        "; gang moe-train-workers (minCount 4): 1 pod fit now on 1 node, 2 with every GPU free")


# pool h100-b: b1..b3 empty, b4 half held by eval-4g: each pod alone fits on three nodes
MOE_ALONE = ("17 nodes: 14 not fit (13 selector-mismatch, 1 exhausted), 3 fit (gang-h100-b1:"
             " 1.00, gang-h100-b2: 1.00, gang-h100-b3: 1.00)")


@pytest.mark.parametrize(("min_count", "gang_view"), [
    (1, ""),  # a gang of one pod is no gang: judged alone
    (2, "; gang moe-train-workers (minCount 2): 3 pods fit now on 3 nodes, 4 with every GPU"
        " free")])
def test_a_gang_is_judged_as_one_from_a_min_count_of_two(
        gangs: Lists, min_count: int, gang_view: str) -> None:
    _set_min_count(gangs, "moe-train-workers", min_count)
    verdict = _answer(gangs, "train/moe-train-0")
    assert verdict.cause == "other-constraint"
    assert verdict.node_summary == MOE_ALONE + gang_view


def test_a_pod_added_to_a_gang_already_placed_is_judged_alone(gangs: Lists) -> None:
    # ft-gang's two pods are bound (its minCount): a third pod joining it is scheduled alone
    _pending_pod(gangs, "ft-gang-2", "ft-gang-workers", "a40")
    verdict = _answer(gangs, "train/ft-gang-2")
    assert (verdict.cause, verdict.action) == (
        "exhausted",
        "gang-a40-1 has 8/8 nvidia.com/gpu held by train/ft-gang-1; gang-a40-2 has 8/8"
        " nvidia.com/gpu held by train/ft-gang-0. Wait for them to finish, or relax nodeSelector"
        " pool=a40: gang-a100-1 has 8 free; or add capacity.")
    assert verdict.node_summary == "17 nodes: 17 not fit (15 selector-mismatch, 2 exhausted), 0 fit"


def test_a_scheduled_gang_grown_past_its_pool_is_too_large(gangs: Lists) -> None:
    # ft-gang grown to three pods: its PodGroup still says it was scheduled (no message)
    _pending_pod(gangs, "ft-gang-2", "ft-gang-workers", "a40")
    _set_min_count(gangs, "ft-gang-workers", 3)
    verdict = _answer(gangs, "train/ft-gang-2")
    assert (verdict.cause, verdict.action) == (
        "too-large",
        "PodGroup train/ft-gang-workers (Workload ft-gang) needs 3 pods × 8 nvidia.com/gpu at"
        " once (gang minCount 3); the nodes nodeSelector pool=a40 and taints leave could hold"
        " only 2 of them even with every GPU free (gang-a40-1: 1, gang-a40-2: 1). The scheduler"
        " binds none of the gang until 3 fit together: waiting never helps. Lower minCount, make"
        " each pod smaller, or send the gang to a pool with room for all of it.")
    assert _evidence(verdict) == [
        *_gang_evidence("ft-gang-workers", "ft-gang-2", 3),
        ("PodGroup train/ft-gang-workers", "status.conditions[PodGroupScheduled]",
         "True Scheduled"),
        ("Node/gang-a40-1", "gang pods it could take empty", "1"),
        ("Node/gang-a40-2", "gang pods it could take empty", "1")]


def test_a_gang_with_a_pod_bound_and_room_for_the_rest_fits_now(gangs: Lists) -> None:
    _bind(gangs, "moe-train-1", "gang-h100-b1")
    find(gangs["pods"], "eval-4g", "research")["status"]["phase"] = "Succeeded"
    verdict = _answer(gangs, "train/moe-train-0")
    assert (verdict.cause, verdict.action) == (
        "other-constraint",
        f"GPU-wise the whole gang fits now ({MOE}, minCount 4; gang-h100-b2, gang-h100-b3,"
        " gang-h100-b4): the scheduler gave the group up when it did not fit, and tries it again"
        " as the cluster changes. If it stays Pending, look at the other gang pods' events for"
        " what else stops them.")


def test_the_first_three_held_nodes_are_named_with_four_holders_each(gangs: Lists) -> None:
    _into_pool(gangs, "gang-h100-a1", "h100-b")  # empty: the one node a gang pod fits on now
    for index in range(5):
        _running_pod(gangs, f"eval-1g-{index}", "gang-h100-b1", 1)
    _running_pod(gangs, "eval-b2", "gang-h100-b2", 4)
    _running_pod(gangs, "eval-b3", "gang-h100-b3", 4)
    verdict = _answer(gangs, "train/moe-train-0")
    ones = "research/eval-1g-0, research/eval-1g-1, research/eval-1g-2, research/eval-1g-3 +1 more"
    assert (verdict.cause, verdict.action) == (
        "exhausted",
        f"{MOE} needs 4 pods × 8 nvidia.com/gpu at once (gang minCount 4): 1 of 4 gang pods fit"
        f" now (gang-h100-a1: 1); gang-h100-b1 has 5/8 nvidia.com/gpu held by {ones};"
        " gang-h100-b2 has 4/8 nvidia.com/gpu held by research/eval-b2; gang-h100-b3 has 4/8"
        " nvidia.com/gpu held by research/eval-b3. With every GPU free the nodes would hold 5."
        " Wait for them to finish, or add capacity: the scheduler binds none of the gang until 4"
        " fit.")
    held = "status.allocatable[nvidia.com/gpu] − requests"
    assert _evidence(verdict)[-3:] == [("Node/gang-h100-b1", held, f"5/8 held by {ones}"),
                                       ("Node/gang-h100-b2", held, "4/8 held by research/eval-b2"),
                                       ("Node/gang-h100-b3", held, "4/8 held by research/eval-b3")]


def test_nodes_held_by_the_gangs_own_bound_pods_are_not_what_it_waits_for(gangs: Lists) -> None:
    # moe-train grown to five pods, three of them bound (b1..b3): eval-4g on b4 is in the way
    _into_pool(gangs, "gang-h100-a1", "h100-b")
    _set_min_count(gangs, "moe-train-workers", 5)
    _pending_pod(gangs, "moe-train-4", "moe-train-workers", "h100-b")
    for index in (1, 2, 3):
        _bind(gangs, f"moe-train-{index}", f"gang-h100-b{index}")
    verdict = _answer(gangs, "train/moe-train-0")
    assert (verdict.cause, verdict.action) == (
        "exhausted",
        f"{MOE} needs 5 pods × 8 nvidia.com/gpu at once (gang minCount 5): 3 already bound, 4 of"
        " 5 gang pods fit now (gang-h100-a1: 1); gang-h100-b4 has 4/8 nvidia.com/gpu held by"
        " research/eval-4g. With every GPU free the nodes would hold 5. Wait for them to finish,"
        " or add capacity: the scheduler binds none of the gang until 5 fit.")


@pytest.mark.parametrize(("removed", "added", "min_count", "named", "missing"), [
    # two of four: "pods", as for three
    (("llama-pretrain-2",), (), 4, "2 pods (llama-pretrain-0, llama-pretrain-1)",
     "2 pods"),
    # seven of eight: the first six named
    ((), tuple(f"llama-pretrain-{index}" for index in range(3, 7)), 8,
     "7 pods (llama-pretrain-0, llama-pretrain-1, llama-pretrain-2, llama-pretrain-3,"
     " llama-pretrain-4, llama-pretrain-5)", "1 pod")])
def test_an_incomplete_gang_names_its_pods_and_the_missing_count(
        gangs: Lists, removed: tuple[str, ...], added: tuple[str, ...], min_count: int,
        named: str, missing: str) -> None:
    for name in removed:
        gangs["pods"].remove(find(gangs["pods"], name, "train"))
    for name in added:
        _pending_pod(gangs, name, "llama-pretrain-workers", "h100-a")
    for node in ("gang-a100-1", "gang-a100-2", "gang-a100-3", "gang-h100-b1"):
        _into_pool(gangs, node, "h100-a")  # eight empty nodes: room for eight pods
    _set_min_count(gangs, "llama-pretrain-workers", min_count)
    verdict = _answer(gangs, "train/llama-pretrain-0")
    assert (verdict.cause, verdict.action) == (
        "other-constraint",
        f"gang incomplete: {LLAMA} has gang minCount {min_count}, only {named} name it."
        " GPU-wise the gang would fit, but kube-scheduler holds its pods back before any"
        f" scheduling attempt until {min_count} exist (no event, no PodScheduled condition)."
        f" Create the missing {missing}, or lower minCount.")


def test_a_gang_whose_pods_are_all_being_deleted_names_none(gangs: Lists) -> None:
    # the Job deleted: PodGC marks unscheduled terminating pods Failed, and those join no gang
    for index in range(3):
        pod = find(gangs["pods"], f"llama-pretrain-{index}", "train")
        pod["metadata"]["deletionTimestamp"] = "2026-12-01T21:00:00Z"
        pod["status"]["phase"] = "Failed"
    verdict = _answer(gangs, "train/llama-pretrain-0")
    assert (verdict.cause, verdict.action) == (
        "other-constraint",
        f"gang incomplete: {LLAMA} has gang minCount 4, only 0 pods (none) name it. GPU-wise the"
        " gang would fit, but kube-scheduler holds its pods back before any scheduling attempt"
        " until 4 exist (no event, no PodScheduled condition). Create the missing 4 pods, or"
        " lower minCount.")


def test_a_claim_gang_pod_that_cannot_fit_alone_gets_its_own_answer(gangs: Lists) -> None:
    # chat-c and big-kv join a PodGroup of their own: chat-c's 20Gi does not fit in the 10Gi
    # dra-share-1 has left, which is said first; the gang's view is in the summary
    group = copy.deepcopy(find(gangs["gangs"], "moe-train-workers", "train"))
    group["metadata"].update(name="serve-workers", namespace="infer", uid="serve-workers-uid")
    group["spec"] = {"schedulingPolicy": {"gang": {"minCount": 2}}}
    del group["status"]
    gangs["gangs"].append(group)
    for name in ("chat-c", "big-kv"):
        find(gangs["pods"], name, "infer")["spec"]["schedulingGroup"] = {
            "podGroupName": "serve-workers"}
    verdict = _answer(gangs, "infer/chat-c")
    assert (verdict.cause, verdict.action) == (
        "exhausted",
        "ResourceClaim infer/chat-c-gpu-7jsvl (from template slice-20g) asks memory 20Gi of a"
        " shared device: dra-share-1/gpu-0 (memory 80Gi) has 70Gi consumed by"
        " infer/chat-a-gpu-rxw97 (chat-a) and infer/chat-b-gpu-sw5b4 (chat-b): 10Gi left, 20Gi"
        " needed. Wait for a sharing claim to be released, ask for less, or add devices.")
    # 20Gi of dra-share-1's 80Gi: four pods empty, none now
    assert verdict.node_summary.endswith(
        "; gang serve-workers (minCount 2): 0 pods fit now on 0 nodes, 4 with every GPU free")
