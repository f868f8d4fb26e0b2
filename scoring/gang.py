"""How many pods of a gang the nodes can take at once (pure): each pod needs its own GPUs on
one node, so a node takes as many as its free GPUs divide into, per resource."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass


def pods_per_node(free: Sequence[int], asked: Sequence[int]) -> int:
    """Pods asking ``asked`` GPUs (per resource) that ``free`` (the same resources, in the same
    order) holds side by side."""
    if len(asked) == 1:  # the usual case, without a generator
        return max(free[0], 0) // asked[0] if asked[0] > 0 else 0
    return min((max(have, 0) // want for have, want in zip(free, asked, strict=True)
                if want > 0), default=0)


@dataclass(frozen=True)
class GangPlacement:
    """Per node (by name, in the node table's order): gang pods it could take with every GPU
    free, and with what its current holders leave."""

    empty: tuple[tuple[str, int], ...]
    now: tuple[tuple[str, int], ...]

    @property
    def fit_empty(self) -> int:
        return sum(n for _, n in self.empty)

    @property
    def fit_now(self) -> int:
        return sum(n for _, n in self.now)

    def taking_now(self) -> list[tuple[str, int]]:
        return [(name, n) for name, n in self.now if n]

    def held_back(self) -> list[str]:
        """Nodes that would take more gang pods if their holders finished."""
        now = dict(self.now)
        return [name for name, n in self.empty if n > now.get(name, 0)]


def place_gang(nodes: Iterable[tuple[str, Sequence[int], Sequence[int]]],
               asked: Sequence[int]) -> GangPlacement:
    """``nodes``: (name, allocatable, free) of the GPU resources the gang's pods ask, in the
    order of ``asked``."""
    empty, now = [], []
    for name, allocatable, free in nodes:
        empty.append((name, pods_per_node(allocatable, asked)))
        now.append((name, pods_per_node(free, asked)))
    return GangPlacement(tuple(empty), tuple(now))
