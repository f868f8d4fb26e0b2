"""scheduler-unavailable: a pod created moments ago, and whether a scheduler of that name runs
(what `gpuwhy check` asks before it blames one)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import find, load_lists
from tests.paths import FIXTURES
from triage.classify import triage
from triage.classify.checks.scheduler import scheduler_serves
from triage.refs import parse_ref
from triage.snapshot import Snapshot

TAINTS_AND_UNITS = FIXTURES / "scenarios-extra" / "taints-and-units"  # no pod is bound


@pytest.mark.parametrize(("scenario", "scheduler", "serves"), [
    ("seven-states", "", True),
    ("seven-states", "default-scheduler", True),  # taken to run: it is the cluster's own
    ("hami-sharing", "hami-scheduler", True),  # hami/placed is bound by it and Running
    ("seven-states", "hami-scheduler", False),
    (TAINTS_AND_UNITS, "default-scheduler", True),  # even before it has bound anything
    (TAINTS_AND_UNITS, "gpu-batch-scheduler", False),  # its pods wait unbound
])
def test_a_scheduler_runs_when_a_live_pod_it_bound_says_so(scenario: str | Path, scheduler: str,
                                                           serves: bool) -> None:
    assert scheduler_serves(Snapshot(**load_lists(scenario)).rows, scheduler) is serves


def test_pods_it_bound_that_finished_do_not_show_a_scheduler() -> None:
    lists = load_lists("hami-sharing")
    for name in ("placed", "llm-chat-0", "llm-chat-1", "trainer-lora"):  # all it bound
        find(lists["pods"], name, "hami")["status"]["phase"] = "Succeeded"
    assert not scheduler_serves(Snapshot(**lists).rows, "hami-scheduler")


def test_a_pod_created_seconds_ago_is_given_a_minute() -> None:
    # lab/tolerate-all was created at 13:20:00 and fits the four pool=multi nodes
    verdict = triage(Snapshot(**load_lists(TAINTS_AND_UNITS), read_at="2026-11-30T13:20:06Z"),
                     parse_ref("lab/tolerate-all"))
    assert verdict.cause == "scheduler-unavailable"
    assert verdict.action == (
        "lab/tolerate-all was created 6 s ago: the scheduler may not have looked yet; ask again "
        "in a minute. GPU-wise gpu-multi-1, gpu-multi-2, gpu-sick-1 fit; if it still waits then, "
        "check that gpu-batch-scheduler (spec.schedulerName) is running.")
    assert [(e.object, e.field, e.value) for e in verdict.evidence] == [
        ("Pod lab/tolerate-all", "metadata.creationTimestamp", "6 s before the cluster was read"),
        ("Pod lab/tolerate-all", "spec.schedulerName", "gpu-batch-scheduler")]


def test_a_minute_after_creation_the_scheduler_is_named_as_not_running() -> None:
    lists = load_lists(TAINTS_AND_UNITS)
    del find(lists["pods"], "tolerate-all", "lab")["spec"]["schedulerName"]
    verdict = triage(Snapshot(**lists, read_at="2026-11-30T13:21:00Z"),
                     parse_ref("lab/tolerate-all"))
    assert verdict.action == (
        "GPU-wise gpu-multi-1, gpu-multi-2, gpu-sick-1 fit, but no scheduler has said anything "
        "about lab/tolerate-all: spec.schedulerName default-scheduler is not running or does not "
        "see the pod. Start or fix that scheduler, or correct schedulerName.")


def test_a_pod_created_as_the_cluster_was_read_is_zero_seconds_old() -> None:
    verdict = triage(Snapshot(**load_lists(TAINTS_AND_UNITS), read_at="2026-11-30T13:20:00Z"),
                     parse_ref("lab/tolerate-all"))
    assert verdict.action.startswith("lab/tolerate-all was created 0 s ago: ")


def test_a_pod_without_a_spec_shows_no_scheduler() -> None:
    # a hand-edited dump; the API server always writes spec
    lists = load_lists("hami-sharing")
    lists["pods"].append({"apiVersion": "v1", "kind": "Pod",
                          "metadata": {"name": "bare", "namespace": "hami"}})
    for name in ("placed", "llm-chat-0", "llm-chat-1", "trainer-lora"):
        find(lists["pods"], name, "hami")["status"]["phase"] = "Succeeded"
    assert not scheduler_serves(Snapshot(**lists).rows, "hami-scheduler")
