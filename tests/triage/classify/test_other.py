"""other-constraint when a node fits GPU-wise, read as whole sentences: what the scheduler's
last word says (several other reasons, only GPU / taint / selector reasons, nothing yet), a
gang that fits now, and DRA requests gpuwhy does not judge.

The pods are the recordings' own (scheduling-gates' lab/gate-one with its gate removed, as its
controller would; gang-dra-basics; dra-basics), each changed the way the cluster would change.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from scoring.verdict import Verdict
from tests.conftest import find, load_lists
from tests.paths import FIXTURES
from triage.classify import triage
from triage.refs import parse_ref
from triage.snapshot import Snapshot

Lists = dict[str, list[dict[str, Any]]]
POD = "lab/gate-one"
# gpu-a100-1 (pool a100, 4 nvidia.com/gpu, 1 held by ml/train-a) is the one node the pod's
# nodeSelector pool=a100 leaves; the other five are selector-mismatch.
NODES = "6 nodes: 5 not fit (5 selector-mismatch), 1 fit (gpu-a100-1: 0.75)"


def _answer(lists: Lists, ref: str) -> Verdict:
    return triage(Snapshot(**copy.deepcopy(lists)), parse_ref(ref))


def _evidence(verdict: Verdict) -> list[tuple[str, str, str]]:
    return [(e.object, e.field, e.value) for e in verdict.evidence]


@pytest.fixture
def ungated() -> Lists:
    """lab/gate-one once its gate is removed: no scheduler has written anything yet."""
    lists = load_lists(FIXTURES / "scenarios-extra" / "scheduling-gates")
    pod = find(lists["pods"], "gate-one", "lab")
    del pod["spec"]["schedulingGates"]
    pod["status"]["conditions"] = []
    return lists


def _unschedulable(lists: Lists, message: str) -> Lists:
    """The scheduler's PodScheduled=False condition (its events have expired)."""
    find(lists["pods"], "gate-one", "lab")["status"]["conditions"] = [{
        "lastProbeTime": None, "lastTransitionTime": "2026-11-30T13:10:05Z",
        "message": message, "reason": "Unschedulable", "status": "False",
        "type": "PodScheduled"}]
    return lists


SEVERAL = ("0/6 nodes are available: 1 node(s) didn't match pod affinity rules, 1 node(s) had"
           " volume node affinity conflict, 4 node(s) didn't match Pod's node"
           " affinity/selector. preemption: 0/6 nodes are available: 6 Preemption is not"
           " helpful for scheduling.")
ONLY_GPUS = ("0/6 nodes are available: 1 Insufficient nvidia.com/gpu, 5 node(s) didn't match"
             " Pod's node affinity/selector. preemption: 0/6 nodes are available: 1 No"
             " preemption victims found for incoming pod, 5 Preemption is not helpful for"
             " scheduling.")


def test_every_other_reason_is_named_with_its_count(ungated: Lists) -> None:
    verdict = _answer(_unschedulable(ungated, SEVERAL), POD)
    assert (verdict.cause, verdict.action) == (
        "other-constraint",
        "GPU-wise gpu-a100-1 fit, but the scheduler rejects the pod for something else: 1"
        " node(s) didn't match pod affinity rules, 1 node(s) had volume node affinity"
        " conflict. Fix what it names (cpu, memory, pod affinity, volumes, topology spread).")
    assert _evidence(verdict) == [(f"Pod {POD}", "scheduler message", SEVERAL)]
    assert verdict.node_summary == NODES


@pytest.mark.parametrize(("scheduler", "named"), [
    (None, "default-scheduler"), ("gpu-scheduler", "gpu-scheduler")])
def test_a_last_word_only_about_gpus_names_the_pod_s_scheduler(
        ungated: Lists, scheduler: str | None, named: str) -> None:
    if scheduler is not None:
        find(ungated["pods"], "gate-one", "lab")["spec"]["schedulerName"] = scheduler
    verdict = _answer(_unschedulable(ungated, ONLY_GPUS), POD)
    assert (verdict.cause, verdict.action) == (
        "other-constraint",
        "GPU-wise gpu-a100-1 fit now; the scheduler's last word is only about GPUs, taints or"
        " selectors, so the cluster has changed since and it will retry by itself. If the pod"
        f" stays Pending, check that {named} is running.")
    assert _evidence(verdict) == [(f"Pod {POD}", "scheduler message", ONLY_GPUS)]


def _scheduled_event(lists: Lists) -> None:
    """Pods listed before the binding, events after: the scheduler's Scheduled event is
    there, the pod's spec.nodeName not yet."""
    uid = find(lists["pods"], "gate-one", "lab")["metadata"]["uid"]
    lists["events"] = [{
        "action": "Binding", "apiVersion": "v1", "eventTime": "2026-11-30T13:10:06.120345Z",
        "firstTimestamp": None, "involvedObject": {
            "apiVersion": "v1", "kind": "Pod", "name": "gate-one", "namespace": "lab",
            "resourceVersion": "900", "uid": uid},
        "kind": "Event", "lastTimestamp": None,
        "message": "Successfully assigned lab/gate-one to gpu-a100-1",
        "metadata": {"creationTimestamp": "2026-11-30T13:10:06Z",
                     "name": "gate-one.18c2a1f0d3e4b5a6", "namespace": "lab",
                     "resourceVersion": "901", "uid": "0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9"},
        "reason": "Scheduled", "reportingComponent": "default-scheduler",
        "reportingInstance": "default-scheduler-vm", "source": {}, "type": "Normal"}]


def _condition_without_message(lists: Lists) -> None:
    """A second scheduler that writes PodScheduled=False/Unschedulable and no message."""
    pod = find(lists["pods"], "gate-one", "lab")
    pod["spec"]["schedulerName"] = "gpu-scheduler"
    pod["status"]["conditions"] = [{
        "lastProbeTime": None, "lastTransitionTime": "2026-11-30T13:10:05Z",
        "reason": "Unschedulable", "status": "False", "type": "PodScheduled"}]


@pytest.mark.parametrize("seen", [_scheduled_event, _condition_without_message])
def test_a_scheduler_that_has_seen_the_pod_without_a_word_of_why(
        ungated: Lists, seen: Callable[[Lists], None]) -> None:
    seen(ungated)
    verdict = _answer(ungated, POD)
    assert (verdict.cause, verdict.action) == (
        "other-constraint",
        "GPU-wise gpu-a100-1 fit and the scheduler has seen the pod, but it has not bound it"
        " yet. Look at the pod's events for what it waits on.")
    assert _evidence(verdict) == []
    assert verdict.node_summary == NODES


def test_a_gang_that_fits_now_is_retried_by_the_scheduler() -> None:
    gangs = load_lists("gang-dra-basics")
    find(gangs["pods"], "eval-4g", "research")["status"]["phase"] = "Succeeded"
    verdict = _answer(gangs, "train/moe-train-0")
    assert (verdict.cause, verdict.action) == (
        "other-constraint",
        "GPU-wise the whole gang fits now (PodGroup train/moe-train-workers (Workload"
        " moe-train), minCount 4; gang-h100-b1, gang-h100-b2, gang-h100-b3): the scheduler gave"
        " the group up when it did not fit, and tries it again as the cluster changes. If it"
        " stays Pending, look at the other gang pods' events for what else stops them.")
    assert _evidence(verdict) == [(
        "Pod train/moe-train-0", "scheduler message",
        "pod group is unschedulable, waiting for minCount pods from a gang to be scheduled, one"
        " or more plugins asked to wait and no plugin rejected pod")]



def test_a_gang_pod_whose_last_word_is_a_plain_filter_message() -> None:
    # moe-train-2 got the ordinary "4 Insufficient nvidia.com/gpu" message, not the gang's
    # "waiting for minCount": once eval-4g finished, that word is only about GPUs.
    gangs = load_lists("gang-dra-basics")
    find(gangs["pods"], "eval-4g", "research")["status"]["phase"] = "Succeeded"
    verdict = _answer(gangs, "train/moe-train-2")
    assert (verdict.cause, verdict.action) == (
        "other-constraint",
        "GPU-wise gang-h100-b1, gang-h100-b2, gang-h100-b3 fit now; the scheduler's last word is"
        " only about GPUs, taints or selectors, so the cluster has changed since and it will"
        " retry by itself. If the pod stays Pending, check that default-scheduler is running.")

def test_a_claim_gpuwhy_does_not_judge_leaves_the_scheduler_s_word() -> None:
    # dra-basics' vision/pinned-a without its nodeSelector fits dra-a100-2 and dra-l4-1; a
    # matchAttribute constraint on its claim is not modelled, so "cannot allocate all claims"
    # stands and is named.
    lists = load_lists("dra-basics")
    del find(lists["pods"], "pinned-a", "vision")["spec"]["nodeSelector"]
    claim = next(o for o in lists["dra"] if o["kind"] == "ResourceClaim"
                 and o["metadata"]["name"].startswith("pinned-a-gpu-"))
    claim["spec"]["devices"]["constraints"] = [
        {"matchAttribute": "gpu.nvidia.com/productName", "requests": ["gpu"]}]
    verdict = _answer(lists, "vision/pinned-a")
    assert (verdict.cause, verdict.action) == (
        "other-constraint",
        "GPU-wise dra-a100-2, dra-l4-1 fit, but the scheduler rejects the pod for something"
        " else: 1 cannot allocate all claims. Fix what it names (cpu, memory, pod affinity,"
        " volumes, topology spread). gpuwhy does not judge constraints between devices"
        " (matchAttribute), so the scheduler's word on the claims stands.")
    assert _evidence(verdict)[-1] == (
        "ResourceClaim vision/pinned-a-gpu-q8nlw", "spec.devices.constraints",
        "constraints between devices (matchAttribute): not judged by gpuwhy")


# gpu-a100-1's pods (research/ok, research/no-request) ask cpu 10 and memory 40Gi; lab/gate-one
# asks cpu 8, memory 32Gi and one pod slot. Its allocatable changed as a kubelet's
# --max-pods / --kube-reserved would change it.
@pytest.mark.parametrize(("allocatable", "short"), [
    ({"pods": "2"}, "Too many pods"),
    ({"cpu": "17", "memory": "71Gi", "pods": "2"},
     "Insufficient cpu, Insufficient memory, Too many pods"),
    ({"cpu": "17500m"}, "Insufficient cpu"),
])
def test_a_node_short_of_cpu_memory_or_pod_slots(ungated: Lists, allocatable: dict[str, str],
                                                  short: str) -> None:
    find(ungated["nodes"], "gpu-a100-1")["status"]["allocatable"].update(allocatable)
    verdict = _answer(ungated, POD)
    assert (verdict.cause, verdict.action) == (
        "other-constraint",
        f"GPU-wise a node fits, but gpu-a100-1: {short}. Lower the pod's cpu / memory requests"
        " or free those nodes.")
    assert _evidence(verdict) == [("Node/gpu-a100-1", "status.allocatable − requests", short)]


def test_exactly_enough_cpu_memory_and_one_pod_slot_fit(ungated: Lists) -> None:
    find(ungated["nodes"], "gpu-a100-1")["status"]["allocatable"].update(
        {"cpu": "18", "memory": "72Gi", "pods": "3"})
    verdict = _answer(ungated, POD)
    assert verdict.cause == "scheduler-unavailable"  # no scheduler has written anything yet
    assert verdict.node_summary == NODES


def test_an_unparsable_pod_count_is_named(ungated: Lists) -> None:
    # The API server stores only valid quantities; a dump edited by hand may not. The node
    # cannot be shown to have a pod slot, and its report says why.
    find(ungated["nodes"], "gpu-a100-1")["status"]["allocatable"]["pods"] = "lots"
    verdict = _answer(ungated, POD)
    unread = "status.allocatable.pods 'lots' could not be read"
    assert (verdict.cause, verdict.action) == (
        "other-constraint",
        f"GPU-wise a node fits, but gpu-a100-1: {unread}. Fix status.allocatable.pods on "
        "gpu-a100-1: it is not a quantity, so gpuwhy cannot tell whether a pod slot is left.")
    assert _evidence(verdict) == [("Node/gpu-a100-1", "status.allocatable − requests", unread)]
    [report] = [n for n in verdict.nodes if n.name == "gpu-a100-1"]
    assert (report.outcome, report.detail) == ("other-constraint", unread)


def test_an_unparsable_pod_count_beside_too_little_cpu_gets_both_advices(ungated: Lists) -> None:
    find(ungated["nodes"], "gpu-a100-1")["status"]["allocatable"].update(
        {"cpu": "1", "pods": "lots"})
    verdict = _answer(ungated, POD)
    assert verdict.action == (
        "GPU-wise a node fits, but gpu-a100-1: Insufficient cpu, status.allocatable.pods 'lots' "
        "could not be read. Lower the pod's cpu / memory requests or free those nodes. Fix "
        "status.allocatable.pods on gpu-a100-1: it is not a quantity, so gpuwhy cannot tell "
        "whether a pod slot is left.")


def test_unparsable_pod_counts_on_five_nodes_name_the_first_four(ungated: Lists) -> None:
    # the a100 pool grows by four nodes like gpu-a100-1, every one with the hand-edited count
    model = find(ungated["nodes"], "gpu-a100-1")
    for number in range(2, 6):
        node = copy.deepcopy(model)
        node["metadata"]["name"] = f"gpu-a100-{number}"
        node["metadata"]["labels"]["kubernetes.io/hostname"] = f"gpu-a100-{number}"
        ungated["nodes"].append(node)
    for node in ungated["nodes"]:
        if node["metadata"]["name"].startswith("gpu-a100-"):
            node["status"]["allocatable"]["pods"] = "lots"
    verdict = _answer(ungated, POD)
    unread = "status.allocatable.pods 'lots' could not be read"
    assert verdict.action == (
        f"GPU-wise a node fits, but gpu-a100-1: {unread}; gpu-a100-2: {unread}; gpu-a100-3: "
        f"{unread}; gpu-a100-4: {unread}. Fix status.allocatable.pods on gpu-a100-1, gpu-a100-2, "
        "gpu-a100-3, gpu-a100-4: it is not a quantity, so gpuwhy cannot tell whether a pod slot "
        "is left.")
