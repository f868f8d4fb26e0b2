"""Checked numeric options and one-line usage errors for every gpuwhy command.

argparse's own ``type=float`` takes ``-5``, ``nan`` and ``inf``; the client library then fails
deep inside with a traceback. These types refuse them at the command line instead.
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import NoReturn

MAX_SECONDS = 3600.0
MAX_PAGE_SIZE = 100_000
MAX_PORT = 65_535


class OneLineParser(argparse.ArgumentParser):
    """A usage error is one line on stderr (exit 2), naming --help for the rest."""

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: {message} (see {self.prog} --help)", file=sys.stderr)
        sys.exit(2)


def _number(text: str, kind: type[float] | type[int]) -> float:
    try:
        return kind(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None


def seconds(text: str) -> float:
    """A timeout: a finite number of seconds above 0, at most an hour."""
    value = _number(text, float)
    if not math.isfinite(value) or not 0 < value <= MAX_SECONDS:
        raise argparse.ArgumentTypeError(
            f"{text!r} must be a number of seconds above 0 and at most {MAX_SECONDS:g}")
    return value


def page_size(text: str) -> int:
    value = int(_number(text, int))
    if not 1 <= value <= MAX_PAGE_SIZE:
        raise argparse.ArgumentTypeError(f"{text!r} must be from 1 to {MAX_PAGE_SIZE}")
    return value


def port(text: str) -> int:
    value = int(_number(text, int))
    if not 0 <= value <= MAX_PORT:
        raise argparse.ArgumentTypeError(f"{text!r} must be a port from 0 to {MAX_PORT} "
                                         "(0 picks a free one)")
    return value
