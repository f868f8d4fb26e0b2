"""Numeric options are checked at the command line: one line and exit 2, never a traceback;
a refused connection is one line too, without the HTTP library's retry warnings."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bot.cli.main import main
from tests.kubeapi import FakeKubeAPI
from tests.paths import REPO


@pytest.mark.parametrize(("argv", "message"), [
    (["triage", "research/full", "--request-timeout", "-5"],
     "gpuwhy triage: argument --request-timeout: '-5' must be a number of seconds above 0 and "
     "at most 3600 (see gpuwhy triage --help)"),
    (["triage", "research/full", "--request-timeout", "nan"],
     "gpuwhy triage: argument --request-timeout: 'nan' must be a number of seconds above 0 and "
     "at most 3600 (see gpuwhy triage --help)"),
    (["snapshot", "out", "--request-timeout", "inf"],
     "gpuwhy snapshot: argument --request-timeout: 'inf' must be a number of seconds above 0 "
     "and at most 3600 (see gpuwhy snapshot --help)"),
    (["check", "-f", "x.yaml", "--request-timeout", "0"],
     "gpuwhy check: argument --request-timeout: '0' must be a number of seconds above 0 and "
     "at most 3600 (see gpuwhy check --help)"),
    (["triage", "research/full", "--request-timeout", "soon"],
     "gpuwhy triage: argument --request-timeout: 'soon' is not a number "
     "(see gpuwhy triage --help)"),
    (["snapshot", "out", "--page-size", "0"],
     "gpuwhy snapshot: argument --page-size: '0' must be from 1 to 100000 "
     "(see gpuwhy snapshot --help)"),
    (["serve", "--page-size", "1e3"],
     "gpuwhy serve: argument --page-size: '1e3' is not a number (see gpuwhy serve --help)"),
    (["serve", "--port", "65536"],
     "gpuwhy serve: argument --port: '65536' must be a port from 0 to 65535 (0 picks a free "
     "one) (see gpuwhy serve --help)"),
    (["serve", "--port", "-1"],
     "gpuwhy serve: argument --port: '-1' must be a port from 0 to 65535 (0 picks a free one) "
     "(see gpuwhy serve --help)"),
    (["triage"], "gpuwhy triage: the following arguments are required: NS/NAME "
     "(see gpuwhy triage --help)"),
])
def test_a_bad_number_is_one_line(argv: list[str], message: str,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 2
    assert capsys.readouterr().err == message + "\n"


def test_a_refused_connection_is_one_line_without_retry_warnings(tmp_path: Path) -> None:
    with FakeKubeAPI() as gone:
        kubeconfig = gone.kubeconfig(tmp_path / "kubeconfig")
    done = subprocess.run(
        [sys.executable, "-m", "bot.cli", "triage", "research/full", "--no-record",
         "--kubeconfig", str(kubeconfig)], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 3
    assert done.stderr.splitlines() == [
        f"gpuwhy: Cannot reach the Kubernetes API server at {gone.url}: connection refused."]
