"""HAMi's view of a pod, read off its JSON: what it asks HAMi for (``scoring.hami.request``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scoring.hami.formats import ASSIGNED_NODE_KEY
from scoring.hami.request import HAMI_RESOURCES, HamiContainer, HamiRequest, request_of
from scoring.quantity import QuantityError, parse_quantity


def hami_request(pod: Mapping[str, Any]) -> HamiRequest | None:
    """The pod's HAMi request (``scoring.hami.request.request_of``), None when HAMi has
    nothing to place."""
    spec = pod.get("spec") or {}
    containers = [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]
    return request_of([_hami_container(c) for c in containers],
                      str(spec.get("schedulerName") or ""),
                      dict((pod.get("metadata") or {}).get("annotations") or {}))


def hami_placed_on(pod: Mapping[str, Any], node_name: str) -> bool:
    """HAMi assigned the pod this node (a look at one annotation, before any row is built)."""
    return ((pod.get("metadata") or {}).get("annotations") or {}).get(
        ASSIGNED_NODE_KEY) == node_name


def _hami_container(container: Mapping[str, Any]) -> HamiContainer:
    """Limits first, then requests; quantities as the API server stores them ("70k")."""
    resources = container.get("resources") or {}
    amounts: dict[str, int | None] = {}
    for section in ("requests", "limits"):  # limits last: theirs win
        for name, value in (resources.get(section) or {}).items():
            if name in HAMI_RESOURCES:
                try:
                    amounts[name] = int(parse_quantity(value))
                except QuantityError:
                    amounts[name] = None
    return HamiContainer(name=str(container.get("name", "")), amounts=amounts)
