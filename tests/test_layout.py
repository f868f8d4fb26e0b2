"""The house's floors: scoring/ is the bottom one and reaches up into nothing."""

from __future__ import annotations

import ast
import re
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


# -- the raw objects are read where the rows are built --------------------------------------

# What reads a Kubernetes object's JSON shape, or hands one on: its sections, the node table
# row's raw Node, the dict type, the Snapshot and the modules of raw helpers, and a check
# going past its Subject's rows to the raw pod, spec, workload or Snapshot.
RAW_SHAPES = {
    "section": re.compile(r'\.get\("(?:spec|metadata|status)"|\["(?:spec|metadata|status)"\]'),
    ".raw": re.compile(r"\.raw\b"),
    "K8sObject": re.compile(r"\bK8sObject\b"),
    "raw import": re.compile(r"^from (?:triage\.(?:snapshot|cache|pods)|scoring\.objects) import",
                             re.M),
    "subject's raw": re.compile(r"\bsubject\.(?:snapshot|pod|spec|workload)\b"),
}
# Where those are allowed, by file, each with why. The row builders read raw by their job;
# the rest is what is left to move onto rows (the list only shrinks).
RAW_ALLOWED: dict[str, dict[str, str]] = {
    # -- the builders: the rows and the facts they are made of
    "scoring/nodetable.py": dict.fromkeys(("section", ".raw", "K8sObject", "raw import"),
                                          "builds the node table's rows from the Nodes"),
    "scoring/nodes.py": dict.fromkeys(("section", "K8sObject", "raw import"),
                                      "the node facts nodetable.py parses"),
    "scoring/objects.py": dict.fromkeys(("K8sObject",), "the raw object helpers"),
    "triage/classify/subject.py": {
        "raw import": "the Subject carries the Snapshot its rows and indexes are read from"},
    "triage/classify/capacity.py": {"raw import": "the Snapshot's DRA inventory and read time"},
    # -- the resolving of a ref: it takes the Snapshot and builds the Subject's rows of the
    # raw pod or workload (the pod's spec and claims are read in triage/rows/claims.py; the
    # would-be pod is written in triage/rows/would_be.py)
    "triage/classify/resolve.py": dict.fromkeys(
        ("K8sObject", "raw import"),
        "resolves a ref to the Snapshot's raw pod or workload, of which it builds rows"),
    "triage/classify/where.py": {"raw import": "puts the would-be pod into a Snapshot of its own"},
}
# DRA's and Kueue's modules (scoring/dra/, checks/dra*.py, checks/queue*.py) have layout
# tests of their own: tests/scoring/test_dra_rows_layout.py, tests/triage/test_queue_rows_layout.py
RAW_OWNED_ELSEWHERE = ("scoring/dra/", "triage/classify/checks/dra",
                       "triage/classify/checks/queue")


def _funnel_modules() -> list[Path]:
    return sorted(path for folder in ("scoring", "triage/classify")
                  for path in (REPO / folder).rglob("*.py")
                  if not str(path.relative_to(REPO)).startswith(RAW_OWNED_ELSEWHERE))


def raw_reads(text: str) -> set[str]:
    return {what for what, pattern in RAW_SHAPES.items() if pattern.search(text)}


@pytest.mark.parametrize("path", _funnel_modules(), ids=lambda path: str(path.relative_to(REPO)))
def test_checks_and_scoring_read_rows_not_raw_objects(path: Path) -> None:
    relative = str(path.relative_to(REPO))
    found = raw_reads(path.read_text(encoding="utf-8"))
    allowed = RAW_ALLOWED.get(relative, {})
    assert found <= set(allowed), (
        f"{relative} reads raw objects ({', '.join(sorted(found - set(allowed)))}): read the "
        "rows (scoring/rows, scoring/nodetable, triage/rows/), or make a row grow")
    # an entry no longer needed goes: the list only shrinks
    assert set(allowed) <= found, f"{relative}: allowed but gone: {set(allowed) - found}"


@pytest.mark.parametrize(("text", "what"), [
    ('spec = pod.get("spec") or {}', "section"), ('name = node["metadata"]["name"]', "section"),
    ("labels(node.raw)", ".raw"), ("def f(pod: K8sObject) -> None:", "K8sObject"),
    ("from triage.snapshot import Snapshot", "raw import"),
    ("from scoring.objects import is_terminated", "raw import"),
    ("subject.spec.get('x')", "subject's raw"),
])
def test_the_raw_read_check_sees_each_shape(text: str, what: str) -> None:
    assert raw_reads(text) == {what}


def test_the_raw_read_check_passes_rows() -> None:
    assert raw_reads("held = subject.rows.holders_on(node.name, resource)\n"
                     "from scoring.rows import PodRow\nrow.raw_count\n") == set()
