"""Selectors compiled once and evaluated on devices, with the keys each evaluation read (so
devices that agree on those keys share one result), and the ``device`` variable CEL sees."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import celpy
from celpy import celtypes
from celpy.celparser import CELParseError
from celpy.evaluation import CELEvalError, CELUnsupportedError

from scoring.cel.error import SelectorError
from scoring.cel.library import KUBERNETES_FUNCTIONS, Quantity, Semver
from scoring.cel.values import AttributeValue, CelDevice, Version
from scoring.quantity import QuantityError

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
    """The ``device`` CEL variable for one device row, built only when needed.

    Attribute and capacity names may be qualified (``domain/name``); unqualified ones belong to
    the slice's driver, so ``productName`` is ``device.attributes["gpu.nvidia.com"].productName``.
    A shared result needs only the few values an evaluation read (``read``); the whole CEL map
    (``cel``) is built for a real evaluation.
    """

    def __init__(self, driver: str, attributes: Mapping[str, AttributeValue],
                 quantities: Mapping[str, str], shared: bool) -> None:
        self.driver = driver
        self._published: dict[str, Mapping[str, Any]] = {"attributes": attributes,
                                                         "capacity": quantities}
        self._shared = shared
        self._values: dict[Path, Any] = {}
        self._cel: celtypes.MapType | None = None
        self._by_domain: dict[str, dict[str, dict[str, str]]] = {}

    def _grouped(self, section: str) -> dict[str, dict[str, str]]:
        """The published attribute / capacity names by domain, then unqualified name."""
        if section not in self._by_domain:
            grouped: dict[str, dict[str, str]] = {}
            for name in self._published[section]:
                domain, ident = _qualified(str(name), self.driver)
                grouped.setdefault(domain, {})[ident] = name
            self._by_domain[section] = grouped
        return self._by_domain[section]

    def _named(self, section: str, names: Mapping[str, str]) -> dict[str, Any]:
        """The published values of these names (ident → published name)."""
        published = self._published[section]
        return {ident: published[name] for ident, name in names.items()}

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
            return _MAP if self._section(head, self._named(head, grouped[rest[0]])) else _ABSENT
        if len(rest) > 2:
            return _ABSENT
        names = grouped[rest[0]]
        values = self._section(head, self._named(head, {rest[1]: names[rest[1]]})
                               if rest[1] in names else {})
        return values.get(rest[1], _ABSENT)

    def _top(self, key: str) -> Any:
        if key == "driver":
            return celtypes.StringType(self.driver)
        return celtypes.BoolType(self._shared)

    @staticmethod
    def _section(section: str, published: Mapping[str, Any]) -> dict[str, Any]:
        if section == "attributes":
            return {name: _attribute_value(value) for name, value in published.items()}
        converted = {}
        for name, text in published.items():
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
                    domain: converted for domain, names in self._grouped(section).items()
                    if (converted := self._section(section, self._named(section, names)))})
                   for section in ("attributes", "capacity")},
            })
        return self._cel


def device_variable(device: CelDevice) -> DeviceVariable:
    return DeviceVariable(device.driver, device.attributes, device.quantities, device.shared)


def _qualified(name: str, driver: str) -> tuple[str, str]:
    domain, slash, ident = name.rpartition("/")
    return (domain, ident) if slash else (driver, name)


def _attribute_value(value: AttributeValue) -> Any:
    if isinstance(value, bool):
        return celtypes.BoolType(value)
    if isinstance(value, int):
        return celtypes.IntType(value)
    if isinstance(value, Version):
        try:
            return Semver(value.text)
        except ValueError:
            return celtypes.StringType(value.text)
    return celtypes.StringType(value)


def _nested(by_domain: Mapping[str, Mapping[str, Any]]) -> celtypes.MapType:
    return celtypes.MapType({
        celtypes.StringType(domain): celtypes.MapType(
            {celtypes.StringType(k): v for k, v in values.items()})
        for domain, values in by_domain.items()})
