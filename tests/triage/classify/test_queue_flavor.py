"""Admitted by Kueue, judged by the funnel (triage/classify/checks/queue_flavor.py): the flavor
that set the pod's nodeSelector and tolerations is named, on kueue-basics changed the way the
cluster would change; each whole answer worked out by hand from the objects."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import find, load_lists
from tests.triage.test_queues import queue_object
from tests.triage.test_traps import Lists, answer

REF = "team-b/sd-train-n7lxm"
FULL = ("h100-node-1 has 8/8 nvidia.com/gpu held by ops/h100-burnin; h100-node-2 has 8/8 "
        "nvidia.com/gpu held by team-b/video-gen-jp9cs. Wait for them to finish, or relax "
        "nodeSelector pool=h100: a100-node-1 has 4 free; or add capacity.")


@pytest.fixture
def kueue() -> Lists:
    return load_lists("kueue-basics")


def _sd_train_pods(lists: Lists) -> list[dict[str, Any]]:
    return [find(lists["pods"], name, "team-b") for name in ("sd-train-n7lxm", "sd-train-r5b8l")]


@pytest.mark.parametrize(("toleration", "said"), [
    ({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
     "nvidia.com/gpu:NoSchedule"),
    ({"key": "nvidia.com/gpu", "operator": "Equal", "value": "present"},
     "nvidia.com/gpu=present"),
    ({"operator": "Exists"}, "*"),
], ids=["exists-with-effect", "equal-without-effect", "exists-without-key"])
def test_the_flavors_toleration_is_named_as_kueue_injected_it(
        kueue: Lists, toleration: dict[str, Any], said: str) -> None:
    queue_object(kueue, "ResourceFlavor", "h100")["spec"]["tolerations"] = [toleration]
    for pod in _sd_train_pods(kueue):
        pod["spec"]["tolerations"][0] = dict(toleration)
    verdict = answer(kueue, REF)
    assert (verdict.cause, verdict.action) == ("exhausted", (
        f"{FULL} Kueue admitted it in ClusterQueue team-b-cq and flavor h100 set nodeSelector "
        f"pool=h100 and toleration {said}: to use other nodes, change the flavors of the "
        "ClusterQueue, not the pod's template. Outside Kueue, ops/h100-burnin 8 holds "
        "nvidia.com/gpu on the flavor's nodes: Kueue's quota does not count it."))


ADMITTED = (" Kueue admitted it in ClusterQueue team-b-cq and {said}: to use other nodes, change "
            "the flavors of the ClusterQueue, not the pod's template.")
BOTH = "flavor h100 set nodeSelector pool=h100 and toleration nvidia.com/gpu=present:NoSchedule"
OUTSIDE_ONE = (" Outside Kueue, ops/h100-burnin 8 holds nvidia.com/gpu on the flavor's nodes: "
               "Kueue's quota does not count it.")


def _flavor(lists: Lists) -> dict[str, Any]:
    spec: dict[str, Any] = queue_object(lists, "ResourceFlavor", "h100")["spec"]
    return spec


def _flavor_evidence(verdict: Any) -> list[str]:
    return [e.value for e in verdict.evidence
            if e.field == "status.admission.podSetAssignments[*].flavors"]


def test_a_flavor_deleted_since_admission_is_not_named(kueue: Lists) -> None:
    kueue["queues"].remove(queue_object(kueue, "ResourceFlavor", "h100"))
    verdict = answer(kueue, REF)
    assert (verdict.cause, verdict.action) == ("exhausted", FULL)
    assert _flavor_evidence(verdict) == []


def test_a_flavor_that_set_only_the_node_selector(kueue: Lists) -> None:
    _flavor(kueue).pop("tolerations")
    verdict = answer(kueue, REF)
    assert verdict.action == (FULL + ADMITTED.format(said="flavor h100 set nodeSelector pool=h100")
                              + OUTSIDE_ONE)
    assert _flavor_evidence(verdict) == ["team-b-cq: h100"]


def test_a_flavor_that_set_only_the_toleration_names_no_nodes(kueue: Lists) -> None:
    # its node labels are not the pod's selector: the flavor sent it to no pool of nodes
    _flavor(kueue)["nodeLabels"] = {"pool": "h100-spare"}
    assert answer(kueue, REF).action == FULL + ADMITTED.format(
        said="flavor h100 set toleration nvidia.com/gpu=present:NoSchedule")


def test_a_flavor_that_set_neither_is_not_named(kueue: Lists) -> None:
    _flavor(kueue)["nodeLabels"] = {"pool": "h100-spare"}
    _flavor(kueue).pop("tolerations")
    assert answer(kueue, REF).action == FULL


def _cpu_flavor_first(lists: Lists, node_labels: dict[str, str] | None) -> None:
    """The admission puts cpu in flavor h100-cpu (listed before h100); ``node_labels``: that
    ResourceFlavor's, None when it does not exist (any more)."""
    if node_labels is not None:
        lists["queues"].append({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
                                "metadata": {"name": "h100-cpu", "uid": "rf-h100-cpu",
                                             "resourceVersion": "1",
                                             "creationTimestamp": "2026-12-01T20:56:00Z"},
                                "spec": {"nodeLabels": node_labels}})
    queue_object(lists, "Workload", "job-sd-train-8350d")["status"]["admission"][
        "podSetAssignments"][0]["flavors"]["cpu"] = "h100-cpu"


def test_two_flavors_each_say_what_they_set(kueue: Lists) -> None:
    _cpu_flavor_first(kueue, {"pool": "h100"})
    verdict = answer(kueue, REF)
    assert verdict.action == FULL + ADMITTED.format(
        said=f"flavor h100-cpu set nodeSelector pool=h100; {BOTH}") + OUTSIDE_ONE
    assert _flavor_evidence(verdict) == ["team-b-cq: h100-cpu, h100"]


@pytest.mark.parametrize("node_labels", [None, {"pool": "cpu"}], ids=["deleted", "set-nothing"])
def test_a_first_flavor_that_set_nothing_leaves_the_next_one_named(
        kueue: Lists, node_labels: dict[str, str] | None) -> None:
    _cpu_flavor_first(kueue, node_labels)
    verdict = answer(kueue, REF)
    assert verdict.action == FULL + ADMITTED.format(said=BOTH) + OUTSIDE_ONE
    assert _flavor_evidence(verdict) == ["team-b-cq: h100"]


def test_two_holders_outside_kueue_are_both_named(kueue: Lists) -> None:
    video = find(kueue["pods"], "video-gen-jp9cs", "team-b")["metadata"]
    video.pop("annotations")
    for label in ("kueue.x-k8s.io/cluster-queue-name", "kueue.x-k8s.io/local-queue-name",
                  "kueue.x-k8s.io/podset"):
        video["labels"].pop(label)
    assert answer(kueue, REF).action == FULL + ADMITTED.format(said=BOTH) + (
        " Outside Kueue, ops/h100-burnin 8, team-b/video-gen-jp9cs 8 hold nvidia.com/gpu on the "
        "flavor's nodes: Kueue's quota does not count them.")


def test_a_workload_without_quota_reserved_gets_no_note(kueue: Lists) -> None:
    workload = queue_object(kueue, "Workload", "job-sd-train-8350d")
    next(c for c in workload["status"]["conditions"] if c["type"] == "QuotaReserved")[
        "status"] = "False"
    assert answer(kueue, REF).action == FULL


def test_not_full_nodes_the_flavor_is_named_without_holders(kueue: Lists) -> None:
    # 16 GPUs: more than any node has (too-large), not a question of who holds them
    for pod in _sd_train_pods(kueue):
        pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "16"
    verdict = answer(kueue, REF)
    assert verdict.cause == "too-large"
    assert verdict.action.endswith(". " + ADMITTED.format(said=BOTH)[1:])
    assert "Outside Kueue" not in verdict.action


def test_a_flavor_that_set_two_labels_and_two_tolerations_names_them_all(kueue: Lists) -> None:
    dedicated = {"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoSchedule"}
    flavor = _flavor(kueue)
    flavor["nodeLabels"]["gpu.vendor"] = "nvidia"
    flavor["tolerations"].append(dedicated)
    for pod in _sd_train_pods(kueue):
        pod["spec"]["nodeSelector"]["gpu.vendor"] = "nvidia"
        pod["spec"]["tolerations"].append(dict(dedicated))
    for node in kueue["nodes"]:
        if node["metadata"]["labels"].get("pool") == "h100":
            node["metadata"]["labels"]["gpu.vendor"] = "nvidia"
    verdict = answer(kueue, REF)
    assert verdict.cause == "exhausted"
    assert verdict.action.endswith(ADMITTED.format(
        said="flavor h100 set nodeSelector gpu.vendor=nvidia, pool=h100 and toleration "
             "nvidia.com/gpu=present:NoSchedule, dedicated=ml:NoSchedule") + OUTSIDE_ONE)
