"""The cause vocabulary: words, their order, and the next action each implies.

This is a public contract: alert routes and the weekly digest key on these words.
The order of ``CAUSES`` is the order the checks run in (see ``triage.classify.pipeline``).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Cause(StrEnum):
    QUOTA_EXCEEDED = "quota-exceeded"
    RUNTIMECLASS_MISSING = "runtimeclass-missing"
    QUEUED = "queued"
    NO_GPU_REQUEST = "no-gpu-request"
    SELECTOR_MISMATCH = "selector-mismatch"
    TAINT_UNTOLERATED = "taint-untolerated"
    NO_GPU_NODE = "no-gpu-node"
    ALLOCATABLE_ZERO = "allocatable-zero"
    TOO_LARGE = "too-large"
    EXHAUSTED = "exhausted"
    DEVICE_UNFIT = "device-unfit"
    OTHER_CONSTRAINT = "other-constraint"
    SCHEDULER_UNAVAILABLE = "scheduler-unavailable"
    SCHEDULED = "scheduled"
    NODE_RUNTIME_ERROR = "node-runtime-error"
    POD_NOT_FOUND = "pod-not-found"


@dataclass(frozen=True)
class CauseInfo:
    cause: Cause
    emoji: str
    summary: str
    next_action: str


# In check order: the first that holds is the answer. Each check also has a precondition
# (pod absent / present / unbound / bound), so node-runtime-error is tried before the
# bound-pod fallback `scheduled`.
CAUSES: tuple[CauseInfo, ...] = (
    CauseInfo(Cause.QUOTA_EXCEEDED, "🔒", "pod rejected at creation by a ResourceQuota",
              "raise the quota or free usage"),
    CauseInfo(Cause.RUNTIMECLASS_MISSING, "🧩", "pod rejected at creation: RuntimeClass not found",
              "create the RuntimeClass or fix runtimeClassName"),
    CauseInfo(Cause.QUEUED, "⏸", "the workload waits for a queue's admission",
              "wait, or fix what the queue names (quota, LocalQueue, ClusterQueue)"),
    CauseInfo(Cause.NO_GPU_REQUEST, "❔", "no container asks for a GPU",
              "add `limits: nvidia.com/gpu: N` to the container that needs it"),
    CauseInfo(Cause.SELECTOR_MISMATCH, "🎯", "no node matches the nodeSelector / node affinity",
              "fix the selector or label a node"),
    CauseInfo(Cause.TAINT_UNTOLERATED, "🚧",
              "every matching node has a taint the pod does not tolerate",
              "add a toleration, or uncordon; never just remove taints"),
    CauseInfo(Cause.NO_GPU_NODE, "🔌", "no matching node reports the GPU resource",
              "restore the device plugin on those nodes"),
    CauseInfo(Cause.ALLOCATABLE_ZERO, "🩺", "GPUs exist but allocatable is 0",
              "repair the node (driver / validator); adding nodes won't help"),
    CauseInfo(Cause.TOO_LARGE, "⛔", "no matching node has that many GPUs even when empty",
              "split the job or get a bigger node; waiting never helps"),
    CauseInfo(Cause.EXHAUSTED, "⏳", "the GPUs exist but are taken",
              "wait, or add capacity"),
    CauseInfo(Cause.DEVICE_UNFIT, "🧮", "GPU slots exist but no device meets the HAMi request",
              "lower the memory / cores request or free a device"),
    CauseInfo(Cause.OTHER_CONSTRAINT, "🧷", "GPU-wise a node fits; something else blocks",
              "fix what the scheduler names"),
    CauseInfo(Cause.SCHEDULER_UNAVAILABLE, "📭", "GPU-wise a node fits, but no scheduler spoke",
              "start the scheduler named in spec.schedulerName, or fix the name"),
    CauseInfo(Cause.NODE_RUNTIME_ERROR, "💥", "bound, but the node failed to start it",
              "repair the node's runtime / device plugin, then recreate the pod"),
    CauseInfo(Cause.SCHEDULED, "✅", "bound to a node; nothing wrong at scheduling level",
              "nothing to do at scheduling level; check the pod's logs"),
    CauseInfo(Cause.POD_NOT_FOUND, "🔍", "no pod and no admission evidence",
              "check the name and namespace"),
)

CAUSE_INFO: dict[Cause, CauseInfo] = {info.cause: info for info in CAUSES}
CAUSE_ORDER: dict[Cause, int] = {info.cause: i for i, info in enumerate(CAUSES)}

# Per-node outcomes: a failing funnel step names the node's outcome, else "fit".
FIT = "fit"
NODE_UNREGISTERED = "node unregistered"
