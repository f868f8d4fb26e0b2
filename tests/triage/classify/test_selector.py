"""The selector check's shortcut (nodeSelector labels all match) never skips node affinity;
the values it lists are every node's, alike nodes too (a100-pool)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import find, load_lists
from tests.paths import FIXTURES
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


def test_a_hostname_pin_lists_the_hostname_of_every_alike_node() -> None:
    # gpu-a100-1 … 6 are one shape; their hostname labels still differ
    lists = load_lists(FIXTURES / "scenarios-extra" / "a100-pool")
    pod = find(lists["pods"], "cpu-500", "lab")
    pod["spec"]["nodeSelector"] = {"pool": "h200", "kubernetes.io/hostname": "gpu-a100-2"}
    verdict = triage(Snapshot(**lists), PodRef("lab", "cpu-500"))
    hostnames = ["cpu-1", "gpu-a10-full", "gpu-a100-1", "gpu-a100-2", "gpu-a100-3", "gpu-a100-4",
                 "gpu-a100-5", "gpu-a100-6", "gpu-h100-reserved", "gpu-t4-noplugin",
                 "gpu-v100-broken"]
    assert (verdict.cause, verdict.action) == (
        "selector-mismatch",
        "nodeSelector pool=h200 + kubernetes.io/hostname=gpu-a100-2 matches none of the 11"
        " nodes. Values present: "
        + ", ".join(f"kubernetes.io/hostname={name}" for name in hostnames)
        + ", pool=a10-full, pool=a100, pool=cpu, pool=h100, pool=t4-noplugin, pool=v100-broken."
        " Fix the selector, or label a node that should run it.")
