"""A bound pod, read as whole sentences: node-runtime-error for each way the node fails it
(status.reason, the kubelet's events, a deleted or NotReady node, a missing runtime handler)
and scheduled with the container or kubelet trouble that holds it back.

seven-states' research/ok (a bare pod bound to gpu-a100-1, 2 nvidia.com/gpu, container train)
changed the way the kubelet and the node lifecycle controller would change it.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from scoring.verdict import Verdict
from tests.conftest import find, load_lists
from triage.classify import triage
from triage.refs import parse_ref
from triage.snapshot import Snapshot

Lists = dict[str, list[dict[str, Any]]]
POD = "Pod research/ok"
BOUND = (POD, "spec.nodeName", "gpu-a100-1")
REPAIR = ("Repair the node (container runtime handler, driver, device plugin), then delete the"
          " pod and create it again (it has no controller: kubectl replace --force -f its"
          " manifest).")
ALLOCATE = ("Allocate failed due to requested number of devices unavailable for nvidia.com/gpu."
            " Requested: 2, Available: 0, which is unexpected")
NO_RUNTIME = ('Failed to create pod sandbox: rpc error: code = Unknown desc = failed to get'
              ' sandbox Runtime: no Runtime for "nvidia" is configured')
NETWORK = ('Failed to create pod sandbox: rpc error: code = Unknown desc = failed to setup'
           ' network for sandbox "9c1e": plugin type="calico" failed (add): error getting'
           ' ClusterInformation: connection is unauthorized')


@pytest.fixture
def lists() -> Lists:
    return load_lists("seven-states")


def _answer(lists: Lists) -> Verdict:
    return triage(Snapshot(**copy.deepcopy(lists)), parse_ref("research/ok"))


def _evidence(verdict: Verdict) -> list[tuple[str, str, str]]:
    return [(e.object, e.field, e.value) for e in verdict.evidence]


def _pod(lists: Lists) -> dict[str, Any]:
    return find(lists["pods"], "ok", "research")


def _event(lists: Lists, reason: str, message: str, *, kind: str = "Warning",
           component: str = "kubelet", at: str = "2026-11-30T12:52:00Z") -> None:
    lists["events"].append({
        "apiVersion": "v1", "kind": "Event", "type": kind, "reason": reason,
        "message": message, "count": 3, "eventTime": None,
        "firstTimestamp": "2026-11-30T12:51:00Z", "lastTimestamp": at,
        "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": "ok",
                           "namespace": "research", "uid": _pod(lists)["metadata"]["uid"]},
        "metadata": {"name": f"ok.{reason.lower()}", "namespace": "research",
                     "creationTimestamp": "2026-11-30T12:51:00Z"},
        "reportingComponent": component, "reportingInstance": "gpu-a100-1",
        "source": {"component": component, "host": "gpu-a100-1"}})


@pytest.mark.parametrize(("status", "field", "value", "what"), [
    ({"phase": "Failed", "reason": "UnexpectedAdmissionError", "message": ALLOCATE},
     "status.reason", f"UnexpectedAdmissionError: {ALLOCATE}",
     "the device plugin on gpu-a100-1 could not hand out the devices the scheduler counted"),
    ({"phase": "Failed", "reason": "OutOfnvidia.com/gpu",
      "message": "Pod was rejected: Node didn't have enough resource: nvidia.com/gpu,"
                 " requested: 2, used: 4, capacity: 4"},
     "status.reason", "OutOfnvidia.com/gpu: Pod was rejected: Node didn't have enough"
                      " resource: nvidia.com/gpu, requested: 2, used: 4, capacity: 4",
     "the kubelet on gpu-a100-1 rejected it: the node did not have what it asks for"),
])
def test_the_kubelet_s_rejection_in_status_reason(lists: Lists, status: dict[str, Any],
                                                   field: str, value: str, what: str) -> None:
    _pod(lists)["status"] = status
    verdict = _answer(lists)
    assert (verdict.cause, verdict.action) == (
        "node-runtime-error", f"research/ok is bound to gpu-a100-1, but {what}. {REPAIR}")
    assert _evidence(verdict) == [(POD, field, value), BOUND]


@pytest.mark.parametrize(("reason", "message", "what"), [
    ("UnexpectedAdmissionError", ALLOCATE, "the kubelet on gpu-a100-1 failed to start the pod"),
    # "Runtime" capitalised as some runtimes write it: the match ignores case
    ("FailedCreatePodSandBox", NO_RUNTIME, "the kubelet on gpu-a100-1 failed to start the pod"),
    ("FailedCreatePodSandBox", NETWORK,
     "the kubelet on gpu-a100-1 cannot create the pod's sandbox (its network plugin or"
     " container runtime fails)"),
])
def test_the_kubelet_s_events_on_a_pending_pod(lists: Lists, reason: str, message: str,
                                               what: str) -> None:
    _pod(lists)["status"] = {"phase": "Pending"}
    _event(lists, reason, message)
    verdict = _answer(lists)
    assert (verdict.cause, verdict.action) == (
        "node-runtime-error", f"research/ok is bound to gpu-a100-1, but {what}. {REPAIR}")
    assert _evidence(verdict) == [(POD, f"event {reason}", message), BOUND]


def test_a_deleted_node_names_the_garbage_collector_and_spec_nodename_once(lists: Lists) -> None:
    lists["nodes"].remove(find(lists["nodes"], "gpu-a100-1"))
    _pod(lists)["status"] = {"phase": "Pending"}
    verdict = _answer(lists)
    assert (verdict.cause, verdict.action) == (
        "node-runtime-error",
        "research/ok is bound to gpu-a100-1, but no Node gpu-a100-1 exists any more (deleted),"
        " so no kubelet will start it. Delete the pod and create it again (it has no"
        " controller: kubectl replace --force -f its manifest); the pod garbage collector"
        " deletes it by itself after a while.")
    assert _evidence(verdict) == [BOUND]


def test_a_pod_with_a_controller_is_left_to_it(lists: Lists) -> None:
    pod = _pod(lists)
    pod["metadata"]["ownerReferences"] = [{
        "apiVersion": "batch/v1", "kind": "Job", "name": "ok", "blockOwnerDeletion": True,
        "controller": True, "uid": "4f3e2d1c-0b9a-4877-8665-544332211000"}]
    pod["status"] = {"phase": "Pending"}
    _event(lists, "UnexpectedAdmissionError", ALLOCATE)
    verdict = _answer(lists)
    assert verdict.action == (
        "research/ok is bound to gpu-a100-1, but the kubelet on gpu-a100-1 failed to start the"
        " pod. Repair the node (container runtime handler, driver, device plugin), then delete"
        " the pod so its controller makes a new one.")


@pytest.mark.parametrize(("said", "unready"), [
    ({"reason": "NodeStatusUnknown", "message": "Kubelet stopped posting node status."},
     "Unknown: NodeStatusUnknown, Kubelet stopped posting node status."),
    ({"message": "Kubelet stopped posting node status."},
     "Unknown: ?, Kubelet stopped posting node status."),
    ({"reason": "NodeStatusUnknown"}, "Unknown: NodeStatusUnknown"),
], ids=["reason-and-message", "no-reason", "no-message"])
def test_a_node_that_is_not_ready(lists: Lists, said: dict[str, str], unready: str) -> None:
    node = find(lists["nodes"], "gpu-a100-1")
    for condition in node["status"]["conditions"]:
        if condition["type"] == "Ready":
            condition.pop("reason", None)
            condition.pop("message", None)
            condition.update(status="Unknown", **said)
    _pod(lists)["status"] = {"phase": "Pending"}
    verdict = _answer(lists)
    assert (verdict.cause, verdict.action) == (
        "node-runtime-error",
        f"research/ok is bound to gpu-a100-1, but gpu-a100-1 is not Ready ({unready}): its"
        f" kubelet is not starting pods. {REPAIR}")
    assert _evidence(verdict) == [
        (POD, "Node/gpu-a100-1 status.conditions[Ready]", unready), BOUND]


def test_a_runtime_handler_the_node_lacks_lists_the_ones_it_has(lists: Lists) -> None:
    # gpu-a100-1 reports the handlers nvidia, "" (the default) and runc; runc-gpu wants nvidia
    node = find(lists["nodes"], "gpu-a100-1")
    node["status"]["runtimeHandlers"] = [h for h in node["status"]["runtimeHandlers"]
                                         if h["name"] != "nvidia"]
    pod = _pod(lists)
    pod["spec"]["runtimeClassName"] = "runc-gpu"
    pod["status"] = {"phase": "Pending"}
    verdict = _answer(lists)
    assert (verdict.cause, verdict.action) == (
        "node-runtime-error",
        "research/ok is bound to gpu-a100-1, but gpu-a100-1's container runtime has no handler"
        f" nvidia (RuntimeClass runc-gpu). {REPAIR}")
    assert _evidence(verdict) == [
        (POD, "Node/gpu-a100-1 status.runtimeHandlers", '"", runc'), BOUND]


def _container(lists: Lists, phase: str, state: dict[str, Any],
               last: dict[str, Any] | None = None, restarts: int = 0) -> None:
    pod = _pod(lists)
    pod["status"]["phase"] = phase
    pod["status"]["containerStatuses"][0].update(
        state=state, lastState=last or {}, restartCount=restarts, ready=False, started=False)


LOGS = "read kubectl logs -n research ok -c train"


@pytest.mark.parametrize(("phase", "state", "last", "restarts", "value", "advice"), [
    ("Failed", {"terminated": {"exitCode": 1, "reason": "Error"}}, None, 0,
     "terminated, exited 1 (Error)", f"but container train failed, exited 1 (Error): {LOGS}."),
    ("Failed", {"terminated": {"exitCode": 2}}, None, 0,
     "terminated, exited 2", f"but container train failed, exited 2: {LOGS}."),
    ("Running", {"waiting": {"reason": "CrashLoopBackOff"}}, None, 0,
     "CrashLoopBackOff", f"but container train keeps crashing: {LOGS} --previous."),
    ("Running", {"waiting": {"reason": "CrashLoopBackOff"}},
     {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}, 6,
     "CrashLoopBackOff, last exit 137 (OOMKilled)",
     "but container train keeps crashing (6 restarts), last exit 137 (OOMKilled): raise its"
     " memory limit, or lower what it uses."),
    ("Pending", {"waiting": {"reason": "ErrImagePull"}}, None, 0,
     "ErrImagePull",
     "but container train cannot pull its image (ErrImagePull): fix the image name or tag, or"
     " the pull secret."),
    # 22 characters of "CreateContainerError: " and the message's first 278: 300 in all
    ("Pending", {"waiting": {"reason": "CreateContainerError", "message": "x" * 400}}, None, 0,
     "CreateContainerError: " + "x" * 278,
     f"but container train cannot be created (CreateContainerError: {'x' * 278}): fix what it"
     " names (a missing ConfigMap, Secret, key or volume)."),
])
def test_a_container_the_kubelet_cannot_run(lists: Lists, phase: str, state: dict[str, Any],
                                            last: dict[str, Any] | None, restarts: int,
                                            value: str, advice: str) -> None:
    _container(lists, phase, state, last, restarts)
    verdict = _answer(lists)
    assert (verdict.cause, verdict.action) == (
        "scheduled", f"research/ok is bound to gpu-a100-1 (phase {phase}): scheduling is done,"
                     f" {advice}")
    assert _evidence(verdict) == [BOUND, (POD, "status.phase", phase),
                                  (POD, "status.containerStatuses[train]", value)]


def test_an_init_container_comes_before_the_app_container(lists: Lists) -> None:
    pod = _pod(lists)
    init = copy.deepcopy(pod["status"]["containerStatuses"][0])
    init.update(name="fetch", state={"waiting": {
        "reason": "CrashLoopBackOff", "message": "back-off 40s restarting failed container=fetch"}},
        lastState={"terminated": {"exitCode": 1, "reason": "Error"}}, restartCount=1,
        ready=False, started=False)
    pod["status"]["initContainerStatuses"] = [init]
    _container(lists, "Pending", {"waiting": {"reason": "PodInitializing"}})
    verdict = _answer(lists)
    assert verdict.action == (
        "research/ok is bound to gpu-a100-1 (phase Pending): scheduling is done, but container"
        " fetch keeps crashing (1 restart), last exit 1 (Error): read kubectl logs -n research"
        " ok -c fetch --previous.")
    assert _evidence(verdict)[-1] == (POD, "status.initContainerStatuses[fetch]",
                                      "CrashLoopBackOff, last exit 1 (Error)")


def test_the_kubelet_s_newest_warning_is_quoted_up_to_300_characters(lists: Lists) -> None:
    _pod(lists)["status"] = {"phase": "Pending"}
    _event(lists, "FailedMount", "m" * 400)
    _event(lists, "Pulled", "Successfully pulled image", kind="Normal", at="2026-11-30T12:53:00Z")
    verdict = _answer(lists)
    said = "FailedMount: " + "m" * 287  # 13 + 287 = 300 characters
    assert verdict.action == (
        "research/ok is bound to gpu-a100-1 (phase Pending): scheduling is done, but the kubelet"
        f" says {said}. Fix what it names.")
    assert _evidence(verdict)[-1] == (POD, "event FailedMount", said)


def test_a_warning_from_another_component_and_an_unset_phase(lists: Lists) -> None:
    _pod(lists)["status"] = {}  # not written yet: Pending
    _event(lists, "FailedAttachVolume", "AttachVolume.Attach failed for volume \"data\"",
           component="attachdetach-controller")
    verdict = _answer(lists)
    assert (verdict.cause, verdict.action) == (
        "scheduled",
        "research/ok is bound to gpu-a100-1 (phase Pending). Nothing is wrong at scheduling"
        " level: look at the pod's logs and container statuses.")
    assert _evidence(verdict) == [BOUND, (POD, "status.phase", "Pending")]


def test_a_cut_that_ends_on_the_separator_drops_it_from_the_sentence(lists: Lists) -> None:
    # said = "FailedMount: " (13) + the message, cut at 300: here the cut falls just after
    # " : ", which the sentence leaves out and the evidence keeps.
    head = ('MountVolume.SetUp failed for volume "nfs-data" : mount failed: exit status 32,'
            " mounting nfs.example.com:/exports/")
    path = "d" * (300 - 13 - len(head) - 3)
    _pod(lists)["status"] = {"phase": "Pending"}
    _event(lists, "FailedMount", f"{head}{path} : access denied by server")
    verdict = _answer(lists)
    assert verdict.action == (
        "research/ok is bound to gpu-a100-1 (phase Pending): scheduling is done, but the kubelet"
        f" says FailedMount: {head}{path}. Fix what it names.")
    assert _evidence(verdict)[-1] == (POD, "event FailedMount", f"FailedMount: {head}{path} : ")


@pytest.mark.parametrize("phase", ["Running", "Succeeded"])
def test_a_started_pod_s_old_warnings_are_history(lists: Lists, phase: str) -> None:
    # its containers started: the sandbox error and the kubelet's warning came before
    _pod(lists)["status"]["phase"] = phase
    _event(lists, "FailedCreatePodSandBox", NO_RUNTIME)
    _event(lists, "FailedMount", 'MountVolume.SetUp failed for volume "data" : configmap'
           ' "train-config" not found', at="2026-11-30T12:53:00Z")
    verdict = _answer(lists)
    assert (verdict.cause, verdict.action) == (
        "scheduled",
        f"research/ok is bound to gpu-a100-1 (phase {phase}). Nothing is wrong at scheduling"
        " level: look at the pod's logs and container statuses.")


def test_a_node_that_reports_no_runtime_handlers_is_not_judged_on_them(lists: Lists) -> None:
    # kubelets before 1.30 write no status.runtimeHandlers: nothing to compare with
    del find(lists["nodes"], "gpu-a100-1")["status"]["runtimeHandlers"]
    pod = _pod(lists)
    pod["spec"]["runtimeClassName"] = "runc-gpu"
    pod["status"] = {"phase": "Pending"}
    verdict = _answer(lists)
    assert (verdict.cause, verdict.action) == (
        "scheduled",
        "research/ok is bound to gpu-a100-1 (phase Pending). Nothing is wrong at scheduling"
        " level: look at the pod's logs and container statuses.")
