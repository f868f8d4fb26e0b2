"""The Verdict: plain, JSON-serialisable data. It is what gets rendered and stored."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any


@dataclass(slots=True)
class Evidence:
    object: str  # e.g. "Node/gpu-a10-full", "ResourceQuota ml/gpu-quota"
    field: str  # e.g. "status.allocatable[nvidia.com/gpu]"
    value: str


@dataclass(slots=True)
class Device:
    """One GPU on a node, as the "show devices" table lists it."""

    uuid: str
    index: int
    type: str
    memory_used: int | None = None  # MiB
    memory_total: int | None = None  # MiB
    cores_used: int | None = None  # percent of a card
    cores_total: int | None = None
    numa: int | None = None
    healthy: bool = True
    holders: list[str] = field(default_factory=list)  # "ns/pod"
    code: str | None = None  # this pod's HAMi code on the device; None when it fits
    # Where ``holders`` come from: "hami" (allocations), "dra" (claims), "dcgm" (the
    # exporter's pod mapping). None: no source says which pod holds this device.
    holder_source: str | None = None
    # Live figures from DCGM exporter through Prometheus; None when not read.
    utilisation: int | None = None  # percent
    temperature: int | None = None  # °C
    xid: int | None = None  # the last XID error the exporter reports; 0 = none
    xid_at: str | None = None  # ISO UTC: first sample showing that XID in the window read
    xid_new: bool = False  # the XID appeared inside that window (not carried over from before)
    ecc_uncorrectable: int | None = None  # double-bit ECC errors since the driver loaded


@dataclass(slots=True)
class Holding:
    """A pod holding GPUs of the answer's resource on a node, as the API server says."""

    pod: str  # "ns/pod"
    count: int
    since: str | None = None  # status.startTime, else when the scheduler bound it


@dataclass(slots=True, eq=False)
class NodeReport:
    name: str
    outcome: str  # a funnel cause word, a HAMi node reason, "node unregistered" or "fit"
    detail: str = ""
    score: float | None = None
    # Empty tuples unless described: an answer has a report per node (5,000 of them), and
    # two empty lists each were most of what a triage allocated, and so most of its garbage
    # collections. ``to_dict`` gives lists, as ever.
    devices: Sequence[Device] = ()
    allocatable: int | None = None  # of the answer's resource
    held: Sequence[Holding] = ()  # non-terminated pods' requests

    def __eq__(self, other: object) -> bool:
        """Field by field, a sequence by its items: the () of a report never described
        equals the [] it reads back as."""
        if not isinstance(other, NodeReport):
            return NotImplemented
        return _items(self) == _items(other)


def _items(report: NodeReport) -> list[Any]:
    return [list(value) if isinstance(value, tuple) else value
            for value in (getattr(report, f.name) for f in fields(report))]


@dataclass
class Verdict:
    ref: str  # "ns/name" as resolved
    cause: str
    action: str
    kind: str = "Pod"  # what the ref resolved to: Pod, Job, Deployment, ...
    evidence: list[Evidence] = field(default_factory=list)
    nodes: list[NodeReport] = field(default_factory=list)
    node_summary: str = ""
    scheduler_message: str | None = None
    resource: str | None = None
    request: int | None = None
    pods: list[str] = field(default_factory=list)  # pods sharing this answer (workloads)
    pods_total: int = 0
    score_source: str | None = None  # "scheduler" or "gpuwhy"
    score_policy: str | None = None  # "binpack" or "spread"
    scheduler_summary: str | None = None  # HAMi proposal line: "find fit node(...)..."
    error: str | None = None  # a cluster read failure, in one sentence
    telemetry: str | None = None  # where the live device figures came from, or why none

    def to_dict(self) -> dict[str, Any]:
        return asdict(self, dict_factory=data_dict)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Verdict:
        fields = dict(data)
        fields["evidence"] = [Evidence(**e) for e in data.get("evidence", [])]
        fields["nodes"] = [
            NodeReport(**{**n, "devices": [Device(**d) for d in n.get("devices", [])],
                          "held": [Holding(**h) for h in n.get("held", [])]})
            for n in data.get("nodes", [])
        ]
        return cls(**fields)


def data_dict(items: list[tuple[str, Any]]) -> dict[str, Any]:
    """``asdict``'s dict_factory for the Verdict's dataclasses: sequences as lists (a
    NodeReport's empty defaults are tuples), as JSON reads them back."""
    return {name: list(value) if isinstance(value, tuple) else value for name, value in items}
