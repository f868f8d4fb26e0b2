"""GPUs as extended resources (kube-scheduler's NodeResourcesFit, for the GPU resources).

In the funnel's order: the node reports the resource at all (no-gpu-node), offers some
(allocatable-zero), would have enough when empty (too-large), has enough free (exhausted).
"""

from __future__ import annotations

from itertools import islice

from scoring.nodetable import NodeInfo
from scoring.verdict import Evidence
from triage.classify.checks.selector import selector_text
from triage.classify.subject import (
    Dropped,
    Finding,
    NodeFilter,
    Subject,
    first_four,
    primary,
)
from triage.vocabulary import CAUSE_ORDER, Cause


def _by_device_plugin(subject: Subject, node: NodeInfo) -> dict[str, int]:
    """The pod's GPU requests a device plugin must meet on this node: not those a
    DeviceClass serves there through DRA (the DRA filters judge them). Asked only when the
    pod has such resources (``subject.extended_dra``): the funnel visits every node."""
    assert subject.dra is not None
    return {r: n for r, n in subject.gpu.items() if not subject.dra.serves(node, r)}


def drop_no_gpu_node(subject: Subject, node: NodeInfo) -> str | None:
    # Capacity 0 is what the kubelet leaves when a device plugin unregisters.
    capacity = node.capacity
    if all(map(capacity.get, subject.gpu)):  # every node is asked: no Python-level loop
        return None
    missing = _missing_capacity(subject, node)
    return f"no {', '.join(missing)} in status.capacity" if missing else None


def _missing_capacity(subject: Subject, node: NodeInfo) -> list[str]:
    """The pod's GPU resources a device plugin must meet that the node reports none of."""
    asked = _by_device_plugin(subject, node) if subject.extended_dra else subject.gpu
    return [r for r in asked if not node.capacity.get(r)]


def explain_no_gpu_node(subject: Subject, dropped: Dropped) -> Finding:
    # the resources the dropped nodes lack (a node may report the pod's first one, not its
    # second), in the pod's order
    missing = {n.name: _missing_capacity(subject, n) for n, _ in dropped}
    resources = ", ".join(dict.fromkeys(r for names in missing.values() for r in names))
    parts = []
    for node, _ in dropped:
        product = node.labels.get("nvidia.com/gpu.product")
        hint = f" although its GFD labels say {product}" if product else ""
        parts.append(f"{node.name}{hint}")
    inventory = subject.dra_inventory
    published = [n.name for n, _ in dropped[:5] if any(
        d.driver in inventory.gpu_drivers for d in inventory.devices_for(n))]
    dra = (f" {', '.join(published)} publish{'es' if len(published) == 1 else ''} GPUs "
           "only as DRA devices (ResourceSlices): ask for them through a ResourceClaim "
           "instead." if published else "")
    return Finding(Cause.NO_GPU_NODE,
                   f"no matching node reports {resources} in status.capacity: "
                   f"{'; '.join(parts)}. The device plugin is not registered there: restore the "
                   f"device plugin on {', '.join(n.name for n, _ in dropped)}.{dra}",
                   [Evidence(f"Node/{n.name}", f"status.capacity[{missing[n.name][0]}]",
                             str(n.capacity.get(missing[n.name][0]) or "absent"))
                    for n, _ in dropped[:5]])


def drop_allocatable_zero(subject: Subject, node: NodeInfo) -> str | None:
    allocatable = node.allocatable
    if all(map(allocatable.get, subject.gpu)):
        return None
    return ", ".join(f"{r} capacity {node.capacity.get(r)}, allocatable 0"
                     for r in _offered_none(subject, node)) or None


def _offered_none(subject: Subject, node: NodeInfo) -> list[str]:
    """The pod's GPU resources a device plugin must meet that the node offers none of."""
    asked = _by_device_plugin(subject, node) if subject.extended_dra else subject.gpu
    return [r for r in asked if not node.allocatable.get(r)]


def explain_allocatable_zero(subject: Subject, dropped: Dropped) -> Finding:
    # the field of the first resource the node offers none of (a node may offer the pod's
    # first resource, not its second)
    return Finding(Cause.ALLOCATABLE_ZERO,
                   f"{'; '.join(f'{n.name}: {why}' for n, why in dropped)}. The GPUs exist "
                   "but the node offers none: repair the node (driver, device plugin, validator); "
                   "adding nodes won't help.",
                   [Evidence(f"Node/{n.name}",
                             f"status.allocatable[{_offered_none(subject, n)[0]}]", why)
                    for n, why in dropped[:5]])


def drop_too_large(subject: Subject, node: NodeInfo) -> str | None:
    allocatable = node.allocatable
    return ", ".join(f"{r} allocatable {allocatable.get(r, 0)} < request {subject.gpu[r]}"
                     for r in _too_small(subject, node)) or None


def _too_small(subject: Subject, node: NodeInfo) -> list[str]:
    """The pod's GPU resources a device plugin must meet on the node that its allocatable
    has fewer of than the pod asks."""
    allocatable = node.allocatable
    asked = _by_device_plugin(subject, node) if subject.extended_dra else subject.gpu
    return [r for r, n in asked.items() if allocatable.get(r, 0) < n]


def explain_too_large(subject: Subject, dropped: Dropped) -> Finding:
    # what the first node is too small for (a node may have enough of the pod's first
    # resource and too little of its second), and the largest node too small for it
    resource = _too_small(subject, dropped[0][0])[0]
    request = subject.gpu[resource]
    largest = max((d for d in dropped if d[0].allocatable.get(resource, 0) < request),
                  key=lambda d: d[0].allocatable.get(resource, 0))
    ruled_out = subject.reports.names_where(RULED_OUT.__contains__)
    # the first three named (the rest picked in C: a report per node of 100,000)
    big_elsewhere = [subject.reports[name] for name in islice(
        (name for name in ruled_out if _has_enough(subject, name)), 3)]
    blocked = ""
    if big_elsewhere:
        blocked = " " + "; ".join(f"{r.name} has enough but is excluded ({r.outcome}: {r.detail})"
                                  for r in big_elsewhere) + "."
    return Finding(Cause.TOO_LARGE,
                   f"no node you can use has {request} {resource}: the largest is "
                   f"{largest[0].name} with "
                   f"{largest[0].allocatable.get(resource, 0)}.{blocked} Split "
                   "the job or get a bigger node (or access to one); waiting never helps.",
                   [Evidence(f"Pod {subject.label}", f"effective request {resource}",
                             str(request))]
                   + [Evidence(f"Node/{n.name}",
                               f"status.allocatable[{_too_small(subject, n)[0]}]", why)
                      for n, why in dropped[:5]])


# the outcomes of nodes a selector or a taint rules out, before any GPU check looks at them
RULED_OUT = frozenset({Cause.SELECTOR_MISMATCH.value, Cause.TAINT_UNTOLERATED.value})


def _has_enough(subject: Subject, name: str) -> bool:
    """The node would meet every GPU request of the pod were it empty (a pod asking two
    resources needs both: enough of its first alone is not enough)."""
    node = subject.rows.node(name)
    return node is not None and all(node.allocatable.get(r, 0) >= n
                                    for r, n in subject.gpu.items())


def drop_exhausted(subject: Subject, node: NodeInfo) -> str | None:
    free_gpus = subject.rows.free_gpus
    asked = _by_device_plugin(subject, node) if subject.extended_dra else subject.gpu
    for resource, request in asked.items():  # most nodes have room: no text built for them
        if free_gpus(node, resource) < request:
            break
    else:
        return None
    short = [f"{(allocatable := node.allocatable.get(resource, 0)) - free}/{allocatable} "
             f"{resource} held" for resource, request in asked.items()
             if (free := free_gpus(node, resource)) < request]
    return "; ".join(short) if short else None


def _held_by(subject: Subject, node: NodeInfo, resource: str) -> str:
    held = subject.rows.holders_on(node.name, resource)
    return first_four((p.label + (" (terminating)" if p.terminating else "") for p, _ in held),
                      len(held))


def _nominated(subject: Subject, dropped: Dropped, resource: str) -> tuple[str, str] | None:
    """The scheduler's preemption in progress: status.nominatedNodeName names one of the full
    nodes, where it evicts lower-priority pods and then binds this one. (The node, what to
    add to the action.)"""
    nominated = subject.row.nominated_node if subject.row is not None else ""
    if not nominated or all(n.name != nominated for n, _ in dropped):
        return None
    leaving = [p.label for p, _ in subject.rows.holders_on(nominated, resource)
               if p.terminating]
    return nominated, (
        f" The scheduler has nominated {nominated} for it (status.nominatedNodeName): it is "
        "preempting lower-priority pods there and binds this one when "
        + (f"{', '.join(leaving[:4])} {'have' if len(leaving) > 1 else 'has'} gone."
           if leaving else "they have gone."))


def explain_exhausted(subject: Subject, dropped: Dropped) -> Finding:
    resource = primary(subject)
    finished = []
    for node, _ in dropped[:3]:  # the nodes the action names
        finished += [p.label for p in subject.rows.pods_on(node.name)
                     if p.terminated and p.request(resource) > 0]
    done = (f" ({' and '.join(finished[:4])} "
            f"{'are finished and hold' if len(finished) > 1 else 'is finished and holds'} "
            "nothing)") if finished else ""
    alternative = next((r for r in subject.reports.where(Cause.SELECTOR_MISMATCH.value.__eq__)
                        if fits_gpu_wise(subject, subject.rows.node(r.name))), None)
    elsewhere = ""
    if alternative is not None:
        other = subject.rows.node(alternative.name)
        assert other is not None  # fits_gpu_wise found it
        elsewhere = (f", or relax {selector_text(subject.facts)}: {alternative.name} has "
                     f"{subject.rows.free_gpus(other, resource)} free")
    held = "; ".join(f"{n.name} has {why} by {_held_by(subject, n, resource)}"
                     for n, why in dropped[:3])
    evidence = [Evidence(f"Node/{n.name}", f"status.allocatable[{resource}] − requests",
                         f"{why} by {_held_by(subject, n, resource)}") for n, why in dropped[:5]]
    preempting = ""
    if (nomination := _nominated(subject, dropped, resource)) is not None:
        nominated, preempting = nomination
        evidence.append(Evidence(f"Pod {subject.label}", "status.nominatedNodeName", nominated))
    return Finding(Cause.EXHAUSTED,
                   f"{held}{done}. Wait for them to finish{elsewhere}; or add capacity."
                   f"{preempting}", evidence)


def fits_gpu_wise(subject: Subject, node: NodeInfo | None) -> bool:
    """Would the node pass the funnel's filters from taints to exhausted (the selector aside)?"""
    if node is None:
        return False
    return all(check.drop(subject, node) is None for check in subject.checks
               if isinstance(check, NodeFilter) and CAUSE_ORDER[Cause.TAINT_UNTOLERATED]
               <= CAUSE_ORDER[check.cause] <= CAUSE_ORDER[Cause.EXHAUSTED])
