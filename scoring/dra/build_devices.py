"""The part of the DRA row builder (``scoring.dra.build``) that reads a ResourceSlice's
devices: each ``spec.devices[]`` entry becomes a SliceDevice, its details read when first
asked, its attributes typed as read; and the node selectors slices, devices and
allocations name."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from decimal import Decimal
from typing import Any

from scoring.cel.values import AttributeValue, Version
from scoring.dra.capacity import Capacity, RequestPolicy
from scoring.dra.rows import DeviceDetails, NodeReach, NodeSelection, SliceDevice
from scoring.quantity import QuantityError, parse_quantity, quantity_or_none

ZERO = Decimal(0)

# Device taint effects that keep the allocator off a device ("None" only informs).
BLOCKING_DEVICE_EFFECTS = ("NoSchedule", "NoExecute")


def node_reach(spec: Mapping[str, Any]) -> NodeReach:
    selector = spec.get("nodeSelector")
    return NodeReach(str(spec["nodeName"]) if spec.get("nodeName") else "",
                     bool(spec.get("allNodes")),
                     node_selection(selector) if selector and isinstance(selector, Mapping)
                     else None)


def node_selection(node_selector: Mapping[str, Any]) -> NodeSelection:
    terms = tuple(t for t in node_selector.get("nodeSelectorTerms") or []
                  if isinstance(t, Mapping))
    return NodeSelection(terms, tuple(
        str(v) for term in terms for f in term.get("matchFields") or []
        if isinstance(f, Mapping) and f.get("key") == "metadata.name"
        for v in f.get("values") or []))


def device_row(raw: Mapping[str, Any], driver: str, pool: str = "", slice_name: str = "",
               per_device: bool = False) -> SliceDevice:
    """One published device (``spec.devices[]``) as a row: what every fit reads of it (its
    attributes typed as read), the rest (``_Description``) when first asked. (JSON objects
    are dicts: the plain type check, not Mapping's, and no work for the lists a GPU mostly
    leaves out, for tens of thousands of devices.)"""
    found = raw.get("attributes")
    attributes: Mapping[str, Any] = found if isinstance(found, dict) else {}
    found = raw.get("capacity")
    published: Mapping[str, Any] = found if isinstance(found, dict) else {}
    name = str(raw.get("name", ""))
    taints, consumes = raw.get("taints"), raw.get("consumesCounters")
    binding, failure = raw.get("bindingConditions"), raw.get("bindingFailureConditions")
    return SliceDevice(
        slice_name, driver, pool, name, (driver, pool, name),
        _Description(name, driver, attributes, published),
        _Attributes(attributes),
        {str(key): str(value.get("value", "")) if isinstance(value, dict) else str(value)
         for key, value in published.items()},
        taints=tuple(t for t in taints if isinstance(t, dict)
                     and t.get("effect") in BLOCKING_DEVICE_EFFECTS) if taints else (),
        consumes=tuple(((driver, pool, str(entry.get("counterSet", ""))),
                        counter_amounts(entry.get("counters")))
                       for entry in consumes if isinstance(entry, dict)) if consumes else (),
        shared=raw.get("allowMultipleAllocations") is True,
        binding_conditions=tuple(str(c) for c in binding) if binding else (),
        binding_failure_conditions=tuple(str(c) for c in failure) if failure else (),
        reach=node_reach(raw) if per_device else None)


class _Description:
    """A device's product, memory, uuid, index and readable capacities, read off its JSON
    the first time one is asked: an answer describes the devices of a few nodes, and only a
    request asking capacity (or a shared device) judges it, of tens of thousands of GPUs."""

    __slots__ = ("_attributes", "_driver", "_name", "_published", "_read")

    def __init__(self, name: str, driver: str, attributes: Mapping[str, Any],
                 published: Mapping[str, Any]) -> None:
        self._name, self._driver = name, driver
        self._attributes, self._published = attributes, published
        self._read: DeviceDetails | None = None

    def read(self) -> DeviceDetails:
        if self._read is None:
            attributes, published, driver = self._attributes, self._published, self._driver
            memory = published.get("memory") or published.get(f"{driver}/memory")
            uuid, index = attributes.get("uuid"), attributes.get("index")
            self._read = DeviceDetails(
                _product(attributes, driver),
                str(memory.get("value")) if isinstance(memory, dict) else None,
                (str(uuid["string"]) if isinstance(uuid, dict)
                 and isinstance(uuid.get("string"), str) and uuid["string"] else self._name),
                (int(index["int"]) if isinstance(index, dict)
                 and isinstance(index.get("int"), int) else None),
                {str(key): readable for key, value in published.items()
                 if isinstance(value, dict)
                 and (readable := _capacity(str(key), value)) is not None})
        return self._read


def _product(attributes: Mapping[str, Any], driver: str) -> str:
    for name in ("productName", f"{driver}/productName", "model", "type"):
        value = attributes.get(name)
        if isinstance(value, dict) and value.get("string"):
            return str(value["string"])
    return driver


class _Attributes(Mapping[str, AttributeValue]):
    """A device's attributes, each typed the first time it is read: a selector reads one or
    two of a GPU's dozen, and a cluster publishes tens of thousands of GPUs."""

    __slots__ = ("_published", "_typed")

    def __init__(self, published: Mapping[str, Any]) -> None:
        self._published = published
        self._typed: dict[str, AttributeValue] | None = None

    def __getitem__(self, name: str) -> AttributeValue:
        if self._typed is None:
            self._typed = {}
        if name not in self._typed:
            self._typed[name] = _attribute(self._published[name])
        return self._typed[name]

    def __iter__(self) -> Iterator[str]:
        return (str(name) for name in self._published)

    def __len__(self) -> int:
        return len(self._published)


def _attribute(value: Any) -> AttributeValue:
    """``{int: 3}``, ``{bool: true}``, ``{version: "8.0.0"}`` or ``{string: "x"}`` typed."""
    if not isinstance(value, dict):
        return str(value)
    if "int" in value:
        try:
            return int(value["int"])
        except (TypeError, ValueError):
            return str(value["int"])  # kept as text: a selector comparing it is not evaluated
    if "bool" in value:
        return bool(value["bool"])
    if "version" in value:
        return Version(str(value["version"]))
    return str(value.get("string", ""))


def _capacity(name: str, raw: Mapping[str, Any]) -> Capacity | None:
    total = quantity_or_none(raw.get("value"))
    return None if total is None else Capacity(name, total,
                                               request_policy(raw.get("requestPolicy")))


def request_policy(raw: Any) -> RequestPolicy | None:
    """A capacity's requestPolicy (default, validRange {min, max, step}, validValues); None
    when there is none or it is not an object."""
    if not isinstance(raw, Mapping):
        return None
    found = raw.get("validRange")
    valid_range: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    values = tuple(sorted(v for v in (quantity_or_none(x) for x in raw.get("validValues") or [])
                          if v is not None))
    return RequestPolicy(quantity_or_none(raw["default"]) if "default" in raw else None,
                         quantity_or_none(valid_range.get("min")) if "min" in valid_range else None,
                         quantity_or_none(valid_range.get("max")) if "max" in valid_range else None,
                         quantity_or_none(valid_range.get("step"))
                         if "step" in valid_range else None,
                         values)


def counter_amounts(counters: Any) -> dict[str, Decimal]:
    """``{name: {value: quantity}}`` as numbers; an unreadable value counts as 0."""
    found = {}
    for name, counter in (counters or {}).items() if isinstance(counters, Mapping) else ():
        try:
            found[str(name)] = parse_quantity((counter or {}).get("value", 0))
        except (QuantityError, AttributeError):
            found[str(name)] = ZERO
    return found
