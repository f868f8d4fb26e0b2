"""Options several commands share, checked numeric option types and one-line usage errors.

argparse's own ``type=float`` takes ``-5``, ``nan`` and ``inf``; the client library then fails
deep inside with a traceback. These types refuse them at the command line instead. Light on
purpose: parsing the command line loads no API client, store or Slack library.
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import NoReturn

from triage.cluster.limits import DEFAULT_PAGE_SIZE, DEFAULT_TIMEOUT

MAX_SECONDS = 3600.0
MAX_PAGE_SIZE = 100_000
MAX_PORT = 65_535


def fail(message: object, code: int) -> int:
    """A command's failure: one line on stderr, and the exit code to return."""
    print(f"gpuwhy: {message}", file=sys.stderr)
    return code


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




def add_cluster_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kubeconfig", help="kubeconfig file (default: as kubectl: "
                        "KUBECONFIG, ~/.kube/config, else the pod's service account)")
    parser.add_argument("--context", help="kubeconfig context (default: the current one)")
    parser.add_argument("--request-timeout", type=seconds, default=DEFAULT_TIMEOUT,
                        metavar="SECONDS", help="give up on one API request after this long "
                        f"(default {DEFAULT_TIMEOUT:g})")
    parser.add_argument("--page-size", type=page_size, default=DEFAULT_PAGE_SIZE, metavar="N",
                        help=f"objects per list page (default {DEFAULT_PAGE_SIZE})")


def add_db_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", metavar="URL",
                        help="SQLAlchemy URL (default: GPUWHY_DATABASE_URL, else database_url "
                             "in the GPUWHY_CONFIG file, else a SQLite file in the user data "
                             "directory)")
