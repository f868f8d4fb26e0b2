"""Kubernetes resource quantities ("4", "70k", "32Gi", "500m", "1e3") as numbers."""

from __future__ import annotations

import re
from decimal import Decimal
from functools import lru_cache

_SUFFIXES: dict[str, Decimal] = {
    "": Decimal(1),
    "Ki": Decimal(2) ** 10, "Mi": Decimal(2) ** 20, "Gi": Decimal(2) ** 30,
    "Ti": Decimal(2) ** 40, "Pi": Decimal(2) ** 50, "Ei": Decimal(2) ** 60,
    "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"),
    "k": Decimal("1e3"), "M": Decimal("1e6"), "G": Decimal("1e9"),
    "T": Decimal("1e12"), "P": Decimal("1e15"), "E": Decimal("1e18"),
}
_QUANTITY = re.compile(
    r"^(?P<number>[+-]?(?:\d+\.?\d*|\.\d+))"
    r"(?:(?P<exp>[eE][+-]?\d+)|(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?)$"
)


class QuantityError(ValueError):
    pass


def parse_quantity(value: object) -> Decimal:
    """Parse a quantity as the API server stores it; raise QuantityError if it is not one."""
    if type(value) is str:  # nearly every quantity: straight to the cache
        return _parse_text(value)
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise QuantityError(f"not a quantity: {value!r}")
    return _parse_text(str(value))


@lru_cache(maxsize=4096)
def _parse_text(text: str) -> Decimal:
    # Cached: a cluster repeats a few hundred distinct strings ("1", "8", "32Gi") 150,000 times.
    match = _QUANTITY.match(text.strip())
    if match is None:
        raise QuantityError(f"not a quantity: {text!r}")
    number = Decimal(match["number"])
    if match["exp"]:
        return number * Decimal(10) ** int(match["exp"][1:])
    return number * _SUFFIXES[match["suffix"] or ""]


def quantity_or_none(value: object) -> Decimal | None:
    """A quantity, or None when the value is not one (a field read off an object as it is)."""
    try:
        return parse_quantity(value)
    except QuantityError:
        return None


def quantity_int(value: object, default: int = 0) -> int:
    """A whole-number quantity (extended resources are integers); ``default`` if unparsable."""
    try:
        return int(parse_quantity(value))
    except QuantityError:
        return default
