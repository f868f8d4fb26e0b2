"""Verdicts to text through Jinja templates. Templates render; they do not decide."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import jinja2

from scoring.verdict import Verdict
from triage.vocabulary import CAUSE_INFO, Cause


@cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("templates", ""),
        autoescape=False,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["tojson_compact"] = lambda value: json.dumps(value, ensure_ascii=False)
    return env


def cause_emoji(cause: str) -> str:
    try:
        return CAUSE_INFO[Cause(cause)].emoji
    except ValueError:
        return "❓"


def score_note(verdict: Verdict) -> str:
    """Whose scores the node summary shows: the scheduler's own, or gpuwhy's under a policy."""
    if verdict.score_source == "scheduler":
        return "(scores from the scheduler)"
    if verdict.score_source == "gpuwhy":
        return f"(gpuwhy {verdict.score_policy} score)"
    return ""


def nodes_line(verdict: Verdict) -> str:
    return " ".join(part for part in (verdict.node_summary, score_note(verdict)) if part)


def verdict_context(verdict: Verdict) -> dict[str, Any]:
    """What every answer template gets: the verdict plus its headline parts."""
    kind = f" ({verdict.kind})" if verdict.kind != "Pod" else ""
    sharing = ""
    if verdict.kind != "Pod" and verdict.pods_total > 1:
        sharing = f"{len(verdict.pods)} of its {verdict.pods_total} pods share this answer"
    return {
        "v": verdict,
        "emoji": cause_emoji(verdict.cause),
        "headline": f"{verdict.cause} — {verdict.ref}{kind}",
        "sharing": sharing,
        "scheduler_line": " ".join((verdict.scheduler_message or "").split()),
        "nodes_line": nodes_line(verdict),
    }


def render_text(verdict: Verdict) -> str:
    return environment().get_template("answer.txt.j2").render(**verdict_context(verdict))
