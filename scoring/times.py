"""Times as the API server writes them (RFC 3339, UTC)."""

from __future__ import annotations

from datetime import UTC, datetime


def rfc3339(moment: datetime) -> str:
    """A timezone-aware moment as the API server writes times: 2026-11-30T12:50:44Z."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_rfc3339(stamp: str) -> datetime:
    """An API server time ("2026-11-30T12:50:44Z", fractions allowed); ValueError if not one."""
    return datetime.fromisoformat(stamp)
