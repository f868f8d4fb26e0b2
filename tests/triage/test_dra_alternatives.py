"""firstAvailable (prioritized lists) on the gang-dra-basics recording: the cause of the
alternative that got furthest, what each lacked, and which one was chosen."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.conftest import find, load_lists
from triage.classify import triage
from triage.refs import parse_ref
from triage.snapshot import Snapshot

Lists = dict[str, list[dict[str, Any]]]


def _verdict(lists: Lists, ref: str) -> Any:
    return triage(Snapshot(**lists), parse_ref(ref))


def test_no_alternative_fits_the_furthest_gives_the_cause_and_each_says_what_it_lacked() -> None:
    verdict = _verdict(load_lists("gang-dra-basics"), "infer/fa-none")
    assert verdict.cause == "exhausted"  # a100 got furthest: its devices are taken
    assert "h100 (1 × NVIDIA H100 80GB HBM3): no device meets its selectors" in verdict.action
    assert ("a100 (2 × NVIDIA A100-SXM4-40GB): exhausted on dra-excl-1: 2/2 matching allocated "
            "to claim infer/embed-batch-gpu-txh2n (pod infer/embed-batch)") in verdict.action
    assert [e.object for e in verdict.evidence].count("firstAvailable") == 2


def test_the_holder_leaving_lets_the_second_alternative_fit() -> None:
    lists = load_lists("gang-dra-basics")
    lists["dra"] = [o for o in lists["dra"] if o["metadata"]["name"] != "embed-batch-gpu-txh2n"]
    lists["pods"].remove(find(lists["pods"], "embed-batch", "infer"))
    verdict = _verdict(lists, "infer/fa-none")
    assert {n.name: n.outcome for n in verdict.nodes}["dra-excl-1"] == "fit"
    assert "Alternatives" not in verdict.action


def test_a_single_alternative_request_says_nothing_of_alternatives() -> None:
    verdict = _verdict(load_lists("gang-dra-basics"), "infer/chat-c")
    assert "firstAvailable" not in verdict.action


def test_the_chosen_alternative_of_a_bound_pod_is_named() -> None:
    verdict = _verdict(load_lists("gang-dra-basics"), "infer/fa-second")
    assert verdict.cause == "scheduled"
    assert any("firstAvailable alternative l4 chosen" in e.value for e in verdict.evidence)


def test_when_the_first_alternative_has_devices_but_too_few_the_second_is_tried(
        to_snapshot: Callable[[Lists], Snapshot]) -> None:
    lists = load_lists("gang-dra-basics")
    claim = next(o for o in lists["dra"] if o["metadata"]["name"] == "fa-none-gpu-7bztn")
    h100 = claim["spec"]["devices"]["requests"][0]["firstAvailable"][0]
    h100["selectors"][0]["cel"]["expression"] = (
        'device.attributes["gpu.nvidia.com"].productName == "NVIDIA L4"')
    h100["count"] = 3  # dra-l4-1 has 2 L4s: too few, then a100 is tried
    verdict = triage(to_snapshot(lists), parse_ref("infer/fa-none"))
    assert verdict.cause == "exhausted"
    assert "h100 (3 × NVIDIA L4): too-large on dra-l4-1" in verdict.action


def test_a_pending_pod_whose_second_alternative_fits_says_which() -> None:
    lists = load_lists("gang-dra-basics")
    pod = find(lists["pods"], "fa-second", "infer")
    claim = next(o for o in lists["dra"] if o["metadata"]["name"] == "fa-second-gpu-xsr9t")
    claim.pop("status")  # not allocated yet, and the scheduler has not looked
    pod["spec"].pop("nodeName")
    pod["status"] = {"phase": "Pending"}
    lists["events"] = [e for e in lists["events"]
                       if (e.get("regarding") or e.get("involvedObject") or {}).get("name")
                       != "fa-second"]
    verdict = _verdict(lists, "infer/fa-second")
    assert verdict.cause == "scheduler-unavailable"
    assert "(firstAvailable: l4 (1 × NVIDIA L4) fits on dra-l4-1)" in verdict.action
