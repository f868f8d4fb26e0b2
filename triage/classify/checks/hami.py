"""HAMi's device fit: GPU slots exist, but does any device set meet the memory / cores asked?"""

from __future__ import annotations

from collections import Counter

from scoring.hami import (
    CARD_COMPUTE_UNITS_EXHAUSTED,
    CARD_CORDONED,
    CARD_INSUFFICIENT_CORE,
    CARD_INSUFFICIENT_MEMORY,
    CARD_NOT_HEALTH,
    CARD_TIME_SLICING_EXHAUSTED,
    CARD_TYPE_MISMATCH,
    CARD_UUID_MISMATCH,
    EXCLUSIVE_DEVICE_ALLOCATE_CONFLICT,
    NODE_INSUFFICIENT_DEVICE,
    NUMA_NOT_FIT,
    HamiNodeFit,
    HamiRequest,
)
from scoring.nodetable import NodeInfo
from scoring.verdict import Evidence
from triage.classify.subject import Dropped, Finding, Subject
from triage.vocabulary import NODE_UNREGISTERED, Cause


def drop_device_unfit(subject: Subject, node: NodeInfo) -> str | None:
    if subject.hami is None:
        return None
    fit = hami_fit(subject, node)
    if fit is None:
        return NODE_UNREGISTERED
    return None if fit.fits else fit.reason


def hami_fit(subject: Subject, node: NodeInfo) -> HamiNodeFit | None:
    """HAMi's fit of the pod on the node (None: not registered with HAMi), computed once."""
    name = node.name
    if name not in subject.hami_fits:
        if subject.hami is None or subject.row is None:
            subject.hami_fits[name] = None
        else:  # a bound pod is judged with the usage before it
            subject.hami_fits[name] = subject.rows.hami_fit(
                node, subject.hami, subject.row.key if subject.facts.node == name else None)
    return subject.hami_fits[name]


def explain_device_unfit(subject: Subject, dropped: Dropped) -> Finding:
    request = subject.hami
    asked = _hami_text(request)
    per_node = "; ".join(f"{n.name}: {why}" for n, why in dropped[:4])
    unregistered = [n.name for n, why in dropped if why == NODE_UNREGISTERED]
    hint = (f" {', '.join(unregistered)} {'is' if len(unregistered) == 1 else 'are'} not "
            "registered with HAMi (check hami-device-plugin there)." if unregistered else "")
    return Finding(Cause.DEVICE_UNFIT,
                   f"whole-GPU slots exist, but no device fits {asked}: {per_node}.{hint}"
                   + (f" {advice}" if (advice := _advice(dropped) or (
                       "" if unregistered else _CAPACITY)) else ""),
                   [Evidence(f"Node/{n.name}", "hami.io/node-nvidia-register", why)
                    for n, why in dropped[:5]])


_CAPACITY = ("Lower the memory / cores request, or wait for the holders to finish (show "
             "devices lists them).")
# What each HAMi code asks of the user, in HAMi's order of checks (which breaks ties).
_ADVICE = {
    NODE_INSUFFICIENT_DEVICE: "Ask for fewer cards per pod (nvidia.com/gpu) than a node has.",
    CARD_NOT_HEALTH: "Repair the unhealthy cards (hami-device-plugin reports them).",
    CARD_CORDONED: "Uncordon the cards (hami.io/device-cordon on the node).",
    CARD_TYPE_MISMATCH: ("Change the card type filter (nvidia.com/use-gputype / nouse-gputype), "
                         "or run it where such cards are."),
    NUMA_NOT_FIT: "Drop nvidia.com/numa-bind, or ask for fewer cards.",
    CARD_UUID_MISMATCH: "Fix the card filter (nvidia.com/use-gpuuuid / nouse-gpuuuid).",
    CARD_TIME_SLICING_EXHAUSTED: _CAPACITY,
    EXCLUSIVE_DEVICE_ALLOCATE_CONFLICT: _CAPACITY,
    CARD_INSUFFICIENT_MEMORY: _CAPACITY,
    CARD_INSUFFICIENT_CORE: _CAPACITY,
    CARD_COMPUTE_UNITS_EXHAUSTED: _CAPACITY,
}


def _advice(dropped: Dropped) -> str | None:
    """The next action the codes call for most: each code weighs as many cards as it names
    ("2/4 CardInsufficientMemory": 2), a node-wide code one card."""
    weights: dict[str, int] = {}
    # nodes alike share a reason string ("node unregistered" on thousands): parse each once
    for why, nodes in Counter(why for _, why in dropped).items():
        for part in why.split(", "):
            count, _, code = part.partition(" ")
            amount = int(count.split("/")[0]) if code and count.split("/")[0].isdigit() else 1
            advice = _ADVICE.get(code or part)
            if advice is not None:
                weights[advice] = weights.get(advice, 0) + amount * nodes
    if not weights:
        return None  # no code gpuwhy knows (only unregistered nodes, say)
    order = list(dict.fromkeys(_ADVICE.values()))
    return max(weights, key=lambda advice: (weights[advice], -order.index(advice)))


def _hami_text(request: HamiRequest | None) -> str:
    if request is None:
        return "the request"
    memory = (f"{request.mem} MiB" if request.mem is not None else
              f"{request.mem_percentage}% memory" if request.mem_percentage is not None else
              "a whole card's memory")
    return f"{request.count} card(s) × {memory} / {request.cores} cores"
