"""DRA as data: the claims a pod makes, resolved, and how far a request gets on a node; with
the helpers that say it (the rows they are made of are ``scoring.dra.rows``).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from scoring.dra.capacity import CapacityFit
from scoring.dra.rows import (
    Alternative,
    ClaimRow,
    DeviceKey,
    NodeSelection,
    Request,
    SliceDevice,
)
from scoring.dra.taint_rules import RULE_FIELD
from scoring.nodes import taint_text, tolerates
from scoring.quantity import QuantityError, parse_quantity

# Per-node stages, in funnel order. CLAIM_ELSEWHERE: an allocated claim of the pod is bound
# to other nodes (the scheduler: "resourceclaim not available on the node").
CLAIM_ELSEWHERE = "claim-elsewhere"
NO_DEVICE = "no-gpu-node"
DEVICE_UNFIT = "device-unfit"
TOO_LARGE = "too-large"
EXHAUSTED = "exhausted"
UNEVALUATED = "unevaluated"
STAGES = (CLAIM_ELSEWHERE, NO_DEVICE, DEVICE_UNFIT, TOO_LARGE, EXHAUSTED)

ZERO = Decimal(0)

# Device.holder_source of DRA devices: claims' allocations say who holds each device.
DRA_HOLDERS = "dra"


@dataclass(frozen=True)
class Holder:
    """A claim that holds a device: its ``ns/name`` and the pods in its reservedFor."""

    claim: str
    pods: tuple[str, ...]

    @property
    def text(self) -> str:
        return f"claim {self.claim}" + (f" (pod {', '.join(self.pods)})" if self.pods else "")


@dataclass
class PodClaim:
    """One entry of the pod's spec.resourceClaims, resolved."""

    pod_claim: str  # the entry's name
    source: str  # "ResourceClaim ns/x", "ResourceClaimTemplate ns/t" (claim not generated yet)
    claim: ClaimRow | None = None
    template: str | None = None
    requests: list[Request] = field(default_factory=list)
    problem: str | None = None  # missing claim / template / DeviceClass, one sentence
    problem_field: str = ""
    allocated_nodes: NodeSelection | None = None  # status.allocation.nodeSelector
    allocated_devices: tuple[DeviceKey, ...] = ()
    # What the claim asks that gpuwhy does not judge: (field, what), e.g. claim constraints.
    unmodelled: list[tuple[str, str]] = field(default_factory=list)
    # The pod's extended resource this claim stands for (the claim kube-scheduler would make
    # for a limit a DeviceClass serves); None for the pod's own claims.
    extended_resource: str | None = None

    @property
    def label(self) -> str:
        return self.source.split(" ", 1)[1] if " " in self.source else self.source


@dataclass
class RequestOutcome:
    request: Request
    stage: str | None  # a STAGES word, UNEVALUATED, or None when it fits
    detail: str = ""
    alternative: Alternative | None = None
    candidates: list[SliceDevice] = field(default_factory=list)  # of the class
    matching: list[SliceDevice] = field(default_factory=list)  # of the class, meeting selectors
    holders: list[tuple[SliceDevice, Holder]] = field(default_factory=list)
    # matching devices a taint keeps the request off, with the taints
    tainted: list[tuple[SliceDevice, list[str]]] = field(default_factory=list)
    # matching devices judged for the request's capacity (see scoring.dra.capacity)
    capacity: list[tuple[SliceDevice, CapacityFit]] = field(default_factory=list)
    # every alternative tried on the node, in order, up to the first that fits
    tried: list[RequestOutcome] = field(default_factory=list)


@dataclass
class NodeFit:
    """How far the pod's claims get on one node, with what "show devices" lists."""

    node: str
    stage: str | None  # first failing stage of all requests; None = fits
    detail: str = ""
    gpu: bool = True  # False when only non-GPU requests fail there
    requests: list[RequestOutcome] = field(default_factory=list)
    published: list[SliceDevice] = field(default_factory=list)  # the devices the node can use
    unevaluated: list[str] = field(default_factory=list)


def assign(outcomes: list[RequestOutcome],
            usable: Any) -> tuple[int, int] | None:
    """Kuhn's matching of request units to distinct devices; (needed, got) when short."""
    units = []
    for outcome in outcomes:
        alternative = outcome.alternative
        eligible = [d.key for d in outcome.matching if usable(outcome, d)]
        count = len(outcome.matching) if alternative and alternative.mode == "All" else (
            alternative.count if alternative else 0)
        units += [eligible] * count
    owner: dict[DeviceKey, int] = {}

    def place(unit: int, seen: set[DeviceKey]) -> bool:
        for key in units[unit]:
            if key in seen:
                continue
            seen.add(key)
            if key not in owner or place(owner[key], seen):
                owner[key] = unit
                return True
        return False

    placed = sum(place(unit, set()) for unit in range(len(units)))
    return None if placed == len(units) else (len(units), placed)


def untolerated_device_taints(device: SliceDevice, alternative: Alternative) -> list[str]:
    """The device's blocking taints this request does not tolerate, as ``key=value:effect``;
    a toleration matches as a pod's does a node taint."""
    tolerations = list(alternative.tolerations)
    return [taint_text(t) + (f" (DeviceTaintRule {t[RULE_FIELD]})" if t.get(RULE_FIELD) else "")
            for t in device.taints if not tolerates(tolerations, t)]


def allocated_node_names(claim: PodClaim) -> list[str]:
    """The nodes an allocated claim is bound to, when its node selector names them."""
    return list(claim.allocated_nodes.names) if claim.allocated_nodes is not None else []


def holders_text(held: list[tuple[SliceDevice, Holder]]) -> str:
    by_holder: dict[Holder, list[str]] = defaultdict(list)
    for device, holder in held:
        by_holder[holder].append(device.name)
    return ", ".join(f"{holder.text}: {','.join(names)}" for holder, names in by_holder.items())


def products(devices: list[SliceDevice]) -> str:
    """"4 × NVIDIA A100-SXM4-80GB, memory 80Gi; 2 × NVIDIA L4": the devices by kind."""
    seen: dict[str, list[SliceDevice]] = defaultdict(list)
    for device in devices:
        seen[f"{device.product}{', memory ' + device.memory if device.memory else ''}"].append(
            device)
    return "; ".join(f"{len(d)} × {text}" for text, d in seen.items())


def mib(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        return int(parse_quantity(text) / Decimal(2 ** 20))
    except QuantityError:
        return None
