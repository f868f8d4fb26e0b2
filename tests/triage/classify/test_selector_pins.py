"""selector-mismatch's next action and evidence, read as whole sentences (the selector-pins
recording): pins to deleted nodes, written as nodeSelector, matchExpressions or matchFields, one
or several; label keys no node has; a nodeSelector joined with required node affinity."""

from __future__ import annotations

import pytest

from scoring.verdict import Verdict
from tests.conftest import find, load_lists
from tests.paths import FIXTURES
from triage.classify import triage
from triage.refs import parse_ref
from triage.snapshot import Snapshot

SCENARIO = FIXTURES / "scenarios-extra" / "selector-pins"
GONE = (" and no node of {} is in the cluster (removed, or renamed). Point the pod at a node that"
        " exists, or drop the pin")
KUBELET = "; kubernetes.io/hostname is the kubelet's own label, not one to put on another node"
FIX = " Fix the selector, or label a node that should run it."
POOLS = "pool=a10-full, pool=a100, pool=cpu, pool=h100, pool=t4-noplugin, pool=v100-broken"
NODES = ["cpu-1", "gpu-a10-full", "gpu-a100-1", "gpu-h100-reserved", "gpu-t4-noplugin"]


@pytest.fixture(scope="module")
def recorded() -> Snapshot:
    return Snapshot.from_dir(SCENARIO)


def answer(snapshot: Snapshot, name: str) -> Verdict:
    verdict = triage(snapshot, parse_ref(f"lab/{name}"))
    assert verdict.cause == "selector-mismatch"
    return verdict


@pytest.mark.parametrize(("name", "action"), [
    ("two-gone", "required node affinity pins the pod to nodes gpu-gone-1, gpu-gone-2,"
                 + GONE.format("those names") + "."),
    ("hostname-gone", "nodeSelector kubernetes.io/hostname=gpu-gone-3 pins the pod to node"
                      " gpu-gone-3," + GONE.format("that name") + KUBELET + "."),
    # cpu-1.lab is cpu-1's hostname label, gpu-a100-1 a node's name: only gpu-gone-4 is missing
    ("expression-pins", "nodeSelector pool=h200 + required node affinity pins the pod to node"
                        " gpu-gone-4," + GONE.format("that name") + KUBELET + "."),
    # one name pinned by metadata.name, one by the hostname label: the kubelet's label is named
    ("fields-and-label", "required node affinity pins the pod to nodes gpu-gone-5, gpu-gone-6,"
                         + GONE.format("those names") + KUBELET + "."),
    # pinned twice, by the hostname label first: named once, still the kubelet's label
    ("hostname-and-field", "nodeSelector kubernetes.io/hostname=gpu-gone-7 + required node affinity"
                           " pins the pod to node gpu-gone-7," + GONE.format("that name") + KUBELET
                           + "."),
])
def test_pins_to_missing_nodes(recorded: Snapshot, name: str, action: str) -> None:
    assert answer(recorded, name).action == action


@pytest.mark.parametrize(("name", "action"), [
    ("labels-absent", "nodeSelector example.com/fabric=ib + example.com/gpu-gen=5 matches none of"
                      " the 6 nodes. No node has the labels at all." + FIX),
    ("label-absent", "nodeSelector example.com/fabric=ib matches none of the 6 nodes. No node has"
                     " the label at all." + FIX),
    # NotIn names no node to go to: not a pin, the ordinary answer with the failing requirement
    ("hostname-notin", "required node affinity matches none of the 6 nodes. On cpu-1: unmatched"
                       " kubernetes.io/hostname NotIn (cpu-1.lab,gpu-a10-full,gpu-a100-1,"
                       "gpu-h100-reserved,gpu-t4-noplugin,gpu-v100-broken)." + FIX),
    ("selector-and-affinity", "nodeSelector pool=a100 + required node affinity matches none of the"
                              f" 6 nodes. Values present: {POOLS}. On cpu-1: unmatched pool=a100,"
                              " topology.kubernetes.io/zone In (west)." + FIX),
])
def test_no_node_matches(recorded: Snapshot, name: str, action: str) -> None:
    assert answer(recorded, name).action == action


def test_evidence_names_the_selection_and_five_of_the_nodes(recorded: Snapshot) -> None:
    verdict = answer(recorded, "selector-and-affinity")
    zone = "topology.kubernetes.io/zone In (west)"
    why = {node: f"unmatched pool=a100, {zone}" for node in NODES} | {
        "gpu-a100-1": f"unmatched {zone}"}
    assert [(e.object, e.field, e.value) for e in verdict.evidence] == [
        ("Pod lab/selector-and-affinity", "spec.nodeSelector / affinity",
         "nodeSelector pool=a100 + required node affinity"),
        *[(f"Node/{node}", "metadata.labels", why[node]) for node in NODES]]


def test_pin_evidence_is_the_selection_and_each_node(recorded: Snapshot) -> None:
    verdict = answer(recorded, "two-gone")
    assert [(e.object, e.value) for e in verdict.evidence] == [
        ("Pod lab/two-gone", "required node affinity"),
        *[(f"Node/{node}", "unmatched metadata.name In (gpu-gone-1,gpu-gone-2)") for node in NODES]]


def test_a_cluster_of_one_node_is_said_in_the_singular() -> None:
    lists = load_lists(SCENARIO)
    lists["nodes"] = [find(lists["nodes"], "cpu-1")]
    verdict = answer(Snapshot(**lists), "label-absent")
    assert verdict.action == ("nodeSelector example.com/fabric=ib does not match the one node."
                              " No node has the label at all." + FIX)
