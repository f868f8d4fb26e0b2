"""Digest weeks: Monday 00:00 to the next Monday 00:00 in the configured timezone (a week
with a daylight-saving change is 167 or 169 hours long), their keys, and week counts a person
types."""

from __future__ import annotations

from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from bot.cli.numbers import whole_number

MAX_WEEKS = 52
DEFAULT_STATS_WEEKS = 4


class DigestError(ValueError):
    """Bad digest input (weeks, timezone); the message is safe to show to the user."""


def parse_weeks(text: str) -> int:
    """The [weeks] argument of `gpuwhy digest/stats` and `/gpuwhy stats`: 1..52."""
    try:
        return whole_number(text, "weeks", 1, MAX_WEEKS)
    except ValueError as exc:
        raise DigestError(str(exc)) from None


def load_timezone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise DigestError(f"unknown timezone {name!r} (use an IANA name such as "
                          "Europe/Berlin)") from None


# Weeks -------------------------------------------------------------------------------------


def week_start(moment: datetime, tz: ZoneInfo) -> datetime:
    """Monday 00:00 (in ``tz``) of the week holding ``moment``."""
    local = moment.astimezone(tz)
    return local_midnight(local.date() - timedelta(days=local.weekday()), tz)


def add_weeks(start: datetime, weeks: int) -> datetime:
    """Midnight ``weeks`` weeks later by the calendar (not 168 h: DST weeks differ)."""
    tz = start.tzinfo
    assert isinstance(tz, ZoneInfo), "week starts carry their ZoneInfo"
    return local_midnight(start.date() + timedelta(weeks=weeks), tz)


def local_midnight(day: date, tz: ZoneInfo) -> datetime:
    return datetime.combine(day, time(), tzinfo=tz)


def week_key(start: datetime) -> str:
    """ISO week of a week start, e.g. "2026-W48"."""
    year, week, _ = start.date().isocalendar()
    return f"{year}-W{week:02d}"


def last_full_week(now: datetime, tz: ZoneInfo) -> datetime:
    return add_weeks(week_start(now, tz), -1)


# Digest ------------------------------------------------------------------------------------

