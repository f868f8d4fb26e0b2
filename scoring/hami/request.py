"""What a pod asks HAMi for: per container count, memory (MiB or a percentage) and cores, and
the pod's HAMi annotations (card type and UUID choices, NUMA binding, policies).

Read off the pod's containers by ``triage.rows.hami_request``, which hands each one's HAMi
amounts over as a ``HamiContainer``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property

from scoring.hami.formats import (
    CORES_RESOURCE,
    COUNT_RESOURCE,
    FULL_CARD_CORES,
    GO_TRUE,
    GPU_POLICY_KEY,
    HAMI_SCHEDULER,
    MEMORY_PERCENTAGE_RESOURCE,
    MEMORY_RESOURCE,
    NODE_POLICY_KEY,
    NOUSE_TYPE_KEY,
    NOUSE_UUID_KEY,
    NUMA_BIND_KEY,
    SHARING_RESOURCES,
    USE_TYPE_KEY,
    USE_UUID_KEY,
    VGPU_MODE_KEY,
    policy_words,
)

# -- what the pod asks for --------------------------------------------------------------------


@dataclass(frozen=True)
class HamiRequest:
    """One container's NVIDIA request as HAMi reads it, plus the pod's HAMi annotations.

    ``mem`` is MiB or None; with neither ``mem`` nor a percentage HAMi takes the whole
    card's memory, so ``mem_percentage`` is 100 then. Filters are None when the annotation
    is absent (HAMi treats a present-but-empty value differently from an absent one).
    """

    count: int
    mem: int | None
    mem_percentage: int | None
    cores: int
    container: str = ""  # the container whose request this is
    containers: int = 1  # how many containers ask for NVIDIA GPUs
    # (count, mem, percentage, cores) of every asking container, init containers first:
    # HAMi fits them one after another, each on the usage the earlier ones leave.
    asks: tuple[tuple[int, int | None, int | None, int], ...] = ()
    use_types: tuple[str, ...] | None = None
    nouse_types: tuple[str, ...] | None = None
    use_uuids: tuple[str, ...] | None = None
    nouse_uuids: tuple[str, ...] | None = None
    vgpu_mode: str | None = None
    numa_bind: bool = False
    node_policy: str | None = None
    gpu_policy: str | None = None

    def memory_on(self, card_memory: int) -> int:
        """The MiB this request needs on a card of ``card_memory`` MiB."""
        if self.mem is not None:
            return self.mem
        if self.mem_percentage is not None:
            return card_memory * self.mem_percentage // 100
        return 0

    @cached_property
    def mutex(self) -> bool:
        return "mutex" in policy_words(self.gpu_policy)

    @cached_property
    def each_ask(self) -> tuple[HamiRequest, ...]:
        """The request of each asking container, in the order HAMi fits them."""
        if not self.asks:
            return (self,)
        return tuple(replace(self, count=count, mem=mem, mem_percentage=percentage, cores=cores)
                     for count, mem, percentage, cores in self.asks)


@dataclass(frozen=True)
class HamiContainer:
    """One container's HAMi resources: each of ``HAMI_RESOURCES`` its limits or requests name,
    limits first, as an integer (None: the quantity does not parse)."""

    name: str
    amounts: Mapping[str, int | None]


def request_of(containers: Sequence[HamiContainer], scheduler: str,
                 annotations: Mapping[str, str]) -> HamiRequest | None:
    """The pod's request as HAMi reads it, or None when HAMi has nothing to place.

    ``containers`` are the pod's, init containers first; ``scheduler`` its
    spec.schedulerName. None when no container asks for ``nvidia.com/gpu`` or a sharing
    resource, and also when only whole GPUs are asked for and the pod is not for
    hami-scheduler (plain device plugin).

    The request shown is the largest container's (most cards, then most memory, then most
    cores); ``asks`` keeps every container's, which the fit places in turn like HAMi.
    """
    asks = [(c.name, _container_request(c.amounts)) for c in containers]
    asking = [(name, request) for name, request in asks if request is not None]
    uses_sharing = any(name in c.amounts for c in containers for name in SHARING_RESOURCES)
    if not asking or (not uses_sharing and scheduler != HAMI_SCHEDULER):
        return None
    name, largest = max(asking, key=lambda item: (item[1][0], item[1][1] or 0, item[1][2] or 0,
                                                  item[1][3]))
    count, mem, percentage, cores = largest

    def listed(key: str) -> tuple[str, ...] | None:
        return tuple(annotations[key].split(",")) if key in annotations else None

    return HamiRequest(
        count=count, mem=mem, mem_percentage=percentage, cores=cores, container=name,
        containers=len(asking), asks=tuple(ask for _, ask in asking),
        use_types=listed(USE_TYPE_KEY), nouse_types=listed(NOUSE_TYPE_KEY),
        use_uuids=listed(USE_UUID_KEY), nouse_uuids=listed(NOUSE_UUID_KEY),
        vgpu_mode=annotations.get(VGPU_MODE_KEY),
        numa_bind=annotations.get(NUMA_BIND_KEY, "") in GO_TRUE,
        node_policy=annotations.get(NODE_POLICY_KEY),
        gpu_policy=annotations.get(GPU_POLICY_KEY))


# Every resource of a container HAMi reads
HAMI_RESOURCES = (COUNT_RESOURCE, MEMORY_RESOURCE, MEMORY_PERCENTAGE_RESOURCE, CORES_RESOURCE)


def _container_request(
        amounts: Mapping[str, int | None]) -> tuple[int, int | None, int | None, int] | None:
    """(count, mem, percentage, cores) with HAMi's defaults, or None without a GPU ask."""
    count = amounts.get(COUNT_RESOURCE)
    mem = amounts.get(MEMORY_RESOURCE)
    percentage = amounts.get(MEMORY_PERCENTAGE_RESOURCE)
    cores = amounts.get(CORES_RESOURCE)
    if count is None:
        if mem is None and percentage is None and cores is None:
            return None
        count = 1  # the webhook adds one card when only memory or cores are given
    if count == 0:
        return None
    if cores is None:
        # since v2.7 the webhook makes a count-only request an exclusive card
        only_count = mem is None and percentage is None
        cores = FULL_CARD_CORES if only_count else 0
    mem = mem if mem else None  # gpumem 0 means "not set" to HAMi
    if mem is None and percentage is None:
        percentage = 100
    return count, mem, percentage, min(cores, FULL_CARD_CORES)
