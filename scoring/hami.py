"""HAMi's view of a node: registered devices, their usage, and whether a pod's request fits.

Everything here mirrors HAMi's scheduler extender (``pkg/device/nvidia`` Fit,
``pkg/scheduler/score.go``, ``pkg/scheduler/policy``) closely enough to give the same
codes and the same reason strings, computed from the objects alone. Formats are described
in the HAMi reference notes; the function docstrings say where gpuwhy deliberately differs.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from triage.objects import is_terminated
from triage.quantity import QuantityError, parse_quantity
from triage.verdict import Device

REGISTER_KEYS = ("hami.io/node-nvidia-register", "4pd.io/node-nvidia-register")
HANDSHAKE_KEYS = ("hami.io/node-handshake", "4pd.io/node-handshake")
CORDON_KEY = "hami.io/device-cordon"

ASSIGNED_NODE_KEY = "hami.io/vgpu-node"
ALLOCATED_KEY = "hami.io/vgpu-devices-allocated"
TO_ALLOCATE_KEY = "hami.io/vgpu-devices-to-allocate"

COUNT_RESOURCE = "nvidia.com/gpu"
MEMORY_RESOURCE = "nvidia.com/gpumem"
MEMORY_PERCENTAGE_RESOURCE = "nvidia.com/gpumem-percentage"
CORES_RESOURCE = "nvidia.com/gpucores"
SHARING_RESOURCES = (MEMORY_RESOURCE, MEMORY_PERCENTAGE_RESOURCE, CORES_RESOURCE)
HAMI_SCHEDULER = "hami-scheduler"

USE_TYPE_KEY = "nvidia.com/use-gputype"
NOUSE_TYPE_KEY = "nvidia.com/nouse-gputype"
USE_UUID_KEY = "nvidia.com/use-gpuuuid"
NOUSE_UUID_KEY = "nvidia.com/nouse-gpuuuid"
NUMA_BIND_KEY = "nvidia.com/numa-bind"
VGPU_MODE_KEY = "nvidia.com/vgpu-mode"
NODE_POLICY_KEY = "hami.io/node-scheduler-policy"
GPU_POLICY_KEY = "hami.io/gpu-scheduler-policy"

NVIDIA_TYPE_WORD = "NVIDIA"  # HAMi only offers devices whose type contains this to NVIDIA requests
FULL_CARD_CORES = 100
SCORE_WEIGHT = 10

NODE_UNREGISTERED = "node unregistered"

# HAMi's codes. A device gets the first that fails; the node reason counts them.
CARD_NOT_HEALTH = "CardNotHealth"
CARD_CORDONED = "CardCordoned"
CARD_TYPE_MISMATCH = "CardTypeMismatch"
NUMA_NOT_FIT = "NumaNotFit"
CARD_UUID_MISMATCH = "CardUuidMismatch"
CARD_TIME_SLICING_EXHAUSTED = "CardTimeSlicingExhausted"
EXCLUSIVE_DEVICE_ALLOCATE_CONFLICT = "ExclusiveDeviceAllocateConflict"
CARD_INSUFFICIENT_MEMORY = "CardInsufficientMemory"
CARD_INSUFFICIENT_CORE = "CardInsufficientCore"
CARD_COMPUTE_UNITS_EXHAUSTED = "CardComputeUnitsExhausted"
# HAMi itself reports this for cards that fit when too few do; it is read in its texts, while
# gpuwhy follows reference/hami.md and gives such cards no code.
ALLOCATED_CARDS_INSUFFICIENT_REQUEST = "AllocatedCardsInsufficientRequest"
NODE_INSUFFICIENT_DEVICE = "NodeInsufficientDevice"

DEVICE_CODES = (
    CARD_NOT_HEALTH, CARD_CORDONED, CARD_TYPE_MISMATCH, NUMA_NOT_FIT, CARD_UUID_MISMATCH,
    CARD_TIME_SLICING_EXHAUSTED, EXCLUSIVE_DEVICE_ALLOCATE_CONFLICT, CARD_INSUFFICIENT_MEMORY,
    CARD_INSUFFICIENT_CORE, CARD_COMPUTE_UNITS_EXHAUSTED, ALLOCATED_CARDS_INSUFFICIENT_REQUEST,
)
ALL_CODES = (*DEVICE_CODES, NODE_INSUFFICIENT_DEVICE)

_GO_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_GO_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})


# -- node registration ------------------------------------------------------------------


@dataclass
class HamiDevice:
    uuid: str
    index: int
    count: int  # how many tasks may share the card
    devmem: int  # MiB
    devcore: int  # 100 = a whole card
    type: str
    numa: int
    mode: str
    health: bool


@dataclass
class Registration:
    devices: list[HamiDevice]
    registered: bool
    problem: str | None = None  # one line: an odd annotation, or a Deleted_ handshake


def parse_registration(node: Mapping[str, Any]) -> Registration | None:
    """The node's HAMi devices; None when no register annotation exists (not HAMi-managed).

    A value HAMi cannot decode leaves the node out of HAMi's cache, so it is reported as
    not registered, with the problem in one line; nothing here raises. The handshake's age
    is not judged: since v2.8 HAMi checks NVIDIA nodes through status.allocatable, so an old
    ``Requesting_`` stamp is harmless, and a pure function has no clock to judge it by.
    """
    annotations = _annotations(node)
    key = next((k for k in REGISTER_KEYS if k in annotations), None)
    if key is None:
        return None
    value = str(annotations[key])
    if value.lstrip().startswith("["):
        devices, problem = _decode_json_devices(value)
    else:
        devices, problem = _decode_colon_devices(value)
    if devices is None:
        return Registration(devices=[], registered=False, problem=f"{key}: {problem}")
    if not devices:
        return Registration(devices=[], registered=False, problem=f"{key}: no devices listed")
    handshake = next((str(annotations[k]) for k in HANDSHAKE_KEYS if k in annotations), "")
    if handshake.startswith("Deleted_"):
        return Registration(devices=devices, registered=False,
                            problem=f"handshake is {handshake!r}: HAMi dropped this node's devices")
    return Registration(devices=devices, registered=True,
                        problem=f"{key}: {problem}" if problem else None)


def _decode_json_devices(value: str) -> tuple[list[HamiDevice] | None, str | None]:
    """v2.8+ JSON: fields equal to zero/false are omitted, so a missing ``health`` is False."""
    try:
        items = json.loads(value)
    except json.JSONDecodeError as exc:
        return None, f"not valid JSON ({exc.msg} at position {exc.pos})"
    if not isinstance(items, list):
        return None, "JSON value is not a list of devices"
    devices: list[HamiDevice] = []
    for position, item in enumerate(items):
        if not isinstance(item, dict):
            return None, f"device {position} is not a JSON object"
        numbers = {name: item.get(name, 0) for name in ("index", "count", "devmem", "devcore",
                                                        "numa")}
        texts = {name: item.get(name, "") for name in ("id", "type", "mode")}
        health = item.get("health", False)
        wrong = [name for name, number in numbers.items()
                 if isinstance(number, bool) or not isinstance(number, int)]
        wrong += [name for name, text in texts.items() if not isinstance(text, str)]
        wrong += [] if isinstance(health, bool) else ["health"]
        if wrong:
            return None, f"device {position} has a field of the wrong type: {', '.join(wrong)}"
        devices.append(HamiDevice(
            uuid=texts["id"], index=numbers["index"], count=numbers["count"],
            devmem=numbers["devmem"], devcore=numbers["devcore"], type=texts["type"],
            numa=numbers["numa"], mode=texts["mode"], health=health))
    return devices, None


def _decode_colon_devices(value: str) -> tuple[list[HamiDevice] | None, str | None]:
    """v2.5–2.7 ``UUID,count,devmem,devcore,type,numa,health,index,mode:`` and the 7-field
    form of v2.4 and before (no index or mode: HAMi leaves index 0; gpuwhy numbers the cards
    in registration order so the device table stays readable)."""
    if ":" not in value:
        return None, "neither JSON nor the colon-separated device list"
    devices: list[HamiDevice] = []
    unreadable: list[str] = []
    for entry in value.split(":"):
        if "," not in entry:
            continue  # the trailing ':' leaves an empty entry
        fields = entry.split(",")
        if len(fields) not in (7, 9):
            return None, f"device {len(devices)} has {len(fields)} fields (expected 7 or 9)"
        position = len(devices)

        def number(text: str, name: str, position: int = position) -> int:
            # HAMi ignores the parse error and reads 0; do the same, but say so.
            try:
                return int(text)
            except ValueError:
                unreadable.append(f"device {position} {name} {text!r}")
                return 0

        health_text = fields[6]
        if health_text not in _GO_TRUE | _GO_FALSE:
            unreadable.append(f"device {position} health {health_text!r}")
        devices.append(HamiDevice(
            uuid=fields[0], count=number(fields[1], "count"), devmem=number(fields[2], "devmem"),
            devcore=number(fields[3], "devcore"), type=fields[4],
            numa=number(fields[5], "numa"), health=health_text in _GO_TRUE,
            index=number(fields[7], "index") if len(fields) == 9 else position,
            mode=fields[8] if len(fields) == 9 else "hami-core"))
    problem = None
    if unreadable:
        problem = "unreadable values read as 0/false like HAMi does: " + "; ".join(unreadable)
    return devices, problem


# -- pod allocations and device usage -------------------------------------------------------

AllocatedDevice = tuple[str, str, int, int]  # uuid, type, memory MiB, cores


def parse_allocation(value: str) -> list[list[AllocatedDevice]]:
    """Per container (init containers first), the devices HAMi allocated.

    ``;`` ends a container's entry and ``:`` a device's, so ``"GPU-a,NVIDIA,3000,30:;;"``
    is one container with GPU-a and one with none. A device entry that cannot be read is
    skipped (HAMi would refuse the whole annotation; gpuwhy keeps what it can).
    """
    pieces = value.split(";")
    if pieces and pieces[-1].strip() == "":
        pieces.pop()  # the terminator after the last container
    containers: list[list[AllocatedDevice]] = []
    for piece in pieces:
        devices: list[AllocatedDevice] = []
        for entry in piece.split(":"):
            fields = entry.split(",")
            if len(fields) < 4 or not fields[0]:
                continue
            try:
                devices.append((fields[0], fields[1], int(fields[2]), int(fields[3])))
            except ValueError:
                continue
        containers.append(devices)
    return containers


@dataclass
class Usage:
    used: int = 0  # tasks sharing the card
    usedmem: int = 0  # MiB
    usedcores: int = 0
    holders: list[str] = field(default_factory=list)  # "ns/pod"


def device_usage(node_name: str, pods_on_node: Iterable[Mapping[str, Any]]) -> dict[str, Usage]:
    """Usage per device UUID, summed like HAMi over pods it assigned to this node.

    Only pods whose ``hami.io/vgpu-node`` names the node count, and only while they hold
    their devices: Succeeded and Failed pods do not, Pending and Terminating ones do.
    """
    usage: dict[str, Usage] = {}
    for pod in pods_on_node:
        annotations = _annotations(pod)
        if annotations.get(ASSIGNED_NODE_KEY) != node_name or is_terminated(pod):
            continue
        value = annotations.get(ALLOCATED_KEY)
        if value is None:
            value = annotations.get(TO_ALLOCATE_KEY, "")
        holder = pod_ref(pod)
        for container in parse_allocation(str(value)):
            for uuid, _type, memory, cores in container:
                # MIG allocations carry the slice after the card UUID: GPU-x[1-0]
                card = usage.setdefault(uuid.split("[", 1)[0], Usage())
                card.used += 1
                card.usedmem += memory
                card.usedcores += cores
                if holder not in card.holders:
                    card.holders.append(holder)
    return usage


# -- what the pod asks for --------------------------------------------------------------------


@dataclass(frozen=True)
class HamiRequest:
    """One container's NVIDIA request as HAMi reads it, plus the pod's HAMi annotations.

    ``mem`` is MiB or None; with neither ``mem`` nor a percentage HAMi takes the whole
    card's memory, so ``mem_percentage`` is 100 then. Filters are None when the annotation
    is absent (HAMi treats a present-but-empty value differently from an absent one).
    """

    count: int
    mem: int | None
    mem_percentage: int | None
    cores: int
    container: str = ""  # the container whose request this is
    containers: int = 1  # how many containers ask for NVIDIA GPUs
    # (count, mem, percentage, cores) of every asking container, init containers first:
    # HAMi fits them one after another, each on the usage the earlier ones leave.
    asks: tuple[tuple[int, int | None, int | None, int], ...] = ()
    use_types: tuple[str, ...] | None = None
    nouse_types: tuple[str, ...] | None = None
    use_uuids: tuple[str, ...] | None = None
    nouse_uuids: tuple[str, ...] | None = None
    vgpu_mode: str | None = None
    numa_bind: bool = False
    node_policy: str | None = None
    gpu_policy: str | None = None

    def memory_on(self, card_memory: int) -> int:
        """The MiB this request needs on a card of ``card_memory`` MiB."""
        if self.mem is not None:
            return self.mem
        if self.mem_percentage is not None:
            return card_memory * self.mem_percentage // 100
        return 0

    @cached_property
    def mutex(self) -> bool:
        return "mutex" in _policy_words(self.gpu_policy)

    @cached_property
    def each_ask(self) -> tuple[HamiRequest, ...]:
        """The request of each asking container, in the order HAMi fits them."""
        if not self.asks:
            return (self,)
        return tuple(replace(self, count=count, mem=mem, mem_percentage=percentage, cores=cores)
                     for count, mem, percentage, cores in self.asks)


def hami_request(pod: Mapping[str, Any]) -> HamiRequest | None:
    """The pod's request as HAMi reads it, or None when HAMi has nothing to place.

    None when no container asks for ``nvidia.com/gpu`` or a sharing resource, and also when
    only whole GPUs are asked for and the pod is not for hami-scheduler (plain device plugin).

    The request shown is the largest container's (most cards, then most memory, then most
    cores); ``asks`` keeps every container's, which ``fit_node`` places in turn like HAMi.
    """
    spec = pod.get("spec", {}) or {}
    containers = [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]
    asks = [(str(c.get("name", "")), _container_request(c)) for c in containers]
    asking = [(name, request) for name, request in asks if request is not None]
    uses_sharing = any(_container_has(c, SHARING_RESOURCES) for c in containers)
    if not asking or (not uses_sharing and spec.get("schedulerName") != HAMI_SCHEDULER):
        return None
    name, largest = max(asking, key=lambda item: (item[1][0], item[1][1] or 0, item[1][2] or 0,
                                                  item[1][3]))
    count, mem, percentage, cores = largest
    annotations = _annotations(pod)

    def listed(key: str) -> tuple[str, ...] | None:
        return tuple(annotations[key].split(",")) if key in annotations else None

    return HamiRequest(
        count=count, mem=mem, mem_percentage=percentage, cores=cores, container=name,
        containers=len(asking), asks=tuple(ask for _, ask in asking),
        use_types=listed(USE_TYPE_KEY), nouse_types=listed(NOUSE_TYPE_KEY),
        use_uuids=listed(USE_UUID_KEY), nouse_uuids=listed(NOUSE_UUID_KEY),
        vgpu_mode=annotations.get(VGPU_MODE_KEY),
        numa_bind=annotations.get(NUMA_BIND_KEY, "") in _GO_TRUE,
        node_policy=annotations.get(NODE_POLICY_KEY),
        gpu_policy=annotations.get(GPU_POLICY_KEY))


def _container_request(
        container: Mapping[str, Any]) -> tuple[int, int | None, int | None, int] | None:
    """(count, mem, percentage, cores) with HAMi's defaults, or None without a GPU ask."""
    count = _resource(container, COUNT_RESOURCE)
    mem = _resource(container, MEMORY_RESOURCE)
    percentage = _resource(container, MEMORY_PERCENTAGE_RESOURCE)
    cores = _resource(container, CORES_RESOURCE)
    if count is None:
        if mem is None and percentage is None and cores is None:
            return None
        count = 1  # the webhook adds one card when only memory or cores are given
    if count == 0:
        return None
    if cores is None:
        # since v2.7 the webhook makes a count-only request an exclusive card
        only_count = mem is None and percentage is None
        cores = FULL_CARD_CORES if only_count else 0
    mem = mem if mem else None  # gpumem 0 means "not set" to HAMi
    if mem is None and percentage is None:
        percentage = 100
    return count, mem, percentage, min(cores, FULL_CARD_CORES)


def _resource(container: Mapping[str, Any], name: str) -> int | None:
    """Limits first, then requests; quantities as the API server stores them ("70k")."""
    resources = container.get("resources", {}) or {}
    for section in ("limits", "requests"):
        values = resources.get(section, {}) or {}
        if name in values:
            try:
                return int(parse_quantity(values[name]))
            except QuantityError:
                return None
    return None


def _container_has(container: Mapping[str, Any], names: Iterable[str]) -> bool:
    resources = container.get("resources", {}) or {}
    present = {*(resources.get("limits") or {}), *(resources.get("requests") or {})}
    return any(name in present for name in names)


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
        alike (``Snapshot.hami_fit``), and an answer writes its node's outcome into them."""
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


def fit_node(node: Mapping[str, Any], pods_on_node: Iterable[Mapping[str, Any]],
             pod: Mapping[str, Any], request: HamiRequest) -> HamiNodeFit:
    """Would HAMi place ``request`` on this node, and if not, HAMi's reason string.

    ``pods_on_node`` are the pods bound to the node (terminated ones may be included);
    the pod itself is left out, so a bound pod is judged with the usage before it.
    Every device carries its own first failing code, also on a node that fits (a card
    that fits carries None, also when too few fit: the reason string counts only the
    codes of reference/hami.md). A card picked and then given up for another NUMA node
    counts as ``NumaNotFit``, one per card.
    """
    registration = parse_registration(node)
    if registration is None or not registration.registered:
        return HamiNodeFit(registered=False, fits=False, reason=NODE_UNREGISTERED)
    own = pod_ref(pod)
    usage = device_usage(_name(node), (p for p in pods_on_node if pod_ref(p) != own))
    return fit_registered(node, registration, usage, request)


def fit_registered(node: Mapping[str, Any], registration: Registration,
                   usage: Mapping[str, Usage], request: HamiRequest) -> HamiNodeFit:
    """``fit_node`` with the node's registration decoded and its usage summed already (both
    kept per node by the caller; ``usage`` leaves out the pod being placed)."""
    if not registration.registered:
        return HamiNodeFit(registered=False, fits=False, reason=NODE_UNREGISTERED)
    cards = [_CardState(d, usage.get(d.uuid) or _UNUSED) for d in registration.devices
             if NVIDIA_TYPE_WORD in d.type]
    cordoned = frozenset(u.strip() for u in (_annotations(node).get(CORDON_KEY) or "").split(","))
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
    if _gpu_binpack(request.gpu_policy):
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


def pick_order(scores: Mapping[str, float], policy: str | None) -> list[str]:
    """Nodes in the order HAMi prefers them: spread lowest score first, otherwise
    (binpack, HAMi's default for any other value) highest first; ties by name."""
    if policy == "spread":
        return sorted(scores, key=lambda name: (scores[name], name))
    return sorted(scores, key=lambda name: (-scores[name], name))


def _devices(cards: list[_CardState], codes: list[str | None]) -> list[Device]:
    return [Device(uuid=c.device.uuid, index=c.device.index, type=c.device.type,
                   memory_used=c.usage.usedmem, memory_total=c.device.devmem,
                   cores_used=c.usage.usedcores, cores_total=c.device.devcore,
                   numa=c.device.numa, healthy=c.device.health, holders=list(c.usage.holders),
                   code=code, holder_source=HAMI_HOLDERS)
            for c, code in zip(cards, codes, strict=True)]


# -- object access -----------------------------------------------------------------------------


def pod_ref(pod: Mapping[str, Any]) -> str:
    meta = pod.get("metadata", {}) or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def _name(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata", {}) or {}).get("name", ""))


def _annotations(obj: Mapping[str, Any]) -> dict[str, str]:
    return dict((obj.get("metadata", {}) or {}).get("annotations") or {})


def _share(part: int, whole: int) -> float:
    return part / whole if whole else 0.0


def _policy_words(policy: str | None) -> list[str]:
    """v2.10 accepts a comma-separated chain such as ``mutex,spread``."""
    return [word.strip() for word in (policy or "").split(",") if word.strip()]


def _gpu_binpack(policy: str | None) -> bool:
    return next((w == "binpack" for w in _policy_words(policy) if w in ("binpack", "spread")),
                False)
