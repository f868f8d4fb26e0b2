"""The `gpuwhy` command. Each command group registers itself from its own module."""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence
from importlib import metadata

from bot.cli_options import OneLineParser

# Modules with a ``register(subparsers)`` function; each sets ``func(args) -> int``.
COMMAND_MODULES = (
    "bot.cli_triage",
    "bot.cli_store",
    "bot.cli_serve",
    "bot.cli_cluster",
    "bot.doctor",
)


def installed_version() -> str:
    try:
        return metadata.version("gpuwhy")
    except metadata.PackageNotFoundError:  # run from a source tree without installing
        return "(not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="gpuwhy", description="Why won't my GPU pod run? One cause word, one next action."
    )
    parser.add_argument("--version", action="version", version=f"gpuwhy {installed_version()}")
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help="log NodeUnfitPod / NodeFitPod lines (-vv: per device)")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                       parser_class=OneLineParser)
    for module_name in COMMAND_MODULES:
        importlib.import_module(module_name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    level = {0: logging.WARNING, 1: logging.INFO}.get(args.verbose, logging.DEBUG)
    logging.basicConfig(level=level, format="%(levelname)s %(name)s %(message)s", stream=sys.stderr)
    if args.verbose < 2:
        # urllib3 warns of each retry of a refused or reset connection; the failure, if it
        # stays, is gpuwhy's own one line. -vv shows the retries.
        logging.getLogger("urllib3.connectionpool").setLevel(logging.ERROR)
    try:
        code: int = args.func(args)
    except KeyboardInterrupt:
        print("gpuwhy: interrupted", file=sys.stderr)
        return 130
    return code


if __name__ == "__main__":
    sys.exit(main())
