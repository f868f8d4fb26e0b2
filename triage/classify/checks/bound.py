"""The pod is bound: the node failed to start it, or all is well at scheduling level."""

from __future__ import annotations

from collections.abc import Sequence

from scoring.rows import ContainerExit, EventRow, PodRow
from scoring.verdict import Evidence
from triage.classify.checks.dra import allocation_evidence
from triage.classify.subject import Finding, Subject
from triage.vocabulary import Cause


def check_node_runtime_error(subject: Subject) -> Finding | None:
    pod = subject.row
    assert pod is not None
    node = subject.facts.node
    if pod.phase in ("Running", "Succeeded"):
        return None  # its containers started: older sandbox errors are history
    if pod.reason == "UnexpectedAdmissionError":
        return _runtime_finding(subject, "status.reason", f"UnexpectedAdmissionError: "
                                f"{pod.message}", "the device plugin on "
                                f"{node} could not hand out the devices the scheduler counted")
    if pod.reason.startswith("OutOf"):
        # the kubelet's own admission: the pod was bound past the scheduler (spec.nodeName
        # set by hand) or the node's allocatable dropped after scheduling
        return _runtime_finding(subject, "status.reason", f"{pod.reason}: "
                                f"{pod.message}", f"the kubelet on {node} "
                                "rejected it: the node did not have what it asks for")
    for event in subject.events:
        message = event.message
        if event.reason == "UnexpectedAdmissionError" or (
                event.reason == "FailedCreatePodSandBox" and "runtime" in message.lower()):
            return _runtime_finding(subject, f"event {event.reason}", message,
                                    f"the kubelet on {node} failed to start the pod")
        if event.reason == "FailedCreatePodSandBox":  # e.g. the network plugin fails
            return _runtime_finding(subject, "event FailedCreatePodSandBox", message,
                                    f"the kubelet on {node} cannot create the pod's sandbox "
                                    "(its network plugin or container runtime fails)")
    node_row = subject.rows.node(node)
    if node_row is None and subject.rows.has_nodes:
        return _runtime_finding(subject, "spec.nodeName", node,
                                f"no Node {node} exists any more (deleted), so no kubelet "
                                "will start it", delete_only=True)
    unready = node_row.not_ready if node_row is not None else None
    if unready is not None:
        return _runtime_finding(subject, f"Node/{node} status.conditions[Ready]", unready,
                                f"{node} is not Ready ({unready}): its kubelet is not "
                                "starting pods")
    runtime_class = subject.facts.runtime_class
    handler = subject.rows.runtime_classes.get(runtime_class) if runtime_class else None
    if handler and node_row is not None:
        handlers = node_row.runtime_handlers
        if handlers and handler not in handlers:
            return _runtime_finding(subject, f"Node/{node} status.runtimeHandlers",
                                    ", ".join(h or '""' for h in handlers),
                                    f"{node}'s container runtime has no handler {handler} "
                                    f"(RuntimeClass {runtime_class})")
    return None


def _runtime_finding(subject: Subject, source: str, value: str, what: str, *,
                     delete_only: bool = False) -> Finding:
    node = subject.facts.node
    owners = subject.row.owners if subject.row is not None else ()
    again = ("so its controller makes a new one" if any(o.controller for o in owners)
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
    node = subject.facts.node
    pod = subject.row
    assert pod is not None
    phase = pod.phase or "Pending"
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


def _container_trouble(pod: PodRow) -> tuple[str, str, str] | None:
    """The first container (init containers first) the kubelet cannot run well, from its
    status: (field, what it says, the advice). None when every container is fine."""
    for container in pod.containers:
        last, ended = container.last_terminated, container.terminated
        who = f"container {container.name}"
        field = f"status.{container.section}[{container.name}]"
        reason = container.waiting_reason
        said = f"{reason}: {container.waiting_message}"[:_MESSAGE_LENGTH].rstrip(": ")
        if reason in _IMAGE:
            return field, said, (f"but {who} cannot pull its image ({reason}): fix the "
                                 "image name or tag, or the pull secret.")
        if reason in _CONFIG:
            return field, said, (f"but {who} cannot be created ({said}): fix what it names "
                                 "(a missing ConfigMap, Secret, key or volume).")
        if reason == "CrashLoopBackOff" or (ended and ended.exit_code not in (0, None)):
            exited = last if reason else ended
            why = _exit(exited, "last exit" if reason else "exited")
            restarts = container.restarts
            restarted = f" ({restarts} restart{'' if restarts == 1 else 's'})" if restarts else ""
            oom = exited is not None and exited.reason == "OOMKilled"
            return field, f"{reason or 'terminated'}{', ' + why if why else ''}", (
                f"but {who} {'keeps crashing' if reason else 'failed'}{restarted}"
                f"{', ' + why if why else ''}: "
                + ("raise its memory limit, or lower what it uses." if oom else
                   f"read kubectl logs -n {pod.namespace} {pod.name} -c {container.name}"
                   f"{' --previous' if reason else ''}."))
    return None


def _kubelet_warning(events: Sequence[EventRow]) -> tuple[str, str, str] | None:
    """The kubelet's newest warning about a pod still Pending on its node (a volume that does
    not mount or attach, ...): what is holding its containers back."""
    for event in events:  # newest first
        if event.type == "Warning" and "kubelet" in event.component:
            said = f"{event.reason}: {event.message}"[:_MESSAGE_LENGTH]
            return (f"event {event.reason}", said,
                    f"but the kubelet says {said.rstrip(': ')}. Fix what it names.")
    return None


def _exit(terminated: ContainerExit | None, word: str) -> str:
    if terminated is None:
        return ""
    reason = terminated.reason
    return f"{word} {terminated.exit_code}{f' ({reason})' if reason else ''}"
