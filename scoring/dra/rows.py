"""DRA objects as rows: what the fit and the checks read of ResourceSlices' devices,
ResourceClaims (and templates), DeviceClasses and a pod's claim references, each field
parsed once (``scoring.dra.build`` makes them; nothing else reads the API objects)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Protocol

from scoring.nodes import selection_mismatches

if TYPE_CHECKING:
    from scoring.cel.values import AttributeValue
    from scoring.dra.capacity import Capacity
    from scoring.nodetable import NodeInfo

DeviceKey = tuple[str, str, str]  # driver, pool, device: how allocation results name a device
CounterKey = tuple[str, str, str]  # driver, pool, counter set


@dataclass(frozen=True)
class NodeSelection:
    """A node selector's ``nodeSelectorTerms`` (ORed, as ``scoring.nodes`` judges them); no
    term selects every node. ``names``: the node names its terms' ``matchFields`` on
    ``metadata.name`` list (an allocation's selector names its node so)."""

    terms: tuple[Mapping[str, Any], ...] = ()
    names: tuple[str, ...] = ()

    def selects(self, node: NodeInfo) -> bool:
        return not self.terms or not selection_mismatches({}, self.terms, node.labels, node.name)


@dataclass(frozen=True)
class NodeReach:
    """The nodes a slice's devices (or, with perDeviceNodeSelection, one device) are for:
    ``nodeName``, ``allNodes`` or ``nodeSelector``, the first one set; none reaches no node."""

    node_name: str = ""
    all_nodes: bool = False
    node_selector: NodeSelection | None = None

    def reaches(self, node: NodeInfo) -> bool:
        if self.node_name:
            return self.node_name == node.name
        if self.all_nodes:
            return True
        return self.node_selector is not None and self.node_selector.selects(node)


@dataclass(frozen=True)
class DeviceDetails:
    """What is read of a device to describe it, and to judge the capacity a request asks of
    it."""

    product: str
    memory: str | None  # the memory capacity's quantity text
    uuid: str  # attribute ``uuid`` (NVIDIA's GPU-…, as DCGM names it), else the name
    index: int | None  # attribute ``index``
    capacity: Mapping[str, Capacity]  # the readable capacities by name


class DeviceDescription(Protocol):
    """A device's details, read when first asked: most triages never ask
    (``scoring.dra.build`` reads them off the device's JSON)."""

    def read(self) -> DeviceDetails: ...


# One per device, tens of thousands of them: not frozen (a frozen dataclass's __init__
# costs about half again), read and never changed all the same.
@dataclass(slots=True, eq=False)
class SliceDevice:
    """One device a ResourceSlice publishes, with what every fit reads of it parsed (the
    rest, ``described``, when first asked)."""

    slice: str
    driver: str
    pool: str
    name: str
    # (driver, pool, name): how allocation results name it, made once (the fit asks it of
    # every device, several times)
    key: DeviceKey
    described: DeviceDescription = field(repr=False)
    # attributes by name as published (qualified or not), typed
    attributes: Mapping[str, AttributeValue] = field(default_factory=dict, repr=False)
    # every capacity's quantity text by name as published (as CEL's ``device.capacity``
    # parses them: an unreadable one is absent there too)
    quantities: Mapping[str, str] = field(default_factory=dict, repr=False)
    # NoSchedule / NoExecute taints (the driver's and DeviceTaintRules')
    taints: tuple[Mapping[str, Any], ...] = ()
    consumes: tuple[tuple[CounterKey, Mapping[str, Decimal]], ...] = ()  # consumesCounters
    shared: bool = False  # allowMultipleAllocations: serves several claims
    binding_conditions: tuple[str, ...] = ()
    binding_failure_conditions: tuple[str, ...] = ()
    reach: NodeReach | None = None  # its own nodes, when the slice selects per device

    @property
    def product(self) -> str:
        return self.described.read().product

    @property
    def memory(self) -> str | None:
        return self.described.read().memory

    @property
    def uuid(self) -> str:
        return self.described.read().uuid

    @property
    def index(self) -> int | None:
        return self.described.read().index

    @property
    def capacity(self) -> Mapping[str, Capacity]:
        return self.described.read().capacity


@dataclass(frozen=True)
class SliceRow:
    """A ResourceSlice of the pool's newest generation: the nodes it is for, its devices."""

    name: str
    driver: str
    pool: str
    reach: NodeReach
    per_device: bool  # perDeviceNodeSelection: each device says its nodes
    devices: tuple[SliceDevice, ...]


@dataclass(frozen=True)
class Alternative:
    """One way to satisfy a request: ``exactly``, or one entry of ``firstAvailable``."""

    label: str  # "gpu" or "gpu/a100" for a firstAvailable subrequest
    device_class: str
    selectors: tuple[str, ...]
    mode: str  # ExactCount or All
    count: int
    admin: bool = False
    # the request's device taint tolerations (as a pod's tolerations read)
    tolerations: tuple[Mapping[str, Any], ...] = ()
    # capacity.requests (consumable capacity of shared devices), by name
    capacity: tuple[tuple[str, Decimal], ...] = ()

    @property
    def asked(self) -> str:
        amount = "all" if self.mode == "All" else str(self.count)
        return f"{amount} × {self.device_class}"


@dataclass(frozen=True)
class Request:
    claim: str  # "ns/name" of the claim, or "template ns/name" when not generated yet
    name: str
    alternatives: tuple[Alternative, ...]


@dataclass(frozen=True)
class ClaimSpec:
    """A claim's (or a template's) ``spec.devices``: its requests, and whether it has
    constraints between devices (matchAttribute), which gpuwhy does not judge."""

    requests: tuple[Request, ...]
    constrained: bool = False


@dataclass(frozen=True, slots=True)
class AllocationResult:
    """One ``status.allocation.devices.results[]`` entry."""

    request: str  # "gpu", or "gpu/l4" when a firstAvailable alternative was chosen
    device: DeviceKey
    admin: bool = False
    consumed: Mapping[str, Decimal] | None = None  # consumedCapacity (None: not recorded)


@dataclass(frozen=True)
class Reservation:
    """One ``status.reservedFor[]`` entry."""

    resource: str
    name: str
    uid: str = ""


@dataclass(frozen=True)
class Condition:
    status: str
    reason: str = ""
    message: str = ""


@dataclass(frozen=True)
class ClaimDetails:
    """What is read of a claim only when a pod's claims are resolved to it."""

    spec: ClaimSpec
    allocation_nodes: NodeSelection  # status.allocation.nodeSelector
    # status.devices[].conditions by device, then type
    conditions: Mapping[DeviceKey, Mapping[str, Condition]]


class ClaimDescription(Protocol):
    """A claim's details, read when first asked (``scoring.dra.build``; every claim's
    allocation is read at once)."""

    def read(self) -> ClaimDetails: ...


@dataclass(frozen=True, eq=False)
class ClaimRow:
    """A ResourceClaim: what it asks and, once allocated, what it got and for whom."""

    namespace: str
    name: str
    described: ClaimDescription = field(repr=False)
    allocated: bool = False
    results: tuple[AllocationResult, ...] = ()
    reserved_for: tuple[Reservation, ...] = ()

    @property
    def spec(self) -> ClaimSpec:
        return self.described.read().spec

    @property
    def allocation_nodes(self) -> NodeSelection:
        return self.described.read().allocation_nodes

    @property
    def conditions(self) -> Mapping[DeviceKey, Mapping[str, Condition]]:
        return self.described.read().conditions

    @property
    def label(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def pods(self) -> tuple[str, ...]:
        """The pods in its reservedFor, as ``ns/name``."""
        return tuple(f"{self.namespace}/{r.name}" for r in self.reserved_for
                     if r.resource == "pods")


@dataclass(frozen=True)
class DeviceClassRow:
    name: str
    selectors: tuple[str, ...]  # spec.selectors[].cel.expression
    extended_resource: str | None = None  # spec.extendedResourceName
    created: str = ""  # metadata.creationTimestamp


@dataclass(frozen=True)
class PodClaimRef:
    """One entry of a pod's (or pod template's) ``spec.resourceClaims``."""

    name: str
    claim: str | None = None  # resourceClaimName: a shared, pre-created claim
    template: str | None = None  # resourceClaimTemplateName
    generated: str | None = None  # the claim made from the template (resourceClaimStatuses)


@dataclass(frozen=True)
class PodClaimRefs:
    """What a pod says about its claims: the entries, and the claim kube-scheduler made for
    its DRA-served extended resources once bound (status.extendedResourceClaimStatus)."""

    namespace: str
    name: str
    entries: tuple[PodClaimRef, ...]
    extended: str | None = None


@dataclass(frozen=True)
class DraRows:
    """A snapshot's DRA objects as rows, built once."""

    classes: Mapping[str, DeviceClassRow]
    claims: Mapping[tuple[str, str], ClaimRow]
    templates: Mapping[tuple[str, str], ClaimSpec]
    slices: tuple[SliceRow, ...]
    # Partitionable devices (DRAPartitionableDevices): each pool's sharedCounters
    counter_sets: Mapping[CounterKey, Mapping[str, Decimal]]
