"""Kueue's objects (kueue.x-k8s.io) as rows: the facts triage reads off them, in the shapes of
both versions Kueue serves (v1beta1 and v1beta2 differ in a few field names).

The one place (this package) that reads Kueue's raw shapes (with the cluster readers,
which pick what to read by them): the checks read only the rows built here. Pure functions
only: no I/O. A Snapshot holds the objects (``queues.json`` of a dump, or what the live
reader or the watch cache read); ``QueueIndex`` builds the rows once and looks them up:
``names`` (Kueue's names and the raw accessors), ``rows`` (the rows), ``index``.
"""

from triage.queues.index import QueueIndex, slim_workload
from triage.queues.names import (
    CLUSTER_QUEUE_LABEL,
    GATE_PREFIX,
    GROUP,
    JOB_UID_LABEL,
    KNOWN_VERSIONS,
    QUEUE_KINDS,
    QUEUE_LABEL,
    WORKLOAD_ANNOTATION,
    entries,
    is_kueue,
    kueue_gates,
    kueue_involved,
    part,
    preemptor_uid,
    queue_name,
    text,
    valid_name,
)
from triage.queues.rows import (
    Assignment,
    ClusterQueueRow,
    CohortRow,
    Condition,
    FlavorQuota,
    FlavorRow,
    LocalQueueRow,
    PodSet,
    QueueOwner,
    WorkloadRow,
)

__all__ = [
    "CLUSTER_QUEUE_LABEL",
    "GATE_PREFIX",
    "GROUP",
    "JOB_UID_LABEL",
    "KNOWN_VERSIONS",
    "QUEUE_KINDS",
    "QUEUE_LABEL",
    "WORKLOAD_ANNOTATION",
    "Assignment",
    "ClusterQueueRow",
    "CohortRow",
    "Condition",
    "FlavorQuota",
    "FlavorRow",
    "LocalQueueRow",
    "PodSet",
    "QueueIndex",
    "QueueOwner",
    "WorkloadRow",
    "entries",
    "is_kueue",
    "kueue_gates",
    "kueue_involved",
    "part",
    "preemptor_uid",
    "queue_name",
    "slim_workload",
    "text",
    "valid_name",
]
