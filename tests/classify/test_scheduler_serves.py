"""Does a scheduler of that name run? What `gpuwhy check` asks before it blames one."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import find, load_lists
from triage.classify.checks.scheduler import scheduler_serves
from triage.snapshot import Snapshot

FIXTURES = Path(__file__).parent.parent / "fixtures"
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
    assert scheduler_serves(Snapshot(**load_lists(scenario)), scheduler) is serves


def test_pods_it_bound_that_finished_do_not_show_a_scheduler() -> None:
    lists = load_lists("hami-sharing")
    for name in ("placed", "llm-chat-0", "llm-chat-1", "trainer-lora"):  # all it bound
        find(lists["pods"], name, "hami")["status"]["phase"] = "Succeeded"
    assert not scheduler_serves(Snapshot(**lists), "hami-scheduler")
