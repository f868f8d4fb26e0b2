"""How many pods of a gang the nodes can take at once (pure): each pod needs its own GPUs on
one node, so a node takes as many as its free GPUs divide into, per resource."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass


def pods_per_node(free: Mapping[str, int], request: Mapping[str, int]) -> int:
    """Pods asking ``request`` (whole GPUs by resource) that ``free`` holds side by side."""
    return min((max(free.get(resource, 0), 0) // count
                for resource, count in request.items() if count > 0), default=0)


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


def place_gang(nodes: Iterable[tuple[str, Mapping[str, int], Mapping[str, int]]],
               request: Mapping[str, int]) -> GangPlacement:
    """``nodes``: (name, allocatable, free) of the GPU resources the gang's pods ask."""
    empty, now = [], []
    for name, allocatable, free in nodes:
        empty.append((name, pods_per_node(allocatable, request)))
        now.append((name, pods_per_node(free, request)))
    return GangPlacement(tuple(empty), tuple(now))
