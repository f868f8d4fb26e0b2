"""The App Home tab as a Block Kit ``home`` view: the capacity view, the GPU pods stuck now by
cause (each with a button that triages it), the nodes to repair, and this week's digest so
far. Within a view's 100 blocks whatever the cluster size."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from bot.answer.blocks import escape_mrkdwn
from bot.answer.byline import age_text
from bot.answer.capacity import capacity_blocks
from bot.answer.render import cause_emoji
from triage.classify.capacity import CapacityView

HOME_TRIAGE_ACTION = "home_triage"
MAX_STUCK_ROWS = 8  # the newest stuck workloads, each triaged (a button to ask again)
MAX_CAPACITY_GROUPS = 30
MAX_REPAIR_NAMED = 15
MAX_SECTION = 2900


@dataclass(frozen=True)
class StuckRow:
    """One stuck workload (or bare pod) and the word its triage gave."""

    ref: str  # ns/name the button triages
    label: str  # "Deployment research/train" or "research/full"
    pods: int
    waiting: float  # seconds since its oldest stuck pod was created
    cause: str


def _header(text: str) -> dict[str, Any]:
    return {"type": "header", "text": {"type": "plain_text", "text": text[:150]}}


def _section(text: str, accessory: dict[str, Any] | None = None) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "section",
                             "text": {"type": "mrkdwn", "text": text[:MAX_SECTION]}}
    if accessory is not None:
        block["accessory"] = accessory
    return block


def _context(text: str) -> dict[str, Any]:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": text[:MAX_SECTION]}]}


def _triage_button(cluster: str, ref: str) -> dict[str, Any]:
    return {"type": "button", "text": {"type": "plain_text", "text": "Triage"},
            "action_id": HOME_TRIAGE_ACTION, "value": f"{cluster} {ref}"[:2000]}


def stuck_blocks(rows: Sequence[StuckRow], more: int, hidden: int,
                 cluster: str) -> list[dict[str, Any]]:
    """The newest stuck workloads grouped by their word, then how many more there are and how
    many in namespaces the Home may not name."""
    if not rows and not more and not hidden:
        return [_section("No GPU pod is stuck right now.")]
    blocks = []
    for word in dict.fromkeys(row.cause for row in rows):
        members = [row for row in rows if row.cause == word]
        blocks.append(_section(f"{cause_emoji(word)} *{word}* ({len(members)})"))
        for row in members:
            pods = f"{row.pods} pods" if row.pods != 1 else "1 pod"
            blocks.append(_section(
                f"{escape_mrkdwn(row.label, 300)} · {pods} · waiting "
                f"{age_text(timedelta(seconds=row.waiting))}", _triage_button(cluster, row.ref)))
    notes = []
    if more:
        notes.append(f"+{more} older stuck workloads (`/gpuwhy NS/NAME` for any)")
    if hidden:
        notes.append(f"+{hidden} in namespaces not shown here")
    if notes:
        blocks.append(_context(" · ".join(notes)))
    return blocks


def repair_blocks(view: CapacityView) -> list[dict[str, Any]]:
    broken = [(b, g) for g in view.groups for b in g.broken]
    if not broken:
        return [_section("No GPU node is broken.")]
    lines = [f"{escape_mrkdwn(b.name, 253)}: {b.why}, {b.gpus} out ({escape_mrkdwn(g.name, 80)})"
             for b, g in broken[:MAX_REPAIR_NAMED]]
    if len(broken) > MAX_REPAIR_NAMED:
        lines.append(f"+{len(broken) - MAX_REPAIR_NAMED} more")
    return [_section("\n".join(lines))]


def home_view(*, cluster: str, capacity: CapacityView | None, capacity_error: str | None,
              stuck: Sequence[StuckRow], stuck_more: int, stuck_hidden: int,
              digest: str | None, visible: Callable[[str], bool],
              now: datetime) -> dict[str, Any]:
    """At most 2 + 32 (capacity) + 2 + 17 (stuck: at most MAX_STUCK_ROWS rows, their words,
    a note) + 2 + 2 blocks: well inside a view's 100."""
    blocks: list[dict[str, Any]] = [
        _context(f"{escape_mrkdwn(cluster, 80)} · refreshed {now:%Y-%m-%d %H:%M} UTC · at most "
                 "once a minute"),
        _header("GPU capacity")]
    if capacity is None:
        blocks.append(_section(escape_mrkdwn(capacity_error or "not read", 2000)))
    else:
        blocks += capacity_blocks(capacity, visible)[:1 + MAX_CAPACITY_GROUPS]
        if len(capacity.groups) > MAX_CAPACITY_GROUPS:
            blocks.append(_context(f"+{len(capacity.groups) - MAX_CAPACITY_GROUPS} smaller "
                                   "groups: `/gpuwhy capacity POOL`"))
    blocks.append(_header("GPU pods stuck now"))
    blocks += stuck_blocks(stuck, stuck_more, stuck_hidden, cluster)
    blocks.append(_header("Nodes to repair"))
    blocks += repair_blocks(capacity) if capacity is not None else [_section("not read")]
    blocks.append(_header("This week so far"))
    blocks.append(_section(f"```{escape_mrkdwn(digest, MAX_SECTION - 6)}```" if digest
                           else "No incident store: no digest."))
    return {"type": "home", "blocks": blocks}
