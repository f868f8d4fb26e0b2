"""The house's floors: scoring/ is the bottom one and reaches up into nothing."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


@pytest.mark.parametrize("path", sorted((REPO / "scoring").rglob("*.py")),
                         ids=lambda path: str(path.relative_to(REPO)))
def test_scoring_imports_nothing_from_the_floors_above(path: Path) -> None:
    above = sorted(module for module in imported_modules(path)
                   if module.split(".")[0] in {"triage", "bot"})
    assert above == []


def test_the_check_sees_an_upward_import(tmp_path: Path) -> None:
    module = tmp_path / "probe.py"
    module.write_text("from triage.snapshot import Snapshot\nimport bot.store\n")
    assert imported_modules(module) == {"triage.snapshot", "bot.store"}
