"""A command imports only what it uses: `gpuwhy --help` loads no command module, `gpuwhy triage
--snapshot` no store, kubernetes client or Slack, a live `gpuwhy triage` of a pending GPU pod no
store, Slack, CEL interpreter, fuzzy matching or metrics, and the default config no pydantic or
YAML."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bot.cli.commands import COMMANDS
from bot.cli.main import build_parser
from tests.conftest import SCENARIOS
from tests.kubeapi import FakeKubeAPI
from tests.paths import REPO

HEAVY = ("sqlalchemy", "alembic", "kubernetes", "slack_sdk", "slack_bolt")
# What a live answer without DRA or a typo does without (CEL: DRA selectors; rapidfuzz: "did
# you mean"; prometheus_client: the metrics, which a one-shot command has no /metrics for).
LIVE_UNUSED = ("sqlalchemy", "alembic", "slack_sdk", "slack_bolt", "celpy", "rapidfuzz",
               "prometheus_client")
# Each command's own module, and the option types they share.
COMMAND_MODULES = {command.module for command in COMMANDS.values()} | {"bot.cli.options"}
PROBE = """
import json, sys
from bot.cli.main import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in {heavy!r}
                        or m in {commands!r})))
"""


def loaded_by(*argv: str, heavy: tuple[str, ...] = HEAVY, probe: str = PROBE,
              env: dict[str, str] | None = None) -> list[str]:
    done = subprocess.run([sys.executable, "-c",
                           probe.format(heavy=set(heavy), commands=COMMAND_MODULES), *argv],
                          capture_output=True, text=True, check=True, cwd=REPO, env=env)
    loaded: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    return loaded


def test_every_registered_command_is_listed_with_its_module() -> None:
    for module in sorted({command.module for command in COMMANDS.values()}):
        subparsers = argparse.ArgumentParser().add_subparsers()
        importlib.import_module(module).register(subparsers)
        registered = set(subparsers.choices)
        assert registered == {n for n, c in COMMANDS.items() if c.module == module}, module


def test_help_imports_no_command_module() -> None:
    assert loaded_by("--help") == ["bot.cli.options"]  # the shared, light option types


def test_triage_of_a_dump_loads_no_store_client_or_slack(tmp_path: Path) -> None:
    loaded = loaded_by("triage", "ns/pod", "--snapshot", str(tmp_path), "--no-record")
    assert loaded == ["bot.cli.options", "bot.cli.triage"]


def test_live_triage_loads_no_store_slack_cel_or_fuzzy_matching(tmp_path: Path) -> None:
    with FakeKubeAPI(SCENARIOS / "seven-states") as api:
        kubeconfig = str(api.kubeconfig(tmp_path / "kubeconfig"))
        loaded = loaded_by("triage", "research/full", "--no-record", "--kubeconfig", kubeconfig,
                           heavy=LIVE_UNUSED)
        assert api.count() >= 3  # it did read the cluster
    assert loaded == ["bot.cli.options", "bot.cli.triage"]


CONFIG_PROBE = """
import json, os, sys
from bot.config import load_config
print(load_config().cluster)
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in {heavy!r})))
"""


def test_the_default_config_loads_no_pydantic_or_yaml() -> None:
    """Only a config file or variable to check loads them (pydantic, YAML, the value types)."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("GPUWHY_")}
    assert loaded_by(heavy=("pydantic", "yaml"), probe=CONFIG_PROBE, env=environ) == []


def test_a_config_variable_is_checked_with_pydantic() -> None:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("GPUWHY_")}
    loaded = loaded_by(heavy=("pydantic", "bot"), probe=CONFIG_PROBE,
                       env=environ | {"GPUWHY_CLUSTER": "prod"})
    assert {"pydantic", "bot.config.checks"} <= set(loaded)


@pytest.mark.parametrize("name", list(COMMANDS))
def test_each_command_parses_with_its_own_module(name: str) -> None:
    parser = build_parser([name, "--help"])
    with pytest.raises(SystemExit) as exit_code:
        parser.parse_args([name, "--help"])
    assert exit_code.value.code == 0
