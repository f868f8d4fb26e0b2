"""`gpuwhy` as the program ends as soon as the answer is out, without freeing its snapshot object
by object, and loses nothing on the way: all output through a pipe, the exit code, the stored
incident, the atexit handlers. Called from Python, main() returns as usual."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from bench.generate import generate, pending_refs
from bot.cli.main import main
from tests.conftest import SCENARIOS
from tests.paths import REPO

# gpuwhy's console script, with an atexit handler of its own and os._exit saying when it ends
# the process (the interpreter's teardown is skipped then).
PROGRAM = """
import atexit, os, sys
atexit.register(lambda: print("atexit ran", file=sys.stderr))
end_now = os._exit
def _exit(code):
    os.write(2, b"ended at once\\n")
    end_now(code)
os._exit = _exit
from bot.cli.main import {entry}
sys.exit({entry}({args}))
"""


def gpuwhy(*argv: str, entry: str = "run") -> subprocess.CompletedProcess[str]:
    args = "" if entry == "run" else repr(list(argv))
    return subprocess.run([sys.executable, "-c", PROGRAM.format(entry=entry, args=args), *argv],
                          capture_output=True, text=True, cwd=REPO, timeout=120, check=False)


@pytest.fixture(scope="module")
def dump(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cluster whose answer is far longer than a pipe's buffer."""
    directory = tmp_path_factory.mktemp("dump")
    generate(directory, nodes=150, pods=600, seed=9)
    return directory


def test_the_answer_is_whole_through_a_pipe_and_the_incident_stored(
        dump: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ref = next(r for r in pending_refs() if "any-node" in r)
    store = tmp_path / "cli.db"
    done = gpuwhy("triage", ref, "--snapshot", str(dump), "--format", "json",
                  "--db", f"sqlite:///{store}")
    assert done.returncode == 0, done.stderr
    assert main(["triage", ref, "--snapshot", str(dump), "--format", "json", "--no-record"]) == 0
    expected = capsys.readouterr().out
    assert len(expected) > 1 << 16 and done.stdout == expected
    assert done.stderr.splitlines() == ["atexit ran", "ended at once"]
    assert not Path(f"{store}-wal").exists()  # the store was closed: its log folded back in
    connection = sqlite3.connect(store)
    try:
        rows = connection.execute("SELECT namespace || '/' || name, cause FROM incidents")
        assert rows.fetchall() == [(ref, json.loads(expected)["cause"])]
    finally:
        connection.close()


def test_called_from_python_the_process_exits_as_usual(dump: Path) -> None:
    ref = next(r for r in pending_refs() if "any-node" in r)
    done = gpuwhy("triage", ref, "--snapshot", str(dump), "--no-record", entry="main")
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == ["atexit ran"]


def test_under_a_profiler_the_program_exits_as_usual(tmp_path: Path) -> None:
    figures = tmp_path / "cli.prof"
    done = subprocess.run([sys.executable, "-m", "cProfile", "-o", str(figures), "-m", "bot.cli",
                           "triage", "research/full", "--snapshot",
                           str(SCENARIOS / "seven-states"), "--no-record"],
                          capture_output=True, text=True, cwd=REPO, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("⏳ exhausted — research/full")
    assert figures.stat().st_size > 0  # written after the program returned


@pytest.mark.parametrize(("argv", "code", "says"), [
    (["triage", "a/b", "--snapshot", "/nonexistent/dir"], 3, "not a directory"),
    (["triage", "nonamespace", "--snapshot", str(SCENARIOS / "seven-states")], 2, "usage:"),
    (["devices", "research/full", "--snapshot", str(SCENARIOS / "seven-states")], 0, ""),
])
def test_each_exit_code_is_kept(argv: list[str], code: int, says: str) -> None:
    done = gpuwhy(*argv)
    assert done.returncode == code and says in done.stderr and "Traceback" not in done.stderr
    assert "atexit ran" in done.stderr
