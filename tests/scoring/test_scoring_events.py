"""scoring.events: HAMi's events of every era and kube-scheduler's messages quoting HAMi."""

from __future__ import annotations

from typing import Any

import pytest

from scoring.events import (
    BindingFailure,
    BindingSuccess,
    CodeOnNodes,
    FilteringSucceeded,
    NoNodeFits,
    parse_binding_failed,
    parse_binding_succeeded,
    parse_filtering_failed,
    parse_filtering_succeeded,
    parse_node_reason,
    read_hami_events,
    scheduler_scores,
)
from scoring.rows import EventRow
from tests.paths import FIXTURES
from triage.rows import event_row
from triage.snapshot import Snapshot

FIXTURE = FIXTURES / "scenarios" / "hami-sharing"


def event(reason: str, message: str, stamp: str = "2026-11-30T12:53:03Z",
          component: str = "hami-scheduler", kind: str = "Warning") -> dict[str, Any]:
    """A core/v1 Event as client-go's recorder writes it for hami-scheduler."""
    return {"apiVersion": "v1", "kind": "Event", "type": kind, "reason": reason,
            "message": message, "count": 1, "eventTime": None,
            "firstTimestamp": stamp, "lastTimestamp": stamp,
            "involvedObject": {"apiVersion": "v1", "kind": "Pod", "namespace": "ml",
                               "name": "train"},
            "metadata": {"name": "train.18ecd3c26b716d00", "namespace": "ml",
                         "creationTimestamp": stamp},
            "reportingComponent": component, "reportingInstance": "",
            "source": {"component": component}}


def rows(events: list[dict[str, Any]]) -> list[EventRow]:
    """The events as the checks read them."""
    return [event_row(e) for e in events]


# -- hami-scheduler events ---------------------------------------------------------------------


def test_filtering_succeed_gives_chosen_node_and_scores_in_event_order() -> None:
    parsed = parse_filtering_succeeded(
        "find fit node(node3), 7 nodes not fit, 2 nodes fit(node4:12.50,node3:18.75)")
    assert parsed == FilteringSucceeded(chosen="node3", not_fit=7, fit=2,
                                        scores={"node4": 12.5, "node3": 18.75})
    assert list(parsed.scores) == ["node4", "node3"]


@pytest.mark.parametrize("message", [
    "find fit node(node3), 7 nodes not fit",
    "find fit node(node3), 7 nodes not fit, 1 nodes fit(node3:high)",
    "something else entirely",
])
def test_filtering_succeed_unknown_text_is_none(message: str) -> None:
    assert parse_filtering_succeeded(message) is None


def test_filtering_failed_every_era() -> None:
    # v2.4–2.5
    assert parse_filtering_failed("no available node, all node scores do not meet") == (
        NoNodeFits(nodes=None))
    # v2.6+
    assert parse_filtering_failed("no available node, 9 nodes do not meet") == NoNodeFits(nodes=9)
    # v2.7+, one per code
    assert parse_filtering_failed("3 nodes CardInsufficientMemory(node1,node2,node5)") == (
        CodeOnNodes(code="CardInsufficientMemory", count=3, nodes=["node1", "node2", "node5"]))
    assert parse_filtering_failed("the dog ate the scheduler") is None


def test_binding_failed_lock_messages_of_both_eras() -> None:
    assert parse_binding_failed("node gpu-7 has been locked within 5m0s") == BindingFailure(
        message="node gpu-7 has been locked within 5m0s", node="gpu-7", lock_window="5m0s")
    old = parse_binding_failed("node gpu-7 has been locked within 300.000000 seconds")
    assert (old.node, old.lock_window, old.locked) == ("gpu-7", "300.000000 seconds", True)
    other = parse_binding_failed("pods \"train\" not found")
    assert (other.node, other.locked, other.message) == (None, False, 'pods "train" not found')


def test_binding_succeed() -> None:
    assert parse_binding_succeeded("Successfully binding node [gpu-3] to ml/train") == (
        BindingSuccess(nodes=["gpu-3"], pod="ml/train"))
    assert parse_binding_succeeded("bound somewhere") is None


def test_scheduler_scores_takes_the_newest_filtering_succeed() -> None:
    events = [
        event("FilteringFailed", "no available node, 2 nodes do not meet", "2026-11-30T13:00:00Z"),
        event("FilteringSucceed", "find fit node(b), 0 nodes not fit, 2 nodes fit(a:3.00,b:1.25)",
              "2026-11-30T12:59:00Z", kind="Normal"),
        event("FilteringSucceed", "find fit node(a), 0 nodes not fit, 2 nodes fit(b:9.00,a:8.00)",
              "2026-11-30T12:00:00Z", kind="Normal"),
    ]
    assert scheduler_scores(rows(events[1:])) == {"a": 3.0, "b": 1.25}
    assert scheduler_scores(rows(events)) is None  # a newer failure makes the scores stale
    assert scheduler_scores(rows(events[:1])) is None
    assert scheduler_scores([]) is None


def test_read_hami_events_collects_the_newest_of_each_kind() -> None:
    events = [
        event("BindingFailed", "node gpu-7 has been locked within 5m0s", "2026-11-30T13:02:00Z"),
        event("FailedScheduling", "0/2 nodes are available: 2 NodeUnfitPod.",
              "2026-11-30T13:01:30Z", component="default-scheduler"),
        event("FilteringFailed", "2 nodes CardInsufficientMemory(a,b)", "2026-11-30T13:01:00Z"),
        event("FilteringFailed", "no available node, 2 nodes do not meet", "2026-11-30T13:01:00Z"),
        event("FilteringFailed", "1 nodes CardInsufficientMemory(a)", "2026-11-30T12:00:00Z"),
        event("BindingSucceed", "Successfully binding node [a] to ml/train", "2026-11-30T11:00:00Z",
              kind="Normal"),
    ]
    read = read_hami_events(rows(events))
    assert read.newest == "BindingFailed"
    assert read.binding_failure is not None and read.binding_failure.node == "gpu-7"
    assert read.no_fit == NoNodeFits(nodes=2)
    assert read.codes == [CodeOnNodes(code="CardInsufficientMemory", count=2, nodes=["a", "b"])]
    assert read.succeeded is None
    assert read.binding_success == BindingSuccess(nodes=["a"], pod="ml/train")


def test_events_k8s_io_note_field_is_read() -> None:
    note_only = event("FilteringSucceed", "")
    del note_only["message"]
    note_only["note"] = "find fit node(a), 0 nodes not fit, 1 nodes fit(a:2.50)"
    assert scheduler_scores(rows([note_only])) == {"a": 2.5}


# -- kube-scheduler quoting the extender -------------------------------------------------------


def test_parse_node_reason() -> None:
    assert parse_node_reason("1/4 CardNotHealth, 3/4 CardTypeMismatch") == [
        (1, 4, "CardNotHealth"), (3, 4, "CardTypeMismatch")]
    assert parse_node_reason("NodeInsufficientDevice") == [(0, 0, "NodeInsufficientDevice")]
    assert parse_node_reason("1/4 MadeUpCode") == []
    assert parse_node_reason("Insufficient nvidia.com/gpu") == []
    assert parse_node_reason("") == []


# -- the recorded hami-sharing cluster ----------------------------------------------------------


@pytest.fixture(scope="module")
def snapshot() -> Snapshot:
    return Snapshot.from_dir(FIXTURE)


def test_hami_sharing_placed_scores_are_the_schedulers(snapshot: Snapshot) -> None:
    assert scheduler_scores(snapshot.rows.events_for("Pod", "hami", "placed")) == {
        "hami-a100-1": 10.24, "hami-t4-1": 0.0}
    read = read_hami_events(snapshot.rows.events_for("Pod", "hami", "placed"))
    assert read.succeeded is not None and read.succeeded.chosen == "hami-t4-1"


def test_hami_sharing_needs_40g_per_code_events(snapshot: Snapshot) -> None:
    read = read_hami_events(snapshot.rows.events_for("Pod", "hami", "needs-40g"))
    assert read.no_fit == NoNodeFits(nodes=2)
    assert sorted((c.code, c.count, tuple(c.nodes)) for c in read.codes) == [
        ("CardInsufficientCore", 1, ("hami-a100-1",)),
        ("CardInsufficientMemory", 2, ("hami-a100-1", "hami-t4-1")),
        ("CardNotHealth", 1, ("hami-a100-1",))]
    assert scheduler_scores(snapshot.rows.events_for("Pod", "hami", "needs-40g")) is None


def test_hami_sharing_wants_h100_has_the_old_wording(snapshot: Snapshot) -> None:
    read = read_hami_events(snapshot.rows.events_for("Pod", "hami", "wants-h100"))
    assert read.no_fit == NoNodeFits(nodes=None) and read.codes == []


def test_hami_sharing_pods_without_events(snapshot: Snapshot) -> None:
    for name in ("too-many-cards", "fits-small"):
        assert read_hami_events(snapshot.rows.events_for("Pod", "hami", name)).newest is None


def test_scores_older_than_a_filtering_failure_are_stale() -> None:
    newest_first = [
        event("FilteringFailed", "no available node, 2 nodes do not meet",
              stamp="2026-11-30T12:55:00Z"),
        event("FilteringSucceed", "find fit node(a), 0 nodes not fit, 1 nodes fit(a:3.00)",
              stamp="2026-11-30T12:50:00Z", kind="Normal"),
    ]
    assert scheduler_scores(rows(newest_first)) is None
    assert scheduler_scores(rows(newest_first[1:])) == {"a": 3.0}
