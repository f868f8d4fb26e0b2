"""A command imports only what it uses: `gpuwhy --help` loads no command module, `gpuwhy triage
--snapshot` no store, kubernetes client or Slack."""

from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from bot.cli import build_parser
from bot.commands import COMMANDS

HEAVY = ("sqlalchemy", "alembic", "kubernetes", "slack_sdk", "slack_bolt")
PROBE = """
import json, sys
from bot.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in {heavy!r}
                        or m.startswith("bot.cli_"))))
"""


def loaded_by(*argv: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", PROBE.format(heavy=set(HEAVY)), *argv],
                          capture_output=True, text=True, check=True,
                          cwd=Path(__file__).parents[1])
    loaded: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    return loaded


def test_every_registered_command_is_listed_with_its_module() -> None:
    for module in sorted({command.module for command in COMMANDS.values()}):
        subparsers = argparse.ArgumentParser().add_subparsers()
        importlib.import_module(module).register(subparsers)
        registered = set(subparsers.choices)
        assert registered == {n for n, c in COMMANDS.items() if c.module == module}, module


def test_help_imports_no_command_module() -> None:
    assert loaded_by("--help") == ["bot.cli_options"]  # the shared, light option types


def test_triage_of_a_dump_loads_no_store_client_or_slack(tmp_path: Path) -> None:
    loaded = loaded_by("triage", "ns/pod", "--snapshot", str(tmp_path), "--no-record")
    assert loaded == ["bot.cli_options", "bot.cli_triage"]


@pytest.mark.parametrize("name", list(COMMANDS))
def test_each_command_parses_with_its_own_module(name: str) -> None:
    parser = build_parser([name, "--help"])
    with pytest.raises(SystemExit) as exit_code:
        parser.parse_args([name, "--help"])
    assert exit_code.value.code == 0
