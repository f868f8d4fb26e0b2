"""FailedScheduling texts of every era, parsed into structured reasons."""

from __future__ import annotations

import pytest

from triage.messages import parse_failed_scheduling

V136 = ("0/6 nodes are available: 1 Insufficient nvidia.com/gpu, 1 node(s) had untolerated "
        "taint(s), 4 node(s) didn't match Pod's node affinity/selector. no new claims to "
        "deallocate, preemption: 0/6 nodes are available: 1 No preemption victims found for "
        "incoming pod, 5 Preemption is not helpful for scheduling.")


def test_v1_36_with_claims_and_preemption() -> None:
    parsed = parse_failed_scheduling(V136)
    assert parsed.total == 6
    assert [(r.count, r.kind) for r in parsed.reasons] == [
        (1, "insufficient:nvidia.com/gpu"), (1, "taint"), (4, "selector")]
    assert [(r.count, r.text) for r in parsed.preemption] == [
        (1, "No preemption victims found for incoming pod"),
        (5, "Preemption is not helpful for scheduling")]


@pytest.mark.parametrize(("message", "expected"), [
    # <= 1.17
    ("0/3 nodes are available: 3 node(s) had taints that the pod didn't tolerate.",
     [(3, "taint")]),
    # 1.18 - 1.24
    ("0/4 nodes are available: 1 node(s) had taint {dedicated: llm-team}, that the pod didn't "
     "tolerate, 3 Insufficient nvidia.com/gpu.",
     [(1, "taint"), (3, "insufficient:nvidia.com/gpu")]),
    # 1.25 - 1.34, empty value
    ("0/5 nodes are available: 2 node(s) had untolerated taint {node-role.kubernetes.io/"
     "control-plane: }, 3 node(s) didn't match node selector.", [(2, "taint"), (3, "selector")]),
    # without preemption, older selector wording, cordon
    ("0/2 nodes are available: 1 node(s) were unschedulable, 1 Too many pods.",
     [(1, "unschedulable"), (1, "pods")]),
    # count-less PreFilter rejection
    ('0/3 nodes are available: persistentvolumeclaim "x" not found.', [(None, "other")]),
    # truncated with ".."
    ("0/9 nodes are available: 9 Insufficient amd.com/gpu..", [(9, "insufficient:amd.com/gpu")]),
    # matchFields PreFilter on 1.36
    ("0/30 nodes are available: 29 node(s) didn't satisfy plugin(s) [NodeAffinity], "
     "1 Insufficient nvidia.com/gpu.", [(29, "selector"), (1, "insufficient:nvidia.com/gpu")]),
    # HAMi extender entries
    ("0/1 nodes are available: 1 NodeUnfitPod.", [(1, "extender")]),
    ("0/2 nodes are available: 2 node unregistered.", [(2, "extender")]),
])
def test_eras(message: str, expected: list[tuple[int | None, str]]) -> None:
    parsed = parse_failed_scheduling(message)
    assert [(r.count, r.kind) for r in parsed.reasons] == expected
    assert parsed.preemption == ()


def test_preemption_without_claims_part() -> None:
    parsed = parse_failed_scheduling(
        "0/2 nodes are available: 2 Insufficient nvidia.com/gpu. preemption: 0/2 nodes are "
        "available: 2 No preemption victims found for incoming pod.")
    assert parsed.total == 2 and len(parsed.reasons) == 1 and parsed.preemption[0].count == 2


def test_counts_may_exceed_total() -> None:
    parsed = parse_failed_scheduling("0/1 nodes are available: 1 Insufficient cpu, "
                                     "1 Insufficient memory.")
    assert sum(r.count or 0 for r in parsed.reasons) == 2 and parsed.total == 1


def test_not_a_scheduler_message() -> None:
    parsed = parse_failed_scheduling("no available node, 2 nodes do not meet")
    assert parsed.total is None and parsed.reasons == ()


@pytest.mark.parametrize(("message", "expected"), [
    ("0/3 nodes are available: 1 node unregistered, 2 NodeUnfitPod.",
     [(1, "node unregistered", "extender"), (2, "NodeUnfitPod", "extender")]),
    ("0/1 nodes are available: 1 node not fit pod.", [(1, "node not fit pod", "extender")]),
    # HAMi v2.10 puts its whole reason string in, with commas of its own
    ("0/3 nodes are available: 1 1/4 CardInsufficientCore, 1/4 CardNotHealth, "
     "2/4 CardInsufficientMemory, 1 2/2 CardInsufficientMemory, 1 NodeInsufficientDevice. "
     "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.",
     [(1, "1/4 CardInsufficientCore, 1/4 CardNotHealth, 2/4 CardInsufficientMemory",
       "extender"), (1, "2/2 CardInsufficientMemory", "extender"),
      (1, "NodeInsufficientDevice", "extender")]),
])
def test_hami_extender_entries(message: str, expected: list[tuple[int, str, str]]) -> None:
    assert [(r.count, r.text, r.kind) for r in parse_failed_scheduling(message).reasons] \
        == expected


def test_kube_scheduler_reasons_are_not_hami_ones() -> None:
    assert "extender" not in {r.kind for r in parse_failed_scheduling(V136).reasons}
