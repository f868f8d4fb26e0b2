"""How many pods of a gang one node's devices take at once, each pod asking the claims the
judged pod asks (pure).

Pod by pod, each request goes to the first of its alternatives with devices left for it, as
the allocator walks a firstAvailable list. An exclusive device takes one request; a shared
one (allowMultipleAllocations) takes requests while its capacity lasts, at what each
consumes there (the requestPolicy's rounding included). Devices that share counters
(partitions of one GPU) count as the pod's own fit found them, free or held: the gang's
pods do not use the counters up one by one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal

from scoring.dra.capacity import USED_UP
from scoring.dra.model import EXHAUSTED, RequestOutcome
from scoring.dra.rows import Alternative, DeviceKey, SliceDevice


@dataclass(frozen=True)
class _Option:
    """One alternative of a request that the node's devices can meet when free."""

    alternative: Alternative
    devices: tuple[SliceDevice, ...]
    consumes: Mapping[DeviceKey, Mapping[str, Decimal]]  # by shared device, per request

    @property
    def needed(self) -> int:
        return len(self.devices) if self.alternative.mode == "All" else self.alternative.count


@dataclass
class _Room:
    """What is left of the node's devices as pods are placed."""

    taken: set[DeviceKey] = field(default_factory=set)  # exclusive devices
    left: dict[DeviceKey, dict[str, Decimal]] = field(default_factory=dict)  # shared ones

    def fits(self, option: _Option, device: SliceDevice) -> bool:
        consumes = option.consumes.get(device.key)
        if consumes is None:
            return device.key not in self.taken
        left = self.left[device.key]
        return all(left.get(name, Decimal(0)) >= amount for name, amount in consumes.items())

    def more(self, option: _Option, device: SliceDevice) -> Decimal:
        """How many more of this request the device could take (1 for an exclusive one)."""
        consumes = option.consumes.get(device.key)
        if consumes is None:
            return Decimal(1)
        left = self.left[device.key]
        return min((left.get(name, Decimal(0)) // amount
                    for name, amount in consumes.items() if amount > 0), default=Decimal(1))

    def take(self, option: _Option, device: SliceDevice) -> None:
        consumes = option.consumes.get(device.key)
        if consumes is None:
            self.taken.add(device.key)
            return
        left = self.left[device.key]
        for name, amount in consumes.items():
            left[name] = left.get(name, Decimal(0)) - amount

    def place(self, options: Sequence[_Option]) -> bool:
        """One pod's request on the first option with room; False when none has."""
        for option in options:
            room = [d for d in option.devices if self.fits(option, d)]
            needed = option.needed
            if not needed or len(room) < needed:
                continue
            room.sort(key=lambda d: -self.more(option, d))  # the emptiest shared devices first
            for device in room[:needed]:
                self.take(option, device)
            return True
        return False


def _options(alternatives: Sequence[RequestOutcome], room: _Room, now: bool) -> list[_Option]:
    options = []
    for outcome in alternatives:
        # too-large, device-unfit or no device there: no pod of the gang gets it, even empty
        if outcome.alternative is None or outcome.stage not in (None, EXHAUSTED):
            continue
        consumes = {}
        for device, fit in outcome.capacity:
            if device.shared and fit.failure in (None, USED_UP):
                consumes[device.key] = fit.consumed
                room.left.setdefault(device.key, {
                    name: fit.left(name) if now else fit.totals.get(name, Decimal(0))
                    for name in fit.consumed})
        if now:
            room.taken.update(device.key for device, _ in outcome.holders if not device.shared)
        options.append(_Option(outcome.alternative, tuple(outcome.matching), consumes))
    return options


def _placed(requests: Sequence[Sequence[RequestOutcome]], limit: int, now: bool) -> int:
    room = _Room()
    per_request = [_options(alternatives, room, now) for alternatives in requests]
    placed = 0
    while placed < limit and all(room.place(options) for options in per_request):
        placed += 1
    return placed


def gang_pods(requests: Sequence[Sequence[RequestOutcome]], limit: int) -> tuple[int, int]:
    """Pods the node takes at once, with every device free and with what the other claims
    hold now, each at most ``limit``. ``requests``: per request the pod has yet to be
    allocated, the outcome of each of its alternatives on the node."""
    if not requests:
        return limit, limit  # nothing asked of the node's devices
    return _placed(requests, limit, now=False), _placed(requests, limit, now=True)
