"""taint-untolerated's next action and evidence, read as whole sentences: several nodes, several
taints each, condition taints, cordons, and tolerations with a value, no key or no effect
(the taints-and-units recording)."""

from __future__ import annotations

from typing import Any

import pytest

from scoring.verdict import Verdict
from tests.conftest import find, load_lists
from tests.paths import FIXTURES
from triage.classify import triage
from triage.refs import parse_ref
from triage.snapshot import Snapshot

SCENARIO = FIXTURES / "scenarios-extra" / "taints-and-units"
CORDON = "cordoned (node.kubernetes.io/unschedulable:NoSchedule)"
DONT = " Don't remove taints: they protect the node and its owners."
REPAIR = (" there for a failing node condition (kubelet not ready or unreachable, memory / disk /"
          " PID pressure) and takes it off once the condition clears")


@pytest.fixture(scope="module")
def recorded() -> Snapshot:
    return Snapshot.from_dir(SCENARIO)


def answer(snapshot: Snapshot, ref: str) -> Verdict:
    verdict = triage(snapshot, parse_ref(ref))
    assert verdict.cause == "taint-untolerated"
    return verdict


def evidence(verdict: Verdict) -> list[tuple[str, str, str]]:
    return [(e.object, e.field, e.value) for e in verdict.evidence]


def pinned(pod: str, node: str) -> dict[str, list[dict[str, Any]]]:
    """The recording's objects with ``pod`` pinned by hostname to ``node``."""
    lists = load_lists(SCENARIO)
    find(lists["pods"], pod, "lab")["spec"]["nodeSelector"] = {"kubernetes.io/hostname": node}
    return lists


ACTIONS = {
    # four nodes, two sick, two cordoned, three owners: repair; toleration; uncordon
    "lab/multi-none": (
        "Every matching node blocks the pod: gpu-multi-1 is tainted "
        "dedicated=llm-team:NoSchedule, maintenance=drain:NoExecute; gpu-multi-2 is tainted "
        f"dedicated=vision:NoSchedule, {CORDON}; gpu-sick-1 is tainted "
        f"node.kubernetes.io/unreachable:NoSchedule, {CORDON}; gpu-sick-2 is tainted "
        "node.kubernetes.io/memory-pressure:NoSchedule. "
        "Repair gpu-sick-1, gpu-sick-2: the node lifecycle controller put "
        "node.kubernetes.io/memory-pressure:NoSchedule; node.kubernetes.io/unreachable:NoSchedule"
        f"{REPAIR}; or add a toleration for dedicated=llm-team:NoSchedule; "
        "dedicated=vision:NoSchedule; maintenance=drain:NoExecute to the pod "
        "(ask drain, llm-team, vision); or uncordon gpu-multi-2, gpu-sick-1 once it is healthy "
        f"(kubectl uncordon gpu-multi-2 gpu-sick-1).{DONT}"),
    # a key-less NoExecute toleration leaves a NoSchedule taint, a condition taint, a cordon
    "lab/east-noschedule": (
        "Every matching node blocks the pod: gpu-multi-1 is tainted "
        "dedicated=llm-team:NoSchedule; gpu-sick-1 is tainted "
        f"node.kubernetes.io/unreachable:NoSchedule, {CORDON}. Repair gpu-sick-1: the node "
        f"lifecycle controller put node.kubernetes.io/unreachable:NoSchedule{REPAIR}; or add a "
        "toleration for dedicated=llm-team:NoSchedule to the pod (ask llm-team); or uncordon "
        f"gpu-sick-1 once it is healthy (kubectl uncordon gpu-sick-1).{DONT}"),
    # no repair: a toleration or an uncordon, joined by a plain "or"
    "lab/pinned-multi-2": (
        "The only matching node blocks the pod: gpu-multi-2 is tainted "
        f"dedicated=vision:NoSchedule, {CORDON}. Add a toleration for dedicated=vision:NoSchedule "
        "to the pod (ask vision) or uncordon gpu-multi-2 once it is healthy "
        f"(kubectl uncordon gpu-multi-2).{DONT}"),
}


@pytest.mark.parametrize("ref", ACTIONS)
def test_the_advice_reads_whole(ref: str, recorded: Snapshot) -> None:
    assert answer(recorded, ref).action == ACTIONS[ref]


def test_every_node_and_the_pods_own_tolerations_are_evidence(recorded: Snapshot) -> None:
    assert evidence(answer(recorded, "lab/multi-none")) == [
        ("Node/gpu-multi-1", "spec.taints",
         "dedicated=llm-team:NoSchedule, maintenance=drain:NoExecute"),
        ("Node/gpu-multi-2", "spec.taints", f"dedicated=vision:NoSchedule, {CORDON}"),
        ("Node/gpu-sick-1", "spec.taints", f"node.kubernetes.io/unreachable:NoSchedule, {CORDON}"),
        ("Node/gpu-sick-2", "spec.taints", "node.kubernetes.io/memory-pressure:NoSchedule"),
        ("Pod lab/multi-none", "spec.tolerations", "none beyond the defaults")]


@pytest.mark.parametrize(("ref", "tolerations"), [
    ("lab/multi-some", "dedicated=llm-team:NoSchedule, example.com/spot:*"),  # a value; no effect
    ("lab/east-noschedule", "*:NoExecute"),  # no key
])
def test_tolerations_are_written_as_taints_are(ref: str, tolerations: str,
                                               recorded: Snapshot) -> None:
    assert evidence(answer(recorded, ref))[-1] == (f"Pod {ref}", "spec.tolerations", tolerations)


def test_a_tolerated_taint_leaves_the_advice(recorded: Snapshot) -> None:
    verdict = answer(recorded, "lab/multi-some")
    assert "add a toleration for dedicated=vision:NoSchedule; maintenance=drain:NoExecute to the " \
           "pod (ask drain, vision); or uncordon" in verdict.action
    assert evidence(verdict)[0] == ("Node/gpu-multi-1", "spec.taints",
                                    "maintenance=drain:NoExecute")


def test_a_condition_taint_alone_asks_only_for_the_repair() -> None:
    verdict = answer(Snapshot(**pinned("pinned-multi-2", "gpu-sick-2")), "lab/pinned-multi-2")
    assert verdict.action == (
        "The only matching node blocks the pod: gpu-sick-2 is tainted "
        "node.kubernetes.io/memory-pressure:NoSchedule. Repair gpu-sick-2: the node lifecycle "
        f"controller put node.kubernetes.io/memory-pressure:NoSchedule{REPAIR}.{DONT}")


def test_a_taint_without_a_value_names_no_owner() -> None:
    lists = pinned("pinned-multi-2", "gpu-multi-1")
    find(lists["nodes"], "gpu-multi-1")["spec"]["taints"] = [
        {"effect": "NoSchedule", "key": "nvidia.com/gpu"},
        {"effect": "NoExecute", "key": "example.com/reserved"}]
    verdict = answer(Snapshot(**lists), "lab/pinned-multi-2")
    assert verdict.action == (
        "The only matching node blocks the pod: gpu-multi-1 is tainted nvidia.com/gpu:NoSchedule, "
        "example.com/reserved:NoExecute. Add a toleration for example.com/reserved:NoExecute; "
        f"nvidia.com/gpu:NoSchedule to the pod.{DONT}")


def test_at_most_five_sick_nodes_are_named() -> None:
    lists = load_lists(SCENARIO)
    for node in lists["nodes"]:
        node["metadata"]["labels"]["pool"] = "multi"
        node["spec"] = {"taints": [{"effect": "NoSchedule",
                                    "key": "node.kubernetes.io/disk-pressure"}]}
    verdict = answer(Snapshot(**lists), "lab/multi-none")
    assert verdict.action.startswith(
        "Every matching node blocks the pod: gpu-multi-1 is tainted "
        "node.kubernetes.io/disk-pressure:NoSchedule; gpu-multi-2 is tainted "
        "node.kubernetes.io/disk-pressure:NoSchedule; gpu-sick-1 is tainted "
        "node.kubernetes.io/disk-pressure:NoSchedule; gpu-sick-2 is tainted "
        "node.kubernetes.io/disk-pressure:NoSchedule; gpu-units-1 is tainted "
        "node.kubernetes.io/disk-pressure:NoSchedule. Repair gpu-multi-1, gpu-multi-2, "
        "gpu-sick-1, gpu-sick-2, gpu-units-1: the node lifecycle controller put "
        "node.kubernetes.io/disk-pressure:NoSchedule there")
    assert len(verdict.evidence) == 6  # five nodes and the pod's tolerations
