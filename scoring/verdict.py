"""The Verdict: plain, JSON-serialisable data. It is what gets rendered and stored."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from itertools import compress
from typing import Any, NamedTuple, overload


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


class ReportTable:
    """Every node's report, column by column in the node table's order: name, outcome,
    detail, score. A node's NodeReport is made the first time it is read and kept, so what a
    reader sets on it (devices, held GPUs) stays: an answer on 100,000 nodes reads a few
    dozen of them, and making one per node was most of its time."""

    __slots__ = ("_made", "_position", "details", "names", "outcomes", "scores")

    def __init__(self, names: Sequence[str], outcomes: list[str], details: list[str],
                 position: Mapping[str, int]) -> None:
        self.names, self.outcomes, self.details = names, outcomes, details
        self.scores: list[float | None] = [None] * len(names)
        self._position = position  # name -> place in the table
        self._made: dict[int, NodeReport] = {}

    def report(self, position: int) -> NodeReport:
        made = self._made.get(position)
        if made is None:
            made = self._made[position] = NodeReport(
                self.names[position], self.outcomes[position], self.details[position],
                self.scores[position])
        return made

    def position(self, name: str) -> int | None:
        return self._position.get(name)

    @property
    def made(self) -> int:
        """How many of the reports were made (read) so far."""
        return len(self._made)

    def set_scores(self, positions: Sequence[int], scores: Sequence[float | None]) -> None:
        if len(positions) != len(scores):
            raise ValueError(f"{len(positions)} positions, {len(scores)} scores")
        # set in C (list.__setitem__ by map): every fit node of 100,000 has a score
        deque(map(self.scores.__setitem__, positions, scores), maxlen=0)
        for position, made in self._made.items():  # the few reports read so far
            made.score = self.scores[position]

    def with_changes(self, outcomes: Mapping[int, str], details: Mapping[int, str]
                     ) -> ReportTable:
        """A new table (readers may hold this one) with these nodes' outcomes and details."""
        changed = ReportTable(self.names, list(self.outcomes), list(self.details),
                              self._position)
        for position, outcome in outcomes.items():
            changed.outcomes[position] = outcome
        for position, detail in details.items():
            changed.details[position] = detail
        return changed

    def with_reports(self, reports: Mapping[int, NodeReport]) -> ReportTable:
        """A new table with the same columns and these positions' reports. The other reports
        read so far are the same objects in both: an answer's reports are not changed once
        it is given, and copying them all is what this spares."""
        changed = ReportTable(self.names, self.outcomes, self.details, self._position)
        changed.scores = list(self.scores)
        changed._made = {**self._made, **reports}
        return changed


class NodeOutcomes(Mapping[str, NodeReport]):
    """A ReportTable's reports by node name, iterated in ``order`` (positions in the table):
    what the funnel's checks read as the filters walked so far leave the nodes."""

    __slots__ = ("order", "table")

    def __init__(self, table: ReportTable, order: Sequence[int]) -> None:
        self.table, self.order = table, order

    @classmethod
    def none(cls) -> NodeOutcomes:
        """Before any node filter ran."""
        return cls(ReportTable((), [], [], {}), ())

    def __getitem__(self, name: str) -> NodeReport:
        position = self.table.position(name)
        if position is None:
            raise KeyError(name)
        return self.table.report(position)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.table.position(name) is not None

    def __iter__(self) -> Iterator[str]:
        return map(self.table.names.__getitem__, self.order)

    def __len__(self) -> int:
        return len(self.order)

    def where(self, outcome_holds: Callable[[str], bool]) -> Iterator[NodeReport]:
        """The reports whose outcome ``outcome_holds`` for, in order; made as they are read
        (chosen in C: a Python step per node of 100,000 is what the table spares)."""
        return map(self.table.report, self._positions_where(outcome_holds))

    def names_where(self, outcome_holds: Callable[[str], bool]) -> Iterator[str]:
        """``where``'s nodes by name, no report made."""
        return map(self.table.names.__getitem__, self._positions_where(outcome_holds))

    def _positions_where(self, outcome_holds: Callable[[str], bool]) -> Iterator[int]:
        outcomes = self.table.outcomes
        return compress(self.order, map(outcome_holds, map(outcomes.__getitem__, self.order)))


class NodeReports(Sequence[NodeReport]):
    """The Verdict's node reports: a ReportTable's, in ``order`` (worst first), made as
    they are read. Equal to any sequence of the same reports; ``to_dict`` lists them all."""

    __slots__ = ("_outcomes", "order", "table")

    def __init__(self, table: ReportTable, order: Sequence[int]) -> None:
        self.table, self.order = table, order
        self._outcomes: list[str] | None = None

    @overload
    def __getitem__(self, index: int) -> NodeReport: ...

    @overload
    def __getitem__(self, index: slice) -> list[NodeReport]: ...

    def __getitem__(self, index: int | slice) -> NodeReport | list[NodeReport]:
        if isinstance(index, slice):
            return list(map(self.table.report, self.order[index]))
        return self.table.report(self.order[index])

    def __len__(self) -> int:
        return len(self.order)

    def __iter__(self) -> Iterator[NodeReport]:
        return map(self.table.report, self.order)

    def outcomes(self) -> list[str]:
        """Each report's outcome, in order, without making the reports (worked out once: a
        table's outcomes do not change; a change makes a new table)."""
        if self._outcomes is None:
            self._outcomes = list(map(self.table.outcomes.__getitem__, self.order))
        return self._outcomes

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence):
            return NotImplemented
        return len(self) == len(other) and all(map(NodeReport.__eq__, self, other))

    __hash__ = None  # type: ignore[assignment]  # mutable, as the list it stands for

    def __repr__(self) -> str:
        return f"NodeReports({list(self)!r})"

    def in_order(self, names: Iterable[str]) -> list[NodeReport]:
        """These nodes' reports, in this order; no other report made."""
        table = self.table
        positions = [p for name in names if (p := table.position(name)) is not None]
        positions.sort(key=self.order.index)  # a few nodes: a scan in C each
        return list(map(table.report, positions))

    def replacing(self, reports: Sequence[NodeReport]) -> NodeReports:
        """The same reports in the same order, these ones (by name) replaced."""
        table = self.table
        return NodeReports(table.with_reports(
            {p: r for r in reports if (p := table.position(r.name)) is not None}), self.order)


class ReportColumns(NamedTuple):
    """Reports' names, outcomes and scores, each in the reports' order."""

    names: Sequence[str]
    outcomes: Sequence[str]
    scores: Sequence[float | None]


def report_columns(nodes: Sequence[NodeReport]) -> ReportColumns:
    """The columns of a Verdict's reports: read from a NodeReports' table, no report made;
    from the reports themselves when they are a list (an answer read back)."""
    if isinstance(nodes, NodeReports):
        table, order = nodes.table, nodes.order
        return ReportColumns(list(map(table.names.__getitem__, order)), nodes.outcomes(),
                             list(map(table.scores.__getitem__, order)))
    return ReportColumns([n.name for n in nodes], [n.outcome for n in nodes],
                         [n.score for n in nodes])


@dataclass
class Verdict:
    ref: str  # "ns/name" as resolved
    cause: str
    action: str
    kind: str = "Pod"  # what the ref resolved to: Pod, Job, Deployment, ...
    evidence: list[Evidence] = field(default_factory=list)
    nodes: Sequence[NodeReport] = field(default_factory=list)
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
    # nodes a kept answer left out of ``nodes``, counted by outcome (bot.answer.kept)
    nodes_omitted: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        listed = self if isinstance(self.nodes, list) else replace(self, nodes=list(self.nodes))
        data = asdict(listed, dict_factory=data_dict)
        if not self.nodes_omitted:  # written only when some were: every other answer reads
            del data["nodes_omitted"]  # as it did before there were kept answers
        return data

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
