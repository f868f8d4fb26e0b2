"""Whole numbers typed by a person (a CLI option, a word of a slash command), checked."""

from __future__ import annotations


def whole_number(text: str, what: str, low: int, high: int, unit: str = "") -> int:
    """``text`` as an int from ``low`` to ``high``; ValueError says so in one line naming
    ``what`` (and ``unit``, e.g. " days")."""
    try:
        number = int(text.strip())
    except ValueError:
        raise ValueError(f"{what} must be a whole number from {low} to {high}{unit}, "
                         f"not {text.strip()[:20]!r}") from None
    if not low <= number <= high:
        raise ValueError(f"{what} must be from {low} to {high}{unit}, not {number}")
    return number
