"""Kubernetes' CEL libraries for device selectors: ``quantity()``, ``isQuantity()``,
``semver()``, ``isSemver()`` and the methods ``compareTo``, ``isGreaterThan``, ``isLessThan``,
``add``, ``sub``, ``sign``, ``isInteger``, ``asInteger``, ``asApproximateFloat``, ``major``,
``minor``, ``patch``, as cel-python functions (KUBERNETES_FUNCTIONS)."""

from __future__ import annotations

import re
from collections.abc import Callable
from decimal import Decimal
from functools import total_ordering
from typing import Any

from celpy import celtypes

from scoring.quantity import QuantityError, parse_quantity


@total_ordering
class Quantity:
    """A Kubernetes resource.Quantity as CEL sees it: ordered by value, not by its text."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.value = parse_quantity(text)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Quantity) and self.value == other.value

    def __lt__(self, other: Quantity) -> bool:
        return self.value < other.value

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        return f"quantity({self.text!r})"


# SemVer 2.0.0, as github.com/blang/semver parses it (Kubernetes' semver library).
_SEMVER = re.compile(
    r"^(?P<major>0|[1-9]\d*)\.(?P<minor>0|[1-9]\d*)\.(?P<patch>0|[1-9]\d*)"
    r"(?:-(?P<pre>[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?(?:\+(?P<build>[0-9A-Za-z-.]+))?$")


@total_ordering
class Semver:
    """A semantic version; build metadata is ignored in comparisons, as SemVer says."""

    def __init__(self, text: str, normalize: bool = False) -> None:
        self.text = text
        source = _normalized(text) if normalize else text
        match = _SEMVER.match(source)
        if match is None:
            raise ValueError(f"invalid semver: {text!r}")
        self.core = (int(match["major"]), int(match["minor"]), int(match["patch"]))
        self.pre = tuple(match["pre"].split(".")) if match["pre"] else ()
        for part in self.pre:
            if part.isdigit() and len(part) > 1 and part.startswith("0"):
                raise ValueError(f"invalid semver: {text!r} (leading zero in {part!r})")

    def _key(self) -> tuple[Any, ...]:
        # A release sorts after its pre-releases; numeric identifiers before alphanumeric ones.
        pre = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in self.pre)
        return (self.core, not self.pre, pre)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Semver) and self._key() == other._key()

    def __lt__(self, other: Semver) -> bool:
        return self._key() < other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"semver({self.text!r})"


def _normalized(text: str) -> str:
    """Kubernetes' normalize=true: a leading v, missing minor/patch and leading zeros allowed."""
    core, sep, rest = text.removeprefix("v").partition("-")
    if not sep:
        core, sep, rest = core.partition("+")
    parts = core.split(".")
    if not 1 <= len(parts) <= 3 or not all(p.isdigit() for p in parts):
        return text
    parts += ["0"] * (3 - len(parts))
    return ".".join(str(int(p)) for p in parts) + (sep + rest if sep else "")


def _quantity(text: Any) -> Quantity:
    if not isinstance(text, str):
        raise TypeError(f"quantity() wants a string, got {type(text).__name__}")
    try:
        return Quantity(str(text))
    except QuantityError as exc:
        raise ValueError(str(exc)) from exc


def _is_quantity(text: Any) -> celtypes.BoolType:
    try:
        _quantity(text)
    except (TypeError, ValueError):
        return celtypes.BoolType(False)
    return celtypes.BoolType(True)


def _semver(text: Any, normalize: Any = False) -> Semver:
    if not isinstance(text, str):
        raise TypeError(f"semver() wants a string, got {type(text).__name__}")
    return Semver(str(text), bool(normalize))


def _is_semver(text: Any, normalize: Any = False) -> celtypes.BoolType:
    try:
        _semver(text, normalize)
    except (TypeError, ValueError):
        return celtypes.BoolType(False)
    return celtypes.BoolType(True)


def _same_kind(left: Any, right: Any, method: str) -> None:
    if not (isinstance(left, Quantity | Semver) and type(left) is type(right)):
        raise TypeError(f"{method}() needs two quantities or two semvers, got "
                        f"{type(left).__name__} and {type(right).__name__}")


def _compare_to(left: Any, right: Any) -> celtypes.IntType:
    _same_kind(left, right, "compareTo")
    return celtypes.IntType((left > right) - (left < right))


def _is_greater_than(left: Any, right: Any) -> celtypes.BoolType:
    _same_kind(left, right, "isGreaterThan")
    return celtypes.BoolType(left > right)


def _is_less_than(left: Any, right: Any) -> celtypes.BoolType:
    _same_kind(left, right, "isLessThan")
    return celtypes.BoolType(left < right)


def _as_value(quantity: Any, method: str) -> Decimal:
    if not isinstance(quantity, Quantity):
        raise TypeError(f"{method}() is a quantity method, not one of {type(quantity).__name__}")
    return quantity.value


def _operand(other: Any, method: str) -> Decimal:
    if isinstance(other, Quantity):
        return other.value
    if isinstance(other, int) and not isinstance(other, bool):
        return Decimal(int(other))
    raise TypeError(f"{method}() takes a quantity or an int, got {type(other).__name__}")


def _from_decimal(value: Decimal) -> Quantity:
    return Quantity(format(value.normalize(), "f"))


def _add(left: Any, right: Any) -> Quantity:
    return _from_decimal(_as_value(left, "add") + _operand(right, "add"))


def _sub(left: Any, right: Any) -> Quantity:
    return _from_decimal(_as_value(left, "sub") - _operand(right, "sub"))


def _sign(quantity: Any) -> celtypes.IntType:
    value = _as_value(quantity, "sign")
    return celtypes.IntType((value > 0) - (value < 0))


def _is_integer(quantity: Any) -> celtypes.BoolType:
    value = _as_value(quantity, "isInteger")
    return celtypes.BoolType(value == value.to_integral_value() and abs(value) < 2 ** 63)


def _as_integer(quantity: Any) -> celtypes.IntType:
    value = _as_value(quantity, "asInteger")
    if value != value.to_integral_value() or abs(value) >= 2 ** 63:
        raise ValueError(f"{quantity!r} is not an int64")
    return celtypes.IntType(int(value))


def _as_approximate_float(quantity: Any) -> celtypes.DoubleType:
    return celtypes.DoubleType(float(_as_value(quantity, "asApproximateFloat")))


def _version_part(index: int, method: str) -> Callable[[Any], celtypes.IntType]:
    def part(version: Any) -> celtypes.IntType:
        if not isinstance(version, Semver):
            raise TypeError(f"{method}() is a semver method, not one of "
                            f"{type(version).__name__}")
        return celtypes.IntType(version.core[index])
    return part


KUBERNETES_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "quantity": _quantity, "isQuantity": _is_quantity,
    "semver": _semver, "isSemver": _is_semver,
    "compareTo": _compare_to, "isGreaterThan": _is_greater_than, "isLessThan": _is_less_than,
    "add": _add, "sub": _sub, "sign": _sign, "isInteger": _is_integer,
    "asInteger": _as_integer, "asApproximateFloat": _as_approximate_float,
    "major": _version_part(0, "major"), "minor": _version_part(1, "minor"),
    "patch": _version_part(2, "patch"),
}

