"""Gangs (scheduling.k8s.io pod groups, GangScheduling): none of the pods is bound until
``minCount`` of them fit at once, so each pod alone may fit while the gang cannot.

kube-scheduler tries a complete gang in one pod group scheduling cycle and gives it up as a
group; a gang too large for the cluster and one blocked by holders read the same ("waiting
for minCount pods from a gang"), and an incomplete gang gets no word at all. The objects tell
them apart: on the nodes the pod's selector and taints leave, how many of its pods fit with
every GPU free (too-large below minCount), how many fit now (exhausted below minCount), and
how many pods name the group (other-constraint below minCount: the scheduler waits for the
rest to be created). GPU causes come first: these run after the per-pod GPU filters.
GPUs asked through DRA claims count like device-plugin GPUs: per node, how many pods asking
the pod's claims its devices take at once (``scoring.dra.gang``).
"""

from __future__ import annotations

from scoring.dra import Request, SliceDevice
from scoring.dra.capacity import quantity_text, usage_text
from scoring.dra.model import Holder, holders_text
from scoring.dra.rows import DeviceKey
from scoring.gang import GangPlacement, place_gang, pods_per_node
from scoring.nodetable import NodeInfo
from scoring.rows import WorkloadRow
from scoring.verdict import Evidence, NodeOutcomes
from triage import admission
from triage.classify.checks.selector import selector_text
from triage.classify.subject import Finding, Subject, first_four, scheduler_evidence
from triage.gangs import Gang
from triage.messages import latest_scheduling_failure, parse_failed_scheduling
from triage.vocabulary import Cause

_NO_GANG_POD = frozenset(c.value for c in (
    Cause.SELECTOR_MISMATCH, Cause.TAINT_UNTOLERATED, Cause.NO_GPU_NODE, Cause.DEVICE_UNFIT,
    Cause.ALLOCATABLE_ZERO, Cause.TOO_LARGE))
MAX_PODS = 110  # the kubelet's default maxPods, for a node whose allocatable pods is unread


def _dra_gpu_requests(subject: Subject) -> list[Request]:
    """The GPU requests of the pod's claims that are yet to be allocated."""
    dra = subject.dra
    if dra is None:
        return []
    return [request for claim in dra.claims
            if claim.problem is None and claim.allocated_nodes is None
            for request in claim.requests if dra.inventory.is_gpu_request(request)]


def _judged(subject: Subject) -> Gang | None:
    """The pod's gang when gpuwhy judges it as one: GPUs as extended resources (a device
    plugin's or DRA's) or through claims, a gang policy of more than one pod, fewer of them
    bound than minCount."""
    gang = subject.gang
    if (gang is None or gang.pod_group is None or gang.min_count < 2
            or not (subject.gpu or _dra_gpu_requests(subject))
            or len(gang.bound) >= gang.min_count):
        return None
    return gang


def _placement(subject: Subject) -> GangPlacement:
    """The gang's view of the nodes the pod's selector and taints leave (worked out once per
    triage: both gang GPU checks ask)."""
    if subject.gang_placement is None:
        node_info, free_gpus = subject.rows.node, subject.rows.free_gpus
        resources = list(subject.gpu)
        # claims judged node by node: the pod's own GPU claims, and those DRA makes for its
        # extended resources on the nodes a DeviceClass serves them
        dra = subject.dra if _dra_gpu_requests(subject) or subject.extended_dra else None
        rows = []
        for report in subject.reports.where(lambda outcome: outcome not in _NO_GANG_POD):
            # the per-pod funnel has judged every node up to too-large: a node it dropped by
            # then takes no pod of the gang, even empty
            if (node := node_info(report.name)) is None:
                continue
            allocatable = node.allocatable
            if len(resources) == 1 and dra is None:  # the usual case, without a loop per node
                rows.append((node.name, [allocatable.get(resources[0], 0)],
                             [free_gpus(node, resources[0])]))
                continue
            limit = allocatable.get("pods") or MAX_PODS
            plugin = [(r, n) for r, n in subject.gpu.items()
                      if dra is None or not dra.serves(node, r)]
            asked = [n for _, n in plugin]
            empty = pods_per_node([allocatable.get(r, 0) for r, _ in plugin], asked) \
                if plugin else limit
            now = pods_per_node([free_gpus(node, r) for r, _ in plugin], asked) \
                if plugin else limit
            if dra is not None:
                claims_empty, claims_now = dra.gang_pods(node, limit)
                empty, now = min(empty, claims_empty), min(now, claims_now)
            rows.append((node.name, [empty], [now]))
        per_pod = list(subject.gpu.values()) if len(resources) == 1 and dra is None else [1]
        subject.gang_placement = place_gang(rows, per_pod)
    return subject.gang_placement


def _served_by_dra(subject: Subject, node: NodeInfo) -> bool:
    """The pod's GPUs on this node are devices of claims: its own, or the ones DRA makes for
    its first extended resource there."""
    if not subject.gpu:
        return True
    return subject.extended_dra and subject.dra is not None and subject.dra.serves(
        node, next(iter(subject.gpu)))


def gang_summary(subject: Subject) -> str:
    """The node summary's gang view, when the gang was judged: "; gang moe-train-workers
    (minCount 4): 3 pods fit now on 3 nodes, 4 with every GPU free"."""
    placement, gang = subject.gang_placement, subject.gang
    if placement is None or gang is None:
        return ""
    nodes = len(placement.taking_now())
    return (f"; gang {gang.name} (minCount {gang.min_count}): {placement.fit_now} pod"
            f"{'s' if placement.fit_now != 1 else ''} fit now on {nodes} node"
            f"{'s' if nodes != 1 else ''}, {placement.fit_empty} with every GPU free")


def _asks(subject: Subject, gang: Gang) -> str:
    per_pod = " + ".join([*(f"{n} {r}" for r, n in subject.gpu.items()),
                          *(_claim_asks(r) for r in _dra_gpu_requests(subject))])
    return f"{gang.label} needs {gang.min_count} pods × {per_pod} at once (gang minCount " \
           f"{gang.min_count})"


def _claim_asks(request: Request) -> str:
    """"1 × gpu.nvidia.com (memory 35Gi)", or "first available of h100: 1 × gpu.nvidia.com,
    l4: 1 × gpu.nvidia.com" for a prioritized list."""
    texts = []
    for alternative in request.alternatives:
        capacity = ", ".join(f"{name} {quantity_text(amount)}"
                             for name, amount in alternative.capacity)
        text = alternative.asked + (f" ({capacity})" if capacity else "")
        if "/" in alternative.label:
            text = f"{alternative.label.split('/', 1)[1]}: {text}"
        texts.append(text)
    return texts[0] if len(texts) == 1 else "first available of " + ", ".join(texts)


def _names(nodes: list[tuple[str, int]]) -> str:
    return first_four((f"{name}: {n}" for name, n in nodes), len(nodes))


def _show_gang_view(subject: Subject, placement: GangPlacement) -> None:
    """Each node the gang could use says how many of its pods it takes, now and empty."""
    reports = subject.reports
    texts: dict[tuple[int, int], str] = {}  # few distinct counts on thousands of nodes
    details: dict[int, str] = {}
    for (name, empty), (_, now) in zip(placement.empty, placement.now, strict=True):
        position = reports.table.position(name)
        if not empty or position is None:
            continue  # it takes none of the gang's pods even empty: its outcome says why
        detail = reports.table.details[position]
        gang = texts.get((now, empty)) or texts.setdefault(
            (now, empty), f"gang: {now} pod(s) now, {empty} empty")
        details[position] = f"{detail}; {gang}" if detail else gang
    # a new table: checks may hold the earlier one
    subject.reports = NodeOutcomes(reports.table.with_changes({}, details), reports.order)


def _evidence(subject: Subject, gang: Gang) -> list[Evidence]:
    found = [Evidence(gang.object_label, "spec.schedulingPolicy.gang.minCount",
                      str(gang.min_count)),
             Evidence(f"Pod {subject.label}", "spec.schedulingGroup.podGroupName", gang.name)]
    condition = gang.scheduled_condition
    if condition is not None:
        found.append(Evidence(gang.object_label, "status.conditions[PodGroupScheduled]",
                              " ".join(part for part in (condition.status, condition.reason)
                                       if part)
                              + (f": {condition.message}" if condition.message else "")))
    return found + scheduler_evidence(subject)


def check_gang_too_large(subject: Subject) -> Finding | None:
    gang = _judged(subject)
    if gang is None:
        return None
    placement = _placement(subject)
    if placement.fit_empty >= gang.min_count:
        return None
    _show_gang_view(subject, placement)
    # never empty: the nodes the per-pod too-large filter left each take a pod, empty
    taking = [(name, n) for name, n in placement.empty if n]
    return Finding(Cause.TOO_LARGE,
                   f"{_asks(subject, gang)}; the nodes {selector_text(subject.facts)} and taints "
                   f"leave could hold only {placement.fit_empty} of them even with every GPU "
                   f"free ({_names(taking)}). The scheduler binds none of the gang "
                   f"until {gang.min_count} fit together: waiting never helps. Lower minCount, "
                   "make each pod smaller, or send the gang to a pool with room for all of it."
                   + _incomplete_note(gang),
                   _evidence(subject, gang)
                   + [Evidence(f"Node/{name}", "gang pods it could take empty", str(n))
                      for name, n in placement.empty[:5]])


def check_gang_exhausted(subject: Subject) -> Finding | None:
    gang = _judged(subject)
    if gang is None:
        return None
    placement = _placement(subject)
    bound = len(gang.bound)
    if placement.fit_now + bound >= gang.min_count:
        return None
    _show_gang_view(subject, placement)
    held = []
    evidence = _evidence(subject, gang)
    for name in placement.held_back():
        node = subject.rows.node(name)
        found = None if node is None else (
            _held_devices(subject, node) if _served_by_dra(subject, node)
            else _held_gpus(subject, gang, node))
        if found is None:
            continue  # held by the gang's own bound pods alone: they count as placed
        held.append(found[0])
        evidence.append(found[1])
        if len(held) == 3:
            break
    # never empty: the per-pod exhausted filter left a node with room for one pod now
    fitting = _names(placement.taking_now())
    placed = f"{bound} already bound, " if bound else ""
    fit = min(placement.fit_now + bound, gang.min_count)
    return Finding(Cause.EXHAUSTED,
                   f"{_asks(subject, gang)}: {placed}{fit} of {gang.min_count} gang pods fit now "
                   f"({fitting}); "
                   f"{'; '.join(held) or 'the other nodes are held'}. With every GPU free the "
                   f"nodes would hold {placement.fit_empty}. Wait for them to finish, or add "
                   f"capacity: the scheduler binds none of the gang until {gang.min_count} fit."
                   + _assumed_note(subject, gang) + _incomplete_note(gang), evidence)


def _held_gpus(subject: Subject, gang: Gang, node: NodeInfo) -> tuple[str, Evidence] | None:
    """Who holds the node's GPUs of the pod's first resource, but the gang's own pods."""
    members = {p.key for p in gang.members}
    resource = next(iter(subject.gpu))
    holders = [(p, n) for p, n in subject.rows.holders_on(node.name, resource)
               if p.key not in members]
    if not holders:
        return None
    allocatable = node.allocatable.get(resource, 0)
    taken = allocatable - subject.rows.free_gpus(node, resource)
    who = first_four((p.label for p, _ in holders), len(holders))
    return (f"{node.name} has {taken}/{allocatable} {resource} held by {who}",
            Evidence(f"Node/{node.name}", f"status.allocatable[{resource}] − requests",
                     f"{taken}/{allocatable} held by {who}"))


def _held_devices(subject: Subject, node: NodeInfo) -> tuple[str, Evidence] | None:
    """The claims holding the node's devices that the pod's requests match: exclusive devices
    allocated, shared ones with what their claims consume (a gang's own bound pods' claims
    among them: their devices stay theirs)."""
    assert subject.dra is not None
    fit = subject.dra.fit(node)
    outcomes = [*fit.requests, *(tried for outcome in fit.requests for tried in outcome.tried)]
    held: dict[DeviceKey, tuple[SliceDevice, Holder]] = {}
    shared: dict[DeviceKey, str] = {}
    for outcome in outcomes:
        for device, capacity in outcome.capacity:
            if device.shared and capacity.shares:
                shared[device.key] = f"{device.name} {usage_text(device, capacity.shares)}"
        held.update((device.key, (device, holder)) for device, holder in outcome.holders
                    if not device.shared)
    parts = list(shared.values()) + ([holders_text(list(held.values()))] if held else [])
    if not parts:
        return None
    who = "; ".join(parts)
    return (f"{node.name}: {who}",
            Evidence(f"Node/{node.name}", "ResourceClaims allocated on its devices", who))


def _assumed_note(subject: Subject, gang: Gang) -> str:
    """The one gang pod the group cycle could not place gets an ordinary filter message, whose
    counts include the nodes (or devices) the other gang pods were tried on: they hold
    nothing now."""
    message = latest_scheduling_failure(subject.row, subject.events)
    claims = bool(_dra_gpu_requests(subject)) or subject.extended_dra
    short = [r for r in (parse_failed_scheduling(message).reasons if message else ())
             if r.kind.partition(":")[2] in subject.gpu or (claims and r.kind == "dra")]
    if not short:
        return ""
    return (f" (The scheduler's \"{short[0].count} {short[0].text}\" counts the nodes the other "
            f"pods of {gang.name} were placed on in the same try: they hold nothing now.)")


def _incomplete_note(gang: Gang) -> str:
    if gang.complete:
        return ""
    made = len(gang.members)
    return (f" Besides, only {made} of its {gang.min_count} pods "
            f"exist{'s' if made == 1 else ''} yet.")


def check_gang_incomplete(subject: Subject) -> Finding | None:
    """Fewer pods name the group than its minCount (or the group is missing): kube-scheduler
    keeps them out of its queue (GangScheduling PreEnqueue), writing no event, no condition."""
    gang = subject.gang
    if gang is None or subject.row is None:
        return None
    if gang.pod_group is None:
        return Finding(Cause.OTHER_CONSTRAINT,
                       f"{subject.label} joins PodGroup {gang.namespace}/{gang.name}, which does "
                       "not exist: the scheduler keeps the pod back until it does (and says "
                       "nothing). Create the PodGroup (or its Workload), or fix "
                       "spec.schedulingGroup.podGroupName.",
                       [Evidence(f"Pod {subject.label}", "spec.schedulingGroup.podGroupName",
                                 f"{gang.name}: no such PodGroup")])
    if gang.complete:
        return None
    names = ", ".join(p.name for p in gang.members[:6]) or "none"
    made, missing = len(gang.members), gang.min_count - len(gang.members)
    why, evidence = _creation_blocked(subject, gang)
    return Finding(Cause.OTHER_CONSTRAINT,
                   f"gang incomplete: {gang.label} has gang minCount {gang.min_count}, only "
                   f"{made} {'pod' if made == 1 else 'pods'} ({names}) "
                   f"name{'s' if made == 1 else ''} it. GPU-wise the gang would fit, "
                   "but kube-scheduler holds its pods back before any scheduling attempt until "
                   f"{gang.min_count} exist (no event, no PodScheduled condition).{why} Create "
                   f"the missing {missing} pod{'s' if missing > 1 else ''}, or lower minCount.",
                   _evidence(subject, gang) + evidence)


def _creation_blocked(subject: Subject, gang: Gang) -> tuple[str, list[Evidence]]:
    """What keeps the rest from being created, when the snapshot shows it: the owning
    workload's FailedCreate / ReplicaFailure, or a ResourceQuota one more pod would break."""
    owner = _owner(subject, gang)
    if owner is not None:
        found = admission.rejections(subject.rows, owner)
        if found:
            return (f" {found[0].source} cannot create them: {found[0].message}.",
                    [Evidence(found[0].source, found[0].field, found[0].message)])
    short = admission.quota_shortfalls(subject.rows, gang.namespace, subject.facts)
    if short:
        first = short[0]
        return (f" ResourceQuota {first.quota} leaves no room for another: {first.key} hard "
                f"{first.hard}, used {first.used}, one pod asks {first.asked}.",
                [Evidence(f"ResourceQuota {first.quota}", first.key,
                          f"hard {first.hard}, used {first.used}")])
    return "", []


def _owner(subject: Subject, gang: Gang) -> WorkloadRow | None:
    """The workload (a Job, with WorkloadWithJob) that owns the gang's Workload or PodGroup."""
    rows = subject.rows
    workload = rows.gang_object("Workload", gang.namespace, gang.workload)
    for obj in (gang.pod_group, workload):
        for reference in obj.owners if obj is not None else ():
            found = rows.workload(reference.kind, gang.namespace, reference.name)
            if found is not None:
                return found
    return None
