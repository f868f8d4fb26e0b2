"""The `gpuwhy` command. Each command group registers itself from its own module, imported
only when that command runs (see bot.cli.commands)."""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence

from bot.cli.commands import COMMANDS
from bot.cli.options import OneLineParser


def installed_version() -> str:
    from importlib import metadata

    try:
        return metadata.version("gpuwhy")
    except metadata.PackageNotFoundError:  # run from a source tree without installing
        return "(not installed)"


class _Version(argparse.Action):
    """--version, looked up only when asked (reading the installed metadata costs start-up)."""

    def __init__(self, option_strings: list[str], dest: str, help: str | None = None) -> None:
        super().__init__(option_strings, dest, nargs=0, help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: object, option_string: str | None = None) -> None:
        print(f"gpuwhy {installed_version()}")  # on stdout, as argparse's own version action
        parser.exit()


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser, with the command named in ``argv`` registered by its own module; the other
    commands only listed (their modules are not imported)."""
    parser = OneLineParser(
        prog="gpuwhy", description="Why won't my GPU pod run? One cause word, one next action."
    )
    parser.add_argument("--version", action=_Version, help="show the version and exit")
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help="log NodeUnfitPod / NodeFitPod lines (-vv: per device)")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                       parser_class=OneLineParser)
    words = list(sys.argv[1:] if argv is None else argv)
    named = next((w for w in words if not w.startswith("-")), None)
    wanted = COMMANDS[named].module if named in COMMANDS else None
    for name, command in COMMANDS.items():
        if command.module == wanted:
            importlib.import_module(command.module).register(subparsers)
            wanted = None  # registered all of that module's commands
        elif named not in COMMANDS or COMMANDS[named].module != command.module:
            subparsers.add_parser(name, help=command.help)
    return parser


def main(argv: Sequence[str] | None = None, *, as_program: bool = False) -> int:
    """Run one command; its exit code. ``as_program``: this is the process's only job (see
    bot.cli.program: a command holding a snapshot ends the process once its output is out)."""
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    args.as_program = as_program
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


def run() -> int:
    """The `gpuwhy` program (its console script and ``python -m bot.cli``)."""
    return main(as_program=True)


if __name__ == "__main__":
    sys.exit(run())
