"""Absent pods (triage/classify/checks/admission.py) on recordings changed the way a cluster
can: a deleted pod's latest event without a reason, or its only event left (a100-pool); a
RuntimeClass rejection that names another class than the template does now, six holders of a
full quota and two full quotas at once (seven-states)."""

from __future__ import annotations

import copy
from typing import Any

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


def test_one_remaining_event_is_told_in_the_singular() -> None:
    lists = load_lists(FIXTURES / "scenarios-extra" / "a100-pool")
    # the older of its two events expired (the API server keeps events about an hour)
    lists["events"] = [e for e in lists["events"]
                       if not (e["involvedObject"].get("name") == "gone-trainer"
                               and e.get("reason") == "Scheduled")]
    verdict = answer(lists, "lab/gone-trainer")
    assert (verdict.cause, verdict.action) == (
        "pod-not-found",
        "no pod or workload named lab/gone-trainer exists now, but 1 event about it remains"
        " (latest: Killing at 2026-11-30T13:41:10): it was deleted, or finished and cleaned up."
        " Check who deletes it (kubectl -n lab get events --field-selector"
        " involvedObject.name=gone-trainer).")


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


def _more_holders(lists: dict[str, list[dict[str, Any]]], names: list[str]) -> None:
    """ml/train-a's GPU pod run again under other names, and ml's gpu-quota counting them."""
    train_a = find(lists["pods"], "train-a", "ml")
    for name in names:
        pod = copy.deepcopy(train_a)
        pod["metadata"].update(name=name, uid=f"{train_a['metadata']['uid'][:-8]}{name:0>8}")
        lists["pods"].append(pod)
    held = str(1 + len(names))
    quota = find(lists["resourcequotas"], "gpu-quota", "ml")
    quota["spec"]["hard"]["requests.nvidia.com/gpu"] = held
    quota["status"]["hard"]["requests.nvidia.com/gpu"] = held
    quota["status"]["used"]["requests.nvidia.com/gpu"] = held


def test_six_pods_holding_a_full_quota_name_the_first_five() -> None:
    lists = load_lists("seven-states")
    _more_holders(lists, ["train-b", "train-c", "train-d", "train-e", "train-f"])
    verdict = answer(lists, "ml/finetune")
    assert (verdict.cause, verdict.action) == (
        "quota-exceeded",
        "quota ml/gpu-quota is full: requests.nvidia.com/gpu 6/6 used (ml/train-a, ml/train-b,"
        " ml/train-c, ml/train-d, ml/train-e). The Job asks 1 per pod; its pods are rejected"
        " at creation (FailedCreate on Job ml/finetune). Raise the quota or free usage.")


def test_two_full_quotas_are_both_named() -> None:
    lists = load_lists("seven-states")
    gpu_quota = find(lists["resourcequotas"], "gpu-quota", "ml")
    cpu_quota = copy.deepcopy(gpu_quota)
    cpu_quota["metadata"].update(name="cpu-quota", uid="b29af56a-481f-4689-8b11-df6c3307c85f")
    cpu_quota["spec"]["hard"] = {"requests.cpu": "4"}
    cpu_quota["status"] = {"hard": {"requests.cpu": "4"}, "used": {"requests.cpu": "4"}}
    lists["resourcequotas"].append(cpu_quota)
    verdict = answer(lists, "ml/finetune")
    assert (verdict.cause, verdict.action) == (
        "quota-exceeded",
        "quota ml/gpu-quota is full: requests.nvidia.com/gpu 1/1 used (ml/train-a). The Job"
        " asks 1 per pod; quota ml/cpu-quota is full: requests.cpu 4/4 used (ml/train-a). The"
        " Job asks 8 per pod; its pods are rejected at creation (FailedCreate on Job"
        " ml/finetune). Raise the quota or free usage.")
    assert [(e.object, e.field, e.value) for e in verdict.evidence][:2] == [
        ("ResourceQuota ml/gpu-quota", "status.hard/used[requests.nvidia.com/gpu]",
         "hard 1, used 1, one pod asks 1"),
        ("ResourceQuota ml/cpu-quota", "status.hard/used[requests.cpu]",
         "hard 4, used 4, one pod asks 8")]
