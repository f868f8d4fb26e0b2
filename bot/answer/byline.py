"""The line under an answer's headline: who asked, which cluster, and how old the data is."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from bot.answer.blocks import escape_mrkdwn, one_line

# Data read by the triage itself, or kept current by a watch, is fresh; older data is dated.
FRESH = timedelta(minutes=2)
# A Slack user (U…) or enterprise user (W…) id; anything else is shown as plain text.
_USER_ID = re.compile(r"^[UW][A-Z0-9]{2,20}$")


def mention(user: str) -> str:
    """``<@U…>`` for a real user id, so Slack shows the name; any other text escaped."""
    return f"<@{user}>" if _USER_ID.match(user) else escape_mrkdwn(one_line(user), 80)


def age_text(age: timedelta) -> str:
    """"40 s", "12 min", "5 h", "3 days": the largest unit that is at least one."""
    seconds = max(0, int(age.total_seconds()))
    for unit, size in (("days", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            count = seconds // size
            return f"{count} {'day' if unit == 'days' and count == 1 else unit}"
    return f"{seconds} s"


def staleness(as_of: datetime | None, now: datetime) -> str | None:
    """"data 3 days old (2026-11-27 09:00 UTC)" when ``as_of`` is older than FRESH, else None."""
    if as_of is None or now - as_of < FRESH:
        return None
    stamp = as_of.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return f"data {age_text(now - as_of)} old ({stamp})"


def byline(asked_by: str | None, *, cluster: str | None, as_of: datetime | None,
           now: datetime) -> str | None:
    """mrkdwn: "asked by <@U0BOB> · cluster *prod* · data 3 days old (…)"; None when empty.

    ``asked_by`` is None for a private reply (the asker knows), ``cluster`` when the bot
    serves one cluster (naming it would be noise).
    """
    parts = [] if asked_by is None else [f"asked by {mention(asked_by)}"]
    if cluster is not None:
        parts.append(f"cluster *{escape_mrkdwn(one_line(cluster), 100)}*")
    if (stale := staleness(as_of, now)) is not None:
        parts.append(f":hourglass: {stale}")
    return " · ".join(parts) or None
