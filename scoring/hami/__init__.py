"""HAMi's view of a node: registered devices, their usage, and whether a pod's request fits.

Everything here mirrors HAMi's scheduler extender (``pkg/device/nvidia`` Fit,
``pkg/scheduler/score.go``, ``pkg/scheduler/policy``) closely enough to give the same
codes and the same reason strings, computed from the rows alone: ``formats`` parses the
annotations the row builders hand it, ``usage`` sums the pods' rows per card, ``fit`` judges
a node. Formats are described in the HAMi reference notes; the function docstrings say where
gpuwhy deliberately differs.
"""

from scoring.hami.fit import (
    HAMI_HOLDERS,
    HamiNodeFit,
    fit_registered,
    pick_first,
    pick_order,
)
from scoring.hami.formats import (
    ALL_CODES,
    CARD_COMPUTE_UNITS_EXHAUSTED,
    CARD_CORDONED,
    CARD_INSUFFICIENT_CORE,
    CARD_INSUFFICIENT_MEMORY,
    CARD_NOT_HEALTH,
    CARD_TIME_SLICING_EXHAUSTED,
    CARD_TYPE_MISMATCH,
    CARD_UUID_MISMATCH,
    EXCLUSIVE_DEVICE_ALLOCATE_CONFLICT,
    NODE_INSUFFICIENT_DEVICE,
    NODE_UNREGISTERED,
    NUMA_NOT_FIT,
    Registration,
    parse_allocation,
    parse_registration,
    pod_allocation,
)
from scoring.hami.request import HamiContainer, HamiRequest
from scoring.hami.usage import Usage, device_usage

__all__ = [
    "ALL_CODES",
    "CARD_COMPUTE_UNITS_EXHAUSTED",
    "CARD_CORDONED",
    "CARD_INSUFFICIENT_CORE",
    "CARD_INSUFFICIENT_MEMORY",
    "CARD_NOT_HEALTH",
    "CARD_TIME_SLICING_EXHAUSTED",
    "CARD_TYPE_MISMATCH",
    "CARD_UUID_MISMATCH",
    "EXCLUSIVE_DEVICE_ALLOCATE_CONFLICT",
    "HAMI_HOLDERS",
    "NODE_INSUFFICIENT_DEVICE",
    "NODE_UNREGISTERED",
    "NUMA_NOT_FIT",
    "HamiContainer",
    "HamiNodeFit",
    "HamiRequest",
    "Registration",
    "Usage",
    "device_usage",
    "fit_registered",
    "parse_allocation",
    "parse_registration",
    "pick_first",
    "pick_order",
    "pod_allocation",
]
