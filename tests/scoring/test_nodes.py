"""scoring.nodes: the texts a failing selector term or taint becomes, and a node's amounts."""

from __future__ import annotations

from typing import Any

import pytest

from scoring.nodes import describe, labels, node_name, selector_mismatches, status_amount
from tests.conftest import find, load_lists

NODES = load_lists("seven-states")["nodes"]
A100 = find(NODES, "gpu-a100-1")


@pytest.mark.parametrize(("terms", "texts"), [
    ([{}], ["empty nodeSelectorTerm matches no node"]),
    ([], ["no term matches"]),  # the API server refuses it; a dump edited by hand may hold it
])
def test_terms_that_match_no_node_say_why(terms: list[Any], texts: list[str]) -> None:
    spec = {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": terms}}}}
    assert selector_mismatches(spec, A100) == texts


@pytest.mark.parametrize(("requirement", "text"), [
    ({"key": "pool", "operator": "In", "values": ["a100", "h100"]}, "pool In (a100,h100)"),
    ({"key": "example.com/gpu-gen", "operator": "Gt", "values": [3]}, "example.com/gpu-gen Gt (3)"),
    ({"key": "pool", "operator": "Exists"}, "pool Exists"),
    ({"key": "pool", "operator": "DoesNotExist"}, "pool DoesNotExist"),
    # a dump edited by hand: what is missing is left blank, never "None"
    ({"operator": "In", "values": ["a"]}, " In (a)"),
    ({"key": "pool", "values": ["a"]}, "pool  (a)"),
])
def test_requirements_are_described_as_kubectl_prints_them(requirement: dict[str, Any],
                                                           text: str) -> None:
    assert describe(requirement) == text


def test_status_amounts_of_a_node_and_of_what_it_lacks() -> None:
    assert status_amount(A100, "allocatable", "nvidia.com/gpu") == 4
    assert status_amount(A100, "capacity", "amd.com/gpu") is None
    assert status_amount(find(NODES, "gpu-v100-broken"), "allocatable", "nvidia.com/gpu") == 0
    assert status_amount({"metadata": {"name": "new-node"}}, "capacity", "nvidia.com/gpu") is None


@pytest.mark.parametrize(("operator", "values"), [("Gt", ["3"]), ("Lt", ["3"]), ("Gt", ["three"])])
def test_gt_and_lt_never_match_what_is_no_integer(operator: str, values: list[str]) -> None:
    # the A100 node's nvidia.com/gpu.family is "ampere"; a count needs a number on both sides
    expression = {"key": "nvidia.com/gpu.family", "operator": operator, "values": values}
    spec = {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [expression]}]}}}}
    assert selector_mismatches(spec, A100) == [f"nvidia.com/gpu.family {operator} ({values[0]})"]


@pytest.mark.parametrize("node", [{}, {"metadata": {}}, {"metadata": {"labels": None}}])
def test_a_node_without_metadata_reads_as_nameless_and_unlabelled(node: dict[str, Any]) -> None:
    # a hand-edited dump: no "None" name, no crash
    assert (node_name(node), dict(labels(node))) == ("", {})
