"""A plain (not editable) install carries every module, template, migration and the demo."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.paths import REPO

ROOT = REPO


def test_install_ships_code_templates_migrations_and_demo(tmp_path: Path) -> None:
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                    "--target", str(target), str(ROOT)],
                   check=True, capture_output=True, timeout=300, cwd=tmp_path)
    for package in ("bot", "triage", "scoring", "migrations"):
        shipped = {p.relative_to(ROOT).as_posix() for p in (ROOT / package).rglob("*.py")}
        installed = {p.relative_to(target).as_posix() for p in (target / package).rglob("*.py")}
        assert shipped <= installed, shipped - installed
    for name in (p.name for p in (ROOT / "templates").glob("*.j2")):
        assert (target / "templates" / name).is_file(), name
    assert (target / "migrations" / "alembic.ini").is_file()
    assert (target / "migrations" / "script.py.mako").is_file()
    for name in ("nodes.json", "pods.json", "events.json", "expected.json", "workloads.json"):
        assert (target / "examples" / "seven-states" / name).is_file(), name
