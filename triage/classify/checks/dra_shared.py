"""Answers for DRA requests of consumable capacity (shared devices, DRAConsumableCapacity):
the request breaks a device's request policy (device-unfit), is larger than any matching
device's capacity (too-large), or the claims sharing the devices leave too little of it
(exhausted: name them, and what is left). ``scoring.dra.capacity`` judges each device; the
DRA checks hand their failing nodes here when capacity decided them."""

from __future__ import annotations

from decimal import Decimal

from scoring.dra import PodClaim, RequestOutcome, SliceDevice
from scoring.dra.capacity import (
    LACKS,
    REFUSED,
    TOO_SMALL,
    USED_UP,
    CapacityFit,
    quantity_text,
)
from scoring.nodetable import NodeInfo
from scoring.verdict import Evidence
from triage.classify.subject import Finding, Subject, first_four
from triage.vocabulary import Cause

Failing = list[tuple[NodeInfo, RequestOutcome]]


def _judged(failing: Failing, failures: tuple[str, ...]
            ) -> list[tuple[NodeInfo, SliceDevice, CapacityFit]]:
    return [(node, device, fit) for node, outcome in failing for device, fit in outcome.capacity
            if fit.failure in failures]


def _asked(outcome: RequestOutcome) -> str:
    alternative = outcome.alternative
    asked = alternative.capacity if alternative is not None else ()
    return ", ".join(f"{name} {quantity_text(value)}" for name, value in asked) or (
        "its policy default")


def _evidence(source: str, outcome: RequestOutcome) -> Evidence:
    prefix = "spec." if source.startswith("ResourceClaimTemplate") else ""
    alternative = outcome.alternative
    where = (f"firstAvailable[{alternative.label.split('/', 1)[1]}]"
             if alternative is not None and "/" in alternative.label else "exactly")
    return Evidence(source.split(" (from", 1)[0],
                    f"{prefix}spec.devices.requests[{outcome.request.name}].{where}"
                    ".capacity.requests", _asked(outcome))


def explain_capacity_unfit(failing: Failing, source: str) -> Finding | None:
    """The devices that meet the selectors lack the capacity asked or their policy refuses
    the amount (on nodes where none meets the selectors, those came less far)."""
    judged = _judged(failing, (LACKS, REFUSED))
    if not judged:
        return None
    first = next(o for _, o in failing if o.capacity)
    per_device = "; ".join(f"{node.name}/{device.name}: {fit.detail}"
                           + ("" if fit.failure == LACKS else _free_note(fit))
                           for node, device, fit in judged[:4])
    return Finding(Cause.DEVICE_UNFIT,
                   f"{source} asks {_asked(first)} of a shared device, and no device it could "
                   f"use takes that amount: {per_device}. The allocator rounds a request up to "
                   "a valid amount, never beyond the largest: ask for an amount the policy "
                   "admits, or use devices whose policy does.",
                   [_evidence(source, first)]
                   + [Evidence(f"ResourceSlice {device.slice}",
                               f"spec.devices[{device.name}].capacity", fit.detail)
                      for _, device, fit in judged[:4]])


def _free_note(fit: CapacityFit) -> str:
    used = sum(fit.used.values(), Decimal(0))
    return (" (it is free: nothing consumed)" if not used
            else f" ({', '.join(s.claim for s in fit.shares)} share it)")


def explain_capacity_too_large(failing: Failing, source: str) -> Finding | None:
    judged = _judged(failing, (TOO_SMALL,))
    if not judged:
        return None
    first = failing[0][1]
    name = first.alternative.capacity[0][0] if first.alternative and \
        first.alternative.capacity else "memory"
    sizes = sorted(((fit.totals.get(name, Decimal(0)), f"{node.name}/{device.name}")
                    for node, device, fit in judged), reverse=True)
    largest = sizes[0][0]
    biggest = ", ".join(where for size, where in sizes if size == largest)
    smaller = [f"{where} {quantity_text(size)}" for size, where in sizes if size != largest]
    others = first_four(smaller, len(smaller))
    return Finding(Cause.TOO_LARGE,
                   f"{source} asks {_asked(first)} of one device; the largest {name} capacity "
                   f"of a device it could use is {quantity_text(largest)} ({biggest}"
                   f"{'; ' + others if others else ''}), even if all were free. Ask for less, "
                   "or get devices that large; waiting never helps.",
                   [_evidence(source, first)]
                   + [Evidence(f"ResourceSlice {device.slice}",
                               f"spec.devices[{device.name}].capacity", fit.detail)
                      for _, device, fit in judged[:5]])


def explain_capacity_exhausted(failing: Failing, source: str) -> Finding | None:
    judged = _judged(failing, (USED_UP,))
    if not judged:
        return None
    first = failing[0][1]
    parts, evidence = [], [_evidence(source, first)]
    for node, device, fit in judged[:3]:
        name = next((n for n, v in fit.consumed.items() if fit.left(n) < v), "memory")
        sharers = " and ".join(f"{s.claim} ({', '.join(p.split('/', 1)[1] for p in s.pods)})"
                               if s.pods else s.claim for s in fit.shares)
        parts.append(f"{node.name}/{device.name} ({name} {quantity_text(fit.totals[name])}) has "
                     f"{quantity_text(fit.used.get(name, Decimal(0)))} consumed by {sharers}: "
                     f"{quantity_text(fit.left(name))} left, {quantity_text(fit.consumed[name])} "
                     "needed")
        evidence += [Evidence(f"ResourceClaim {s.claim}",
                              "status.allocation.devices.results[].consumedCapacity",
                              ", ".join(f"{n} {quantity_text(v)}" for n, v in s.consumed.items())
                              + f" of {device.pool}/{device.name}") for s in fit.shares[:3]]
    return Finding(Cause.EXHAUSTED,
                   f"{source} asks {_asked(first)} of a shared device: {'; '.join(parts)}. Wait "
                   "for a sharing claim to be released, ask for less, or add devices.",
                   evidence[:6])


def shared_allocation_note(subject: Subject, claim: PodClaim) -> str:
    """What an allocated claim consumes of shared devices, and who shares them: "; consumed
    memory 40Gi of gpu-0 (asked 35Gi), shared with infer/chat-a-gpu-rxw97"."""
    assert subject.dra is not None
    results = claim.claim.results if claim.claim is not None else ()
    asked = ", ".join(f"{name} {quantity_text(value)}" for request in claim.requests
                      for alternative in request.alternatives
                      for name, value in alternative.capacity)
    notes = []
    for result in results:
        if result.consumed is None:
            continue
        key = result.device
        consumed = ", ".join(f"{name} {quantity_text(value)}"
                             for name, value in result.consumed.items())
        others = [s.claim for s in subject.dra.inventory.shared_usage.shares(key)
                  if s.claim != claim.label]
        notes.append(f"consumed {consumed} of {key[2]}" + (f" (asked {asked})" if asked else "")
                     + (f", shared with {', '.join(others)}" if others else ""))
    return "".join(f"; {note}" for note in notes)
