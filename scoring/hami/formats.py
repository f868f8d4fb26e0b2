"""HAMi's annotations as it writes them: device registration on a node, allocations on a pod,
and the codes and keys its scheduler uses. Each parser reads an annotations mapping, handed
over by the step that builds the rows (the node table, ``triage.rows``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from scoring.rows import HamiAllocated, HamiAllocation

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

GO_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
GO_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})


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
    cordoned: frozenset[str] = frozenset()  # hami.io/device-cordon's UUIDs


def parse_registration(annotations: Mapping[str, str]) -> Registration | None:
    """The node's HAMi devices; None when no register annotation exists (not HAMi-managed).

    A value HAMi cannot decode leaves the node out of HAMi's cache, so it is reported as
    not registered, with the problem in one line; nothing here raises. The handshake's age
    is not judged: since v2.8 HAMi checks NVIDIA nodes through status.allocatable, so an old
    ``Requesting_`` stamp is harmless, and a pure function has no clock to judge it by.
    """
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
    cordoned = frozenset(u.strip() for u in str(annotations.get(CORDON_KEY) or "").split(","))
    return Registration(devices=devices, registered=True,
                        problem=f"{key}: {problem}" if problem else None, cordoned=cordoned)


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
        if health_text not in GO_TRUE | GO_FALSE:
            unreadable.append(f"device {position} health {health_text!r}")
        devices.append(HamiDevice(
            uuid=fields[0], count=number(fields[1], "count"), devmem=number(fields[2], "devmem"),
            devcore=number(fields[3], "devcore"), type=fields[4],
            numa=number(fields[5], "numa"), health=health_text in GO_TRUE,
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


def pod_allocation(annotations: Mapping[str, str]) -> HamiAllocation | None:
    """What HAMi allocated the pod, or None when it assigned the pod no node.

    ``hami.io/vgpu-devices-allocated`` once the devices are handed over, the devices still
    to allocate before; MIG allocations carry the slice after the card UUID (GPU-x[1-0]),
    and count against the card.
    """
    node = annotations.get(ASSIGNED_NODE_KEY)
    if not isinstance(node, str):
        return None
    value = annotations.get(ALLOCATED_KEY)
    if value is None:
        value = annotations.get(TO_ALLOCATE_KEY, "")
    return HamiAllocation(node=node, devices=tuple(
        HamiAllocated(card=uuid.split("[", 1)[0], memory=memory, cores=cores)
        for container in parse_allocation(str(value))
        for uuid, _type, memory, cores in container))


def policy_words(policy: str | None) -> list[str]:
    """v2.10 accepts a comma-separated chain such as ``mutex,spread``."""
    return [word.strip() for word in (policy or "").split(",") if word.strip()]


def gpu_binpack(policy: str | None) -> bool:
    return next((w == "binpack" for w in policy_words(policy) if w in ("binpack", "spread")),
                False)
