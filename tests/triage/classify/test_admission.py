"""Absent pods (triage/classify/checks/admission.py) on recordings changed the way a cluster
can: a deleted pod's latest event without a reason (a100-pool), a RuntimeClass rejection that
names another class than the template does now (seven-states)."""

from __future__ import annotations

import pytest

from tests.conftest import find, load_lists
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


@pytest.mark.parametrize(("template", "named"), [
    ("runc-gpu", "nvidia"),     # fixed since: the rejection's class is the one missing
    ("nvidia-v2", "nvidia-v2"),  # changed to another missing one: the template's is named
    (None, "nvidia"),            # taken out of the template since
], ids=["template-fixed", "template-still-missing", "template-unset"])
def test_a_rejection_naming_another_runtimeclass_than_the_template(template: str | None,
                                                                   named: str) -> None:
    lists = load_lists("seven-states")
    pod_spec = find(lists["workloads"], "vllm", "infer")["spec"]["template"]["spec"]
    if template is None:
        pod_spec.pop("runtimeClassName")
    else:
        pod_spec["runtimeClassName"] = template
    verdict = answer(lists, "infer/vllm")
    assert (verdict.cause, verdict.action) == (
        "runtimeclass-missing",
        f"Deployment infer/vllm uses runtimeClassName {named}, but no RuntimeClass {named} "
        f"exists (existing: runc-gpu). Create RuntimeClass {named} or fix the name in the "
        "template.")
    assert ("Deployment infer/vllm", "spec.template.spec.runtimeClassName",
            template or "(unset)") in [
        (e.object, e.field, e.value) for e in verdict.evidence]
