"""Verdicts as Slack Block Kit: the answer and its plain-text fallback; the rendering helpers
the other replies share (the "show devices" table is bot.answer.devices).

Python picks what is shown (which evidence, which pods, how many fit);
the templates in templates/ lay it out. Every string that came from the cluster is escaped for
mrkdwn in the ``mrkdwn`` filter, so no event message can mention anyone or forge a link.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2

import templates
from bot.answer.render import cause_emoji, nodes_line
from scoring.verdict import Evidence, Verdict
from triage.vocabulary import Cause

# Block Kit allows 50 blocks per message and 3000 characters per text; the templates clip
# each cluster string to a budget, and these bounds keep every message inside both limits.
MAX_EVIDENCE = 6
MAX_PODS = 5
MAX_BUTTON_VALUE = 2000  # Block Kit's limit for a button's value

_WHITESPACE = re.compile(r"\s+")
_ESCAPES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
# Slack has no escape for a backtick: a cluster string holding ``` would close the code block
# it is shown in (the devices and stats tables) or open one. Such runs are shown as look-alikes
# (single backticks stay: gpuwhy's own actions quote a manifest line with them).
_FENCE = re.compile(r"`{3,}")
_FENCE_LOOKALIKE = "\u02cb"


def escape_mrkdwn(text: object, limit: int | None = None) -> str:
    """Escape ``&``, ``<``, ``>`` so Slack shows them literally, and neutralise runs of three
    backticks (a string can never open or close a code block); clip to ``limit`` escaped chars.

    Clipping counts escaped characters and never cuts an entity in half.
    """
    parts: list[str] = []
    used = 0
    unfenced = _FENCE.sub(lambda run: _FENCE_LOOKALIKE * len(run.group()), str(text))
    for char in unfenced:
        piece = _ESCAPES.get(char, char)
        if limit is not None and used + len(piece) > limit - 1:
            parts.append("…")
            break
        parts.append(piece)
        used += len(piece)
    return "".join(parts)


MAX_FALLBACK_TEXT = 3900  # a message's text is cut by Slack past 4,000 characters


def plain_fallback(text: str, limit: int = MAX_FALLBACK_TEXT) -> str:
    """A message's text, alone (its blocks were refused), within what Slack shows."""
    if len(text) <= limit:
        return text
    lines, used = [], 0
    all_lines = text.splitlines()
    for line in all_lines:
        if used + len(line) + 1 > limit - 20:
            break
        lines.append(line)
        used += len(line) + 1
    return "\n".join([*lines, f"+{len(all_lines) - len(lines)} more lines"])


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

# What a slash command's answer and its "show devices" reply render.
ANSWER_TEMPLATES = ("answer.blocks.j2", "answer.fallback.j2", "devices.blocks.j2",
                    "devices.fallback.j2")


def compile_answer_templates() -> None:
    """Compile the answers' templates now (the server does at start): compiling them on the
    first slash command made it the slowest answer of all, by tens of milliseconds."""
    for name in ANSWER_TEMPLATES:
        _ENV.get_template(name)


def render_blocks(template: str, view: object) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = json.loads(_ENV.get_template(template).render(view=view))
    return blocks


def render_text(template: str, view: object) -> str:
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
    byline: str | None  # ready mrkdwn (bot.answer.byline): who asked, the cluster, the data's age
    show_devices: bool  # a button for the devices behind the answer; no pod, no devices
    telemetry: str | None


def answer_view(verdict: Verdict, byline: str | None = None) -> AnswerView:
    is_workload = verdict.kind != "Pod"
    pods = verdict.pods if is_workload else []
    return AnswerView(
        emoji=cause_emoji(verdict.cause),
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
        telemetry=verdict.telemetry,
    )


def verdict_blocks(verdict: Verdict, byline: str | None = None) -> list[dict[str, Any]]:
    """The answer as Block Kit blocks; the button's value is the ref.

    ``byline`` (already mrkdwn) goes under the headline: a posted answer says who asked.
    """
    return render_blocks("answer.blocks.j2", answer_view(verdict, byline))


def verdict_text(verdict: Verdict, byline: str | None = None) -> str:
    """One-line fallback for notifications and clients that show no blocks."""
    return render_text("answer.fallback.j2", answer_view(verdict, byline))

