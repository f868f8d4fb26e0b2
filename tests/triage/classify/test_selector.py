"""The selector check's shortcut (nodeSelector labels all match) never skips node affinity."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import find, load_lists
from triage.classify import triage
from triage.refs import PodRef
from triage.snapshot import Snapshot


@pytest.mark.parametrize(("terms", "cause"), [
    ([], "selector-mismatch"),  # an empty list of terms matches no node
    ([{"matchExpressions": [{"key": "pool", "operator": "In", "values": ["h200"]}]}],
     "selector-mismatch"),
    ([{"matchExpressions": [{"key": "pool", "operator": "Exists"}]}], "exhausted"),
])
def test_node_affinity_is_checked_when_the_node_selector_matches(
        terms: list[dict[str, Any]], cause: str) -> None:
    lists = load_lists("seven-states")
    pod = find(lists["pods"], "full", "research")  # nodeSelector pool=a10-full: exhausted
    pod["spec"]["affinity"] = {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}
    verdict = triage(Snapshot(**lists), PodRef("research", "full"))
    assert verdict.cause == cause


def test_an_empty_list_of_terms_is_named_the_node_selection() -> None:
    lists = load_lists("seven-states")
    pod = find(lists["pods"], "full", "research")
    del pod["spec"]["nodeSelector"]
    pod["spec"]["affinity"] = {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}}
    verdict = triage(Snapshot(**lists), PodRef("research", "full"))
    assert verdict.action == ("the node selection matches none of the 6 nodes. On cpu-1: unmatched"
                              " no term matches. Fix the selector, or label a node that should"
                              " run it.")
