"""A ClusterQueue's quota against what a workload asks (Kueue's flavor assigner): per flavor,
the nominal quota, what is reserved and by whom, what the cohort lends, the most it can
ever give, and where the workload stands in line."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from scoring.verdict import Evidence
from triage.classify.checks.queue_blockers import cluster_queue_unusable, local_queue_missing
from triage.classify.subject import num
from triage.queues import ClusterQueueRow, FlavorQuota, QueueIndex, WorkloadRow


@dataclass(frozen=True)
class FlavorRoom:
    """One flavor of a ClusterQueue for one resource: its quota, what the cohort lends now,
    what is free now, and the most it can ever hold."""

    quota: FlavorQuota
    lendable: Decimal
    free: Decimal
    ceiling: Decimal


def flavor_rooms(index: QueueIndex, cluster_queue: ClusterQueueRow,
                 resource: str) -> list[FlavorRoom]:
    """The flavors covering ``resource``, in the order Kueue tries them."""
    cohort = cluster_queue.cohort
    members = [cq for cq in index.cohort_members(cohort) if cq.name != cluster_queue.name]
    rooms = []
    for quota in cluster_queue.quotas_for(resource):
        lendable = _lendable(members, quota.flavor, resource)
        borrowable = (lendable if quota.borrowing_limit is None
                      else min(lendable, quota.borrowing_limit))
        rooms.append(FlavorRoom(quota, lendable, quota.unused + borrowable,
                                _ceiling(quota, cohort, members, resource)))
    return rooms


def quota_answer(index: QueueIndex, what: str, workload: WorkloadRow,
                 cluster_queue: ClusterQueueRow, resource: str, need: Decimal, how: str,
                 position: tuple[int, int] | None, evidence: list[Evidence]) -> str:
    """Why the quota does not fit ``need`` of ``resource`` (``how``: "2 pods × 4") now, or
    ever: the numbers, per flavor. ``position``: Kueue's own word on the line, if read."""
    name = cluster_queue.name or "?"
    rooms = flavor_rooms(index, cluster_queue, resource)
    cohort = cluster_queue.cohort
    for room in rooms:  # the digest's "Queues" section reads these back
        quota = room.quota
        evidence.append(Evidence(
            f"ClusterQueue {name}", f"flavor {quota.flavor} [{resource}]",
            f"nominal {num(quota.nominal)}, reserved {num(quota.reserved)}"
            + (f", borrowingLimit {num(quota.borrowing_limit)}"
               if quota.borrowing_limit is not None else "") + f", needs {num(need)}"))
    if all(need > room.ceiling for room in rooms):
        return (f"{what} needs {num(need)} {resource} ({how}), "
                + _never(name, cohort, rooms) + " It will wait forever: split it into "
                f"smaller jobs, or ask for quota in {name}.")
    parts = []
    for room in rooms:
        quota = room.quota
        holders = _holders(index, name, quota.flavor, resource)
        parts.append(f"flavor {quota.flavor} has {num(quota.nominal)} {resource}"
                     f"{_borrowing(quota, cohort, room.lendable)}, {num(quota.reserved)} "
                     f"reserved ({holders or 'by no workload gpuwhy sees'}): "
                     f"{num(room.free)} free, {num(max(need - room.free, Decimal(0)))} short")
    if position is not None:  # Kueue's own word (its visibility API), read live
        queue_word = f"{_ordinal(position[0] + 1)} of {position[1]} pending in {name}"
    elif ahead := _ahead(index, name, workload):
        queue_word = f"{ahead} pending ahead of it in {name}"
    else:
        queue_word = f"first in line in {name}"
    asks = ("ask for quota / borrowing in cohort " + cohort) if cohort else "ask for quota"
    return (f"ClusterQueue {name}: {'; '.join(parts)}. {what} needs {num(need)} "
            f"({how}): wait ({queue_word}), lower the request, or {asks}.")


def preview_admission(index: QueueIndex, what: str, namespace: str, queue: str,
                      resource: str, need: Decimal) -> tuple[str | None, str]:
    """Would Kueue admit a new workload asking ``need`` of ``resource`` in LocalQueue
    ``namespace/queue`` now (``gpuwhy check``)? The flavor it would get (None: it would be
    queued), and the sentence that says why."""
    ignored: list[Evidence] = []
    if not index:
        return None, ("gpuwhy sees no Kueue objects in this cluster (kueue.x-k8s.io not "
                      "served or not readable): nothing would admit it.")
    blocked = (local_queue_missing(index, what, namespace, queue, ignored)
               or cluster_queue_unusable(index, what, namespace, queue, ignored))
    if blocked is not None:
        return None, blocked
    local = index.local_queue(namespace, queue)
    name = local.cluster_queue if local is not None else ""
    cluster_queue = index.cluster_queues[name]  # cluster_queue_unusable: it exists
    rooms = flavor_rooms(index, cluster_queue, resource)
    if not rooms:
        return None, f"ClusterQueue {name} has no quota for {resource}."
    if all(need > room.ceiling for room in rooms):
        return None, (f"{what} needs {num(need)} {resource}, "
                      + _never(name, cluster_queue.cohort, rooms) + " It would wait forever.")
    fits = next((room for room in rooms if need <= room.free), None)
    if fits is not None:
        return fits.quota.flavor, (f"ClusterQueue {name}, flavor {fits.quota.flavor}: "
                                   f"{_free(fits, resource, cluster_queue.cohort)}, it needs "
                                   f"{num(need)}.")
    return None, ("; ".join(f"flavor {room.quota.flavor} has "
                            f"{_free(room, resource, cluster_queue.cohort)}"
                            for room in rooms) + f"; it needs {num(need)}.")


def _free(room: FlavorRoom, resource: str, cohort: str) -> str:
    """What is free of a flavor, with what of it the cohort lends: "4 of 8 free" alone would
    read "10 of 4" once the ClusterQueue may borrow."""
    borrowable = room.free - room.quota.unused
    if not borrowable:
        return f"{num(room.free)} of {num(room.quota.nominal)} {resource} free"
    return (f"{num(room.free)} {resource} free ({num(room.quota.unused)} of its nominal "
            f"{num(room.quota.nominal)} + {num(borrowable)} it may borrow in cohort {cohort})")


def _ordinal(number: int) -> str:
    suffix = "th" if 10 <= number % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(number % 10,
                                                                                 "th")
    return f"{number}{suffix}"


def _never(name: str, cohort: str, rooms: list[FlavorRoom]) -> str:
    most = "; ".join(f"{num(room.ceiling)} in flavor {room.quota.flavor} "
                     f"({_ceiling_how(room.quota, cohort)})" for room in rooms)
    return f"more than ClusterQueue {name} can ever give: at most {most}."


def _ceiling(quota: FlavorQuota, cohort: str, members: list[ClusterQueueRow],
             resource: str) -> Decimal:
    """The most the ClusterQueue can hold of the flavor, with everything free."""
    if quota.most is not None or not cohort:
        return quota.most if quota.most is not None else quota.nominal
    lent = Decimal(0)
    for member in members:
        for theirs in member.quotas_for(resource):
            if theirs.flavor == quota.flavor:
                lent += (theirs.nominal if theirs.lending_limit is None
                         else min(theirs.nominal, theirs.lending_limit))
    return quota.nominal + lent


def _ceiling_how(quota: FlavorQuota, cohort: str) -> str:
    if quota.borrowing_limit is not None:
        return f"nominal {num(quota.nominal)} + borrowingLimit {num(quota.borrowing_limit)}"
    return (f"nominal {num(quota.nominal)} + what cohort {cohort} can lend" if cohort
            else f"nominal {num(quota.nominal)}, no cohort to borrow from")


def _lendable(members: list[ClusterQueueRow], flavor: str, resource: str) -> Decimal:
    """What the other ClusterQueues of the cohort leave unused of the flavor now."""
    total = Decimal(0)
    for member in members:
        for theirs in member.quotas_for(resource):
            if theirs.flavor == flavor:
                spare = theirs.unused
                total += spare if theirs.lending_limit is None else min(spare,
                                                                        theirs.lending_limit)
    return total


def _borrowing(quota: FlavorQuota, cohort: str, lendable: Decimal) -> str:
    if not cohort:
        return " (no cohort to borrow from)"
    if quota.borrowing_limit is not None and quota.borrowing_limit == 0:
        return f" (borrowingLimit 0: it cannot borrow from cohort {cohort})"
    limit = (f", borrowingLimit {num(quota.borrowing_limit)}"
             if quota.borrowing_limit is not None else "")
    return f" (cohort {cohort} has {num(lendable)} unused to lend{limit})"


def _holders(index: QueueIndex, cluster_queue: str, flavor: str, resource: str) -> str:
    held = []
    for workload in index.workloads_in(cluster_queue):
        if workload.admitted_in != cluster_queue:
            continue
        amount = sum((a for f, a in workload.assigned(resource) if f == flavor), Decimal(0))
        if amount:
            reserved = workload.condition("QuotaReserved")
            held.append((reserved.since if reserved is not None else "", workload.owner,
                         amount))
    return ", ".join(f"{owner} {num(amount)}" for _, owner, amount in sorted(held))


def _ahead(index: QueueIndex, cluster_queue: str, workload: WorkloadRow) -> int:
    """Pending workloads of the ClusterQueue Kueue tries first: higher priority, or the same
    and created earlier (its BestEffortFIFO / StrictFIFO order)."""
    mine = (-workload.priority, workload.created, (workload.namespace, workload.name))
    return sum(1 for other in index.workloads_in(cluster_queue)
               if other is not workload and not other.admitted_in
               and (-other.priority, other.created, (other.namespace, other.name)) < mine)
