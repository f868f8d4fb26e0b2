"""pod-not-found after a deletion (triage/classify/checks/admission.py), on the a100-pool
recording changed the way a cluster can: the latest event left without a reason."""

from __future__ import annotations

from tests.conftest import load_lists
from tests.paths import FIXTURES
from tests.triage.test_traps import answer


def test_a_remaining_event_without_a_reason_is_named_as_unknown() -> None:
    lists = load_lists(FIXTURES / "scenarios-extra" / "a100-pool")
    killing = next(e for e in lists["events"] if e["involvedObject"].get("name") == "gone-trainer"
                   and e.get("reason") == "Killing")
    killing.pop("reason")
    verdict = answer(lists, "lab/gone-trainer")
    assert (verdict.cause, verdict.action) == (
        "pod-not-found",
        "no pod or workload named lab/gone-trainer exists now, but 2 events about it remain"
        " (latest: ? at 2026-11-30T13:41:10): it was deleted, or finished and cleaned up."
        " Check who deletes it (kubectl -n lab get events --field-selector"
        " involvedObject.name=gone-trainer).")
    assert [(e.object, e.field, e.value) for e in verdict.evidence] == [
        ("namespace lab", "pods, workloads", "nothing named gone-trainer"),
        ("Pod lab/gone-trainer", "event ?", "Stopping container train")]
