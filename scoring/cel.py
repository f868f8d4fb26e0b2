"""CEL device selectors, as Kubernetes' DRA allocator evaluates them (pure: no I/O).

A DeviceClass or a claim request selects devices with CEL expressions over ``device.driver``,
``device.attributes["<domain>"].<name>`` and ``device.capacity["<domain>"].<name>``. The
language itself is cel-python's; Kubernetes adds its quantity and semver libraries, which are
defined here: ``quantity()``, ``isQuantity()``, ``semver()``, ``isSemver()`` and the methods
``compareTo``, ``isGreaterThan``, ``isLessThan``, ``add``, ``sub``, ``sign``, ``isInteger``,
``asInteger``, ``asApproximateFloat``, ``major``, ``minor``, ``patch``.

An expression that cannot be parsed or evaluated raises ``SelectorError`` with the reason:
callers say the selector was not evaluated and never guess its result.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from functools import lru_cache, total_ordering
from typing import Any

import celpy
from celpy import celtypes
from celpy.celparser import CELParseError
from celpy.evaluation import CELEvalError, CELUnsupportedError

from scoring.cel_error import SelectorError
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


# A read of the device variable: the path of keys, e.g. ("capacity", "gpu.nvidia.com", "memory").
Path = tuple[str, ...]
_ABSENT = "<absent>"  # what a read found when the key is not there
_MAP = "<map>"  # a read that found a nested map (its own keys are reads of their own)


class _Reads:
    """The keys one evaluation read, and whether it looked at some map as a whole."""

    def __init__(self) -> None:
        self.found: dict[Path, Any] = {}
        self.whole = False


class _TrackedMap(celtypes.MapType):
    """A map of the device variable that notes every key the expression reads.

    An evaluation reads only these keys (CEL is deterministic and side-effect free), so any
    device with the same values there gets the same result; an iteration, size or comparison
    of a whole map is noted too, and such a result is not shared.
    """

    def __init__(self, items: Mapping[Any, Any], reads: _Reads, path: Path) -> None:
        self._reads, self._path = reads, path
        super().__init__({key: (_TrackedMap(value, reads, (*path, str(key)))
                                if isinstance(value, Mapping) else value)
                          for key, value in items.items()})

    def _note(self, key: Any) -> None:
        if dict.__contains__(self, key):
            value = dict.__getitem__(self, key)
            self._reads.found[(*self._path, str(key))] = (
                _MAP if isinstance(value, Mapping) else value)
        else:
            self._reads.found[(*self._path, str(key))] = _ABSENT

    def __getitem__(self, key: Any) -> Any:
        self._note(key)
        return super().__getitem__(key)

    def __contains__(self, key: object) -> bool:
        self._note(key)
        return dict.__contains__(self, key)

    def get(self, key: Any, default: Any = None) -> Any:
        self._note(key)
        return dict.get(self, key, default)

    def _whole(self) -> None:
        self._reads.whole = True

    def __iter__(self) -> Any:
        self._whole()
        return super().__iter__()

    def __len__(self) -> int:
        self._whole()
        return super().__len__()

    def keys(self) -> Any:
        self._whole()
        return super().keys()

    def values(self) -> Any:
        self._whole()
        return super().values()

    def items(self) -> Any:
        self._whole()
        return super().items()

    def __eq__(self, other: Any) -> bool:
        self._whole()
        return super().__eq__(other)

    def __ne__(self, other: Any) -> bool:
        self._whole()
        return super().__ne__(other)

    __hash__ = None  # type: ignore[assignment]


MAX_SHARED_RESULTS = 65536  # per selector and set of keys read


@dataclass(frozen=True)
class Selector:
    """One compiled CEL selector; ``matches`` evaluates it on one device.

    Results are shared between devices that hold the same values in every key the evaluation
    read (a node's eight identical GPUs differ only in uuid, index, PCI address, which a
    selector on productName or memory never reads): one evaluation per distinct device kind.
    """

    expression: str
    program: celpy.Runner
    # read keys (sorted) -> their values -> the result (or the SelectorError it raised)
    _shared: dict[tuple[Path, ...], dict[tuple[Any, ...], bool | SelectorError]] = field(
        default_factory=dict, compare=False, repr=False)

    def matches(self, device: DeviceVariable) -> bool:
        """True when the device meets the selector. Raises SelectorError if not evaluable."""
        for paths, results in self._shared.items():
            known = results.get(tuple(device.read(path) for path in paths))
            if known is not None:
                return _outcome(known)
        reads = _Reads()
        result = self._evaluate(_TrackedMap(device.cel, reads, ()))
        if not reads.whole:
            paths = tuple(sorted(reads.found))
            results = self._shared.setdefault(paths, {})
            if len(results) >= MAX_SHARED_RESULTS:
                results.clear()  # a selector reading uuids shares nothing: keep memory bounded
            results[tuple(reads.found[p] for p in paths)] = result
        return _outcome(result)

    def _evaluate(self, device: celtypes.MapType) -> bool | SelectorError:
        try:
            result = self.program.evaluate({"device": device})
        except (CELEvalError, CELUnsupportedError, TypeError, ValueError, KeyError) as exc:
            return SelectorError(_reason(exc))
        if isinstance(result, CELEvalError):
            return SelectorError(_reason(result))
        if not isinstance(result, celtypes.BoolType):
            return SelectorError(f"result is {type(result).__name__}, not a bool")
        return bool(result)


def _outcome(result: bool | SelectorError) -> bool:
    if isinstance(result, SelectorError):
        raise result
    return result


@lru_cache(maxsize=1)
def _environment() -> celpy.Environment:
    # Building cel-python's LALR parser takes about half a second; it is the same parser for
    # every expression and holds no state between compilations, so it is built once.
    return celpy.Environment()


class SelectorCompiler:
    """Compiles selectors with the one CEL environment."""

    def __init__(self) -> None:
        self._environment = _environment()

    def compile(self, expression: str) -> Selector:
        """Parse once; evaluate many times. Raises SelectorError when the text is not CEL."""
        try:
            return Selector(expression, self._environment.program(
                self._environment.compile(expression), functions=KUBERNETES_FUNCTIONS))
        except CELParseError as exc:
            first_line = str(exc).splitlines()[0] if str(exc) else "syntax error"
            raise SelectorError(f"does not parse ({first_line})") from exc


def compile_selector(expression: str) -> Selector:
    """A new Selector, results shared only within it."""
    return SelectorCompiler().compile(expression)


@lru_cache(maxsize=1024)
def shared_selector(expression: str) -> Selector | SelectorError:
    """The Selector of an expression for every Snapshot of this process.

    A result depends only on the values the evaluation read, never on the Snapshot, so the
    watch cache's per-triage Snapshots share the evaluations of the ones before them.
    """
    try:
        return SelectorCompiler().compile(expression)
    except SelectorError as exc:
        return exc


def _reason(error: BaseException) -> str:
    args = error.args
    # cel-python wraps an extension's error as (generic words, class, the error's args):
    # the extension's message says more ("invalid semver: 'v1'").
    if (args and args[0] in ("return error for overflow", "no such overload") and len(args) >= 3
            and isinstance(args[2], tuple) and args[2] and isinstance(args[2][0], str)):
        return args[2][0]
    texts = [a for a in args if isinstance(a, str)]
    # It appends its whole activation to "undeclared reference" errors: cut that off.
    return texts[0].split(" (in activation", 1)[0] if texts else type(error).__name__


class DeviceVariable:
    """The ``device`` CEL variable for one ResourceSlice device, built only when needed.

    Attribute and capacity names may be qualified (``domain/name``); unqualified ones belong to
    the slice's driver, so ``productName`` is ``device.attributes["gpu.nvidia.com"].productName``.
    A shared result needs only the few values an evaluation read (``read``); the whole CEL map
    (``cel``) is built for a real evaluation.
    """

    def __init__(self, driver: str, device: Mapping[str, Any]) -> None:
        self.driver = driver
        self.raw = device
        self._values: dict[Path, Any] = {}
        self._cel: celtypes.MapType | None = None
        self._by_domain: dict[str, dict[str, dict[str, Any]]] = {}

    def _grouped(self, section: str) -> dict[str, dict[str, Any]]:
        """Raw attribute / capacity values by domain, then name (converted on read)."""
        if section not in self._by_domain:
            grouped: dict[str, dict[str, Any]] = {}
            for name, value in (self.raw.get(section) or {}).items():
                domain, ident = _qualified(str(name), self.driver)
                grouped.setdefault(domain, {})[ident] = value
            self._by_domain[section] = grouped
        return self._by_domain[section]

    def read(self, path: Path) -> Any:
        """What the CEL map holds at ``path``: a value, ``_MAP`` or ``_ABSENT``."""
        if path not in self._values:
            self._values[path] = self._lookup(path)
        return self._values[path]

    def _lookup(self, path: Path) -> Any:
        head, rest = path[0], path[1:]
        if head in ("driver", "allowMultipleAllocations"):
            return self._top(head) if not rest else _ABSENT
        if head not in ("attributes", "capacity"):
            return _ABSENT
        if not rest:
            return _MAP
        grouped = self._grouped(head)
        if rest[0] not in grouped:
            return _ABSENT
        if len(rest) == 1:
            # A domain whose only capacities are broken quantities is absent in the map.
            return _MAP if self._section(head, grouped[rest[0]]) else _ABSENT
        if len(rest) > 2:
            return _ABSENT
        values = self._section(head, {rest[1]: grouped[rest[0]][rest[1]]}
                               if rest[1] in grouped[rest[0]] else {})
        return values.get(rest[1], _ABSENT)

    def _top(self, key: str) -> Any:
        if key == "driver":
            return celtypes.StringType(self.driver)
        return celtypes.BoolType(bool(self.raw.get("allowMultipleAllocations")))

    @staticmethod
    def _section(section: str, raw: Mapping[str, Any]) -> dict[str, Any]:
        if section == "attributes":
            return {name: _attribute_value(value) for name, value in raw.items()}
        converted = {}
        for name, value in raw.items():
            text = str((value or {}).get("value", "")) if isinstance(value, dict) else str(
                value)
            try:
                converted[name] = Quantity(text)
            except QuantityError:
                continue  # the API server validates quantities; a broken one is simply absent
        return converted

    @property
    def cel(self) -> celtypes.MapType:
        if self._cel is None:
            self._cel = celtypes.MapType({
                celtypes.StringType("driver"): self._top("driver"),
                celtypes.StringType("allowMultipleAllocations"): self._top(
                    "allowMultipleAllocations"),
                **{celtypes.StringType(section): _nested({
                    domain: self._section(section, raw)
                    for domain, raw in self._grouped(section).items()
                    if self._section(section, raw)}) for section in ("attributes", "capacity")},
            })
        return self._cel


def device_variable(driver: str, device: Mapping[str, Any]) -> DeviceVariable:
    return DeviceVariable(driver, device)


def _qualified(name: str, driver: str) -> tuple[str, str]:
    domain, slash, ident = name.rpartition("/")
    return (domain, ident) if slash else (driver, name)


def _attribute_value(value: Any) -> Any:
    if not isinstance(value, dict):
        return celtypes.StringType(str(value))
    if "int" in value:
        return celtypes.IntType(int(value["int"]))
    if "bool" in value:
        return celtypes.BoolType(bool(value["bool"]))
    if "version" in value:
        try:
            return Semver(str(value["version"]))
        except ValueError:
            return celtypes.StringType(str(value["version"]))
    return celtypes.StringType(str(value.get("string", "")))


def _nested(by_domain: Mapping[str, Mapping[str, Any]]) -> celtypes.MapType:
    return celtypes.MapType({
        celtypes.StringType(domain): celtypes.MapType(
            {celtypes.StringType(k): v for k, v in values.items()})
        for domain, values in by_domain.items()})
