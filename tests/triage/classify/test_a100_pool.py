"""Answers that list many nodes or none (the a100-pool recording): a pod no node of a six-node
pool has the cpu for, and a Deployment scaled to zero."""

from __future__ import annotations

import pytest

from tests.paths import FIXTURES
from triage.classify import triage
from triage.refs import parse_ref
from triage.snapshot import Snapshot

SCENARIO = FIXTURES / "scenarios-extra" / "a100-pool"
CPU = "Insufficient cpu"


@pytest.fixture(scope="module")
def recorded() -> Snapshot:
    return Snapshot.from_dir(SCENARIO)


def test_cpu_short_on_six_nodes_names_four_in_the_action_and_five_in_the_evidence(
        recorded: Snapshot) -> None:
    verdict = triage(recorded, parse_ref("lab/cpu-500"))
    assert (verdict.cause, verdict.action) == (
        "other-constraint",
        f"GPU-wise a node fits, but gpu-a100-1: {CPU}; gpu-a100-2: {CPU}; gpu-a100-3: {CPU};"
        f" gpu-a100-4: {CPU}. Lower the pod's cpu / memory requests or free those nodes.")
    nodes = [(e.object, e.field, e.value) for e in verdict.evidence if e.object.startswith("Node/")]
    assert nodes == [(f"Node/gpu-a100-{i}", "status.allocatable − requests", CPU)
                     for i in range(1, 6)]
    assert [e.field for e in verdict.evidence if not e.object.startswith("Node/")] == [
        "scheduler message"]


def test_a_deployment_scaled_to_zero_wants_no_pods(recorded: Snapshot) -> None:
    verdict = triage(recorded, parse_ref("lab/idle"))
    assert (verdict.cause, verdict.action) == (
        "pod-not-found",
        "Deployment lab/idle wants no pods now (finished, or scaled to 0): check its status.")
    assert [(e.object, e.field, e.value) for e in verdict.evidence] == [
        ("Deployment lab/idle", "spec / status", "0 pods wanted")]


def test_a_deployment_without_pods_or_errors_says_so(recorded: Snapshot) -> None:
    verdict = triage(recorded, parse_ref("lab/orphan"))
    assert (verdict.action, [(e.object, e.field, e.value) for e in verdict.evidence]) == (
        "Deployment lab/orphan exists but has no pods and no admission error on record. Check"
        " its status and events.", [("Deployment lab/orphan", "pods", "none")])


def test_a_job_refused_by_pod_security_quotes_the_newest_refusal(recorded: Snapshot) -> None:
    refused = ('pods "restricted-x4m9p" is forbidden: violates PodSecurity "restricted:latest":'
               ' privileged (container "train" must not set securityContext.privileged=true)')
    verdict = triage(recorded, parse_ref("lab/restricted"))
    assert (verdict.cause, verdict.action) == (
        "pod-not-found",
        f"Job lab/restricted has no pods: the API server refuses them at creation: {refused}."
        " Change the pod template to meet that, or the policy that refuses it (PodSecurity"
        " level, admission webhook, LimitRange).")
    assert [(e.object, e.field, e.value) for e in verdict.evidence] == [
        ("Job lab/restricted", "event FailedCreate", f"Error creating: {refused}")]


def test_a_deleted_pod_whose_events_remain_names_the_latest(recorded: Snapshot) -> None:
    verdict = triage(recorded, parse_ref("lab/gone-trainer"))
    assert (verdict.cause, verdict.action) == (
        "pod-not-found",
        "no pod or workload named lab/gone-trainer exists now, but 2 events about it remain"
        " (latest: Killing at 2026-11-30T13:41:10): it was deleted, or finished and cleaned up."
        " Check who deletes it (kubectl -n lab get events --field-selector"
        " involvedObject.name=gone-trainer).")
    assert [(e.object, e.field, e.value) for e in verdict.evidence] == [
        ("namespace lab", "pods, workloads", "nothing named gone-trainer"),
        ("Pod lab/gone-trainer", "event Killing", "Stopping container train")]


def test_a_runtimeclass_when_the_cluster_has_none(recorded: Snapshot) -> None:
    verdict = triage(recorded, parse_ref("lab/needs-nvidia"))
    assert (verdict.cause, verdict.action) == (
        "runtimeclass-missing",
        "Deployment lab/needs-nvidia uses runtimeClassName nvidia, but no RuntimeClass nvidia"
        " exists (the cluster has none). Create RuntimeClass nvidia or fix the name in the"
        " template.")
    assert [(e.object, e.field, e.value) for e in verdict.evidence] == [
        ("Deployment lab/needs-nvidia", "spec.template.spec.runtimeClassName", "nvidia"),
        ("RuntimeClasses", "metadata.name", "none")]
