"""Triage: an ordered chain of small named checks over a Snapshot (pure: no I/O, no clock).

Modelled on kube-scheduler's filter chain. The order is data: ``PIPELINE`` follows
``triage.vocabulary.CAUSES``. Each check has a precondition (pod absent / present / unbound /
bound). Pod checks return a Finding or None. Node filters narrow the candidate nodes; the
cause is the filter that leaves no node, and every node keeps the outcome of the filter where
it dropped out.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from enum import Enum
from typing import Any

from scoring.events import scheduler_scores
from scoring.hami import (
    HamiNodeFit,
    HamiRequest,
    fit_node,
    hami_request,
    parse_registration,
    pick_order,
)
from scoring.summary import proposal_summary
from scoring.whole import gfd_devices, whole_gpu_score
from triage import admission
from triage.config import DEFAULT_CONFIG, TriageConfig
from triage.messages import latest_scheduling_failure, parse_failed_scheduling, scheduler_spoke
from triage.nodes import (
    labels,
    node_name,
    selector_mismatches,
    status_amount,
    taint_text,
    untolerated_taints,
)
from triage.objects import K8sObject, is_terminated, object_key
from triage.pods import (
    effective_request,
    gpu_related_resources,
    gpu_requests,
    pod_name,
    resource_claims,
)
from triage.quantity import QuantityError, parse_quantity
from triage.refs import PodRef
from triage.snapshot import WORKLOAD_KINDS, Snapshot, event_time
from triage.verdict import Device, Evidence, NodeReport, Verdict
from triage.vocabulary import CAUSE_ORDER, CAUSES, FIT, NODE_UNREGISTERED, Cause


class When(Enum):
    ABSENT = "pod object absent"
    PRESENT = "pod exists"
    UNBOUND = "spec.nodeName empty"
    BOUND = "spec.nodeName set"


@dataclass
class Finding:
    cause: Cause
    action: str
    evidence: list[Evidence] = field(default_factory=list)


@dataclass
class Subject:
    """What one run of the pipeline looks at: a pod, or a workload whose pod does not exist."""

    snapshot: Snapshot
    config: TriageConfig
    ref: PodRef
    pod: K8sObject | None
    workload: K8sObject | None = None
    spec: dict[str, Any] = field(default_factory=dict)
    events: list[K8sObject] = field(default_factory=list)
    gpu: dict[str, int] = field(default_factory=dict)
    hami: HamiRequest | None = None
    # Node outcomes, filled as node filters run: name -> report
    reports: dict[str, NodeReport] = field(default_factory=dict)
    hami_fits: dict[str, HamiNodeFit | None] = field(default_factory=dict)  # computed once

    @property
    def label(self) -> str:
        if self.pod is not None:
            return pod_name(self.pod)
        if self.workload is not None:
            return admission.workload_label(self.workload)
        return str(self.ref)

    @property
    def state(self) -> set[When]:
        if self.pod is None:
            return {When.ABSENT}
        if self.spec.get("nodeName"):
            return {When.PRESENT, When.BOUND}
        return {When.PRESENT, When.UNBOUND}


PodCheckFn = Callable[[Subject], Finding | None]
NodeFilterFn = Callable[[Subject, K8sObject], str | None]
ExplainFn = Callable[[Subject, list[tuple[K8sObject, str]]], Finding]
LeftoverFn = Callable[[Subject, list[K8sObject]], Finding | None]


@dataclass(frozen=True)
class PodCheck:
    cause: Cause
    when: When
    check: PodCheckFn


@dataclass(frozen=True)
class NodeFilter:
    """Drops nodes; holds when no node is left. ``leftover`` may still hold with nodes left."""

    cause: Cause
    when: When
    drop: NodeFilterFn
    explain: ExplainFn
    leftover: LeftoverFn | None = None


Check = PodCheck | NodeFilter


# -- admission: the pod object is absent ------------------------------------------------------

def check_quota(subject: Subject) -> Finding | None:
    if subject.workload is None:
        return None
    workload = subject.workload
    label = admission.workload_label(workload)
    rejected = admission.quota_rejection(admission.rejections(subject.snapshot, workload))
    # From state only while the controller is trying to create pods (not suspended, not done).
    shortfalls = admission.quota_shortfalls(subject.snapshot, subject.ref.namespace,
                                            subject.spec) if admission.wanted_pods(workload) else []
    if rejected is None and not shortfalls:
        return None
    evidence = []
    action_parts = []
    for short in shortfalls:
        holders_text = ", ".join(admission.quota_holders(subject.snapshot, subject.ref.namespace,
                                                         short.key)[:5]) or "no running pod"
        evidence.append(Evidence(f"ResourceQuota {short.quota}",
                                 f"status.hard/used[{short.key}]",
                                 f"hard {_num(short.hard)}, used {_num(short.used)}, "
                                 f"one pod asks {_num(short.asked)}"))
        action_parts.append(f"quota {short.quota} is full: {short.key} "
                            f"{_num(short.used)}/{_num(short.hard)} used ({holders_text}). "
                            f"The {workload.get('kind')} asks {_num(short.asked)} per pod")
    if rejected is not None:
        rejection, parts = rejected
        evidence.append(Evidence(rejection.source, rejection.field, rejection.message))
        if not action_parts:
            quota = parts.get("quota", "?")
            detail = parts.get("detail") or (f"requested {parts.get('requested')}, used "
                                             f"{parts.get('used')}, limited {parts.get('limited')}")
            action_parts.append(f"quota {subject.ref.namespace}/{quota} rejects the pods: {detail}")
    action = ("; ".join(action_parts)
              + f"; its pods are rejected at creation (FailedCreate on {label}). "
              "Raise the quota or free usage.")
    return Finding(Cause.QUOTA_EXCEEDED, action, evidence)


def check_runtimeclass(subject: Subject) -> Finding | None:
    if subject.workload is None:
        return None
    label = admission.workload_label(subject.workload)
    rejected = admission.runtimeclass_rejection(
        admission.rejections(subject.snapshot, subject.workload))
    wanted = subject.spec.get("runtimeClassName")
    existing = admission.runtimeclass_names(subject.snapshot)
    missing_now = (bool(wanted) and wanted not in existing
                   and admission.wanted_pods(subject.workload) > 0)
    if rejected is None and not missing_now:
        return None
    name = rejected[1] if rejected is not None and not missing_now else str(wanted)
    evidence = [Evidence(label, "spec.template.spec.runtimeClassName", str(wanted or "(unset)")),
                Evidence("RuntimeClasses", "metadata.name", ", ".join(existing) or "none")]
    if rejected is not None:
        evidence.append(Evidence(rejected[0].source, rejected[0].field, rejected[0].message))
    others = f" (existing: {', '.join(existing)})" if existing else " (the cluster has none)"
    action = (f"{label} uses runtimeClassName {name}, but no RuntimeClass {name} exists{others}. "
              f"Create RuntimeClass {name} or fix the name in the template.")
    return Finding(Cause.RUNTIMECLASS_MISSING, action, evidence)


def check_pod_not_found(subject: Subject) -> Finding:
    if subject.workload is not None:
        label = admission.workload_label(subject.workload)
        spec = subject.workload.get("spec") or {}
        if spec.get("suspend"):
            why, field, value = (f"{label} is suspended, so it has no pods: resume it, or wait "
                                 "for the queue controller that suspended it (e.g. Kueue) to "
                                 "admit it."), "spec.suspend", "true"
        elif admission.wanted_pods(subject.workload) == 0:
            why, field, value = (f"{label} wants no pods now (finished, or scaled to 0): "
                                 "check its status."), "spec / status", "0 pods wanted"
        else:
            why, field, value = (f"{label} exists but has no pods and no admission error on "
                                 "record. Check its status and events."), "pods", "none"
        return Finding(Cause.POD_NOT_FOUND, why, [Evidence(label, field, value)])
    return Finding(Cause.POD_NOT_FOUND,
                   f"no pod, workload or event named {subject.ref} exists. Check the name and "
                   f"namespace (kubectl -n {subject.ref.namespace} get pods,jobs,deployments); "
                   "events expire after an hour, so an old rejection leaves no trace.",
                   [Evidence(f"namespace {subject.ref.namespace}", "pods, workloads, events",
                             f"nothing named {subject.ref.name}")])


# -- the pod exists ---------------------------------------------------------------------------

def check_no_gpu_request(subject: Subject) -> Finding | None:
    if gpu_related_resources(subject.spec, subject.config) or resource_claims(subject.spec):
        return None
    where = f" It is bound to {subject.spec['nodeName']}." if subject.spec.get("nodeName") else ""
    return Finding(Cause.NO_GPU_REQUEST,
                   f"no container of {subject.label} (init containers included) has a GPU in "
                   f"resources.limits, so it gets no GPU.{where} Add `limits: nvidia.com/gpu: N` "
                   "to the container that needs it.",
                   [Evidence(f"Pod {subject.label}", "spec.containers[*].resources.limits",
                             "no GPU resource (" + ", ".join(subject.config.gpu_resources) + ")")])


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
    for event in subject.events:
        message = str(event.get("message", ""))
        if event.get("reason") == "UnexpectedAdmissionError" or (
                event.get("reason") == "FailedCreatePodSandBox" and "runtime" in message.lower()):
            return _runtime_finding(subject, f"event {event.get('reason')}", message,
                                    f"the kubelet on {node} failed to start the pod")
    handler = _runtime_handler(subject.snapshot, subject.spec.get("runtimeClassName"))
    node_object = subject.snapshot.node(node)
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


def _runtime_finding(subject: Subject, source: str, value: str, what: str) -> Finding:
    node = subject.spec.get("nodeName", "")
    return Finding(Cause.NODE_RUNTIME_ERROR,
                   f"{subject.label} is bound to {node}, but {what}. Repair the node (container "
                   f"runtime handler, driver, device plugin), then delete the pod so it is "
                   "recreated.",
                   [Evidence(f"Pod {subject.label}", source, value),
                    Evidence(f"Pod {subject.label}", "spec.nodeName", node)])


def check_scheduled(subject: Subject) -> Finding:
    node = subject.spec.get("nodeName", "")
    phase = (subject.pod or {}).get("status", {}).get("phase", "Pending")
    return Finding(Cause.SCHEDULED,
                   f"{subject.label} is bound to {node} (phase {phase}). Nothing is wrong at "
                   "scheduling level: look at the pod's logs and container statuses.",
                   [Evidence(f"Pod {subject.label}", "spec.nodeName", node),
                    Evidence(f"Pod {subject.label}", "status.phase", phase)])


# -- the funnel: node filters for an unbound pod ----------------------------------------------

def drop_selector(subject: Subject, node: K8sObject) -> str | None:
    failed = selector_mismatches(subject.spec, node)
    return "unmatched " + ", ".join(failed) if failed else None


def explain_selector(subject: Subject, dropped: list[tuple[K8sObject, str]]) -> Finding:
    wanted = _selector_text(subject.spec)
    keys = {k for k in (subject.spec.get("nodeSelector") or {})}
    seen = {f"{k}={v}" for node, _ in dropped for k, v in labels(node).items() if k in keys}
    values = f" Values present: {', '.join(sorted(seen))}." if seen else (
        f" No node has the label{'s' if len(keys) > 1 else ''} at all." if keys else "")
    return Finding(Cause.SELECTOR_MISMATCH,
                   f"{wanted} matches none of the {len(dropped)} nodes.{values} Fix the selector, "
                   "or label a node that should run it.",
                   [Evidence(f"Pod {subject.label}", "spec.nodeSelector / affinity", wanted),
                    *[Evidence(f"Node/{node_name(n)}", "metadata.labels", why)
                      for n, why in dropped[:5]]])


def _selector_text(spec: Mapping[str, Any]) -> str:
    parts = [f"{k}={v}" for k, v in (spec.get("nodeSelector") or {}).items()]
    terms = ((((spec.get("affinity") or {}).get("nodeAffinity") or {})
              .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
             .get("nodeSelectorTerms") or [])
    if terms:
        parts.append("required node affinity")
    return "nodeSelector " + " + ".join(parts) if parts else "the node selection"


def drop_taint(subject: Subject, node: K8sObject) -> str | None:
    taints = untolerated_taints(subject.spec, node)
    return ", ".join(taint_text(t) for t in taints) if taints else None


def explain_taint(subject: Subject, dropped: list[tuple[K8sObject, str]]) -> Finding:
    def state(node: K8sObject, why: str) -> str:
        return f"{node_name(node)} is {why if why.startswith('cordoned') else 'tainted ' + why}"

    cordoned = [node_name(n) for n, why in dropped if why.startswith("cordoned")]
    taints = sorted({t for _, why in dropped for t in why.split(", ")
                     if not t.startswith("cordoned")})
    advice = []
    if taints:
        owners = sorted({t.split("=", 1)[1].split(":", 1)[0] for t in taints if "=" in t})
        ask = f" (ask {', '.join(owners)})" if owners else ""
        advice.append(f"add a toleration for {'; '.join(taints)} to the pod{ask}")
    if cordoned:
        advice.append(f"uncordon {', '.join(cordoned)} once it is healthy "
                      f"(kubectl uncordon {' '.join(cordoned)})")
    only = "The only matching node" if len(dropped) == 1 else "Every matching node"
    return Finding(Cause.TAINT_UNTOLERATED,
                   f"{only} blocks the pod: {'; '.join(state(n, w) for n, w in dropped[:5])}. "
                   f"{_capital(' or '.join(advice))}. Don't remove taints: they protect the "
                   "node and its owners.",
                   [Evidence(f"Node/{node_name(n)}", "spec.unschedulable" if why.startswith(
                       "cordoned") else "spec.taints", why) for n, why in dropped[:5]]
                   + [Evidence(f"Pod {subject.label}", "spec.tolerations",
                               _tolerations_text(subject.spec))])


def _tolerations_text(spec: Mapping[str, Any]) -> str:
    custom = [t for t in spec.get("tolerations") or []
              if not str(t.get("key", "")).startswith("node.kubernetes.io/not-ready")
              and not str(t.get("key", "")).startswith("node.kubernetes.io/unreachable")]
    if not custom:
        return "none beyond the defaults"
    return ", ".join(f"{t.get('key', '*')}{'=' + t['value'] if t.get('value') else ''}"
                     f":{t.get('effect', '*')}" for t in custom)


def drop_no_gpu_node(subject: Subject, node: K8sObject) -> str | None:
    # Capacity 0 is what the kubelet leaves when a device plugin unregisters.
    missing = [r for r in subject.gpu if not status_amount(node, "capacity", r)]
    return f"no {', '.join(missing)} in status.capacity" if missing else None


def explain_no_gpu_node(subject: Subject, dropped: list[tuple[K8sObject, str]]) -> Finding:
    resource = _primary(subject)
    parts = []
    for node, _ in dropped:
        product = labels(node).get("nvidia.com/gpu.product")
        hint = f" although its GFD labels say {product}" if product else ""
        parts.append(f"{node_name(node)}{hint}")
    return Finding(Cause.NO_GPU_NODE,
                   f"no matching node reports {resource} in status.capacity: "
                   f"{'; '.join(parts)}. The device plugin is not registered there: restore the "
                   f"device plugin on {', '.join(node_name(n) for n, _ in dropped)}.",
                   [Evidence(f"Node/{node_name(n)}", f"status.capacity[{resource}]",
                             str(status_amount(n, "capacity", resource) or "absent"))
                    for n, _ in dropped[:5]])


def drop_allocatable_zero(subject: Subject, node: K8sObject) -> str | None:
    zero = [r for r in subject.gpu if status_amount(node, "allocatable", r) in (None, 0)]
    if not zero:
        return None
    return ", ".join(f"{r} capacity {status_amount(node, 'capacity', r)}, allocatable 0"
                     for r in zero)


def explain_allocatable_zero(subject: Subject, dropped: list[tuple[K8sObject, str]]) -> Finding:
    return Finding(Cause.ALLOCATABLE_ZERO,
                   f"{'; '.join(f'{node_name(n)}: {why}' for n, why in dropped)}. The GPUs exist "
                   "but the node offers none: repair the node (driver, device plugin, validator); "
                   "adding nodes won't help.",
                   [Evidence(f"Node/{node_name(n)}", f"status.allocatable[{_primary(subject)}]",
                             why) for n, why in dropped[:5]])


def drop_too_large(subject: Subject, node: K8sObject) -> str | None:
    short = [(r, status_amount(node, "allocatable", r) or 0, n) for r, n in subject.gpu.items()
             if (status_amount(node, "allocatable", r) or 0) < n]
    return ", ".join(f"{r} allocatable {a} < request {n}" for r, a, n in short) or None


def explain_too_large(subject: Subject, dropped: list[tuple[K8sObject, str]]) -> Finding:
    resource, request = _primary(subject), subject.gpu[_primary(subject)]
    largest = max(dropped, key=lambda d: status_amount(d[0], "allocatable", resource) or 0)
    big_elsewhere = [r for r in subject.reports.values()
                     if r.outcome in (Cause.SELECTOR_MISMATCH, Cause.TAINT_UNTOLERATED)
                     and (status_amount(subject.snapshot.node(r.name) or {}, "allocatable",
                                        resource) or 0) >= request]
    blocked = ""
    if big_elsewhere:
        blocked = " " + "; ".join(f"{r.name} has enough but is excluded ({r.outcome}: {r.detail})"
                                  for r in big_elsewhere[:3]) + "."
    return Finding(Cause.TOO_LARGE,
                   f"no node you can use has {request} {resource}: the largest is "
                   f"{node_name(largest[0])} with "
                   f"{status_amount(largest[0], 'allocatable', resource) or 0}.{blocked} Split "
                   "the job or get a bigger node (or access to one); waiting never helps.",
                   [Evidence(f"Pod {subject.label}", f"effective request {resource}",
                             str(request))]
                   + [Evidence(f"Node/{node_name(n)}", f"status.allocatable[{resource}]", why)
                      for n, why in dropped[:5]])


def _free(subject: Subject, node: K8sObject, resource: str) -> int:
    allocatable = status_amount(node, "allocatable", resource) or 0
    used = int(subject.snapshot.requested_on(node_name(node)).get(resource, Decimal(0)))
    return allocatable - used


def drop_exhausted(subject: Subject, node: K8sObject) -> str | None:
    short = []
    for resource, request in subject.gpu.items():
        free = _free(subject, node, resource)
        if free < request:
            allocatable = status_amount(node, "allocatable", resource) or 0
            short.append(f"{allocatable - free}/{allocatable} {resource} held")
    return "; ".join(short) or None


def _held_by(subject: Subject, node: K8sObject, resource: str) -> str:
    held = subject.snapshot.holders_on(node_name(node), resource)
    return ", ".join(pod_name(p) for p, _ in held[:4]) + (
        f" +{len(held) - 4} more" if len(held) > 4 else "")


def explain_exhausted(subject: Subject, dropped: list[tuple[K8sObject, str]]) -> Finding:
    resource = _primary(subject)
    finished = []
    for node, _ in dropped[:3]:  # the nodes the action names
        finished += [pod_name(p) for p in subject.snapshot.pods_on(node_name(node))
                     if is_terminated(p) and effective_request(p.get("spec", {}), resource) > 0]
    done = (f" ({' and '.join(finished[:4])} {'are' if len(finished) > 1 else 'is'} finished and "
            "hold nothing)") if finished else ""
    alternative = next((r for r in subject.reports.values()
                        if r.outcome == Cause.SELECTOR_MISMATCH
                        and _fits_gpu_wise(subject, subject.snapshot.node(r.name))), None)
    elsewhere = ""
    if alternative is not None:
        node = subject.snapshot.node(alternative.name) or {}
        elsewhere = (f", or relax {_selector_text(subject.spec)}: {alternative.name} has "
                     f"{_free(subject, node, resource)} free")
    held = "; ".join(f"{node_name(n)} has {why} by {_held_by(subject, n, resource)}"
                     for n, why in dropped[:3])
    return Finding(Cause.EXHAUSTED,
                   f"{held}{done}. Wait for them to finish{elsewhere}; or add capacity.",
                   [Evidence(f"Node/{node_name(n)}", f"status.allocatable[{resource}] − requests",
                             f"{why} by {_held_by(subject, n, resource)}")
                    for n, why in dropped[:5]])


def _fits_gpu_wise(subject: Subject, node: K8sObject | None) -> bool:
    """Would the node pass the funnel's filters from taints to exhausted (the selector aside)?"""
    if node is None:
        return False
    return all(step.drop(subject, node) is None for step in _GPU_WISE_FILTERS)


def drop_device_unfit(subject: Subject, node: K8sObject) -> str | None:
    if subject.hami is None:
        return None
    fit = _hami_fit(subject, node)
    if fit is None:
        return NODE_UNREGISTERED
    return None if fit.fits else fit.reason


def _hami_fit(subject: Subject, node: K8sObject) -> HamiNodeFit | None:
    name = node_name(node)
    if name not in subject.hami_fits:
        registration = parse_registration(node)
        subject.hami_fits[name] = None if (
            registration is None or subject.hami is None or subject.pod is None) else fit_node(
            node, subject.snapshot.pods_on(name), subject.pod, subject.hami)
    return subject.hami_fits[name]


def explain_device_unfit(subject: Subject, dropped: list[tuple[K8sObject, str]]) -> Finding:
    request = subject.hami
    asked = _hami_text(request)
    per_node = "; ".join(f"{node_name(n)}: {why}" for n, why in dropped[:4])
    unregistered = [node_name(n) for n, why in dropped if why == NODE_UNREGISTERED]
    hint = (f" {', '.join(unregistered)} {'is' if len(unregistered) == 1 else 'are'} not "
            "registered with HAMi (check hami-device-plugin there)." if unregistered else "")
    return Finding(Cause.DEVICE_UNFIT,
                   f"whole-GPU slots exist, but no device fits {asked}: {per_node}.{hint} "
                   "Lower the memory / cores request, change the GPU type filter, or wait for "
                   "holders to finish (show devices lists them).",
                   [Evidence(f"Node/{node_name(n)}", "hami.io/node-nvidia-register", why)
                    for n, why in dropped[:5]])


def _hami_text(request: HamiRequest | None) -> str:
    if request is None:
        return "the request"
    memory = (f"{request.mem} MiB" if request.mem is not None else
              f"{request.mem_percentage}% memory" if request.mem_percentage is not None else
              "a whole card's memory")
    return f"{request.count} card(s) × {memory} / {request.cores} cores"


_NON_GPU = ("cpu", "memory", "ephemeral-storage")


def drop_other_resources(subject: Subject, node: K8sObject) -> str | None:
    """NodeResourcesFit for cpu, memory, ephemeral storage and the pod count."""
    requested = subject.snapshot.requested_on(node_name(node))
    allocatable = node.get("status", {}).get("allocatable") or {}
    short = []
    for resource in _NON_GPU:
        asked = effective_request(subject.spec, resource)
        if not asked or resource not in allocatable:
            continue
        try:
            free = parse_quantity(allocatable[resource]) - requested.get(resource, Decimal(0))
        except QuantityError:
            continue
        if free < asked:
            short.append(f"Insufficient {resource}")
    pods_allowed = allocatable.get("pods")
    if pods_allowed is not None and requested.get("pods", Decimal(0)) + 1 > parse_quantity(
            pods_allowed):
        short.append("Too many pods")
    return ", ".join(short) or None


def explain_other_resources(subject: Subject, dropped: list[tuple[K8sObject, str]]) -> Finding:
    per_node = "; ".join(f"{node_name(n)}: {why}" for n, why in dropped[:4])
    return Finding(Cause.OTHER_CONSTRAINT,
                   f"GPU-wise a node fits, but {per_node}. Lower the pod's cpu / memory requests "
                   "or free those nodes.",
                   [Evidence(f"Node/{node_name(n)}", "status.allocatable − requests", why)
                    for n, why in dropped[:5]] + _scheduler_evidence(subject))


def leftover_other_constraint(subject: Subject, fit: list[K8sObject]) -> Finding | None:
    """Nodes fit GPU-wise, yet the pod waits: a DRA claim, or the scheduler names something."""
    claims = resource_claims(subject.spec)
    fitting = ", ".join(node_name(n) for n in fit[:3])
    if claims and not subject.gpu:
        return Finding(Cause.OTHER_CONSTRAINT,
                       f"{subject.label} asks for devices through Dynamic Resource Allocation "
                       f"(claim {', '.join(claims)}); gpuwhy does not triage DRA allocation yet. "
                       "Check the claim's status and the DRA driver (kubectl describe "
                       "resourceclaim).",
                       [Evidence(f"Pod {subject.label}", "spec.resourceClaims", ", ".join(claims)),
                        *_scheduler_evidence(subject)])
    message = latest_scheduling_failure(subject.pod or {}, subject.events)
    if message is None and not scheduler_spoke(subject.pod or {}, subject.events):
        return None
    if message is None:
        action = (f"GPU-wise {fitting} fit and the scheduler has seen the pod, but it has not "
                  "bound it yet. Look at the pod's events for what it waits on.")
    elif (others := _other_reasons(message, subject.config)) is None:
        scheduler = subject.spec.get("schedulerName") or "default-scheduler"
        action = (f"GPU-wise {fitting} fit now; the scheduler's last word is only about GPUs, "
                  "taints or selectors, so the cluster has changed since and it will retry by "
                  f"itself. If the pod stays Pending, check that {scheduler} is running.")
    else:
        action = (f"GPU-wise {fitting} fit, but the scheduler rejects the pod for something "
                  f"else: {others}. Fix what it names (cpu, memory, pod affinity, volumes, "
                  "topology spread).")
    return Finding(Cause.OTHER_CONSTRAINT, action, _scheduler_evidence(subject))


_FUNNEL_REASONS = ("taint", "unschedulable", "selector", "extender", "preemption")


def _other_reasons(message: str, config: TriageConfig) -> str | None:
    """The scheduler's reasons that are not about GPUs, taints or selectors (which the funnel
    has checked itself); the whole message when it cannot be parsed; None when none is left."""
    parsed = parse_failed_scheduling(message)
    if not parsed.reasons:
        return message
    others = [r for r in parsed.reasons if r.kind not in _FUNNEL_REASONS
              and not (r.kind.startswith("insufficient:")
                       and config.is_gpu_related(r.kind.partition(":")[2]))]
    if not others:
        return None
    return ", ".join(f"{r.count} {r.text}" if r.count is not None else r.text for r in others)


def check_scheduler_unavailable(subject: Subject) -> Finding | None:
    scheduler = subject.spec.get("schedulerName") or "default-scheduler"
    fitting = [r.name for r in subject.reports.values() if r.outcome == FIT]
    return Finding(Cause.SCHEDULER_UNAVAILABLE,
                   f"GPU-wise {', '.join(fitting[:3]) or 'a node'} fit, but no scheduler has said "
                   f"anything about {subject.label}: spec.schedulerName {scheduler} is not "
                   "running or does not see the pod. Start or fix that scheduler, or correct "
                   "schedulerName.",
                   [Evidence(f"Pod {subject.label}", "spec.schedulerName", scheduler),
                    Evidence(f"Pod {subject.label}", "events / PodScheduled condition",
                             "none from any scheduler")])


def _scheduler_evidence(subject: Subject) -> list[Evidence]:
    message = latest_scheduling_failure(subject.pod or {}, subject.events)
    if message is None:
        return []
    return [Evidence(f"Pod {subject.label}", "scheduler message", message)]


def _primary(subject: Subject) -> str:
    return next(iter(subject.gpu), "nvidia.com/gpu")


def _num(value: Decimal) -> str:
    return str(value.normalize()) if value != value.to_integral() else str(int(value))


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


# -- the order, as data ---------------------------------------------------------------------

_CHECKS: dict[Cause, Check] = {
    Cause.QUOTA_EXCEEDED: PodCheck(Cause.QUOTA_EXCEEDED, When.ABSENT, check_quota),
    Cause.RUNTIMECLASS_MISSING: PodCheck(Cause.RUNTIMECLASS_MISSING, When.ABSENT,
                                         check_runtimeclass),
    Cause.NO_GPU_REQUEST: PodCheck(Cause.NO_GPU_REQUEST, When.PRESENT, check_no_gpu_request),
    Cause.SELECTOR_MISMATCH: NodeFilter(Cause.SELECTOR_MISMATCH, When.UNBOUND, drop_selector,
                                        explain_selector),
    Cause.TAINT_UNTOLERATED: NodeFilter(Cause.TAINT_UNTOLERATED, When.UNBOUND, drop_taint,
                                        explain_taint),
    Cause.NO_GPU_NODE: NodeFilter(Cause.NO_GPU_NODE, When.UNBOUND, drop_no_gpu_node,
                                  explain_no_gpu_node),
    Cause.ALLOCATABLE_ZERO: NodeFilter(Cause.ALLOCATABLE_ZERO, When.UNBOUND, drop_allocatable_zero,
                                       explain_allocatable_zero),
    Cause.TOO_LARGE: NodeFilter(Cause.TOO_LARGE, When.UNBOUND, drop_too_large, explain_too_large),
    Cause.EXHAUSTED: NodeFilter(Cause.EXHAUSTED, When.UNBOUND, drop_exhausted, explain_exhausted),
    Cause.DEVICE_UNFIT: NodeFilter(Cause.DEVICE_UNFIT, When.UNBOUND, drop_device_unfit,
                                   explain_device_unfit),
    Cause.OTHER_CONSTRAINT: NodeFilter(Cause.OTHER_CONSTRAINT, When.UNBOUND, drop_other_resources,
                                       explain_other_resources, leftover_other_constraint),
    Cause.SCHEDULER_UNAVAILABLE: PodCheck(Cause.SCHEDULER_UNAVAILABLE, When.UNBOUND,
                                          check_scheduler_unavailable),
    Cause.NODE_RUNTIME_ERROR: PodCheck(Cause.NODE_RUNTIME_ERROR, When.BOUND,
                                       check_node_runtime_error),
    Cause.SCHEDULED: PodCheck(Cause.SCHEDULED, When.BOUND, check_scheduled),
    Cause.POD_NOT_FOUND: PodCheck(Cause.POD_NOT_FOUND, When.ABSENT, check_pod_not_found),
}

PIPELINE: tuple[Check, ...] = tuple(_CHECKS[info.cause] for info in CAUSES)
_GPU_WISE_FILTERS = tuple(
    check for check in PIPELINE if isinstance(check, NodeFilter)
    and CAUSE_ORDER[Cause.TAINT_UNTOLERATED] <= CAUSE_ORDER[check.cause]
    <= CAUSE_ORDER[Cause.EXHAUSTED])


def run_pipeline(subject: Subject) -> Finding:
    state = subject.state
    # By name, so the answer does not depend on the order the nodes were listed in.
    candidates = sorted(subject.snapshot.nodes, key=node_name)
    for check in PIPELINE:
        if check.when not in state:
            continue
        if isinstance(check, PodCheck):
            finding = check.check(subject)
            if finding is not None:
                return finding
            continue
        kept, dropped = [], []
        for node in candidates:
            why = check.drop(subject, node)
            if why is None:
                kept.append(node)
            else:
                dropped.append((node, why))
                subject.reports[node_name(node)] = NodeReport(node_name(node), _outcome(check, why),
                                                              why)
        candidates = kept
        if not candidates:
            return check.explain(subject, dropped)
        _mark_fit(subject, candidates)  # so far; a later filter may still drop them
        if check.leftover is not None:
            finding = check.leftover(subject, candidates)
            if finding is not None:
                return finding
    raise AssertionError("every precondition ends in a fallback check")


def _outcome(check: NodeFilter, why: str) -> str:
    # A HAMi device code summary ("2/4 CardInsufficientMemory") is the node's outcome itself.
    return why if check.cause == Cause.DEVICE_UNFIT else check.cause.value


def _mark_fit(subject: Subject, fit: list[K8sObject]) -> None:
    for node in fit:
        subject.reports[node_name(node)] = NodeReport(node_name(node), FIT, "fits")


# -- resolving the ref, assembling the Verdict ----------------------------------------------

MAX_DEVICE_NODES = 50  # more than one Slack reply can show
_STATE_RANK = {"not created": 0, "not scheduled": 1, "node error": 2, "scheduled": 3}


def triage(snapshot: Snapshot, ref: PodRef, config: TriageConfig = DEFAULT_CONFIG) -> Verdict:
    """The answer for one ref: a pod, a workload, or a pasted generated pod name."""
    pod = snapshot.pod(ref.namespace, ref.name)
    if pod is not None:
        return _verdict(_pod_subject(snapshot, config, ref, pod), "Pod")
    workload = _find_workload(snapshot, ref)
    if workload is None:
        return _verdict(Subject(snapshot, config, ref, None), "Pod")
    kind = str(workload.get("kind"))
    pods = admission.workload_pods(snapshot, workload)
    live = [p for p in pods if not is_terminated(p)] or pods
    subjects = [_pod_subject(snapshot, config, ref, p) for p in live]
    admission_subject = _absent_subject(snapshot, config, ref, workload)
    results = [(s, run_pipeline(s)) for s in subjects]
    if not live or _admission_pending(snapshot, workload, pods):
        absent = run_pipeline(admission_subject)
        if absent.cause != Cause.POD_NOT_FOUND or not results:
            results.insert(0, (admission_subject, absent))
    worst_subject, worst = min(results, key=lambda r: (_rank(r[0], r[1]), r[0].label))
    verdict = _assemble(worst_subject, worst, kind)
    sharing = [s.label for s, f in results if f.cause == worst.cause and s.pod is not None]
    verdict.pods = sharing
    verdict.pods_total = len(live)
    return verdict


def _verdict(subject: Subject, kind: str) -> Verdict:
    return _assemble(subject, run_pipeline(subject), kind)


def _rank(subject: Subject, finding: Finding) -> int:
    if subject.pod is None:
        return _STATE_RANK["not created"]
    if When.UNBOUND in subject.state:
        return _STATE_RANK["not scheduled"]
    if finding.cause == Cause.NODE_RUNTIME_ERROR:
        return _STATE_RANK["node error"]
    return _STATE_RANK["scheduled"]


def _find_workload(snapshot: Snapshot, ref: PodRef) -> K8sObject | None:
    for kind in WORKLOAD_KINDS:
        found = snapshot.workload(kind, ref.namespace, ref.name)
        if found is not None:
            return found
    return next(admission.owners_rejecting(snapshot, ref.namespace, ref.name), None)


def _admission_pending(snapshot: Snapshot, workload: K8sObject, pods: list[K8sObject]) -> bool:
    """Some pods exist; is creation of the others still failing?

    A ReplicaFailure condition says so now; a FailedCreate event counts only when it is newer
    than the newest pod (events linger for an hour after the cause is gone).
    """
    newest_pod = max((p.get("metadata", {}).get("creationTimestamp", "") for p in pods),
                     default="")
    for rejection in admission.rejections(snapshot, workload):
        if rejection.field.startswith("status.conditions"):
            return True
    for owner in (workload, *[c for c in snapshot.children(workload)
                              if c.get("kind") == "ReplicaSet"]):
        namespace, name = object_key(owner)
        for event in snapshot.events_for(str(owner.get("kind")), namespace, name):
            # Same second counts: a rejection and its sibling pods are often created together.
            if event.get("reason") == "FailedCreate" and event_time(event) >= newest_pod[:19]:
                return True
    live = [p for p in pods if not is_terminated(p)]
    if len(live) < admission.wanted_pods(workload):
        spec = admission.template_spec(workload)
        runtime_class = spec.get("runtimeClassName")
        return bool(admission.quota_shortfalls(snapshot, object_key(workload)[0], spec)) or (
            bool(runtime_class)
            and runtime_class not in admission.runtimeclass_names(snapshot))
    return False


def _pod_subject(snapshot: Snapshot, config: TriageConfig, ref: PodRef,
                 pod: K8sObject) -> Subject:
    namespace, name = object_key(pod)
    spec = dict(pod.get("spec") or {})
    return Subject(snapshot, config, PodRef(namespace, name) if ref.name != name else ref, pod,
                   spec=spec, events=snapshot.events_for("Pod", namespace, name),
                   gpu={r: n for r, n in gpu_requests(spec, config).items() if n > 0},
                   hami=hami_request(pod))


def _absent_subject(snapshot: Snapshot, config: TriageConfig, ref: PodRef,
                    workload: K8sObject) -> Subject:
    spec = admission.template_spec(workload)
    return Subject(snapshot, config, ref, None, workload=workload, spec=spec,
                   gpu={r: n for r, n in gpu_requests(spec, config).items() if n > 0})


def _assemble(subject: Subject, finding: Finding, kind: str) -> Verdict:
    pod = subject.pod
    message = latest_scheduling_failure(pod, subject.events) if pod is not None else None
    resource = _primary(subject) if subject.gpu else None
    reports = _node_reports(subject)
    scheduler = scheduler_scores(subject.events) if pod is not None else None
    policy = _policy(subject)
    if scheduler:
        for report in reports:
            if report.name in scheduler:
                report.score = scheduler[report.name]
    evidence = finding.evidence + _preemption_evidence(subject, message, finding.cause)
    namespace, name = (object_key(pod) if pod is not None else
                       object_key(subject.workload) if subject.workload is not None else
                       (subject.ref.namespace, subject.ref.name))
    return Verdict(
        ref=f"{namespace}/{name}" if kind == "Pod" else str(subject.ref),
        cause=finding.cause.value,
        action=finding.action,
        kind=kind,
        evidence=evidence,
        nodes=reports,
        node_summary=_node_summary(subject, reports, policy),
        scheduler_message=message,
        resource=resource,
        request=subject.gpu.get(resource) if resource else None,
        pods=[pod_name(pod)] if pod is not None else [],
        pods_total=1 if pod is not None else 0,
        score_source=("scheduler" if scheduler else "gpuwhy") if any(
            r.score is not None for r in reports) else None,
        score_policy=policy,
        scheduler_summary=proposal_summary(reports, policy) if reports and not subject.spec.get(
            "nodeName") else None,
        error="; ".join(dict.fromkeys(subject.snapshot.problems)) or None,
    )


# Kubernetes 1.36 says why preemption would not help: corroboration, never the only evidence.
_PREEMPTION_CORROBORATES = {
    Cause.EXHAUSTED: "No preemption victims found",
    Cause.NO_GPU_NODE: "Preemption is not helpful",
    Cause.ALLOCATABLE_ZERO: "Preemption is not helpful",
    Cause.TOO_LARGE: "Preemption is not helpful",
}


def _preemption_evidence(subject: Subject, message: str | None, cause: Cause) -> list[Evidence]:
    wanted = _PREEMPTION_CORROBORATES.get(cause)
    if message is None or wanted is None:
        return []
    found = [r for r in parse_failed_scheduling(message).preemption if r.text.startswith(wanted)]
    return [Evidence(f"Pod {subject.label}", "scheduler message (preemption)",
                     f"{r.count} {r.text}" if r.count is not None else r.text) for r in found]


def _policy(subject: Subject) -> str:
    annotations = (subject.pod or {}).get("metadata", {}).get("annotations") or {}
    chosen = annotations.get("hami.io/node-scheduler-policy") if subject.hami else None
    return str(chosen or subject.config.node_policy)


def _node_reports(subject: Subject) -> list[NodeReport]:
    """Reports in funnel order (worst first), with devices for the nodes that matter."""
    snapshot = subject.snapshot
    bound = subject.spec.get("nodeName") if subject.pod is not None else None
    if bound:
        node = snapshot.node(str(bound))
        report = NodeReport(str(bound), FIT, "bound here")
        if node is not None:
            report.devices = _devices(subject, node)
        return [report]
    order = {info.cause.value: i for i, info in enumerate(CAUSES)}
    reports = list(subject.reports.values())
    for report in reports:
        node = snapshot.node(report.name)
        if report.outcome == FIT and node is not None:
            report.score = _own_score(subject, node)
    reports.sort(key=lambda r: (order.get(r.outcome, order[Cause.DEVICE_UNFIT.value]),
                                -(r.score or 0), r.name))
    # Devices for the nodes a GPU check looked at; a 5,000-node answer lists the first ones.
    matter = [r for r in reports
              if r.outcome not in (Cause.SELECTOR_MISMATCH, Cause.TAINT_UNTOLERATED)]
    for report in matter[:MAX_DEVICE_NODES]:
        node = snapshot.node(report.name)
        if node is not None:
            report.devices = _devices(subject, node)
        if report.outcome != FIT and not any(d.code for d in report.devices):
            # No per-card fit is known here (plain device plugin): the node's outcome holds.
            for device in report.devices:
                device.code = report.outcome
    return reports


def _devices(subject: Subject, node: K8sObject) -> list[Device]:
    fit = _hami_fit(subject, node) if subject.hami is not None else None
    if fit is not None:
        return fit.devices
    resource = _primary(subject)
    held = [pod_name(p) for p, _ in subject.snapshot.holders_on(node_name(node), resource)]
    return gfd_devices(node, held)


def _own_score(subject: Subject, node: K8sObject) -> float | None:
    if subject.hami is not None:
        fit = _hami_fit(subject, node)
        return None if fit is None else fit.score
    resource = _primary(subject)
    allocatable = status_amount(node, "allocatable", resource)
    if not subject.gpu or not allocatable:
        return None
    used = int(subject.snapshot.requested_on(node_name(node)).get(resource, Decimal(0)))
    return whole_gpu_score(allocatable, used, subject.gpu[resource], _policy(subject))


# Outcomes named as they are in the summary; HAMi code summaries count as device-unfit.
_SUMMARY_WORDS = frozenset({*(c.value for c in Cause), NODE_UNREGISTERED})


def _node_summary(subject: Subject, reports: list[NodeReport], policy: str) -> str:
    if subject.pod is None:
        return ""
    bound = subject.spec.get("nodeName")
    if bound:
        return f"bound to {bound}"
    if not reports:
        return "no nodes in the cluster"
    fit = [r for r in reports if r.outcome == FIT]
    unfit = [r for r in reports if r.outcome != FIT]
    counts: dict[str, int] = {}
    for report in unfit:
        word = report.outcome if report.outcome in _SUMMARY_WORDS else Cause.DEVICE_UNFIT.value
        counts[word] = counts.get(word, 0) + 1
    breakdown = ", ".join(f"{n} {word}" for word, n in counts.items())
    scores = {r.name: r.score for r in fit if r.score is not None}
    ordered = pick_order(scores, policy) + [r.name for r in fit if r.score is None]
    shown = ", ".join(f"{name}: {scores[name]:.2f}" if name in scores else name
                      for name in ordered[:5]) + (f", +{len(ordered) - 5} more"
                                                  if len(ordered) > 5 else "")
    total = len(reports)
    text = f"{total} node{'s' if total != 1 else ''}: {len(unfit)} not fit"
    text += f" ({breakdown})" if breakdown else ""
    text += f", {len(fit)} fit" + (f" ({shown})" if fit else "")
    return text
