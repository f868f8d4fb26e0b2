"""Consumable capacity of DRA devices (DRAConsumableCapacity, beta and on by default in 1.36),
as the allocator applies it (pure).

A device with ``allowMultipleAllocations: true`` serves several claims, each consuming part
of its ``capacity`` within the capacity's ``requestPolicy``. Recorded on kube-scheduler
1.36.2: a request is rounded up to the next valid amount (``validRange``: min + n × step;
``validValues``: the next listed value) and that amount is consumed; it is refused only above
``validRange.max`` or the largest valid value; a capacity the request does not name is
consumed at the policy's default (in full without a policy); a device lacking a capacity the
request names is skipped. Allocations record what they consumed (``consumedCapacity``, with
a ``shareID``). A device that serves one claim only is taken whole; a capacity request on it
only asks that it be that large.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import ROUND_CEILING, Decimal
from typing import TYPE_CHECKING

from scoring.verdict import Device

if TYPE_CHECKING:
    from scoring.dra.rows import ClaimRow, DeviceKey, SliceDevice

_ZERO = Decimal(0)

# A device's capacity against one request, the first that holds.
LACKS = "lacks"  # the device has no capacity of a name the request asks: skipped
TOO_SMALL = "too-small"  # more than the device's whole capacity
REFUSED = "refused"  # the request policy admits no amount that large
USED_UP = "used-up"  # the other claims sharing the device leave too little


def quantity_text(value: Decimal) -> str:
    """An amount as the API server would print it: 40Gi, 512Mi, 3."""
    for suffix, unit in (("Ti", 2 ** 40), ("Gi", 2 ** 30), ("Mi", 2 ** 20), ("Ki", 2 ** 10)):
        if value and value % unit == 0:
            return f"{int(value / unit)}{suffix}"
    return str(value.normalize()) if value != value.to_integral() else str(int(value))


@dataclass(frozen=True)
class RequestPolicy:
    """A capacity's requestPolicy (default, validRange {min, max, step}, validValues)."""

    default: Decimal | None = None
    minimum: Decimal | None = None
    maximum: Decimal | None = None
    step: Decimal | None = None
    valid_values: tuple[Decimal, ...] = ()

    def applied(self, asked: Decimal) -> Decimal | None:
        """What the allocator consumes for ``asked``: rounded up to a valid amount; None when
        no valid amount is that large."""
        if self.valid_values:
            return next((v for v in self.valid_values if v >= asked), None)
        if self.minimum is not None:
            rounded = max(asked, self.minimum)
            if self.step:
                steps = ((rounded - self.minimum) / self.step).to_integral_value(ROUND_CEILING)
                rounded = self.minimum + steps * self.step
            if self.maximum is not None and rounded > self.maximum:
                return None
            return rounded
        return asked

    def text(self) -> str:
        parts = [f"default {quantity_text(self.default)}"] if self.default is not None else []
        if self.valid_values:
            parts.append("validValues " + ", ".join(quantity_text(v) for v in self.valid_values))
        elif self.minimum is not None:
            bounds = [f"min {quantity_text(self.minimum)}"]
            bounds += [f"max {quantity_text(self.maximum)}"] if self.maximum is not None else []
            bounds += [f"step {quantity_text(self.step)}"] if self.step else []
            parts.append("validRange " + ", ".join(bounds))
        return "; ".join(parts) or "none"


@dataclass(frozen=True)
class Capacity:
    """One readable capacity a device publishes, with its request policy."""

    name: str
    total: Decimal
    policy: RequestPolicy | None


def _named(capacities: Mapping[str, Capacity], name: str, driver: str) -> Capacity | None:
    """The capacity a request names: by its own name, or qualified with the driver's domain
    (an unqualified name stands for the driver's own)."""
    return (capacities.get(name) or capacities.get(f"{driver}/{name}")
            or capacities.get(name.removeprefix(f"{driver}/")))


@dataclass(frozen=True)
class Share:
    """One allocation of a shared device: the claim, its pods, what it consumed."""

    claim: str  # ns/name
    pods: tuple[str, ...]
    consumed: Mapping[str, Decimal]


class SharedUsage:
    """What the allocated claims consume of each shared device, by device."""

    def __init__(self, claims: Iterable[ClaimRow]) -> None:
        self._shares: dict[DeviceKey, list[Share]] = {}
        for claim in claims:
            for result in claim.results:
                if result.consumed is not None:
                    self._shares.setdefault(result.device, []).append(
                        Share(claim.label, claim.pods, result.consumed))

    def shares(self, key: DeviceKey, own: Iterable[str] = ()) -> list[Share]:
        """The allocations sharing the device, less the pod's own claims."""
        mine = set(own)
        return [s for s in self._shares.get(key, []) if s.claim not in mine]


@dataclass
class CapacityFit:
    """One device against one request's capacity: what the request would consume there,
    what the others consume, and the first way it fails (None: it fits)."""

    failure: str | None
    detail: str = ""
    consumed: dict[str, Decimal] = field(default_factory=dict)  # by this request
    used: dict[str, Decimal] = field(default_factory=dict)  # by the sharing claims
    totals: dict[str, Decimal] = field(default_factory=dict)
    shares: list[Share] = field(default_factory=list)

    def left(self, name: str) -> Decimal:
        return self.totals.get(name, _ZERO) - self.used.get(name, _ZERO)


def judge(device: SliceDevice, asked: Mapping[str, Decimal], shares: list[Share]
          ) -> CapacityFit:
    """How the request's capacity (``asked``, by name) fares on a device."""
    capacities = device.capacity
    named: dict[str, tuple[Capacity, Decimal]] = {}
    for name, wanted in asked.items():
        capacity = _named(capacities, name, device.driver)
        if capacity is None:
            return CapacityFit(LACKS, f"publishes no (readable) capacity {name}")
        named[capacity.name] = (capacity, wanted)
    totals = {c.name: c.total for c in capacities.values()}
    for capacity, wanted in named.values():
        if wanted > capacity.total:
            return CapacityFit(TOO_SMALL, f"{capacity.name} {quantity_text(capacity.total)} < "
                               f"{quantity_text(wanted)} asked", totals=totals)
    if not device.shared:
        return CapacityFit(None, "taken whole", totals=totals)
    used: dict[str, Decimal] = {}  # a refusal says who shares the device too
    for share in shares:
        for name, value in share.consumed.items():
            used[name] = used.get(name, _ZERO) + value
    consumed: dict[str, Decimal] = {}
    for capacity in capacities.values():
        policy = capacity.policy
        if capacity.name in named:
            wanted = named[capacity.name][1]
            applied = policy.applied(wanted) if policy is not None else wanted
            if applied is None:
                assert policy is not None  # without a policy every amount is valid
                return CapacityFit(REFUSED, f"{capacity.name} requestPolicy ({policy.text()}) "
                                   f"admits nothing as large as {quantity_text(wanted)}",
                                   used=used, totals=totals, shares=shares)
            if applied > capacity.total:
                return CapacityFit(TOO_SMALL, f"{capacity.name} {quantity_text(wanted)} rounds "
                                   f"up to {quantity_text(applied)}, more than the device's "
                                   f"{quantity_text(capacity.total)}", totals=totals)
        else:
            applied = (policy.default if policy is not None and policy.default is not None
                       else capacity.total)
        consumed[capacity.name] = applied
    fit = CapacityFit(None, "fits", consumed, used, totals, shares)
    short = [name for name, value in consumed.items() if fit.left(name) < value]
    if short:
        name = short[0]
        fit.failure = USED_UP
        fit.detail = (f"{name} {quantity_text(used.get(name, _ZERO))} of "
                      f"{quantity_text(totals[name])} consumed by "
                      f"{', '.join(s.claim for s in shares) or 'other claims'}: "
                      f"{quantity_text(fit.left(name))} left, {quantity_text(consumed[name])} "
                      "needed")
    return fit


def usage_text(device: SliceDevice, shares: list[Share]) -> str:
    """"shared: memory 70Gi/80Gi used by claims a, b" for "show devices"."""
    used: dict[str, Decimal] = {}
    for share in shares:
        for name, value in share.consumed.items():
            used[name] = used.get(name, _ZERO) + value
    parts = [f"{c.name} {quantity_text(used.get(c.name, _ZERO))}/{quantity_text(c.total)}"
             for c in device.capacity.values()]
    claims = ", ".join(s.claim for s in shares)
    return (f"shared: {', '.join(parts) or 'no capacity'} used"
            + (f" by claims {claims}" if claims else ", no claim on it"))


def shared_device_row(device: SliceDevice, shares: list[Share], failed: CapacityFit | None,
                      code: str | None, row: Device) -> Device:
    """A shared device as "show devices" lists it (``row`` has its name, index, type, total):
    the memory used of the total and every claim sharing it; the code is why this pod's
    request does not fit there (a selector, a taint, its capacity), or the usage."""
    usage = usage_text(device, shares)
    row.memory_used = int(sum((s.consumed.get("memory", _ZERO) for s in shares), _ZERO)
                          / Decimal(2 ** 20))
    row.holders = [p for s in shares for p in (s.pods or (f"claim {s.claim}",))]
    row.code = code or (f"{failed.detail} ({usage})" if failed else usage)
    return row
