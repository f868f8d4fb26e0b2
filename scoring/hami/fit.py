"""Whether a HAMi request fits a node, card by card, with HAMi's codes and scores.

Mirrors HAMi's scheduler extender (``pkg/device/nvidia`` Fit, ``pkg/scheduler/score.go``,
``pkg/scheduler/policy``); the function docstrings say where gpuwhy deliberately differs.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from itertools import compress
from typing import TypeVar

from scoring.hami.formats import (
    CARD_COMPUTE_UNITS_EXHAUSTED,
    CARD_CORDONED,
    CARD_INSUFFICIENT_CORE,
    CARD_INSUFFICIENT_MEMORY,
    CARD_NOT_HEALTH,
    CARD_TIME_SLICING_EXHAUSTED,
    CARD_TYPE_MISMATCH,
    CARD_UUID_MISMATCH,
    EXCLUSIVE_DEVICE_ALLOCATE_CONFLICT,
    FULL_CARD_CORES,
    NODE_INSUFFICIENT_DEVICE,
    NODE_UNREGISTERED,
    NUMA_NOT_FIT,
    NVIDIA_TYPE_WORD,
    SCORE_WEIGHT,
    HamiDevice,
    Registration,
    gpu_binpack,
)
from scoring.hami.request import HamiRequest
from scoring.hami.usage import Usage
from scoring.verdict import Device

# -- the fit -----------------------------------------------------------------------------------


@dataclass
class HamiNodeFit:
    registered: bool
    fits: bool
    reason: str  # "" when it fits; HAMi's reason string otherwise
    score: float | None = None  # HAMi's node score before this pod, when it fits
    chosen: list[str] = field(default_factory=list)  # UUIDs HAMi would pick, in its order
    # The cards as judged, each with its code; ``devices`` are made of them when asked: an
    # answer judges every node of a HAMi pool but describes only the first ones.
    cards: list[_CardState] = field(default_factory=list, repr=False)
    codes: list[str | None] = field(default_factory=list, repr=False)

    @property
    def devices(self) -> list[Device]:
        """New rows on every read: one fit serves every answer of its snapshot that asks
        alike (``Rows.hami_fit``), and an answer writes its node's outcome into them."""
        return _devices(self.cards, self.codes)


@dataclass(frozen=True)
class _CardState:
    device: HamiDevice
    usage: Usage


_Check = Callable[[_CardState, HamiRequest, frozenset[str]], bool]  # True = fails


def _unhealthy(card: _CardState, request: HamiRequest, cordoned: frozenset[str]) -> bool:
    return not card.device.health


def _cordoned(card: _CardState, request: HamiRequest, cordoned: frozenset[str]) -> bool:
    return card.device.uuid in cordoned


def _type_mismatch(card: _CardState, request: HamiRequest, cordoned: frozenset[str]) -> bool:
    card_type = card.device.type.upper()
    if request.use_types is not None and not any(t.upper() in card_type
                                                 for t in request.use_types):
        return True
    if request.nouse_types is not None and any(t.upper() in card_type
                                               for t in request.nouse_types):
        return True
    return request.vgpu_mode is not None and card.device.mode not in request.vgpu_mode


def _uuid_mismatch(card: _CardState, request: HamiRequest, cordoned: frozenset[str]) -> bool:
    if request.use_uuids is not None:
        return card.device.uuid not in request.use_uuids
    return request.nouse_uuids is not None and card.device.uuid in request.nouse_uuids


def _time_slicing_exhausted(card: _CardState, request: HamiRequest,
                            cordoned: frozenset[str]) -> bool:
    return card.device.count <= card.usage.used


def _mutex_conflict(card: _CardState, request: HamiRequest, cordoned: frozenset[str]) -> bool:
    return request.mutex and card.usage.used > 0


def _insufficient_memory(card: _CardState, request: HamiRequest,
                         cordoned: frozenset[str]) -> bool:
    return card.device.devmem - card.usage.usedmem < request.memory_on(card.device.devmem)


def _insufficient_core(card: _CardState, request: HamiRequest, cordoned: frozenset[str]) -> bool:
    return card.device.devcore - card.usage.usedcores < request.cores


def _exclusive_conflict(card: _CardState, request: HamiRequest,
                        cordoned: frozenset[str]) -> bool:
    return (card.device.devcore == FULL_CARD_CORES and request.cores == FULL_CARD_CORES
            and card.usage.used > 0)


def _compute_exhausted(card: _CardState, request: HamiRequest, cordoned: frozenset[str]) -> bool:
    return (card.device.devcore != 0 and card.usage.usedcores == card.device.devcore
            and request.cores == 0)


# HAMi's order. The NUMA run check sits between the two lists (see ``_walk``).
_BEFORE_NUMA: tuple[tuple[str, _Check], ...] = (
    (CARD_NOT_HEALTH, _unhealthy),
    (CARD_CORDONED, _cordoned),
    (CARD_TYPE_MISMATCH, _type_mismatch),
)
_AFTER_NUMA: tuple[tuple[str, _Check], ...] = (
    (CARD_UUID_MISMATCH, _uuid_mismatch),
    (CARD_TIME_SLICING_EXHAUSTED, _time_slicing_exhausted),
    (EXCLUSIVE_DEVICE_ALLOCATE_CONFLICT, _mutex_conflict),
    (CARD_INSUFFICIENT_MEMORY, _insufficient_memory),
    (CARD_INSUFFICIENT_CORE, _insufficient_core),
    (EXCLUSIVE_DEVICE_ALLOCATE_CONFLICT, _exclusive_conflict),
    (CARD_COMPUTE_UNITS_EXHAUSTED, _compute_exhausted),
)


def _first_failure(checks: tuple[tuple[str, _Check], ...], card: _CardState,
                   request: HamiRequest, cordoned: frozenset[str]) -> str | None:
    for code, fails in checks:
        if fails(card, request, cordoned):
            return code
    return None


def fit_registered(registration: Registration, usage: Mapping[str, Usage],
                   request: HamiRequest) -> HamiNodeFit:
    """Would HAMi place ``request`` on this node, and if not, HAMi's reason string.

    ``registration`` is the node's, decoded once (``NodeInfo.hami_registration``); ``usage``
    its cards' usage summed over its pods' rows (``scoring.hami.usage``), leaving out the
    pod being placed, so a bound pod is judged with the usage before it.
    Every device carries its own first failing code, also on a node that fits (a card
    that fits carries None, also when too few fit: the reason string counts only the
    codes of reference/hami.md). A card picked and then given up for another NUMA node
    counts as ``NumaNotFit``, one per card.
    """
    if not registration.registered:
        return HamiNodeFit(registered=False, fits=False, reason=NODE_UNREGISTERED)
    cards = [_CardState(d, usage.get(d.uuid) or _UNUSED) for d in registration.devices
             if NVIDIA_TYPE_WORD in d.type]
    cordoned = registration.cordoned
    before = cards
    shown: list[str | None] | None = None  # the first container's codes, shown when it fits
    chosen: list[str] = []
    for ask in request.each_ask:
        # per card: its first failure before the NUMA run check, else after it
        early = [_first_failure(_BEFORE_NUMA, c, ask, cordoned) for c in cards]
        codes = [code or _first_failure(_AFTER_NUMA, c, ask, cordoned)
                 for c, code in zip(cards, early, strict=True)]
        if ask.count > len(cards):
            return HamiNodeFit(registered=True, fits=False, reason=NODE_INSUFFICIENT_DEVICE,
                               cards=cards, codes=codes)
        picked, given_up = _walk(cards, _try_order(cards, ask), ask, early, codes)
        if len(picked) < ask.count:
            for position in given_up:
                codes[position] = NUMA_NOT_FIT
            reason = node_reason((c for c in codes if c is not None), total=len(cards))
            return HamiNodeFit(registered=True, fits=False, reason=reason,
                               cards=cards, codes=codes)
        shown = codes if shown is None else shown
        chosen += [cards[i].device.uuid for i in picked]
        cards = [_with_ask(card, ask) if i in picked else card for i, card in enumerate(cards)]
    return HamiNodeFit(registered=True, fits=True, reason="", score=_node_score(before),
                       chosen=chosen, cards=before, codes=shown or [None] * len(before))


_UNUSED = Usage()  # a card no pod holds (read only: ``_with_ask`` makes a new Usage)


def _with_ask(card: _CardState, ask: HamiRequest) -> _CardState:
    """The card once a container has taken its share of it."""
    usage = card.usage
    return _CardState(card.device, Usage(usage.used + 1,
                                         usage.usedmem + ask.memory_on(card.device.devmem),
                                         usage.usedcores + ask.cores, list(usage.holders)))


def _walk(cards: list[_CardState], order: list[int], request: HamiRequest,
          early: list[str | None], codes: list[str | None]) -> tuple[list[int], list[int]]:
    """HAMi's pass over the cards: (positions picked, positions picked then dropped).

    ``early`` holds each card's failure before the NUMA run check, ``codes`` its first
    failure at all. With numa-bind a run of cards must share one NUMA node: a card on
    another node starts the run over, and the cards picked so far no longer count.
    """
    picked: list[int] = []
    given_up: list[int] = []
    run_numa: int | None = None
    if request.count == 0:
        return picked, given_up
    for position in order:
        card = cards[position]
        if early[position]:
            continue
        if request.numa_bind and card.device.numa != run_numa:
            given_up += picked
            picked = []
            run_numa = card.device.numa
        if codes[position]:
            continue
        picked.append(position)
        if len(picked) == request.count:
            break
    return picked, given_up


def _try_order(cards: list[_CardState], request: HamiRequest) -> list[int]:
    """Card positions in the order HAMi tries them under the pod's GPU policy.

    HAMi sorts by (NUMA, card score with this request) and walks the list from the end:
    spread tries the least used card first (highest NUMA node first), binpack the most used
    (lowest NUMA node first). Ties keep registration order before the reversal, as Go's
    insertion sort does for lists this short.
    """
    scores = [_card_score(card, request) for card in cards]
    numa = [card.device.numa for card in cards]
    if gpu_binpack(request.gpu_policy):
        ranked = sorted(range(len(cards)), key=lambda i: (-numa[i], scores[i]))
    else:
        ranked = sorted(range(len(cards)), key=lambda i: (numa[i], -scores[i]))
    return ranked[::-1]


def _card_score(card: _CardState, request: HamiRequest) -> float:
    """HAMi's per-card score with the request added (``DeviceListsScore.ComputeScore``)."""
    device = card.device
    if request.mem_percentage not in (None, 0):
        # Go divides the int32 percentage by 100 before multiplying: 50 % counts as 0.
        memory = device.devmem * ((request.mem_percentage or 0) // 100)
    else:
        memory = request.mem or 0
    return SCORE_WEIGHT * (_share(request.count + card.usage.used, device.count)
                           + _share(request.cores + card.usage.usedcores, device.devcore)
                           + _share(memory + card.usage.usedmem, device.devmem))


def _node_score(cards: Iterable[_CardState]) -> float:
    """HAMi's default node score: 10 × (Σused/Σcount + Σcores/Σtotal + Σmem/Σtotal)."""
    cards = list(cards)
    return SCORE_WEIGHT * (
        _share(sum(c.usage.used for c in cards), sum(c.device.count for c in cards))
        + _share(sum(c.usage.usedcores for c in cards), sum(c.device.devcore for c in cards))
        + _share(sum(c.usage.usedmem for c in cards), sum(c.device.devmem for c in cards)))


def node_reason(codes: Iterable[str], total: int) -> str:
    """``"%d/%d %s"`` per code over ``total`` cards, joined by ", ", sorted as strings."""
    return ", ".join(sorted(f"{n}/{total} {code}" for code, n in Counter(codes).items()))


# Device.holder_source of HAMi's devices: its allocation annotations say who holds each card.
HAMI_HOLDERS = "hami"


def pick_order(scores: Mapping[str, float], policy: str | None,
               first: int | None = None) -> list[str]:
    """Nodes in the order HAMi prefers them: spread lowest score first, otherwise
    (binpack, HAMi's default for any other value) highest first; ties by name. ``first``:
    only that many (without sorting 100,000 nodes for a summary's five)."""
    if first is None:
        return sorted(scores, key=partial(_pick_key, scores, 1 if policy == "spread" else -1))
    return pick_first(list(scores), list(scores.values()), policy, first)


Picked = TypeVar("Picked", str, int)


def pick_first(keys: Sequence[Picked], values: Sequence[float], policy: str | None,
               first: int) -> list[Picked]:
    """The first ``first`` of ``keys`` (node names, or places in the node table, which is by
    name) in ``pick_order``'s order of their ``values``: the best scores first, each one's
    keys smallest first (100,000 nodes have a few scores: no sort of them all)."""
    picked: list[Picked] = []
    for value in sorted(set(values), reverse=policy != "spread"):
        if len(picked) >= first:
            break
        picked += heapq.nsmallest(first - len(picked), compress(keys, map(value.__eq__, values)))
    return picked


def _pick_key(scores: Mapping[str, float], sign: int, name: str) -> tuple[float, str]:
    return sign * scores[name], name


def _devices(cards: list[_CardState], codes: list[str | None]) -> list[Device]:
    return [Device(uuid=c.device.uuid, index=c.device.index, type=c.device.type,
                   memory_used=c.usage.usedmem, memory_total=c.device.devmem,
                   cores_used=c.usage.usedcores, cores_total=c.device.devcore,
                   numa=c.device.numa, healthy=c.device.health, holders=list(c.usage.holders),
                   code=code, holder_source=HAMI_HOLDERS)
            for c, code in zip(cards, codes, strict=True)]



def _share(part: int, whole: int) -> float:
    return part / whole if whole else 0.0

