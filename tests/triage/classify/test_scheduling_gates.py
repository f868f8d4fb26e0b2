"""other-constraint for a pod held by scheduling gates that are not Kueue's, read as whole
sentences (the scheduling-gates recording): one gate, two gates, the API server's condition."""

from __future__ import annotations

import pytest

from tests.paths import FIXTURES
from triage.classify import triage
from triage.refs import parse_ref
from triage.snapshot import Snapshot

SCENARIO = FIXTURES / "scenarios-extra" / "scheduling-gates"
LICENSE = "example.com/license-check"
GATED = ("PodScheduled condition (API server)",
         "SchedulingGated: Scheduling is blocked due to non-empty scheduling gates")


@pytest.fixture(scope="module")
def recorded() -> Snapshot:
    return Snapshot.from_dir(SCENARIO)


@pytest.mark.parametrize(("name", "gates", "action"), [
    ("gate-one", LICENSE,
     f"GPU-wise gpu-a100-1 fit, but the pod has scheduling gate {LICENSE}: no scheduler looks at"
     " it until it is removed. Whoever added it removes it when ready: check that controller is"
     " running, or remove the gate if nothing manages it."),
    ("gate-two", f"{LICENSE}, example.com/capacity-reservation",
     f"GPU-wise gpu-a100-1 fit, but the pod has scheduling gates {LICENSE},"
     " example.com/capacity-reservation: no scheduler looks at it until they are removed."
     " Whoever added them removes them when ready: check that controller is running, or remove"
     " the gate if nothing manages it."),
])
def test_gates_are_named_with_who_removes_them(recorded: Snapshot, name: str, gates: str,
                                               action: str) -> None:
    verdict = triage(recorded, parse_ref(f"lab/{name}"))
    assert (verdict.cause, verdict.action) == ("other-constraint", action)
    assert [(e.object, e.field, e.value) for e in verdict.evidence] == [
        (f"Pod lab/{name}", "spec.schedulingGates", gates), (f"Pod lab/{name}", *GATED)]


def test_a_name_both_pods_start_with_suggests_both(recorded: Snapshot) -> None:
    verdict = triage(recorded, parse_ref("lab/gate"))
    assert (verdict.cause, verdict.action) == (
        "pod-not-found",
        "no pod, workload or event named lab/gate exists. Did you mean lab/gate-one or"
        " lab/gate-two? Check the name and namespace (kubectl -n lab get pods,jobs,deployments);"
        " events expire after an hour, so an old rejection leaves no trace.")


def test_a_missing_runtimeclass_names_the_two_that_exist(recorded: Snapshot) -> None:
    verdict = triage(recorded, parse_ref("lab/vllm"))
    assert (verdict.cause, verdict.action) == (
        "runtimeclass-missing",
        "Deployment lab/vllm uses runtimeClassName nvidia, but no RuntimeClass nvidia exists"
        " (existing: kata-gpu, runc-gpu). Create RuntimeClass nvidia or fix the name in the"
        " template.")
    assert [(e.object, e.field, e.value) for e in verdict.evidence] == [
        ("Deployment lab/vllm", "spec.template.spec.runtimeClassName", "nvidia"),
        ("RuntimeClasses", "metadata.name", "kata-gpu, runc-gpu")]
