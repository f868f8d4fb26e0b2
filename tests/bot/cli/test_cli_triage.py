"""`gpuwhy triage` and `gpuwhy demo` as a person runs them: exit codes, one-line errors."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from bot.cli.main import main
from tests.conftest import SCENARIOS
from tests.paths import FIXTURES, REPO

SEVEN = str(SCENARIOS / "seven-states")


def test_text_answer(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["triage", "research/full", "--snapshot", SEVEN]) == 0
    out = capsys.readouterr().out
    assert out.startswith("⏳ exhausted — research/full\nNext: gpu-a10-full has 2/2")
    assert "Nodes: 6 nodes: 6 not fit (5 selector-mismatch, 1 exhausted), 0 fit" in out


def test_json_is_exactly_the_verdict(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["triage", "ml", "finetune", "--snapshot", SEVEN, "--format", "json"]) == 0
    verdict = json.loads(capsys.readouterr().out)
    assert verdict["cause"] == "quota-exceeded" and verdict["kind"] == "Job"
    assert {"ref", "cause", "action", "evidence", "nodes", "node_summary",
            "scheduler_message", "resource", "request"} <= set(verdict)


@pytest.mark.parametrize(("argv", "code", "says"), [
    (["triage", "nonamespace", "--snapshot", SEVEN], 2, "usage: gpuwhy triage"),
    (["triage", "Bad/Name", "--snapshot", SEVEN], 2, "not a valid namespace"),
    (["triage", "research/full", "extra", "--snapshot", SEVEN], 2,
     "gpuwhy: usage: gpuwhy triage NAMESPACE/POD  (also: NAMESPACE POD, -n NAMESPACE POD, "
     "pod/POD -n NAMESPACE)"),
    (["triage", "research/full\nml/x", "--snapshot", SEVEN], 2, "usage: gpuwhy triage"),
    (["triage", "a/b", "--snapshot", "/nonexistent/dir"], 3, "not a directory"),
])
def test_bad_input_is_one_line(capsys: pytest.CaptureFixture[str], argv: list[str], code: int,
                               says: str) -> None:
    assert main(argv) == code
    err = capsys.readouterr().err
    assert says in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_unreadable_snapshot_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "pods.json").write_text("{truncated")
    assert main(["triage", "a/b", "--snapshot", str(tmp_path)]) == 3
    assert "pods.json: not valid JSON" in capsys.readouterr().err


def test_an_unparsable_node_quantity_is_answered(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    # a dump edited by hand: gpu-a100-1's pod count no longer parses
    dump = tmp_path / "dump"
    shutil.copytree(FIXTURES / "scenarios-extra" / "scheduling-gates", dump)
    nodes = json.loads((dump / "nodes.json").read_text())
    [node] = [n for n in nodes["items"] if n["metadata"]["name"] == "gpu-a100-1"]
    node["status"]["allocatable"]["pods"] = "lots"
    (dump / "nodes.json").write_text(json.dumps(nodes))
    assert main(["triage", "lab/gate-one", "--snapshot", str(dump), "--no-record"]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    assert captured.out.startswith(
        "🧷 other-constraint — lab/gate-one\nNext: GPU-wise a node fits, but gpu-a100-1: "
        "status.allocatable.pods 'lots' could not be read. Fix status.allocatable.pods on "
        "gpu-a100-1: it is not a quantity, so gpuwhy cannot tell whether a pod slot is left.\n")


def test_verbose_logs_node_lines(capsys: pytest.CaptureFixture[str],
                                 caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("DEBUG")
    assert main(["-vv", "triage", "hami/needs-40g", "--snapshot",
                 str(SCENARIOS / "hami-sharing")]) == 0
    messages = [r.getMessage() for r in caplog.records]
    assert ('NodeUnfitPod pod="hami/needs-40g" node="hami-t4-1" '
            'reason="2/2 CardInsufficientMemory"') in messages
    assert any(m.startswith("CardNotHealth pod=\"hami/needs-40g\" node=\"hami-a100-1\"")
               for m in messages)


def _demo(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`gpuwhy demo` with a default store (GPUWHY_DATABASE_URL) that already has answers."""
    default = tmp_path / "default.db"
    assert main(["triage", "research/big", "--snapshot", SEVEN,
                 "--db", f"sqlite:///{default}"]) == 0
    env = {**os.environ, "GPUWHY_DATABASE_URL": f"sqlite:///{default}",
           "TMPDIR": str(tmp_path)}
    result = subprocess.run([sys.executable, "-m", "bot.cli", "demo", *args],
                            capture_output=True, text=True, env=env, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    with sqlite3.connect(default) as connection:
        assert connection.execute("SELECT count(*) FROM incidents").fetchone() == (1,)
    return result


def _causes(path: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(path) as connection:
        return connection.execute("SELECT cause, source FROM incidents").fetchall()


def test_demo_records_into_its_own_store(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    result = _demo(tmp_path)
    for line in ("🔒 quota-exceeded — ml/finetune (Job)", "⛔ too-large — research/big",
                 "🔍 pod-not-found — research/typo", "✅ scheduled — research/ok"):
        assert line in result.stdout
    # Only the demo's own answers, whatever the default store holds.
    assert "gpuwhy digest 20" in result.stdout and "11 answers" in result.stdout
    [demo_db] = tmp_path.glob("gpuwhy-demo-*/demo.db")
    assert f"Recorded 11 answers in a new demo store, sqlite:///{demo_db};" in result.stdout
    rows = _causes(demo_db)
    assert len(rows) == 11 and ("too-large", "cli") in rows


def test_demo_records_where_db_says(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    chosen = tmp_path / "chosen.db"
    result = _demo(tmp_path, "--db", f"sqlite:///{chosen}")
    assert f"Recorded 11 answers in sqlite:///{chosen};" in result.stdout
    assert len(_causes(chosen)) == 11
    assert list(tmp_path.glob("gpuwhy-demo-*")) == []


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert capsys.readouterr().out == f"gpuwhy {project['project']['version']}\n"


def test_triage_is_recorded_unless_told_not_to(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    db = f"sqlite:///{tmp_path / 'cli.db'}"
    assert main(["triage", "research/big", "--snapshot", SEVEN, "--db", db]) == 0
    assert main(["triage", "research/ok", "--snapshot", SEVEN, "--db", db, "--no-record"]) == 0
    with sqlite3.connect(tmp_path / "cli.db") as connection:
        query = "SELECT namespace, name, cause, asked_by FROM incidents"
        rows = connection.execute(query).fetchall()
    assert rows == [("research", "big", "too-large", "cli")]


def test_store_failure_never_costs_the_answer(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("")
    db = f"sqlite:///{blocked / 'x.db'}"  # a file where the directory should be
    assert main(["triage", "research/big", "--snapshot", SEVEN, "--db", db]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("⛔ too-large — research/big")
    assert "not recorded" in captured.err and "Traceback" not in captured.err


def test_configured_gpu_resources_are_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "gpuwhy.yaml"
    config.write_text("triage:\n  gpu_resources: [example.com/accel]\n")
    monkeypatch.setenv("GPUWHY_CONFIG", str(config))
    # research/ok asks nvidia.com/gpu, which this configuration does not count as a GPU
    assert main(["triage", "research/ok", "--snapshot", SEVEN, "--no-record"]) == 0
    assert capsys.readouterr().out.startswith("❔ no-gpu-request — research/ok")


def test_configured_gpu_drivers_are_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    dra = str(Path(SEVEN).parent / "dra-basics")
    assert main(["triage", "vision/pinned-a", "--snapshot", dra, "--no-record"]) == 0
    assert capsys.readouterr().out.startswith("⏳ exhausted — vision/pinned-a")
    config = tmp_path / "gpuwhy.yaml"
    config.write_text("triage:\n  gpu_drivers: [gpu.amd.com]\n")
    monkeypatch.setenv("GPUWHY_CONFIG", str(config))
    # its DeviceClass selects gpu.nvidia.com devices, not a GPU driver in this configuration
    assert main(["triage", "vision/pinned-a", "--snapshot", dra, "--no-record"]) == 0
    assert capsys.readouterr().out.startswith("❔ no-gpu-request — vision/pinned-a")


def test_bad_config_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "gpuwhy.yaml"
    config.write_text("triage:\n  node_policy: fastest\n")
    monkeypatch.setenv("GPUWHY_CONFIG", str(config))
    assert main(["triage", "research/ok", "--snapshot", SEVEN]) == 2
    err = capsys.readouterr().err
    assert "triage.node_policy = 'fastest': must be one of binpack or spread" in err
