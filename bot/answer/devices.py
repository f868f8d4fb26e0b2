"""The "show devices" table: which nodes it lists, and each node's devices as aligned rows.

Shared by the Slack reply (Block Kit and its fallback) and `gpuwhy devices` (text, JSON).
Python picks the nodes, their order, the columns that carry data and the rows that fit; the
templates lay them out.
"""

from __future__ import annotations

import heapq
import math
from collections import Counter
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from bot.answer.blocks import escape_mrkdwn, render_blocks, render_text
from bot.answer.render import cause_emoji
from scoring.dra import DRA_HOLDERS
from scoring.hami import HAMI_HOLDERS
from scoring.verdict import Device, NodeReport, ReportColumns, Verdict, data_dict, report_columns
from triage.vocabulary import CAUSE_ORDER, FIT, Cause

MAX_DEVICE_NODES = 10  # two Block Kit blocks each
TABLE_BUDGET = 2800  # characters of device rows per table, fences and "+N more" excluded
HOLDERS_SHOWN = 2
HELD_SHOWN = 6  # pods named in a node's held line
TYPE_WIDTH = 24
HOLDER_WIDTH = 64
CODE_WIDTH = 40
UNKNOWN = "-"

ALLOCATION_SOURCES = frozenset({HAMI_HOLDERS, DRA_HOLDERS})
BOUND_CAUSES = frozenset({Cause.SCHEDULED, Cause.NODE_RUNTIME_ERROR})
_RULED_OUT = frozenset({Cause.SELECTOR_MISMATCH, Cause.TAINT_UNTOLERATED})
_CAUSE_WORDS = frozenset(str(cause) for cause in Cause)
_DEVICE_RANK = CAUSE_ORDER[Cause.DEVICE_UNFIT]

# Column titles; a column no device of the node has data for is left out (# and the pod's
# fit on the device always stay).
_COLUMNS = ("#", "uuid", "model", "memory MiB", "util", "temp", "cores", "numa", "xid",
            "holder", "this pod")
_ALWAYS = frozenset({"#", "this pod"})


@dataclass(frozen=True)
class RelevantNodes:
    scope: str  # what the list is: "the node it is bound to", ...
    shown: list[NodeReport]  # worst first
    others: dict[str, int]  # the nodes not shown, counted by outcome


def relevant_nodes(verdict: Verdict, limit: int = MAX_DEVICE_NODES) -> RelevantNodes:
    """The bound node for a bound pod; otherwise the nodes the pod could use — those its
    selector and taints leave — worst first. When none is left: the nodes its selector
    matches (all tainted). The rest are counted by outcome.

    Worst first: unfit before fit, then the earlier the check a node fails, the worse (a HAMi
    device code counts as device-unfit), then the least preferred score under the policy,
    then by name. Picked from the reports' columns: only the listed reports are made (an
    answer on 100,000 nodes lists ten).
    """
    columns = report_columns(verdict.nodes)
    scope, places = relevant_places(verdict, columns, limit)
    shown = [verdict.nodes[i] for i in places]
    counted = Counter(columns.outcomes)
    counted.subtract(node.outcome for node in shown)
    counted.update(verdict.nodes_omitted)
    others: Counter[str] = Counter()
    for outcome, count in counted.items():
        if count:
            others[_counted_outcome(outcome)] += count
    return RelevantNodes(scope, shown, dict(others))


def relevant_places(verdict: Verdict, columns: ReportColumns,
                    limit: int = MAX_DEVICE_NODES) -> tuple[str, list[int]]:
    """``relevant_nodes``' scope, and the places of the nodes it lists in the answer's
    order (``columns``: the answer's reports')."""
    names, outcomes, scores = columns
    if verdict.cause in BOUND_CAUSES:
        picked, scope = list(range(min(1, len(names)))), "the node it is bound to"
    else:
        picked = [i for i, outcome in enumerate(outcomes) if outcome not in _RULED_OUT]
        scope = "nodes it could use, worst first"
        if not picked:
            picked = [i for i, outcome in enumerate(outcomes)
                      if outcome == Cause.TAINT_UNTOLERATED]
            scope = "nodes its selector matches, all tainted"
        if not picked:
            scope = ("no node matches its selector" if names or verdict.nodes_omitted
                     else "no node to show")
    # Under binpack the highest score wins, under spread the lowest: worst is the other end.
    sign = -1.0 if verdict.score_policy == "spread" else 1.0

    def worst_first(i: int) -> tuple[bool, int, float, str]:
        outcome, score = outcomes[i], scores[i]
        rank = CAUSE_ORDER[Cause(outcome)] if outcome in _CAUSE_WORDS else _DEVICE_RANK
        return (outcome == FIT, rank, -math.inf if score is None else sign * score, names[i])

    return scope, heapq.nsmallest(limit, picked, key=worst_first)


def _counted_outcome(outcome: str) -> str:
    return outcome if outcome in _CAUSE_WORDS or outcome == FIT else str(Cause.DEVICE_UNFIT)


def others_line(others: dict[str, int]) -> str:
    """``+5 other nodes: 4 selector-mismatch, 1 taint-untolerated``; "" when none."""
    total = sum(others.values())
    if not total:
        return ""
    order = {str(cause): rank for cause, rank in CAUSE_ORDER.items()}
    counts = ", ".join(f"{n} {outcome}" for outcome, n in
                       sorted(others.items(), key=lambda item: (order.get(item[0], 99), item[0])))
    return f"+{total} other node{'s' if total != 1 else ''}: {counts}"


@dataclass(frozen=True)
class NodeTable:
    name: str
    outcome: str
    detail: str
    summary: str  # "4 × NVIDIA A100-SXM4-80GB"
    held: str  # "2/2 held by ml/train-a (1), team-b/train-b (1)"
    header: str
    rows: list[str]
    rows_hidden: int


@dataclass(frozen=True)
class DevicesView:
    emoji: str
    cause: str
    ref: str
    scope: str
    nodes: list[NodeTable]
    others: str
    telemetry: str
    triaged_at_epoch: int
    triaged_at_text: str


def devices_view(verdict: Verdict, triaged_at: datetime) -> DevicesView:
    relevant = relevant_nodes(verdict)
    return DevicesView(
        emoji=cause_emoji(verdict.cause),
        cause=verdict.cause,
        ref=verdict.ref,
        scope=relevant.scope,
        nodes=[node_table(node) for node in relevant.shown],
        others=others_line(relevant.others),
        telemetry=verdict.telemetry or "",
        triaged_at_epoch=int(triaged_at.timestamp()),
        triaged_at_text=triaged_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC"),
    )


def devices_json(verdict: Verdict) -> dict[str, Any]:
    """The same nodes as the table, as data (`gpuwhy devices --format json`)."""
    relevant = relevant_nodes(verdict)
    return {"ref": verdict.ref, "cause": verdict.cause, "scope": relevant.scope,
            "nodes": [asdict(node, dict_factory=data_dict) for node in relevant.shown],
            "others": relevant.others, "telemetry": verdict.telemetry}


def node_table(node: NodeReport) -> NodeTable:
    devices = sorted(node.devices, key=lambda d: d.index)
    header, *rows = _aligned([_COLUMNS, *(_device_cells(d) for d in devices)])
    shown: list[str] = []
    used = len(escape_mrkdwn(header))
    for row in rows:
        used += len(escape_mrkdwn(row)) + 1
        if used > TABLE_BUDGET:
            break
        shown.append(row)
    types = sorted({d.type for d in devices})
    summary = f"{len(devices)} × {types[0]}" if len(types) == 1 else f"{len(devices)} devices"
    return NodeTable(
        name=node.name,
        outcome=node.outcome if node.score is None else f"{node.outcome} (score {node.score:.2f})",
        detail="" if node.detail == node.outcome else node.detail,
        summary=summary if devices else "",
        held=held_line(node),
        header=header,
        rows=shown,
        rows_hidden=len(rows) - len(shown),
    )


def held_line(node: NodeReport) -> str:
    """Who holds the node's GPUs, as the API server says: the truth even where no source
    says which pod holds which device. Left out where allocations (HAMi, DRA) name every
    device's holders; DCGM names only the pods it maps, so its devices keep the line."""
    if not node.held or any(d.holder_source in ALLOCATION_SOURCES for d in node.devices):
        return ""
    total = sum(h.count for h in node.held)
    of = "" if node.allocatable is None else f"/{node.allocatable}"
    names = ", ".join(f"{_clip(h.pod, HOLDER_WIDTH)} ({h.count})" for h in node.held[:HELD_SHOWN])
    more = f" +{len(node.held) - HELD_SHOWN} more" if len(node.held) > HELD_SHOWN else ""
    return f"{total}{of} held by {names}{more}"


def _device_cells(device: Device) -> tuple[str, ...]:
    if not device.healthy:
        memory = cores = "unhealthy"
    else:
        memory = _used_of(device.memory_used, device.memory_total)
        cores = _used_of(device.cores_used, device.cores_total)
    holders = ", ".join(_clip(holder, HOLDER_WIDTH) for holder in device.holders[:HOLDERS_SHOWN])
    if len(device.holders) > HOLDERS_SHOWN:
        holders += f" +{len(device.holders) - HOLDERS_SHOWN} more"
    return (
        f"#{device.index}",
        _short_uuid(_clip(device.uuid, 64)) or UNKNOWN,
        _clip(device.type, TYPE_WIDTH) or UNKNOWN,
        memory,
        UNKNOWN if device.utilisation is None else f"{device.utilisation} %",
        UNKNOWN if device.temperature is None else f"{device.temperature} °C",
        cores,
        UNKNOWN if device.numa is None else str(device.numa),
        _xid_cell(device),
        holders or UNKNOWN,
        _clip(device.code, CODE_WIDTH) if device.code else "fits",
    )


def _xid_cell(device: Device) -> str:
    """``79 at 12:42`` (first seen inside the window read), ``48 before 11:53`` (reported all
    through it), ``none``; ``-`` when not read."""
    if device.xid is None:
        return UNKNOWN
    if not device.xid:
        return "none"
    when = "" if device.xid_at is None else datetime.fromisoformat(
        device.xid_at.replace("Z", "+00:00")).strftime("%H:%M")
    return f"{device.xid} {'at' if device.xid_new else 'before'} {when}".strip()


def _used_of(used: int | None, total: int | None) -> str:
    """"used/total"; "?" for an unknown half, "-" when neither is known (a plain node)."""
    if used is None and total is None:
        return UNKNOWN
    return f"{'?' if used is None else used}/{'?' if total is None else total}"


def _short_uuid(uuid: str) -> str:
    return uuid if len(uuid) <= 9 else uuid[:8] + "…"


def _clip(text: str, width: int) -> str:
    """One line of at most ``width`` characters: a table cell must not break the table."""
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _aligned(cells: list[tuple[str, ...]]) -> list[str]:
    keep = [column for column, title in enumerate(_COLUMNS)
            if title in _ALWAYS or any(row[column] != UNKNOWN for row in cells[1:])]
    widths = {column: max(len(row[column]) for row in cells) for column in keep}
    return ["  ".join(row[column].ljust(widths[column]) for column in keep).rstrip()
            for row in cells]


def devices_blocks(verdict: Verdict, triaged_at: datetime) -> list[dict[str, Any]]:
    """The per-device tables for the "show devices" reply; ``triaged_at`` is timezone-aware UTC."""
    return render_blocks("devices.blocks.j2", devices_view(verdict, triaged_at))


def devices_text(verdict: Verdict, triaged_at: datetime) -> str:
    """The reply's plain-text fallback."""
    return render_text("devices.fallback.j2", devices_view(verdict, triaged_at))


def devices_terminal(verdict: Verdict, triaged_at: datetime) -> str:
    """The tables for the terminal (`gpuwhy devices`)."""
    return render_text("devices.txt.j2", devices_view(verdict, triaged_at))
