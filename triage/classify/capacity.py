"""The capacity view: the cluster's GPUs grouped the way people name them (pure: no I/O).

"Are there free GPUs, and where could an 8-GPU job run?" is answered from the same node table
and per-node sums a triage reads, so its numbers agree with the answers. Groups:
- device plugin: per GPU resource, pool label and GPU product label (``nvidia.com/gpu.product``);
- HAMi: registered nodes by card type, counted in cards (a card with any task is held);
- DRA: devices published in ResourceSlices, per GPU DeviceClass and product.

Per group: nodes, GPUs in capacity / allocatable / held / free, the largest free block on one
node, the broken nodes (not Ready, allocatable zero, no device plugin) and the GPUs they take
out, the namespaces holding the most, and the taints and cordons that say who may use it.
Free GPUs are counted on Ready nodes only; a tainted node's free GPUs count, and the group's
taints say who may have them.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace

from scoring.dra import Inventory, SliceDevice
from scoring.nodes import UNSCHEDULABLE_TAINT, taint_text
from scoring.nodetable import NodeInfo
from scoring.quantity import quantity_int
from triage.config import TriageConfig
from triage.rows import Rows

DEVICE_PLUGIN, HAMI, DRA = "device-plugin", "hami", "dra"
# GPU Feature Discovery's product label, and AMD's node labeller's
PRODUCT_LABELS = ("nvidia.com/gpu.product", "amd.com/gpu.product-name")
# GPU Feature Discovery's count: what a node whose device plugin is gone still has in it
COUNT_LABELS = {"nvidia.com/gpu.product": "nvidia.com/gpu.count",
                "amd.com/gpu.product-name": "amd.com/gpu.count"}
HAMI_CARDS = "HAMi cards"
NOT_READY, ALLOCATABLE_ZERO, NO_DEVICE_PLUGIN = "not Ready", "allocatable 0", "no device plugin"
TOP_HOLDERS = 3


@dataclass(frozen=True)
class BrokenNode:
    name: str
    why: str  # NOT_READY, ALLOCATABLE_ZERO or NO_DEVICE_PLUGIN
    gpus: int  # the GPUs it takes out of the group


@dataclass(frozen=True)
class NamespaceHolding:
    namespace: str
    gpus: int
    pods: int


@dataclass(frozen=True)
class TaintCount:
    taint: str  # as answers write it: "dedicated=llm-team:NoSchedule", "cordoned (...)"
    nodes: int
    cordon: bool = False  # spec.unschedulable: no new pod, whatever it tolerates


@dataclass
class CapacityGroup:
    kind: str  # DEVICE_PLUGIN, HAMI or DRA
    resource: str  # the extended resource, "HAMi cards" resource, or the DeviceClass
    pool: str  # the pool label's value; "" when the nodes carry none
    product: str  # the GPU product; "" when unlabelled
    nodes: int = 0
    capacity: int = 0
    allocatable: int = 0
    held: int = 0
    free: int = 0
    largest_free: int = 0  # on one node
    largest_free_node: str = ""
    broken_gpus: int = 0
    broken: list[BrokenNode] = field(default_factory=list)
    holders: list[NamespaceHolding] = field(default_factory=list)  # most GPUs first
    holders_total: int = 0  # namespaces holding any (holders lists the top ones)
    taints: list[TaintCount] = field(default_factory=list)  # most nodes first
    # Held GPUs DCGM exporter saw at 0 % all of the last hour, whose pod the API server says
    # holds the group's resource there; None: not read (no Prometheus)
    idle_held: int | None = None
    node_names: list[str] = field(default_factory=list, repr=False)  # not in to_dict

    @property
    def name(self) -> str:
        """How people name the group: the pool, else the product, else the resource."""
        return self.pool or self.product or self.resource

    def matches(self, wanted: str) -> bool:
        return wanted in (self.resource, self.pool, self.product)


@dataclass
class CapacityView:
    cluster: str
    read_at: str
    nodes: int  # every node
    gpu_nodes: int  # nodes in some group
    groups: list[CapacityGroup] = field(default_factory=list)
    idle_note: str | None = None  # why idle_held was not read, when Prometheus was asked

    @property
    def free(self) -> int:
        return sum(g.free for g in self.groups)

    @property
    def held(self) -> int:
        return sum(g.held for g in self.groups)

    @property
    def capacity(self) -> int:
        return sum(g.capacity for g in self.groups)

    def only(self, wanted: str) -> CapacityView:
        """The groups of one resource, pool or product."""
        return CapacityView(self.cluster, self.read_at, self.nodes,
                            sum(g.nodes for g in self.groups if g.matches(wanted)),
                            [g for g in self.groups if g.matches(wanted)])

    def names(self) -> list[str]:
        """What ``only`` takes: every resource, pool and product named, sorted."""
        return sorted({n for g in self.groups for n in (g.resource, g.pool, g.product) if n})

    def to_dict(self) -> dict[str, object]:
        data = asdict(self)
        data.update(free=self.free, held=self.held, capacity=self.capacity)
        for group, shown in zip(self.groups, data["groups"], strict=True):
            shown["name"] = group.name
            del shown["node_names"]  # a 100,000-node cluster's names are no summary
        return data

    def gpu_node_names(self) -> list[str]:
        return sorted({name for g in self.groups for name in g.node_names})


_TallyFactory = Callable[[str, str, str, str], "_Tally"]


class _Tally:
    """One group's sums as its nodes are added."""

    def __init__(self, group: CapacityGroup) -> None:
        self.group = group
        self.by_namespace: dict[str, list[int]] = defaultdict(lambda: [0, 0])  # gpus, pods
        self.taints: Counter[tuple[str, bool]] = Counter()

    def add_node(self, node: NodeInfo, capacity: int, allocatable: int, held: int, free: int,
                 broken: str | None) -> None:
        """One node's GPUs; a broken one takes its capacity out and offers none free."""
        group = self.group
        group.nodes += 1
        group.node_names.append(node.name)
        group.capacity += capacity
        group.allocatable += allocatable
        group.held += held
        if broken is not None:
            group.broken.append(BrokenNode(node.name, broken, capacity))
            group.broken_gpus += capacity
        else:
            group.free += free
            if free > group.largest_free:
                group.largest_free, group.largest_free_node = free, node.name
        for taint in node.taints:
            self.taints[taint_text(taint), taint.get("key") == UNSCHEDULABLE_TAINT["key"]] += 1

    def add_holders(self, held: Iterable[tuple[str, int]]) -> None:
        """(ns/pod, GPUs) pairs, a pod once per node."""
        for pod, gpus in held:
            self.add_namespaces({pod.partition("/")[0]: (gpus, 1)})

    def add_namespaces(self, held: Mapping[str, tuple[int, int]]) -> None:
        """namespace -> (GPUs, pods holding some) on one node."""
        for namespace, (gpus, pods) in held.items():
            entry = self.by_namespace[namespace]
            entry[0] += gpus
            entry[1] += pods

    def done(self) -> CapacityGroup:
        group = self.group
        ranked = sorted(self.by_namespace.items(), key=lambda item: (-item[1][0], item[0]))
        group.holders = [NamespaceHolding(ns, gpus, pods) for ns, (gpus, pods) in
                         ranked[:TOP_HOLDERS]]
        group.holders_total = len(ranked)
        group.taints = [TaintCount(text, count, cordon) for (text, cordon), count in
                        sorted(self.taints.items(), key=lambda item: (-item[1], item[0]))]
        return group


def capacity_view(rows: Rows, config: TriageConfig) -> CapacityView:
    """The cluster's GPU groups, largest capacity first (then by kind and name), from a
    Snapshot's rows (read them while it lives)."""
    tallies: dict[tuple[str, str, str, str], _Tally] = {}

    def tally(kind: str, resource: str, pool: str, product: str) -> _Tally:
        key = (kind, resource, pool, product)
        if key not in tallies:
            tallies[key] = _Tally(CapacityGroup(kind, resource, pool, product))
        return tallies[key]

    inventory = rows.dra_inventory(config.gpu_drivers) if rows.has_dra else None
    in_groups = 0
    for node in rows.node_table:
        pool = next((node.labels[label] for label in config.pool_labels
                     if node.labels.get(label)), "")
        registration = node.hami_registration
        if registration is not None and registration.devices:
            _add_hami(rows, node, pool, tally)
            added = True
        else:
            added = _add_device_plugin(rows, config, node, pool, tally)
        if inventory is not None:
            added = _add_dra(inventory, node, pool, tally) or added
        if not added:
            added = _add_pluginless(node, pool, tally)
        in_groups += added
    groups = [t.done() for t in tallies.values()]
    groups.sort(key=lambda g: (-g.capacity, g.kind, g.name, g.resource))
    return CapacityView(rows.cluster, rows.read_at, len(rows.node_table), in_groups, groups)


def _product(node: NodeInfo) -> str:
    return next((node.labels[label] for label in PRODUCT_LABELS if node.labels.get(label)), "")


def _broken(node: NodeInfo, capacity: int, allocatable: int) -> str | None:
    if node.not_ready is not None:
        return NOT_READY
    if capacity > 0 and allocatable == 0:
        return ALLOCATABLE_ZERO
    return None


def _add_device_plugin(rows: Rows, config: TriageConfig, node: NodeInfo, pool: str,
                       tally: _TallyFactory) -> bool:
    resources = sorted(r for r, amount in node.capacity.items()
                       if amount > 0 and config.is_gpu_resource(r))
    for resource in resources:
        capacity, allocatable = node.capacity[resource], node.allocatable.get(resource, 0)
        # per namespace, kept current per event by the watch cache: no pod is walked
        held = {namespace: by_resource[resource] for namespace, by_resource in
                rows.holdings_on(node.name).items() if resource in by_resource}
        taken = sum(amount for amount, _ in held.values())
        group = tally(DEVICE_PLUGIN, resource, pool, _product(node))
        group.add_node(node, capacity, allocatable, taken, max(0, allocatable - taken),
                       _broken(node, capacity, allocatable))
        group.add_namespaces(held)
    return bool(resources)


def _add_hami(rows: Rows, node: NodeInfo, pool: str, tally: _TallyFactory) -> None:
    """HAMi shares a card between tasks: a card is held when any task uses it, free when
    healthy and unused (a whole card for the next job)."""
    registration = node.hami_registration
    assert registration is not None  # the caller checked
    usage = rows.hami_usage(node.name)
    cards_by_type: dict[str, list[tuple[bool, tuple[str, ...]]]] = defaultdict(list)
    for device in registration.devices:
        used = usage.get(device.uuid)
        cards_by_type[device.type].append((registration.registered and device.health,
                                           tuple(used.holders) if used and used.used else ()))
    for card_type, cards in sorted(cards_by_type.items()):
        healthy = sum(1 for ok, _ in cards if ok)
        held = sum(1 for _, holders in cards if holders)
        free = sum(1 for ok, holders in cards if ok and not holders)
        group = tally(HAMI, HAMI_CARDS, pool, card_type)
        group.add_node(node, len(cards), healthy, held, free,
                       _broken(node, len(cards), healthy))
        group.add_holders(_per_pod(holder for _, holders in cards for holder in holders))


def _add_dra(inventory: Inventory, node: NodeInfo, pool: str, tally: _TallyFactory) -> bool:
    """DRA devices the node can use, per GPU DeviceClass selecting them and product."""
    devices = [d for d in inventory.devices_for(node) if d.driver in inventory.gpu_drivers]
    by_group: dict[tuple[str, str], list[SliceDevice]] = defaultdict(list)
    for device in devices:
        for class_name in sorted(inventory.classes):
            if inventory.is_gpu_class(class_name) and inventory.selects(
                    inventory.class_selectors(class_name), device) is True:
                by_group[(class_name, device.product)].append(device)
    for (class_name, product), members in sorted(by_group.items()):
        holders = [inventory.taken[d.key] for d in members if d.key in inventory.taken]
        group = tally(DRA, class_name, pool, product)
        group.add_node(node, len(members), len(members), len(holders),
                       len(members) - len(holders), _broken(node, len(members), len(members)))
        group.add_holders(_per_pod(pod for holder in holders
                                   for pod in holder.pods or (holder.claim,)))
    return bool(by_group)


def _add_pluginless(node: NodeInfo, pool: str, tally: _TallyFactory) -> bool:
    """A node GPU Feature Discovery labels with GPUs that no device plugin or DRA driver
    offers: its GPUs are out until the plugin is back."""
    label = next((label for label in PRODUCT_LABELS if node.labels.get(label)), None)
    if label is None:
        return False
    count = quantity_int(node.labels.get(COUNT_LABELS[label], "0"))
    resource = label.rsplit(".", 1)[0] if label.startswith("nvidia.com/") else "amd.com/gpu"
    group = tally(DEVICE_PLUGIN, resource, pool, node.labels[label])
    group.add_node(node, 0, 0, 0, 0, None)
    group.group.broken.append(BrokenNode(node.name, NO_DEVICE_PLUGIN, count))
    group.group.broken_gpus += count
    return True


def _per_pod(holders: Iterable[str]) -> list[tuple[str, int]]:
    """(pod, devices it holds) from one entry per held device."""
    return sorted(Counter(holders).items())


def with_idle_held(view: CapacityView, rows: Rows,
                   idle: Mapping[str, Sequence[str]]) -> CapacityView:
    """The view with each device-plugin group's held GPUs that sat idle: ``idle`` is, per
    node, the pod DCGM names on each GPU at 0 % all hour; one counts only when the API server
    agrees that pod holds the group's resource on that node (else it is the exporter's own,
    relabelled)."""
    groups = []
    for group in view.groups:
        count = None
        if group.kind == DEVICE_PLUGIN:
            count = 0
            for name in group.node_names:
                holding = {pod.label for pod, _ in rows.holders_on(name, group.resource)}
                count += sum(1 for pod in idle.get(name, ()) if pod in holding)
        groups.append(replace(group, idle_held=count))
    return replace(view, groups=groups)
