"""What keeps a queue from admitting anything (Kueue's workload controller, getQueueBlocker):
the LocalQueue named does not exist, its ClusterQueue does not, or is inactive (a missing
ResourceFlavor, a stop policy)."""

from __future__ import annotations

from scoring.verdict import Evidence
from triage import queues
from triage.queues import QueueIndex


def local_queue_missing(index: QueueIndex, what: str, namespace: str, queue: str,
                        evidence: list[Evidence]) -> str | None:
    if index.local_queue(namespace, queue) is not None:
        return None
    existing = index.names("LocalQueue", namespace)
    evidence.append(Evidence(f"namespace {namespace}", "LocalQueues",
                             ", ".join(existing) or "none"))
    odd = "" if queues.valid_name(queue) else " (not even a valid object name)"
    if existing:
        fix = (f"the namespace has {', '.join(f'LocalQueue {q}' for q in existing)}. Fix the "
               f"label ({queues.QUEUE_LABEL}: {existing[0]}) and recreate it.")
    else:
        fix = ("the namespace has no LocalQueue at all. Ask the cluster's admins for one, "
               "or remove the label to run it outside Kueue.")
    label = (f"names LocalQueue {queue!r}{odd} in label {queues.QUEUE_LABEL}, which does not "
             f"exist in namespace {namespace}" if queue else f"has no {queues.QUEUE_LABEL} label")
    return (f"{what} waits forever as things are: it {label}, so Kueue admits nothing of it; "
            + fix)


def cluster_queue_unusable(index: QueueIndex, what: str, namespace: str, queue: str,
                           evidence: list[Evidence]) -> str | None:
    local = index.local_queue(namespace, queue)
    name = local.cluster_queue if local is not None else ""
    cluster_queue = index.cluster_queues.get(name)
    if cluster_queue is None:
        evidence.append(Evidence(f"LocalQueue {namespace}/{queue}", "spec.clusterQueue",
                                 name or "(unset)"))
        return (f"{what} waits forever as things are: LocalQueue {namespace}/{queue} points "
                f"to ClusterQueue {name or '(unset)'}, which does not exist (existing: "
                f"{', '.join(index.names('ClusterQueue')) or 'none'}). Create it, or point "
                "the LocalQueue at one that exists.")
    why: list[str] = []
    existing = set(index.names("ResourceFlavor"))
    missing = [f for f in cluster_queue.flavors if f not in existing]
    if missing:
        why.append(f"it names ResourceFlavor {', '.join(missing)}, which does not exist "
                   f"(existing: {', '.join(sorted(existing)) or 'none'})")
    for policy, label in ((cluster_queue.stop_policy, f"ClusterQueue {name}"),
                          (local.stop_policy if local is not None else "None",
                           f"LocalQueue {namespace}/{queue}")):
        if policy != "None":
            why.append(f"{label} is stopped (stopPolicy {policy})")
    active = cluster_queue.conditions.get("Active")
    if active is not None and active.false:
        evidence.append(Evidence(f"ClusterQueue {name}", "status.conditions[Active]",
                                 f"False {active.reason}: {active.message}"))
        if not why:
            why.append(active.message or active.reason or "inactive")
    if not why:
        return None
    fix = ("Create the ResourceFlavor (or fix the name in the ClusterQueue)" if missing
           else "Set stopPolicy to None when the queue may admit again")
    return (f"{what} waits in LocalQueue {namespace}/{queue}, but ClusterQueue {name} is "
            f"inactive: {'; '.join(why)}. Nothing in it is admitted until that is fixed. "
            f"{fix}.")
