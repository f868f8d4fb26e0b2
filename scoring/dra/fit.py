"""One node: whether a pod's claims fit its published devices together, the first failing
stage (kube-scheduler's DynamicResources Filter), and the "show devices" rows of that fit."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from scoring.cel.error import SelectorError
from scoring.dra.capacity import (
    LACKS,
    REFUSED,
    TOO_SMALL,
    USED_UP,
    CapacityFit,
    judge,
    shared_device_row,
)
from scoring.dra.model import (
    CLAIM_ELSEWHERE,
    DEVICE_UNFIT,
    DRA_HOLDERS,
    EXHAUSTED,
    NO_DEVICE,
    STAGES,
    TOO_LARGE,
    UNEVALUATED,
    ZERO,
    Holder,
    NodeFit,
    PodClaim,
    RequestOutcome,
    allocated_node_names,
    assign,
    holders_text,
    mib,
    products,
    untolerated_device_taints,
)
from scoring.dra.rows import Alternative, DeviceKey, Request, SliceDevice
from scoring.nodes import taint_text
from scoring.verdict import Device

if TYPE_CHECKING:
    from scoring.dra.inventory import Inventory
    from scoring.nodetable import NodeInfo

# Per-node stages, in funnel order. CLAIM_ELSEWHERE: an allocated claim of the pod is bound
# to other nodes (the scheduler: "resourceclaim not available on the node").


def counted_out(inventory: Inventory, free: list[SliceDevice], needed: int
                 ) -> list[tuple[SliceDevice, Holder]]:
    """Of devices no claim holds, those the shared counters they consume leave no room
    for once ``needed`` are taken, smallest consumers first (the most that can fit); each
    is held by a claim that consumes its counters (the partitions of one physical GPU)."""
    left = {key: dict(counters) for key, counters in inventory.counters_left.items()}
    out, fitted = [], 0
    consuming = [(device, device.consumes) for device in free]
    consuming.sort(key=lambda pair: sum(
        (amount for _, amounts in pair[1] for amount in amounts.values()), ZERO))
    for device, consumption in consuming:
        if fitted == needed:
            break  # enough fit: the rest are not looked at, as the allocator stops
        short = [key for key, amounts in consumption if key in left and any(
            left[key].get(name, ZERO) < amount for name, amount in amounts.items())]
        if short:
            holders = inventory.counter_consumers.get(short[0]) or [
                Holder(f"counter set {short[0][2]} of pool {short[0][1]}", ())]
            out.append((device, holders[0]))
            continue
        fitted += 1
        for key, amounts in consumption:
            if key in left:
                for name, amount in amounts.items():
                    left[key][name] = left[key].get(name, ZERO) - amount
    return out


# -- selectors --------------------------------------------------------------------

# -- one node --------------------------------------------------------------------------


def fit_claims(inventory: Inventory, claims: list[PodClaim], node: NodeInfo) -> NodeFit:
    """The first failing stage for all the claims together on this node."""
    name = node.name
    devices = inventory.devices_for(node)
    for claim in claims:
        if claim.allocated_nodes is not None and claim.allocated_nodes.selects(node):
            continue
        if claim.allocated_nodes is not None:
            where = ", ".join(allocated_node_names(claim)) or (
                "other nodes (status.allocation.nodeSelector)")
            return NodeFit(name, CLAIM_ELSEWHERE,
                           f"claim {claim.label} is allocated for {where}, not {name}",
                           published=devices)
    own = {key for claim in claims for key in claim.allocated_devices}
    pending = [r for c in claims if c.allocated_nodes is None for r in c.requests]
    outcomes = [_request_outcome(inventory, r, devices, own) for r in pending]
    if any(o.stage == UNEVALUATED for o in outcomes):
        unevaluated = [o.detail for o in outcomes if o.stage == UNEVALUATED]
        return NodeFit(name, UNEVALUATED, "; ".join(unevaluated), requests=outcomes,
                       published=devices, unevaluated=unevaluated)
    failing = [o for o in outcomes if o.stage is not None]
    if not failing:
        joint = _joint(inventory, outcomes, own)
        if joint is not None:
            failing = [joint]
    if not failing:
        return NodeFit(name, None, "claims fit", requests=outcomes,
                       published=devices)
    first = min(failing, key=lambda o: STAGES.index(o.stage or EXHAUSTED))
    gpu = any(inventory.is_gpu_request(o.request) for o in failing if o.stage == first.stage)
    return NodeFit(name, first.stage, first.detail, gpu=gpu, requests=outcomes,
                   published=devices)


def alternative_outcomes(inventory: Inventory, claims: list[PodClaim], node: NodeInfo
                         ) -> list[list[RequestOutcome]]:
    """Per request of the claims not allocated yet, how each of its alternatives fares on the
    node, every one of them (a fit stops at the first that fits): what a gang's later pods
    fall back on once the first alternative's devices are taken."""
    devices = inventory.devices_for(node)
    own = {key for claim in claims for key in claim.allocated_devices}
    return [[_alternative_outcome(inventory, request, alternative, devices, own)
             for alternative in request.alternatives]
            for claim in claims if claim.allocated_nodes is None for request in claim.requests]


def _request_outcome(inventory: Inventory, request: Request, devices: list[SliceDevice],
                     own: set[DeviceKey]) -> RequestOutcome:
    best: RequestOutcome | None = None
    tried: list[RequestOutcome] = []
    for alternative in request.alternatives:
        outcome = _alternative_outcome(inventory, request, alternative, devices, own)
        tried.append(outcome)
        if outcome.stage in (None, UNEVALUATED):
            return _with_tried(outcome, tried)
        if best is None or STAGES.index(outcome.stage or EXHAUSTED) > STAGES.index(
                best.stage or EXHAUSTED):
            best = outcome
    if best is None:
        return RequestOutcome(request, NO_DEVICE, f"request {request.name} has no device "
                              "request")
    return _with_tried(best, tried)


def _with_tried(outcome: RequestOutcome, tried: list[RequestOutcome]) -> RequestOutcome:
    # a copy: the outcome itself in its own ``tried`` would be a cycle, left with the rest of
    # an answer's per-node fits to the garbage collector rather than freed when the answer is
    return replace(outcome, tried=tried)


def _alternative_outcome(inventory: Inventory, request: Request, alternative: Alternative,
                         devices: list[SliceDevice], own: set[DeviceKey]) -> RequestOutcome:
    label = f"{request.claim} request {alternative.label}"
    if alternative.device_class not in inventory.classes:
        return RequestOutcome(request, NO_DEVICE, f"device class {alternative.device_class} "
                              "does not exist", alternative)
    class_selectors = inventory.class_selectors(alternative.device_class)
    of_class, matching = [], []
    for device in devices:
        in_class = inventory.selects(class_selectors, device)
        if isinstance(in_class, SelectorError):
            return RequestOutcome(request, UNEVALUATED, f"DeviceClass "
                                  f"{alternative.device_class} selector {in_class}",
                                  alternative)
        if not in_class:
            continue
        of_class.append(device)
        wanted = inventory.selects(alternative.selectors, device)
        if isinstance(wanted, SelectorError):
            return RequestOutcome(request, UNEVALUATED, f"{label} selector {wanted}",
                                  alternative)
        if wanted:
            matching.append(device)
    if not of_class:
        return RequestOutcome(request, NO_DEVICE, f"no {alternative.device_class} device "
                              "published for the node (no ResourceSlice of that class)",
                              alternative)
    if not matching:
        return RequestOutcome(request, DEVICE_UNFIT, f"{len(of_class)} "
                              f"{alternative.device_class} device(s) "
                              f"({products(of_class)}), none meets {label}'s selectors "
                              f"({' && '.join(alternative.selectors)})", alternative,
                              of_class)
    capacity: list[tuple[SliceDevice, CapacityFit]] = []
    if alternative.capacity or any(d.shared for d in matching):
        capacity = [(d, judge(d, dict(alternative.capacity),
                              inventory.shared_usage.shares(d.key))) for d in matching]
        eligible = [(d, f) for d, f in capacity if f.failure not in (LACKS, REFUSED)]
        large = [d for d, f in eligible if f.failure != TOO_SMALL]
        short = not eligible or (alternative.mode != "All" and len(large) < alternative.count)
        if short:
            return RequestOutcome(
                request, TOO_LARGE if eligible else DEVICE_UNFIT, f"{label} capacity: "
                + "; ".join(f"{d.pool}/{d.name} {f.detail}" for d, f in
                            (eligible or capacity)[:4]), alternative, of_class, large,
                capacity=capacity)
        matching = large
    if alternative.mode != "All" and len(matching) < alternative.count:
        return RequestOutcome(request, TOO_LARGE, f"{label} asks {alternative.count}, the "
                              f"node has {len(matching)} matching device(s)", alternative,
                              of_class, matching)
    tainted = [(d, taints) for d in matching
               if (taints := untolerated_device_taints(d, alternative))]
    if tainted:
        skipped = {d.key for d, _ in tainted}
        usable = [d for d in matching if d.key not in skipped]
        if not usable or (alternative.mode != "All" and len(usable) < alternative.count):
            texts = ", ".join(f"{d.name} {' '.join(t)}" for d, t in tainted[:4])
            return RequestOutcome(request, DEVICE_UNFIT, f"{len(tainted)}/{len(matching)} "
                                  f"matching device(s) are tainted and {label} does not "
                                  f"tolerate it: {texts}", alternative, of_class, matching,
                                  tainted=tainted)
        matching = usable
    held = [(d, inventory.taken[d.key]) for d in matching
            if d.key in inventory.taken and d.key not in own and not alternative.admin
            and not d.shared]
    held += [(d, Holder(", ".join(s.claim for s in f.shares),
                        tuple(p for s in f.shares for p in s.pods)))
             for d, f in capacity if f.failure == USED_UP and d in matching]
    if inventory.counter_sets and not alternative.admin:
        held += counted_out(inventory, [d for d in matching if d.key not in inventory.taken],
                                  len(matching) if alternative.mode == "All"
                                  else alternative.count)
    free = len(matching) - len(held)
    needed = len(matching) if alternative.mode == "All" else alternative.count
    if free < needed:
        used_up = [f"{d.pool}/{d.name} {f.detail}" for d, f in capacity
                   if f.failure == USED_UP and d in matching]
        return RequestOutcome(request, EXHAUSTED, f"{label} needs {needed}, "
                              + ("; ".join(used_up[:3]) if used_up else
                                 f"{len(held)}/{len(matching)} matching device(s) allocated "
                                 f"to {holders_text(held)}"), alternative, of_class, matching,
                              held, capacity=capacity)
    return RequestOutcome(request, None, "fits", alternative, of_class, matching, held,
                          capacity=capacity)


def _joint(inventory: Inventory, outcomes: list[RequestOutcome],
           own: set[DeviceKey]) -> RequestOutcome | None:
    """Each request fits alone; do they fit together on distinct devices?"""
    if len(outcomes) < 2:
        return None
    everything = assign(outcomes, lambda o, d: True)
    if everything is not None:
        return RequestOutcome(outcomes[0].request, TOO_LARGE, "the requests together need "
                              f"{everything[0]} devices, the node has {everything[1]} "
                              "that match them", outcomes[0].alternative)
    held = {d.key for o in outcomes for d, _ in o.holders}
    free = assign(outcomes, lambda o, d: d.key not in held)
    if free is not None:
        # every request's outcome names the devices held on the node: each device once
        holders = list({d.key: (d, h) for o in outcomes for d, h in o.holders}.values())
        return RequestOutcome(outcomes[0].request, EXHAUSTED, "the requests together need "
                              f"{free[0]} free devices, {free[1]} are free; the others are "
                              f"allocated to {holders_text(holders)}",
                              outcomes[0].alternative, holders=holders)
    return None


def device_rows(inventory: Inventory, fit: NodeFit) -> list[Device]:
    """The node's devices of the pod's classes (all GPU devices when none of its class),
    as "show devices" lists them: only for the nodes an answer shows."""
    devices, outcomes = fit.published, fit.requests
    classes = {o.alternative.device_class for o in outcomes if o.alternative is not None}
    shown = [d for d in devices if any(inventory.selects(inventory.class_selectors(c), d) is True
                                       for c in classes)]
    if not shown:
        shown = [d for d in devices if d.driver in inventory.gpu_drivers]
    # devices no claim names but whose shared counters a claim's devices use up
    counted_out = {d.key: h for o in outcomes for d, h in o.holders if d.key not in inventory.taken}
    rows = []
    for position, device in enumerate(shown):
        holder = inventory.taken.get(device.key) or counted_out.get(device.key)
        code = None
        for outcome in outcomes:
            alternative = outcome.alternative
            if alternative is None or inventory.selects(
                    inventory.class_selectors(alternative.device_class), device) is not True:
                continue
            for expression in alternative.selectors:
                verdict = inventory.selects((expression,), device)
                if verdict is not True:
                    code = (f"selector not evaluated: {verdict}"
                            if isinstance(verdict, SelectorError)
                            else f"fails {expression}")
                    break
        if code is None:
            taints = [taint_text(t) for t in device.taints]
            code = f"tainted {', '.join(taints)}" if taints else None
        if device.shared:
            failed = next((f for o in outcomes for d, f in o.capacity
                           if d.key == device.key and f.failure is not None), None)
            rows.append(shared_device_row(
                device, inventory.shared_usage.shares(device.key), failed, code,
                Device(uuid=device.uuid, index=_index(device, position),
                       type=device.product, memory_total=mib(device.memory),
                       holder_source=DRA_HOLDERS)))
            continue
        if code is None and holder is not None:
            code = (f"its shared counters are used by {holder.claim}"
                    if device.key in counted_out else f"allocated to {holder.claim}")
        rows.append(Device(uuid=device.uuid, index=_index(device, position),
                           type=device.product, memory_total=mib(device.memory),
                           holders=list(holder.pods or (f"claim {holder.claim}",))
                           if holder else [], code=code, holder_source=DRA_HOLDERS))
    return rows


def _index(device: SliceDevice, position: int) -> int:
    """The GPU's index as the driver publishes it, else its place in the list."""
    return device.index if device.index is not None else position
