"""Verdicts as Slack Block Kit: the answer, the "show devices" table, and plain-text fallbacks.

Python picks what is shown (which evidence, which nodes, in which order, how many rows fit);
the templates in templates/ lay it out. Every string that came from the cluster is escaped for
mrkdwn in the ``mrkdwn`` filter, so no event message can mention anyone or forge a link.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jinja2

import templates
from bot.render import nodes_line
from triage.verdict import Device, Evidence, NodeReport, Verdict
from triage.vocabulary import CAUSE_ORDER, CAUSES, FIT, Cause

# Block Kit allows 50 blocks per message and 3000 characters per text; the templates clip
# each cluster string to a budget, and these bounds keep every message inside both limits.
MAX_EVIDENCE = 6
MAX_PODS = 5
MAX_DEVICE_NODES = 10  # two blocks each
TABLE_BUDGET = 2800  # characters of device rows per table, fences and "+N more" excluded
HOLDERS_SHOWN = 2
TYPE_WIDTH = 24
HOLDER_WIDTH = 64
CODE_WIDTH = 40
MAX_BUTTON_VALUE = 2000  # Block Kit's limit for a button's value

BOUND_CAUSES = frozenset({Cause.SCHEDULED, Cause.NODE_RUNTIME_ERROR})
_RULED_OUT = frozenset({Cause.SELECTOR_MISMATCH, Cause.TAINT_UNTOLERATED})
_CAUSE_WORDS = frozenset(str(cause) for cause in Cause)
_DEVICE_RANK = CAUSE_ORDER[Cause.DEVICE_UNFIT]
_EMOJI = {str(info.cause): info.emoji for info in CAUSES}
_UNKNOWN_EMOJI = "❓"
_WHITESPACE = re.compile(r"\s+")
_ESCAPES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}


def escape_mrkdwn(text: object, limit: int | None = None) -> str:
    """Escape ``&``, ``<``, ``>`` so Slack shows them literally; clip to ``limit`` escaped chars.

    Clipping counts escaped characters and never cuts an entity in half.
    """
    parts: list[str] = []
    used = 0
    for char in str(text):
        piece = _ESCAPES.get(char, char)
        if limit is not None and used + len(piece) > limit - 1:
            parts.append("…")
            break
        parts.append(piece)
        used += len(piece)
    return "".join(parts)


def one_line(text: object) -> str:
    return _WHITESPACE.sub(" ", str(text)).strip()


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(Path(templates.__file__).parent),
        autoescape=False,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["mrkdwn"] = escape_mrkdwn
    env.filters["oneline"] = one_line
    return env


_ENV = _environment()


def _render_blocks(template: str, view: object) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = json.loads(_ENV.get_template(template).render(view=view))
    return blocks


def _render_text(template: str, view: object) -> str:
    return _ENV.get_template(template).render(view=view).strip()


# --- the answer ---------------------------------------------------------------------------

@dataclass(frozen=True)
class AnswerView:
    emoji: str
    cause: str
    ref: str
    kind: str | None  # None for a plain pod
    button_value: str
    action: str
    evidence: list[Evidence]
    evidence_hidden: int
    pods: list[str]
    pods_hidden: int
    pods_sharing: int
    pods_total: int
    node_summary: str
    scheduler_summary: str | None
    scheduler_message: str | None
    error: str | None
    byline: str | None  # ready mrkdwn (bot.byline): who asked, the cluster, the data's age
    show_devices: bool  # a button for the devices behind the answer; no pod, no devices


def answer_view(verdict: Verdict, byline: str | None = None) -> AnswerView:
    is_workload = verdict.kind != "Pod"
    pods = verdict.pods if is_workload else []
    return AnswerView(
        emoji=_EMOJI.get(verdict.cause, _UNKNOWN_EMOJI),
        cause=verdict.cause,
        ref=verdict.ref,
        kind=verdict.kind if is_workload else None,
        button_value=verdict.ref[:MAX_BUTTON_VALUE],
        action=verdict.action,
        evidence=verdict.evidence[:MAX_EVIDENCE],
        evidence_hidden=max(0, len(verdict.evidence) - MAX_EVIDENCE),
        pods=pods[:MAX_PODS],
        pods_hidden=max(0, len(pods) - MAX_PODS),
        pods_sharing=len(pods),
        pods_total=verdict.pods_total,
        node_summary=nodes_line(verdict),
        scheduler_summary=verdict.scheduler_summary,
        scheduler_message=verdict.scheduler_message,
        error=verdict.error,
        byline=byline,
        show_devices=verdict.cause != Cause.POD_NOT_FOUND,
    )


def verdict_blocks(verdict: Verdict, byline: str | None = None) -> list[dict[str, Any]]:
    """The answer as Block Kit blocks; the button's value is the ref.

    ``byline`` (already mrkdwn) goes under the headline: a posted answer says who asked.
    """
    return _render_blocks("answer.blocks.j2", answer_view(verdict, byline))


def verdict_text(verdict: Verdict, byline: str | None = None) -> str:
    """One-line fallback for notifications and clients that show no blocks."""
    return _render_text("answer.fallback.j2", answer_view(verdict, byline))


# --- "show devices" -----------------------------------------------------------------------

@dataclass(frozen=True)
class NodeTable:
    name: str
    outcome: str
    detail: str
    summary: str  # "4 × NVIDIA A100-SXM4-80GB"
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
    nodes_hidden: int
    triaged_at_epoch: int
    triaged_at_text: str


_COLUMNS = ("#", "uuid", "type", "memory MiB", "cores", "numa", "holders", "this pod")


def nodes_that_matter(verdict: Verdict) -> tuple[str, list[NodeReport]]:
    """The bound node when the pod is bound, else the candidate nodes, worst first.

    Candidates are the nodes a selector or taint does not rule out. Worst first: unfit before
    fit, then the earlier the check a node fails, the worse (a HAMi device code counts as
    device-unfit), then the least preferred score under the policy, then by name.
    """
    if verdict.cause in BOUND_CAUSES:
        return "the node it is bound to", verdict.nodes[:1]
    candidates = [n for n in verdict.nodes if n.outcome not in _RULED_OUT] or verdict.nodes
    # Under binpack the highest score wins, under spread the lowest: worst is the other end.
    sign = -1.0 if verdict.score_policy == "spread" else 1.0

    def worst_first(node: NodeReport) -> tuple[bool, int, float, str]:
        rank = CAUSE_ORDER[Cause(node.outcome)] if node.outcome in _CAUSE_WORDS else _DEVICE_RANK
        score = -math.inf if node.score is None else sign * node.score
        return (node.outcome == FIT, rank, score, node.name)

    return "nodes it could use, worst first", sorted(candidates, key=worst_first)


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
        _short_uuid(one_line(device.uuid)) or "-",
        _clip(device.type, TYPE_WIDTH),
        memory,
        cores,
        "-" if device.numa is None else str(device.numa),
        holders or "-",
        _clip(device.code, CODE_WIDTH) if device.code else "fits",
    )


def _used_of(used: int | None, total: int | None) -> str:
    """"used/total"; "?" for an unknown half, "-" when neither is known (a plain node)."""
    if used is None and total is None:
        return "-"
    return f"{'?' if used is None else used}/{'?' if total is None else total}"


def _short_uuid(uuid: str) -> str:
    return uuid if len(uuid) <= 9 else uuid[:8] + "…"


def _clip(text: str, width: int) -> str:
    """One line of at most ``width`` characters: a table cell must not break the table."""
    text = one_line(text)
    return text if len(text) <= width else text[: width - 1] + "…"


def _aligned(cells: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(row[column]) for row in cells) for column in range(len(_COLUMNS))]
    return ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
            for row in cells]


def _node_table(node: NodeReport) -> NodeTable:
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
        header=header,
        rows=shown,
        rows_hidden=len(rows) - len(shown),
    )


def devices_view(verdict: Verdict, triaged_at: datetime) -> DevicesView:
    scope, nodes = nodes_that_matter(verdict)
    if not nodes:
        scope = "no node to show"
    return DevicesView(
        emoji=_EMOJI.get(verdict.cause, _UNKNOWN_EMOJI),
        cause=verdict.cause,
        ref=verdict.ref,
        scope=scope,
        nodes=[_node_table(node) for node in nodes[:MAX_DEVICE_NODES]],
        nodes_hidden=max(0, len(nodes) - MAX_DEVICE_NODES),
        triaged_at_epoch=int(triaged_at.timestamp()),
        triaged_at_text=triaged_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC"),
    )


def devices_blocks(verdict: Verdict, triaged_at: datetime) -> list[dict[str, Any]]:
    """The per-device tables for the "show devices" reply; ``triaged_at`` is timezone-aware UTC."""
    return _render_blocks("devices.blocks.j2", devices_view(verdict, triaged_at))


def devices_text(verdict: Verdict, triaged_at: datetime) -> str:
    return _render_text("devices.fallback.j2", devices_view(verdict, triaged_at))
