"""The pod is bound: the node failed to start it, or all is well at scheduling level."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scoring.nodes import not_ready
from scoring.objects import K8sObject, object_key
from scoring.verdict import Evidence
from triage.classify.checks.dra import allocation_evidence
from triage.classify.subject import Finding, Subject
from triage.messages import event_component
from triage.snapshot import Snapshot
from triage.vocabulary import Cause


def check_node_runtime_error(subject: Subject) -> Finding | None:
    pod = subject.pod
    assert pod is not None
    status = pod.get("status") or {}
    node = subject.spec.get("nodeName", "")
    if status.get("phase") in ("Running", "Succeeded"):
        return None  # its containers started: older sandbox errors are history
    if status.get("reason") == "UnexpectedAdmissionError":
        return _runtime_finding(subject, "status.reason", f"UnexpectedAdmissionError: "
                                f"{status.get('message', '')}", "the device plugin on "
                                f"{node} could not hand out the devices the scheduler counted")
    if str(status.get("reason", "")).startswith("OutOf"):
        # the kubelet's own admission: the pod was bound past the scheduler (spec.nodeName
        # set by hand) or the node's allocatable dropped after scheduling
        return _runtime_finding(subject, "status.reason", f"{status['reason']}: "
                                f"{status.get('message', '')}", f"the kubelet on {node} "
                                "rejected it: the node did not have what it asks for")
    for event in subject.events:
        message = str(event.get("message", ""))
        if event.get("reason") == "UnexpectedAdmissionError" or (
                event.get("reason") == "FailedCreatePodSandBox" and "runtime" in message.lower()):
            return _runtime_finding(subject, f"event {event.get('reason')}", message,
                                    f"the kubelet on {node} failed to start the pod")
        if event.get("reason") == "FailedCreatePodSandBox":  # e.g. the network plugin fails
            return _runtime_finding(subject, "event FailedCreatePodSandBox", message,
                                    f"the kubelet on {node} cannot create the pod's sandbox "
                                    "(its network plugin or container runtime fails)")
    node_object = subject.snapshot.node(node)
    if node_object is None and subject.snapshot.nodes:
        return _runtime_finding(subject, "spec.nodeName", node,
                                f"no Node {node} exists any more (deleted), so no kubelet "
                                "will start it", delete_only=True)
    unready = not_ready(node_object) if node_object is not None else None
    if unready is not None:
        return _runtime_finding(subject, f"Node/{node} status.conditions[Ready]", unready,
                                f"{node} is not Ready ({unready}): its kubelet is not "
                                "starting pods")
    handler = _runtime_handler(subject.snapshot, subject.spec.get("runtimeClassName"))
    if handler and node_object is not None:
        runtime_handlers = node_object.get("status", {}).get("runtimeHandlers") or []
        handlers = [h.get("name") for h in runtime_handlers]
        if handlers and handler not in handlers:
            return _runtime_finding(subject, f"Node/{node} status.runtimeHandlers",
                                    ", ".join(h or '""' for h in handlers),
                                    f"{node}'s container runtime has no handler {handler} "
                                    f"(RuntimeClass {subject.spec.get('runtimeClassName')})")
    return None


def _runtime_handler(snapshot: Snapshot, runtime_class: object) -> str | None:
    for rc in snapshot.runtimeclasses:
        if object_key(rc)[1] == runtime_class:
            return str(rc.get("handler", ""))
    return None


def _runtime_finding(subject: Subject, source: str, value: str, what: str, *,
                     delete_only: bool = False) -> Finding:
    node = subject.spec.get("nodeName", "")
    owners = (subject.pod or {}).get("metadata", {}).get("ownerReferences") or []
    again = ("so its controller makes a new one" if any(o.get("controller") for o in owners)
             else "and create it again (it has no controller: kubectl replace --force -f "
             "its manifest)")
    fix = (f"Delete the pod {again}; the pod garbage collector deletes it by itself after a "
           "while." if delete_only else
           "Repair the node (container runtime handler, driver, device plugin), then delete "
           f"the pod {again}.")
    evidence = [Evidence(f"Pod {subject.label}", source, value)]
    if source != "spec.nodeName":
        evidence.append(Evidence(f"Pod {subject.label}", "spec.nodeName", node))
    return Finding(Cause.NODE_RUNTIME_ERROR, f"{subject.label} is bound to {node}, but {what}. "
                   f"{fix}", evidence)


def check_scheduled(subject: Subject) -> Finding:
    node = subject.spec.get("nodeName", "")
    pod = subject.pod or {}
    phase = pod.get("status", {}).get("phase", "Pending")
    evidence = [Evidence(f"Pod {subject.label}", "spec.nodeName", node),
                Evidence(f"Pod {subject.label}", "status.phase", phase),
                *allocation_evidence(subject)]
    trouble = _container_trouble(pod) or (
        _kubelet_warning(subject.events) if phase == "Pending" else None)
    if trouble is None:
        return Finding(Cause.SCHEDULED,
                       f"{subject.label} is bound to {node} (phase {phase}). Nothing is wrong "
                       "at scheduling level: look at the pod's logs and container statuses.",
                       evidence)
    field, value, advice = trouble
    return Finding(Cause.SCHEDULED,
                   f"{subject.label} is bound to {node} (phase {phase}): scheduling is done, "
                   f"{advice}", [*evidence, Evidence(f"Pod {subject.label}", field, value)])


# Waiting reasons the kubelet gives a container it cannot start, and what each asks for.
_IMAGE = ("ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull")
_CONFIG = ("CreateContainerConfigError", "CreateContainerError", "RunContainerError")
_MESSAGE_LENGTH = 300


def _container_trouble(pod: K8sObject) -> tuple[str, str, str] | None:
    """The first container (init containers first) the kubelet cannot run well, from its
    status: (field, what it says, the advice). None when every container is fine."""
    namespace, name = object_key(pod)
    status = pod.get("status") or {}
    for section in ("initContainerStatuses", "containerStatuses"):
        for container in status.get(section) or []:
            waiting = (container.get("state") or {}).get("waiting") or {}
            last = (container.get("lastState") or {}).get("terminated") or {}
            ended = (container.get("state") or {}).get("terminated") or {}
            who = f"container {container.get('name')}"
            field = f"status.{section}[{container.get('name')}]"
            reason = str(waiting.get("reason") or "")
            said = f"{reason}: {waiting.get('message') or ''}"[:_MESSAGE_LENGTH].rstrip(": ")
            if reason in _IMAGE:
                return field, said, (f"but {who} cannot pull its image ({reason}): fix the "
                                     "image name or tag, or the pull secret.")
            if reason in _CONFIG:
                return field, said, (f"but {who} cannot be created ({said}): fix what it names "
                                     "(a missing ConfigMap, Secret, key or volume).")
            if reason == "CrashLoopBackOff" or (ended and ended.get("exitCode") not in (0, None)):
                exited = last if reason else ended
                why = _exit(exited, "last exit" if reason else "exited")
                restarts = container.get("restartCount") or 0
                oom = exited.get("reason") == "OOMKilled"
                return field, f"{reason or 'terminated'}{', ' + why if why else ''}", (
                    f"but {who} {'keeps crashing' if reason else 'failed'}"
                    f"{f' ({restarts} restarts)' if restarts else ''}"
                    f"{', ' + why if why else ''}: "
                    + ("raise its memory limit, or lower what it uses." if oom else
                       f"read kubectl logs -n {namespace} {name} -c {container.get('name')}"
                       f"{' --previous' if reason else ''}."))
    return None


def _kubelet_warning(events: list[K8sObject]) -> tuple[str, str, str] | None:
    """The kubelet's newest warning about a pod still Pending on its node (a volume that does
    not mount or attach, ...): what is holding its containers back."""
    for event in events:  # newest first
        if event.get("type") == "Warning" and "kubelet" in event_component(event):
            said = f"{event.get('reason')}: {event.get('message') or ''}"[:_MESSAGE_LENGTH]
            return (f"event {event.get('reason')}", said,
                    f"but the kubelet says {said.rstrip(': ')}. Fix what it names.")
    return None


def _exit(terminated: Mapping[str, Any], word: str) -> str:
    if not terminated:
        return ""
    code, reason = terminated.get("exitCode"), terminated.get("reason")
    return f"{word} {code}{f' ({reason})' if reason else ''}"
