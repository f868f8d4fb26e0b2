"""The capacity view and ``where`` answers as text (terminal) and Slack Block Kit.

One message whatever the cluster size: a group per pool / product (a few dozen even at
100,000 nodes), node names only for the few broken ones and the largest free block. A
channel limited to some namespaces sees the others' holdings counted, not named.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from bot.answer.blocks import escape_mrkdwn, plain_fallback
from bot.answer.byline import age_text
from bot.answer.render import cause_emoji
from bot.answer.visibility import hide_text, others_text
from triage.classify.capacity import DRA, HAMI, CapacityGroup, CapacityView, NamespaceHolding
from triage.classify.where import HeldBy, WhereAnswer
from triage.vocabulary import CAUSE_INFO, Cause

NamespaceVisible = Callable[[str], bool]
MAX_GROUP_BLOCKS = 40  # Block Kit allows 50 blocks per message: the header and the rest
MAX_BROKEN_NAMED = 3
MAX_SECTION = 2900  # Block Kit's 3,000 characters per section text, with room to spare


def _everyone(namespace: str) -> bool:
    return True


def _unit(group: CapacityGroup, count: int) -> str:
    return _plural(count, {HAMI: "card", DRA: "device"}.get(group.kind, "GPU"))


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


def group_title(group: CapacityGroup) -> str:
    parts = [group.resource]
    if group.pool:
        parts.append(f"pool {group.pool}")
    if group.product:
        parts.append(group.product)
    return " · ".join(parts)


def _holders(holders: list[NamespaceHolding], total: int, visible: NamespaceVisible) -> str:
    shown = [h for h in holders if visible(h.namespace)]
    hidden = [h for h in holders if not visible(h.namespace)]
    text = ", ".join(f"{h.namespace} {h.gpus}" for h in shown)
    if hidden:
        others = f"other namespaces {sum(h.gpus for h in hidden)}"
        text = f"{text}, {others}" if text else others
    if total > len(holders):
        text += f" (+{total - len(holders)} more namespaces)"
    return text


def group_lines(group: CapacityGroup, visible: NamespaceVisible = _everyone) -> list[str]:
    """The group's figures, then its broken nodes, holders and taints, a line each."""
    block = (f"; largest block {group.largest_free} on {group.largest_free_node}"
             if group.largest_free else "")
    lines = [f"{_plural(group.nodes, 'node')}, {_unit(group, group.capacity)}: "
             f"{group.allocatable} allocatable, {group.held} held, {group.free} free{block}"]
    if group.broken:
        named = ", ".join(f"{b.name} ({b.why})" for b in group.broken[:MAX_BROKEN_NAMED])
        more = (f" +{len(group.broken) - MAX_BROKEN_NAMED} more"
                if len(group.broken) > MAX_BROKEN_NAMED else "")
        verb = "takes" if len(group.broken) == 1 else "take"
        lines.append(f"broken: {_plural(len(group.broken), 'node')} {verb} "
                     f"{_unit(group, group.broken_gpus)} out: {named}{more}")
    if group.holders:
        lines.append(f"held by: {_holders(group.holders, group.holders_total, visible)}")
    if group.idle_held is not None and group.held:
        lines.append(f"idle all of the last hour: {group.idle_held} of the {group.held} held")
    for taint in group.taints:
        who = "no new pods" if taint.cordon else "only pods tolerating it"
        lines.append(f"{taint.taint} on {taint.nodes} of {group.nodes}: {who}")
    return lines


def _summary(view: CapacityView) -> str:
    return (f"{view.cluster}: {view.capacity} GPUs on {view.gpu_nodes} of "
            f"{_plural(view.nodes, 'node')}: {view.held} held, {view.free} free")


def capacity_text(view: CapacityView) -> str:
    lines = [_summary(view)] + ([view.idle_note] if view.idle_note else [])
    if not view.groups:
        lines.append("No node offers GPUs.")
    for group in view.groups:
        lines.append(f"\n{group_title(group)}")
        lines.extend(f"  {line}" for line in group_lines(group))
    return "\n".join(lines) + "\n"


def capacity_blocks(view: CapacityView, visible: NamespaceVisible = _everyone,
                    byline: str | None = None) -> list[dict[str, Any]]:
    """One message: a summary, a section per group (the largest first), the rest counted."""
    head = f"*{escape_mrkdwn(_summary(view), 500)}*" + (
        f"\n{escape_mrkdwn(view.idle_note, 500)}" if view.idle_note else "")
    if not view.groups:
        head += "\nNo node offers GPUs."
    blocks: list[dict[str, Any]] = [_section(head)]
    for group in view.groups[:MAX_GROUP_BLOCKS]:
        body = "\n".join(escape_mrkdwn(line, 600) for line in group_lines(group, visible))
        blocks.append(_section(f"*{escape_mrkdwn(group_title(group), 300)}*\n{body}"))
    rest = view.groups[MAX_GROUP_BLOCKS:]
    notes = []
    if rest:
        notes.append(f"+{len(rest)} smaller groups ({sum(g.capacity for g in rest)} GPUs, "
                     f"{sum(g.free for g in rest)} free): ask `/gpuwhy capacity POOL`")
    if byline:
        notes.append(byline)
    if notes:
        blocks.append({"type": "context",
                       "elements": [{"type": "mrkdwn", "text": " · ".join(notes)}]})
    return blocks


def capacity_fallback(view: CapacityView) -> str:
    return plain_fallback(capacity_text(view))


def _section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text[:MAX_SECTION]}}


# -- where ------------------------------------------------------------------------------------


def _held_text(held: tuple[HeldBy, ...], visible: NamespaceVisible) -> str:
    shown = [h for h in held if visible(h.pod.partition("/")[0])]
    hidden = len(held) - len(shown)
    text = ", ".join(f"{h.pod} ({h.count}" + (
        f", running {age_text(timedelta(seconds=h.running))})" if h.running is not None else ")")
        for h in shown)
    if hidden:
        text = f"{text}, {others_text(hidden)}" if text else others_text(hidden)
    return text


def where_lines(answer: WhereAnswer, visible: NamespaceVisible = _everyone) -> list[str]:
    """The word, where it fits now, what would fit behind a taint, and otherwise the nearest
    nodes with their holders."""
    ask = answer.ask
    lines = []
    if answer.fits:
        names = ", ".join(answer.fit_nodes[:5]) + (
            f" +{len(answer.fit_nodes) - 5} more" if len(answer.fit_nodes) > 5 else "")
        lines.append(f"✅ fits — {ask.text}: free now on {names}")
    else:
        cause = Cause(answer.cause)
        lines.append(f"{cause_emoji(answer.cause)} {cause.value} — {ask.text}: "
                     f"{CAUSE_INFO[cause].summary}")
    lines += answer.queues
    for chance in answer.behind_taints:
        flags = " ".join(f"--toleration {t}" for t in chance.taints)
        lines.append(f"{chance.name} has {chance.free} free behind {', '.join(chance.taints)}: "
                     f"you need its toleration ({flags})")
    if answer.nearest:
        lines.append("nearest:")
        for chance in answer.nearest:
            held = _held_text(chance.held, visible)
            free = f"{chance.free} free, " if chance.free is not None else ""
            lines.append(f"  {chance.name}: {free}{held or chance.why}")
    if not answer.fits:
        pod = f"{ask.namespace}/{answer.verdict.ref.partition('/')[2]}"
        lines.append(f"Next: {answer.verdict.action.replace(pod, 'the pod')}")
    lines.append(f"Nodes: {answer.verdict.node_summary}")
    return lines


def where_text(answer: WhereAnswer) -> str:
    return "\n".join(where_lines(answer)) + "\n"


def where_blocks(answer: WhereAnswer, visible: NamespaceVisible = _everyone,
                 byline: str | None = None) -> list[dict[str, Any]]:
    text = "\n".join(escape_mrkdwn(hide_text(line, visible), 800)
                     for line in where_lines(answer, visible))
    blocks: list[dict[str, Any]] = [_section(text)]
    if byline:
        blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": byline}]})
    return blocks
