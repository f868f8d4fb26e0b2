"""GPUs through Dynamic Resource Allocation (kube-scheduler's DynamicResources plugin).

The scheduler says ``N cannot allocate all claims`` whatever the reason; the objects tell the
reasons apart (``scoring.dra`` judges each node). In the funnel's order, node by node: no
device of the request's class is published for the node (no-gpu-node: the DRA driver is
missing), devices of the class exist but none meets the request's selectors (device-unfit),
fewer matching devices than asked even if all were free (too-large), enough but allocated to
other claims (exhausted). Then other-constraint: a missing claim, template or DeviceClass, a
claim allocated for a node the pod cannot use, a non-GPU claim that does not fit, or a
selector gpuwhy cannot evaluate (the scheduler's word stands then).
"""

from __future__ import annotations

from scoring.dra import (
    CLAIM_ELSEWHERE,
    DEVICE_UNFIT,
    EXHAUSTED,
    IMPLICIT_EXTENDED_PREFIX,
    NO_DEVICE,
    TOO_LARGE,
    UNEVALUATED,
    NodeFit,
    PodClaim,
    Request,
    RequestOutcome,
    SliceDevice,
    allocated_node_names,
    products,
)
from scoring.dra.binding import binding
from scoring.nodetable import NodeInfo
from scoring.verdict import Evidence
from triage.classify.checks.dra_alternatives import chosen_alternative
from triage.classify.checks.dra_shared import (
    explain_capacity_exhausted,
    explain_capacity_too_large,
    explain_capacity_unfit,
    shared_allocation_note,
)
from triage.classify.subject import Dropped, Finding, NodeFilterFn, Subject, scheduler_evidence
from triage.vocabulary import Cause


def node_fit(subject: Subject, node: NodeInfo) -> NodeFit | None:
    return subject.dra.fit(node) if subject.dra is not None else None


def _dropped_at(stage: str) -> NodeFilterFn:
    def drop(subject: Subject, node: NodeInfo) -> str | None:
        fit = node_fit(subject, node)
        return fit.detail if fit is not None and fit.stage == stage and fit.gpu else None
    drop.__name__ = f"drop_dra_{stage.replace('-', '_')}"
    return drop


drop_dra_no_device = _dropped_at(NO_DEVICE)
drop_dra_device_unfit = _dropped_at(DEVICE_UNFIT)
drop_dra_too_large = _dropped_at(TOO_LARGE)
drop_dra_exhausted = _dropped_at(EXHAUSTED)


def _failing(subject: Subject, dropped: Dropped, stage: str) -> list[tuple[NodeInfo,
                                                                          RequestOutcome]]:
    """Per dropped node, the request that failed there at this stage."""
    found = []
    for node, _ in dropped:
        fit = node_fit(subject, node)
        outcome = next((o for o in (fit.requests if fit else []) if o.stage == stage), None)
        if outcome is not None:
            found.append((node, outcome))
    return found


def _claim_of(subject: Subject, request: Request) -> PodClaim | None:
    assert subject.dra is not None
    return next((c for c in subject.dra.all_claims if request in c.requests), None)


def _source(subject: Subject, request: Request) -> str:
    claim = _claim_of(subject, request)
    if claim is None:
        return request.claim
    template = f" (from template {claim.template})" if claim.template and claim.claim else ""
    return f"{claim.source}{template}"


def _asked(outcome: RequestOutcome) -> str:
    alternative = outcome.alternative
    return alternative.asked if alternative is not None else outcome.request.name


def _request_field(outcome: RequestOutcome, leaf: str) -> str:
    request = outcome.request
    alternative = outcome.alternative
    if alternative is not None and "/" in alternative.label:
        sub = alternative.label.split("/", 1)[1]
        return f"spec.devices.requests[{request.name}].firstAvailable[{sub}].{leaf}"
    return f"spec.devices.requests[{request.name}].exactly.{leaf}"


def _request_evidence(subject: Subject, outcome: RequestOutcome, leaf: str,
                      value: str) -> Evidence:
    claim = _claim_of(subject, outcome.request)
    if claim is not None and claim.extended_resource is not None:
        asked = outcome.alternative or outcome.request.alternatives[0]
        how = ("its implicit extended resource name"
               if claim.extended_resource.startswith(IMPLICIT_EXTENDED_PREFIX)
               else "spec.extendedResourceName")
        return Evidence(f"Pod {subject.label}",
                        f"effective request {claim.extended_resource}",
                        f"{asked.count}, served through DeviceClass {asked.device_class} ({how})")
    source = _source(subject, outcome.request).split(" (from", 1)[0]
    prefix = "spec." if source.startswith("ResourceClaimTemplate") else ""
    return Evidence(source, prefix + _request_field(outcome, leaf), value)


def _class_evidence(subject: Subject, device_class: str) -> Evidence:
    assert subject.dra is not None
    selectors = subject.dra.inventory.class_selectors(device_class)
    return Evidence(f"DeviceClass {device_class}", "spec.selectors",
                    " && ".join(selectors) or "none (every device)")


def _slices(devices: list[SliceDevice]) -> str:
    return ", ".join(dict.fromkeys(d.slice for d in devices))


def allocation_evidence(subject: Subject) -> list[Evidence]:
    """What a bound DRA pod's claims were allocated: devices, node, the pods reserving them."""
    if subject.dra is None:
        return []
    evidence = []
    for claim in subject.dra.claims:
        if claim.claim is None or claim.allocated_nodes is None:
            continue
        devices = ",".join(device for _, _, device in claim.allocated_devices) or "no device"
        nodes = ", ".join(allocated_node_names(claim)) or "any node"
        reserved = ", ".join(r.name for r in claim.claim.reserved_for) or "nobody"
        chosen = ", ".join(dict.fromkeys(
            name for r in claim.claim.results if (name := chosen_alternative(r))))
        evidence.append(Evidence(claim.source, "status.allocation / status.reservedFor",
                                 f"{devices} on {nodes}; reserved for {reserved}"
                                 + (f"; firstAvailable alternative {chosen} chosen"
                                    if chosen else "")
                                 + shared_allocation_note(subject, claim)))
    return evidence


def explain_dra_no_device(subject: Subject, dropped: Dropped) -> Finding:
    failing = _failing(subject, dropped, NO_DEVICE)
    classes = sorted({o.alternative.device_class for _, o in failing if o.alternative})
    parts = []
    for node, _ in dropped:
        node_labels = node.labels
        product = node_labels.get("nvidia.com/gpu.product")
        hint = (f" although its GFD labels say {product}" if product else
                " although it is labelled nvidia.com/gpu.present=true"
                if node_labels.get("nvidia.com/gpu.present") == "true" else "")
        parts.append(f"{node.name}{hint}")
    wanted = " or ".join(classes) or "the requested class"
    evidence = [Evidence(f"Node/{n.name}", "ResourceSlices (spec.nodeName / nodeSelector)",
                         f"no {wanted} device") for n, _ in dropped[:5]]
    evidence += [_class_evidence(subject, c) for c in classes[:2]]
    if failing:
        outcome = failing[0][1]
        evidence.append(_request_evidence(subject, outcome, "deviceClassName",
                                          outcome.alternative.device_class
                                          if outcome.alternative else wanted))
    extended = sorted({c.extended_resource for _, o in failing
                       if (c := _claim_of(subject, o.request)) and c.extended_resource})
    served = (f" The pod's {', '.join(extended)} limit is served through DeviceClass "
              f"{wanted}, and no device plugin reports {', '.join(extended)} there either."
              if extended else "")
    return Finding(Cause.NO_GPU_NODE,
                   f"no matching node publishes a {wanted} device in its ResourceSlices: "
                   f"{'; '.join(parts[:5])}.{served} The DRA driver is not running there (or "
                   f"publishes nothing): restore the DRA driver's kubelet plugin on "
                   f"{', '.join(n.name for n, _ in dropped[:5])}.", evidence)


def explain_dra_device_unfit(subject: Subject, dropped: Dropped) -> Finding:
    failing = _failing(subject, dropped, DEVICE_UNFIT)
    tainted = [(node, outcome) for node, outcome in failing if outcome.tainted]
    if tainted:  # there the devices match: only a taint keeps the request off them
        return _explain_tainted(subject, tainted)
    if failing and (shared := explain_capacity_unfit(
            failing, _source(subject, failing[0][1].request))) is not None:
        return shared
    first = failing[0][1] if failing else None
    selectors = " && ".join(first.alternative.selectors) if first and first.alternative else ""
    per_node = "; ".join(f"{n.name} has {products(o.candidates)}" for n, o in failing[:4])
    evidence = []
    if first is not None:
        evidence.append(_request_evidence(subject, first, "selectors", selectors))
    evidence += [Evidence(f"ResourceSlice {_slices(o.candidates)}", "spec.devices[]",
                          products(o.candidates)) for _, o in failing[:4]]
    source = _source(subject, first.request) if first else "the claim"
    return Finding(Cause.DEVICE_UNFIT,
                   f"devices of the class exist, but none meets the selectors of {source} "
                   f"({selectors}): {per_node}. Relax the selector, or send the pod to nodes "
                   "whose devices meet it (show devices lists them).", evidence)


def _explain_tainted(subject: Subject, failing: list[tuple[NodeInfo, RequestOutcome]]
                     ) -> Finding:
    """Device taints (DRADeviceTaints): the allocator skips a tainted device the request does
    not tolerate, as the scheduler skips a tainted node."""
    first = failing[0][1]
    per_node = "; ".join(
        f"{node.name}: {', '.join(f'{d.name} {t[0]}' for d, t in outcome.tainted[:4])}"
        f" ({len(outcome.tainted)} of {len(outcome.matching)} matching, {_asked(outcome)} "
        "needed)" for node, outcome in failing[:4])
    claim = _claim_of(subject, first.request)
    tolerate = ("a limit cannot tolerate device taints: only a ResourceClaim whose request "
                "does (exactly.tolerations) can use them" if claim and claim.extended_resource
                else "tolerate it in the request (exactly.tolerations)")
    evidence = [Evidence(f"ResourceSlice {_slices([d for d, _ in o.tainted])}",
                         "spec.devices[].taints",
                         f"{n.name}: " + ", ".join(f"{d.name} {' '.join(t)}" for d, t in
                                                   o.tainted[:4])) for n, o in failing[:4]]
    tolerations = first.alternative.tolerations if first.alternative else ()
    evidence.append(_request_evidence(subject, first, "tolerations",
                                      f"{len(tolerations)} toleration(s)"))
    return Finding(Cause.DEVICE_UNFIT,
                   f"the matching devices are tainted, and {_source(subject, first.request)} "
                   f"does not tolerate it: {per_node}. The DRA driver or an admin marked them "
                   f"unusable (often unhealthy): repair them or remove the taint; {tolerate}, "
                   "and only if the devices are fit to use.", evidence)


def explain_dra_too_large(subject: Subject, dropped: Dropped) -> Finding:
    failing = _failing(subject, dropped, TOO_LARGE)
    if not failing:
        return _explain_per_node(subject, dropped, Cause.TOO_LARGE, "Split the job or get a "
                                 "node with that many devices; waiting never helps.")
    largest = max(len(o.matching) for _, o in failing)
    # The request failing where the most devices match: its count is what the largest node
    # lacks (another request may fail first on a smaller node and ask fewer).
    first = next(o for _, o in failing if len(o.matching) == largest)
    if (shared := explain_capacity_too_large(failing,
                                              _source(subject, first.request))) is not None:
        return shared
    at_most = [n.name for n, o in failing if len(o.matching) == largest]
    others = "; ".join(f"{n.name} has {len(o.matching)}" for n, o in failing
                       if len(o.matching) != largest)
    asked = first.alternative.count if first.alternative else 0
    return Finding(Cause.TOO_LARGE,
                   f"{_source(subject, first.request)} asks {asked} × "
                   f"{first.alternative.device_class if first.alternative else 'devices'}; the "
                   f"most any node you can use has is {largest} ({', '.join(at_most[:4])}"
                   f"{'; ' + others if others else ''}), even if all were free. Split the job "
                   "or get a node with that many devices; waiting never helps.",
                   [_request_evidence(subject, first, "count", str(asked))]
                   + [Evidence(f"ResourceSlice {_slices(o.matching)}", "spec.devices[]",
                               f"{len(o.matching)} matching device(s) on {n.name}")
                      for n, o in failing[:5]])


def explain_dra_exhausted(subject: Subject, dropped: Dropped) -> Finding:
    failing = _failing(subject, dropped, EXHAUSTED)
    if failing and (shared := explain_capacity_exhausted(
            failing, _source(subject, failing[0][1].request))) is not None:
        return shared
    per_node = []
    evidence = []
    for node, outcome in failing[:3]:
        holders: dict[str, list[str]] = {}
        owners: dict[str, tuple[str, ...]] = {}
        for device, holder in outcome.holders:
            holders.setdefault(holder.claim, []).append(device.name)
            owners[holder.claim] = holder.pods
        held = " and ".join(
            f"claim {claim} (pod {', '.join(owners[claim]) or 'none reserved'}, "
            f"{','.join(names)})" for claim, names in holders.items())
        taken = len({device.key for device, _ in outcome.holders})
        per_node.append(f"{node.name}: {taken}/{len(outcome.matching)} matching device(s) "
                        f"allocated, to {held}; it needs {_asked(outcome)}")
        evidence += [Evidence(f"ResourceClaim {claim}", "status.allocation.devices.results",
                              f"{','.join(names)} on {node.name}; reservedFor "
                              f"{', '.join(owners[claim]) or 'nobody'}")
                     for claim, names in holders.items()]
    if not failing:
        return _explain_per_node(subject, dropped, Cause.EXHAUSTED, "Wait for the holders to "
                                 "finish, or add capacity.")
    return Finding(Cause.EXHAUSTED,
                   f"{'; '.join(per_node)}. Wait for them to finish, or add capacity.",
                   evidence[:6])


def _explain_per_node(subject: Subject, dropped: Dropped, cause: Cause,
                      advice: str) -> Finding:
    """Several requests that fit one by one but not together: the node's own words."""
    return Finding(cause, f"{'; '.join(f'{n.name}: {why}' for n, why in dropped[:4])}. {advice}",
                   [Evidence(f"Node/{n.name}", "ResourceSlices and claim allocations", why)
                    for n, why in dropped[:5]])


# -- other-constraint: the claim itself, or something only the scheduler can say ---------------

def drop_dra_other(subject: Subject, node: NodeInfo) -> str | None:
    if subject.dra is None:
        return None
    problems = subject.dra.problems
    if problems:
        return "; ".join(str(c.problem) for c in problems)
    fit = subject.dra.fit(node)
    if fit.stage == CLAIM_ELSEWHERE:
        return fit.detail
    if fit.stage == UNEVALUATED:
        return "selector not evaluated: " + "; ".join(fit.unevaluated)
    if fit.stage is not None and not fit.gpu:
        return f"non-GPU claim cannot be allocated: {fit.detail}"
    return None


def explain_dra_other(subject: Subject, dropped: Dropped) -> Finding:
    assert subject.dra is not None
    problems = subject.dra.problems
    if problems:
        return _explain_problems(subject, problems)
    fits = [(n, node_fit(subject, n)) for n, _ in dropped]
    unevaluated = [(n, f) for n, f in fits if f is not None and f.stage == UNEVALUATED]
    elsewhere = [(n, f) for n, f in fits if f is not None and f.stage == CLAIM_ELSEWHERE]
    if unevaluated:
        reasons = list(dict.fromkeys(r for _, f in unevaluated if f for r in f.unevaluated))
        return Finding(Cause.OTHER_CONSTRAINT,
                       f"selector not evaluated: {reasons[0]}. gpuwhy cannot judge the devices "
                       "against it, so it goes by the scheduler's word"
                       f"{_scheduler_says(subject)}.",
                       [Evidence(f"Node/{n.name}", "selector not evaluated", r)
                        for n, _ in unevaluated[:1] for r in reasons[:3]]
                       + scheduler_evidence(subject))
    if elsewhere:
        return _explain_elsewhere(subject)
    per_node = "; ".join(f"{n.name}: {why}" for n, why in dropped[:4])
    return Finding(Cause.OTHER_CONSTRAINT,
                   f"GPU-wise a node fits, but a claim of {subject.label} that is not a GPU "
                   f"cannot be allocated: {per_node}. Fix that claim or its DRA driver.",
                   [Evidence(f"Node/{n.name}", "ResourceSlices and claim allocations", why)
                    for n, why in dropped[:5]] + scheduler_evidence(subject))


def _scheduler_says(subject: Subject) -> str:
    evidence = scheduler_evidence(subject)
    return f" ({evidence[0].value})" if evidence else " (it has said nothing yet)"


def _explain_problems(subject: Subject, problems: list[PodClaim]) -> Finding:
    assert subject.dra is not None
    claim = problems[0]
    existing = ", ".join(sorted(subject.dra.inventory.classes)) or "none"
    if "device class" in str(claim.problem):
        action = (f"{claim.source}: {claim.problem} (DeviceClasses: {existing}). Create the "
                  "DeviceClass (it comes with the DRA driver) or fix deviceClassName.")
        evidence = [Evidence(claim.source, claim.problem_field, str(claim.problem)),
                    Evidence("DeviceClasses", "metadata.name", existing)]
    else:
        action = (f"{claim.problem}, so the scheduler cannot even start on {subject.label} "
                  "(and says nothing about it). Create it, or fix the name in "
                  "spec.resourceClaims.")
        evidence = [Evidence(f"Pod {subject.label}", claim.problem_field, str(claim.problem))]
    return Finding(Cause.OTHER_CONSTRAINT, action, evidence + scheduler_evidence(subject))


def _explain_elsewhere(subject: Subject) -> Finding:
    assert subject.dra is not None
    allocated = [c for c in subject.dra.claims if c.allocated_nodes is not None]
    nodes = [n for c in allocated for n in allocated_node_names(c)]
    blocked = [subject.reports[n] for n in nodes if n in subject.reports]
    why = "; ".join(f"{r.name} is excluded ({r.outcome}: {r.detail})" for r in blocked[:2])
    where = ", ".join(nodes) or "other nodes"
    return Finding(Cause.OTHER_CONSTRAINT,
                   f"claim {', '.join(c.label for c in allocated)} is already allocated for "
                   f"{where}, and {subject.label} cannot use "
                   f"{'it' if len(nodes) == 1 else 'them'}{': ' + why if why else ''}. The "
                   "scheduler reports \"resourceclaim not available on the node\". Let the pod "
                   "reach that node, or give it a claim of its own.",
                   [Evidence(c.source, "status.allocation.nodeSelector",
                             ", ".join(allocated_node_names(c)) or "other nodes")
                    for c in allocated[:2]]
                   + [Evidence(f"Node/{r.name}", r.outcome, r.detail) for r in blocked[:2]]
                   + scheduler_evidence(subject))


# -- the scheduler is binding: every claim allocated and reserved for the pod ------------------

# What a binding pod waits on, by the device conditions that decide it.
_BINDING = {
    "bindingFailureConditions": (
        "the scheduler allocated {held} on {where} for {pod}, but the driver reports a binding "
        "failure ({conditions}): the scheduler releases the devices and tries again. If it "
        "keeps failing, look at the DRA driver ({drivers}) for those devices."),
    "bindingConditions": (
        "the scheduler allocated {held} on {where} and waits for the devices to be ready "
        "before it binds {pod} ({conditions}). Devices that must be attached first take a "
        "while; if it lasts past the scheduler's binding timeout, look at the DRA driver "
        "({drivers})."),
    "": ("the scheduler allocated {held} on {where} and is binding {pod} now: ask again in a "
         "moment. If it stays without a node, look at the scheduler's log for the pod."),
}


def binding_in_progress(subject: Subject) -> Finding | None:
    """A pod without a node whose claims are all allocated and reserved for it: the scheduler
    is binding it (PreBind), waiting for the devices' binding conditions if they have any. No
    event says so while it waits, so without this it would read as an absent scheduler."""
    if subject.dra is None or subject.row is None:
        return None
    state = binding(subject.dra.inventory, subject.dra.claims, subject.row.uid, subject.row.name)
    if state is None:
        return None
    where = ", ".join(state.nodes) or "its node"
    held = "; ".join(state.devices[:4])
    drivers = ", ".join(state.drivers)
    evidence = [Evidence(f"Pod {subject.label}", "claims (status.allocation, reservedFor)",
                         f"{held} on {where}")]
    field, conditions = (("bindingFailureConditions", state.failed) if state.failed else
                         ("bindingConditions", state.waiting))
    if conditions:
        evidence.append(Evidence("ResourceClaim status.devices[].conditions", field,
                                 "; ".join(conditions[:4])))
    action = _BINDING[field if conditions else ""].format(
        held=held, where=where, pod=subject.label, drivers=drivers,
        conditions="; ".join(conditions[:2]))
    return Finding(Cause.OTHER_CONSTRAINT, action, evidence + scheduler_evidence(subject))
