"""Answers remembered by the identities of the objects they were worked out from.

A list read keeps what the items of a kind share as one object each (a kind's pods' spec
fields, a pool's nodes' capacity and allocatable: ``triage.cache.listpages``), so an answer
worked out from those objects holds for every item that has the very same ones.
"""

from __future__ import annotations

from typing import Generic, TypeVar

T = TypeVar("T")

MAX_REMEMBERED = 10_000  # answers held at most (a long-lived store's objects change)


class ByIdentity(Generic[T]):
    """Answers found by the identities of the objects they were worked out from, held with
    those objects, so an identity is never another object's (the last MAX_REMEMBERED)."""

    def __init__(self) -> None:
        self._known: dict[tuple[int, ...], tuple[T, tuple[object, ...]]] = {}

    def get(self, parts: tuple[object, ...]) -> T | None:
        known = self._known.get(tuple(map(id, parts)))
        return None if known is None else known[0]

    def put(self, parts: tuple[object, ...], answer: T) -> T:
        if len(self._known) >= MAX_REMEMBERED:
            self._known.clear()
        self._known[tuple(map(id, parts))] = (answer, parts)
        return answer
