"""DCGM exporter's per-GPU series, as the Prometheus HTTP API returns them, as device facts.

Pure: PromQL text is built here, the HTTP call is made at the edge (bot.clusters.telemetry), and
the JSON it gets back (``{"status": "success", "data": {"resultType": "vector" | "matrix",
"result": [{"metric": {...}, "value": [t, "v"]} | {"metric": {...}, "values": [...]}]}}``) is
read here into :class:`GpuFacts`, one per GPU.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

# The window read for XID errors: an XID first seen inside it is news; the exporter keeps
# reporting the last XID until it restarts, so one seen all through the window may be old.
XID_WINDOW = "1h"
XID_WINDOW_SECONDS = 3600.0


class TelemetryError(ValueError):
    """A Prometheus answer that is not the documented query result; the message says how."""


@dataclass(frozen=True)
class DcgmLabels:
    """The label names DCGM exporter's series carry; deployments differ.

    Scraped through a ServiceMonitor without honorLabels, the exporter's own ``pod`` /
    ``namespace`` become ``exported_pod`` / ``exported_namespace``; some setups relabel
    ``Hostname`` to ``node``.
    """

    node: str = "Hostname"
    gpu: str = "gpu"
    uuid: str = "UUID"
    model: str = "modelName"
    pod: str = "pod"
    namespace: str = "namespace"


@dataclass(frozen=True)
class Family:
    name: str  # what a failure is called: "utilisation", "xid", ...
    selector: str  # a metric name, or {__name__=~"..."} for several
    window: str | None = None  # a range selector: the query returns every sample in it


UTILISATION = Family("utilisation", "DCGM_FI_DEV_GPU_UTIL")
MEMORY_USED = Family("memory used", "DCGM_FI_DEV_FB_USED")
MEMORY_FREE = Family("memory free", "DCGM_FI_DEV_FB_FREE")
TEMPERATURE = Family("temperature", "DCGM_FI_DEV_GPU_TEMP")
XID = Family("xid", "DCGM_FI_DEV_XID_ERRORS", XID_WINDOW)
ECC = Family("ecc", "DCGM_FI_DEV_ECC_DBE_(VOL|AGG)_TOTAL")
FAMILIES: tuple[Family, ...] = (UTILISATION, MEMORY_USED, MEMORY_FREE, TEMPERATURE, XID, ECC)
GPU_UUID_PREFIX = "GPU-"
DCGM_HOLDERS = "dcgm"  # Device.holder_source: the exporter's pod-resources mapping
ECC_VOLATILE = "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"
ECC_AGGREGATE = "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL"

# RE2 metacharacters; node names are DNS subdomains, but a name is matched, never trusted.
_REGEX_SPECIAL = frozenset("\\.+*?()|[]{}^$")


def promql(family: Family, nodes: Sequence[str], labels: DcgmLabels) -> str:
    """One query for ``family`` on all of ``nodes``: a regex on the node label, never one
    query per GPU. ``DCGM_FI_DEV_GPU_UTIL{Hostname=~"gpu-a|gpu-b"}``."""
    alternatives = "|".join(_regex_literal(node) for node in sorted(set(nodes)))
    matcher = f'{labels.node}=~"{_string_literal(alternatives)}"'
    if family.selector.startswith("DCGM_FI_DEV_ECC_"):
        selector = f'{{__name__=~"{family.selector}",{matcher}}}'
    else:
        selector = f"{family.selector}{{{matcher}}}"
    return selector + (f"[{family.window}]" if family.window else "")


IDLE_WINDOW = "1h"  # a held GPU idle this long is the capacity to reclaim


def idle_query(nodes: Sequence[str], labels: DcgmLabels) -> str:
    """The highest utilisation each GPU of ``nodes`` reached in the last IDLE_WINDOW:
    ``max_over_time(DCGM_FI_DEV_GPU_UTIL{Hostname=~"..."}[1h])``."""
    return f"max_over_time({promql(UTILISATION, nodes, labels)}[{IDLE_WINDOW}])"


def idle_holders(payload: object, labels: DcgmLabels) -> dict[str, list[str]]:
    """Per node, the pod (ns/name) on each GPU whose utilisation stayed 0 all window, as the
    exporter names it; GPUs it names no pod on are left out. TelemetryError when the answer
    is not a query result."""
    idle: dict[str, list[str]] = {}
    for sample in parse_result(payload):
        node, pod = sample.metric.get(labels.node), sample.metric.get(labels.pod)
        if node and pod and sample.points and sample.points[-1][1] == 0:
            idle.setdefault(node, []).append(f"{sample.metric.get(labels.namespace, '')}/{pod}")
    return idle


def _regex_literal(text: str) -> str:
    return "".join(f"\\{char}" if char in _REGEX_SPECIAL else char for char in text)


def _string_literal(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


@dataclass(frozen=True)
class Sample:
    metric: Mapping[str, str]
    points: tuple[tuple[float, float], ...]  # (unix time, value), oldest first; NaN dropped


def parse_result(payload: object) -> list[Sample]:
    """The series of one instant query's JSON answer (vector or matrix)."""
    if not isinstance(payload, Mapping):
        raise TelemetryError("the answer is not a JSON object")
    status = payload.get("status")
    if status == "error":
        kind = payload.get("errorType") or "error"
        raise TelemetryError(f"{kind}: {payload.get('error') or 'no reason given'}")
    data = payload.get("data")
    if status != "success" or not isinstance(data, Mapping):
        raise TelemetryError("the answer is not a Prometheus query result")
    kind = data.get("resultType")
    result = data.get("result")
    if kind not in ("vector", "matrix") or not isinstance(result, list):
        raise TelemetryError(f"unexpected result type {kind!r}")
    return [_sample(entry, kind) for entry in result]


def _sample(entry: object, kind: str) -> Sample:
    if not isinstance(entry, Mapping) or not isinstance(entry.get("metric"), Mapping):
        raise TelemetryError("a series without its labels")
    metric = {str(k): str(v) for k, v in entry["metric"].items()}
    raw = [entry.get("value")] if kind == "vector" else entry.get("values")
    if not isinstance(raw, list):
        raise TelemetryError("a series without values")
    points = []
    for point in raw:
        if not isinstance(point, list) or len(point) != 2:
            raise TelemetryError("a sample that is not [time, value]")
        try:
            at, value = float(point[0]), float(point[1])
        except (TypeError, ValueError) as exc:
            raise TelemetryError(f"a sample that is not a number: {point!r}") from exc
        if not math.isnan(value):
            points.append((at, value))
    return Sample(metric, tuple(sorted(points)))


@dataclass
class GpuFacts:
    """What DCGM exporter says about one GPU."""

    node: str
    index: int | None
    uuid: str
    model: str
    holders: list[str] = field(default_factory=list)  # "ns/pod", from the pod-resources mapping
    utilisation: int | None = None
    memory_used: int | None = None  # MiB
    memory_free: int | None = None
    temperature: int | None = None
    xid: int | None = None
    xid_since: float | None = None  # first sample of the XID's run in the window
    xid_new: bool = False  # a change to that XID was seen inside the window
    ecc_uncorrectable: int | None = None


@dataclass(frozen=True)
class Telemetry:
    """The answers to one round of queries; ``problems`` are the families that failed."""

    at: float  # the evaluation time the queries asked for
    gpus: Mapping[str, list[GpuFacts]]  # node -> its GPUs, by index
    problems: tuple[str, ...] = ()


def read_families(answers: Mapping[Family, object], labels: DcgmLabels, at: float,
                  problems: Iterable[str] = ()) -> Telemetry:
    """Telemetry from each family's JSON answer; a family whose answer is not a query result
    is left out and named in ``problems``."""
    found: dict[tuple[str, str], GpuFacts] = {}
    troubles = list(problems)
    for family, payload in answers.items():
        try:
            samples = parse_result(payload)
        except TelemetryError as exc:
            troubles.append(f"{family.name}: {exc}")
            continue
        for sample in samples:
            facts = _facts_for(found, sample.metric, labels)
            if facts is not None and sample.points:
                _record(facts, family, sample)
    by_node: dict[str, list[GpuFacts]] = {}
    for facts in found.values():
        facts.holders.sort()
        by_node.setdefault(facts.node, []).append(facts)
    for gpus in by_node.values():
        gpus.sort(key=lambda g: (g.index is None, g.index or 0, g.uuid))
    return Telemetry(at=at, gpus=by_node, problems=tuple(troubles))


def _facts_for(found: dict[tuple[str, str], GpuFacts], metric: Mapping[str, str],
               labels: DcgmLabels) -> GpuFacts | None:
    node = metric.get(labels.node, "")
    gpu = metric.get(labels.gpu, "")
    uuid = metric.get(labels.uuid, "")
    if not node or not (uuid or gpu):
        return None
    key = (node, uuid or f"#{gpu}")
    facts = found.get(key)
    if facts is None:
        index = int(gpu) if gpu.isdigit() else None
        facts = found[key] = GpuFacts(node=node, index=index, uuid=uuid,
                                      model=metric.get(labels.model, ""))
    # One series per pod using the GPU (time-slicing, MIG): each names a holder.
    pod, namespace = metric.get(labels.pod, ""), metric.get(labels.namespace, "")
    if pod and namespace and f"{namespace}/{pod}" not in facts.holders:
        facts.holders.append(f"{namespace}/{pod}")
    return facts


def _record(facts: GpuFacts, family: Family, sample: Sample) -> None:
    value = round(sample.points[-1][1])
    if family is UTILISATION:
        facts.utilisation = value
    elif family is MEMORY_USED:
        facts.memory_used = value
    elif family is MEMORY_FREE:
        facts.memory_free = value
    elif family is TEMPERATURE:
        facts.temperature = value
    elif family is XID:
        _record_xid(facts, sample.points)
    elif sample.metric.get("__name__") == ECC_VOLATILE or facts.ecc_uncorrectable is None:
        facts.ecc_uncorrectable = value  # the volatile count (since the driver loaded) wins


def _record_xid(facts: GpuFacts, points: tuple[tuple[float, float], ...]) -> None:
    """The last XID and the first sample of its run; ``xid_new`` when that run began inside
    the window (an earlier sample with another value was seen)."""
    last = round(points[-1][1])
    start = len(points) - 1
    while start > 0 and round(points[start - 1][1]) == last:
        start -= 1
    facts.xid = last
    facts.xid_since = points[start][0] if last else None
    facts.xid_new = bool(last) and start > 0


