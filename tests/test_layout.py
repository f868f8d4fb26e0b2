"""The house's floors: scoring/ is the bottom one and reaches up into nothing."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.paths import REPO


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


def where_things_are() -> dict[str, list[str]]:
    """The README's "Where things are" table: each cause word with the check modules named."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Where things are", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, list[str]] = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].startswith("`"):
            modules = [word.strip("`;,") for word in cells[1].split()
                       if word.strip("`;,").endswith(".py")]
            for word in cells[0].split(","):
                rows[word.strip().strip("`")] = modules
    return rows


def test_the_readme_says_where_each_cause_word_is_checked() -> None:
    from triage.classify.pipeline import CHECKS

    rows = where_things_are()
    checks_dir = REPO / "triage" / "classify" / "checks"
    for cause, checks in CHECKS.items():
        named = rows.get(cause.value)
        assert named, f"{cause.value} has no row in the README's Where things are"
        defined_in = {Path(getattr(check, part).__code__.co_filename).name
                      for check in checks for part in ("check", "drop", "explain")
                      if callable(getattr(check, part, None))}
        assert defined_in <= set(named), (cause.value, defined_in - set(named))
        assert all((checks_dir / module).is_file() for module in named), named
