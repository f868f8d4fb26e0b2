"""What a device publishes, typed, as CEL selectors read it: the attribute values and the
capacity texts of one device row (no CEL interpreter needed to hold them)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Version:
    """An attribute published as ``{version: "8.0.0"}``: a semver for CEL when it parses."""

    text: str


# ``{int: 3}`` → 3, ``{bool: true}`` → True, ``{version: ...}`` → Version, ``{string: ...}`` → str
AttributeValue = int | bool | str | Version


class CelDevice(Protocol):
    """The device row fields a CEL ``device`` variable is made of."""

    @property
    def driver(self) -> str: ...

    @property
    def attributes(self) -> Mapping[str, AttributeValue]: ...

    @property
    def quantities(self) -> Mapping[str, str]: ...

    @property
    def shared(self) -> bool: ...
