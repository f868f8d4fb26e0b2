"""What keeps a queue from admitting anything (triage/classify/checks/queue_blockers.py): a
missing LocalQueue or ClusterQueue, a stopped or inactive queue, a missing ResourceFlavor, on
kueue-basics changed the way the cluster would change; each whole answer worked out by hand."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.conftest import find, load_lists
from tests.triage.test_queues import queue_object
from tests.triage.test_traps import Lists, answer

LABEL = "kueue.x-k8s.io/queue-name"


@pytest.fixture
def kueue() -> Lists:
    return load_lists("kueue-basics")


def _evidence(verdict: Any) -> list[tuple[str, str, str]]:
    return [(e.object, e.field, e.value) for e in verdict.evidence]


def _drop(lists: Lists, kind: str, *names: str) -> None:
    for name in names:
        lists["queues"].remove(queue_object(lists, kind, name))


# -- the LocalQueue named does not exist ---------------------------------------------------------

def test_a_namespace_without_any_local_queue(kueue: Lists) -> None:
    _drop(kueue, "LocalQueue", "team-a-lq")
    verdict = answer(kueue, "team-a/eval-nightly")
    assert verdict.action == (
        f"Job team-a/eval-nightly waits forever as things are: it names LocalQueue 'team-a-lq' "
        f"in label {LABEL}, which does not exist in namespace team-a, so Kueue admits nothing "
        "of it; the namespace has no LocalQueue at all. Ask the cluster's admins for one, or "
        "remove the label to run it outside Kueue.")
    assert ("namespace team-a", "LocalQueues", "none") in _evidence(verdict)


def test_two_local_queues_are_named_and_the_first_offered(kueue: Lists) -> None:
    other = copy.deepcopy(queue_object(kueue, "LocalQueue", "team-b-lq"))
    other["metadata"]["name"] = "team-b-batch"
    kueue["queues"].append(other)
    verdict = answer(kueue, "team-b/render-batch")
    assert verdict.action == (
        f"Job team-b/render-batch waits forever as things are: it names LocalQueue "
        f"'team-b-queue' in label {LABEL}, which does not exist in namespace team-b, so Kueue "
        "admits nothing of it; the namespace has LocalQueue team-b-batch, LocalQueue "
        f"team-b-lq. Fix the label ({LABEL}: team-b-batch) and recreate it.")
    assert ("namespace team-b", "LocalQueues", "team-b-batch, team-b-lq") in _evidence(verdict)


def test_a_gated_pod_without_the_queue_label(kueue: Lists) -> None:
    find(kueue["pods"], "notebook-gpu", "team-b")["metadata"]["labels"].pop(LABEL)
    assert answer(kueue, "team-b/notebook-gpu").action == (
        f"Pod team-b/notebook-gpu waits forever as things are: it has no {LABEL} label, so "
        "Kueue admits nothing of it; the namespace has LocalQueue team-b-lq. Fix the label "
        f"({LABEL}: team-b-lq) and recreate it.")


# -- the ClusterQueue does not exist -------------------------------------------------------------

def _unset(lists: Lists) -> None:
    queue_object(lists, "LocalQueue", "team-a-lq")["spec"].pop("clusterQueue")


def _no_cluster_queues(lists: Lists) -> None:
    _drop(lists, "ClusterQueue", "team-a-cq", "team-b-cq", "team-c-cq")


@pytest.mark.parametrize(("change", "pointed", "existing"), [
    (_unset, "(unset)", "team-a-cq, team-b-cq, team-c-cq"),
    (_no_cluster_queues, "team-a-cq", "none"),
], ids=["unset", "none-at-all"])
def test_a_local_queue_pointing_at_no_cluster_queue(kueue: Lists, change: Any, pointed: str,
                                                    existing: str) -> None:
    change(kueue)
    verdict = answer(kueue, "team-a/eval-nightly")
    assert verdict.action == (
        "Job team-a/eval-nightly waits forever as things are: LocalQueue team-a/team-a-lq "
        f"points to ClusterQueue {pointed}, which does not exist (existing: {existing}). "
        "Create it, or point the LocalQueue at one that exists.")
    assert ("LocalQueue team-a/team-a-lq", "spec.clusterQueue", pointed) in _evidence(verdict)


# -- the ClusterQueue is inactive: stopped, a flavor missing, Kueue's Active=False --------------

INACTIVE = ("Job team-a/eval-nightly waits in LocalQueue team-a/team-a-lq, but ClusterQueue "
            "team-a-cq is inactive: {why}. Nothing in it is admitted until that is fixed. "
            "Set stopPolicy to None when the queue may admit again.")


@pytest.mark.parametrize(("cluster_queue", "local_queue", "why"), [
    (None, "HoldAndDrain", "LocalQueue team-a/team-a-lq is stopped (stopPolicy HoldAndDrain)"),
    ("Hold", "Hold", "ClusterQueue team-a-cq is stopped (stopPolicy Hold); LocalQueue "
                     "team-a/team-a-lq is stopped (stopPolicy Hold)"),
], ids=["local-queue", "both"])
def test_stopped_queues_are_each_named(kueue: Lists, cluster_queue: str | None,
                                       local_queue: str, why: str) -> None:
    if cluster_queue is not None:
        queue_object(kueue, "ClusterQueue", "team-a-cq")["spec"]["stopPolicy"] = cluster_queue
    queue_object(kueue, "LocalQueue", "team-a-lq")["spec"]["stopPolicy"] = local_queue
    assert answer(kueue, "team-a/eval-nightly").action == INACTIVE.format(why=why)


@pytest.mark.parametrize(("reason", "message", "why"), [
    ("AdmissionCheckInactive", "Can't admit new workloads: an admission check is inactive",
     "Can't admit new workloads: an admission check is inactive"),
    ("AdmissionCheckInactive", "", "AdmissionCheckInactive"),
    ("", "", "inactive"),
], ids=["message", "reason-only", "nothing"])
def test_kueues_active_false_alone_is_quoted(kueue: Lists, reason: str, message: str,
                                             why: str) -> None:
    cluster_queue = queue_object(kueue, "ClusterQueue", "team-a-cq")
    active = next(c for c in cluster_queue["status"]["conditions"] if c["type"] == "Active")
    active.update(status="False", reason=reason, message=message)
    verdict = answer(kueue, "team-a/eval-nightly")
    assert verdict.action == INACTIVE.format(why=why)
    assert ("ClusterQueue team-a-cq", "status.conditions[Active]",
            f"False {reason}: {message}") in _evidence(verdict)


def test_an_active_condition_not_false_is_no_blocker(kueue: Lists) -> None:
    cluster_queue = queue_object(kueue, "ClusterQueue", "team-a-cq")
    next(c for c in cluster_queue["status"]["conditions"] if c["type"] == "Active")[
        "status"] = "Unknown"
    verdict = answer(kueue, "team-a/eval-nightly")
    assert verdict.action.startswith("ClusterQueue team-a-cq: flavor a100 has 8")
    assert "status.conditions[Active]" not in [e.field for e in verdict.evidence]


def test_two_missing_flavors_and_none_existing(kueue: Lists) -> None:
    _drop(kueue, "ResourceFlavor", "a100", "h100")
    flavors = queue_object(kueue, "ClusterQueue", "team-c-cq")["spec"]["resourceGroups"][0][
        "flavors"]
    flavors.append({**copy.deepcopy(flavors[0]), "name": "b200"})
    assert answer(kueue, "team-c/sim-h200").action == (
        "Job team-c/sim-h200 waits in LocalQueue team-c/team-c-lq, but ClusterQueue team-c-cq "
        "is inactive: it names ResourceFlavor h200, b200, which does not exist (existing: "
        "none). Nothing in it is admitted until that is fixed. Create the ResourceFlavor (or "
        "fix the name in the ClusterQueue).")


def test_a_missing_flavor_and_a_stop_policy_both_told(kueue: Lists) -> None:
    queue_object(kueue, "ClusterQueue", "team-c-cq")["spec"]["stopPolicy"] = "Hold"
    assert answer(kueue, "team-c/sim-h200").action == (
        "Job team-c/sim-h200 waits in LocalQueue team-c/team-c-lq, but ClusterQueue team-c-cq "
        "is inactive: it names ResourceFlavor h200, which does not exist (existing: a100, "
        "h100); ClusterQueue team-c-cq is stopped (stopPolicy Hold). Nothing in it is "
        "admitted until that is fixed. Create the ResourceFlavor (or fix the name in the "
        "ClusterQueue).")


def test_a_queue_label_that_is_no_object_name_says_so(kueue: Lists) -> None:
    find(kueue["workloads"], "eval-nightly", "team-a")["metadata"]["labels"][LABEL] = "Team B/lq"
    assert answer(kueue, "team-a/eval-nightly").action == (
        "Job team-a/eval-nightly waits forever as things are: it names LocalQueue 'Team B/lq' "
        f"(not even a valid object name) in label {LABEL}, which does not exist in namespace "
        "team-a, so Kueue admits nothing of it; the namespace has LocalQueue team-a-lq. Fix the "
        f"label ({LABEL}: team-a-lq) and recreate it.")
