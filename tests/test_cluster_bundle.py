"""`gpuwhy snapshot DIR`: a support bundle that triages exactly like the live cluster."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.cli import main
from bot.sources import LiveSource, SnapshotSource
from tests.kubeapi import FakeKubeAPI, forbidden_status
from triage.refs import PodRef
from triage.snapshot import DUMP_FILES

SCENARIOS = Path(__file__).parent / "fixtures" / "scenarios"
SEVEN = SCENARIOS / "seven-states"


@pytest.fixture
def api() -> Iterator[FakeKubeAPI]:
    with FakeKubeAPI(SEVEN) as server:
        yield server


@pytest.mark.parametrize("scenario", sorted(p.name for p in SCENARIOS.iterdir() if p.is_dir()))
def test_the_bundle_triages_like_the_live_cluster(scenario: str, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    refs = json.loads((SCENARIOS / scenario / "expected.json").read_text())
    with FakeKubeAPI(SCENARIOS / scenario) as server:
        kubeconfig = str(server.kubeconfig(tmp_path / "kubeconfig"))
        assert main(["snapshot", str(tmp_path / "bundle"), "--kubeconfig", kubeconfig]) == 0
        live = LiveSource(kubeconfig=kubeconfig)
        live_verdicts = {ref: live.triage(PodRef(*ref.split("/"))).to_dict() for ref in refs}
    assert "gpuwhy snapshot: wrote" in capsys.readouterr().out
    bundle = SnapshotSource(tmp_path / "bundle")
    for ref, verdict in live_verdicts.items():
        assert bundle.triage(PodRef(*ref.split("/"))).to_dict() == verdict, ref
        assert verdict["cause"] == refs[ref]["cause"]


def test_a_namespace_bundle_keeps_its_finished_pods(api: FakeKubeAPI, tmp_path: Path) -> None:
    kubeconfig = str(api.kubeconfig(tmp_path / "kubeconfig"))
    assert main(["snapshot", str(tmp_path / "b"), "-n", "team-b", "--kubeconfig", kubeconfig]) == 0
    assert sorted(p.name for p in (tmp_path / "b").iterdir()) == sorted(DUMP_FILES)
    pods = json.loads((tmp_path / "b" / "pods.json").read_text())["items"]
    names = {(p["metadata"]["namespace"], p["metadata"]["name"], p["status"]["phase"])
             for p in pods}
    assert ("team-b", "done", "Succeeded") in names
    assert ("team-b", "crashed", "Failed") in names
    assert ("ml", "train-a", "Running") in names
    events = json.loads((tmp_path / "b" / "events.json").read_text())["items"]
    assert {e["metadata"]["namespace"] for e in events} == {"team-b"}
    assert {p["kind"] for p in pods} == {"Pod"}


def test_a_bundle_over_a_file_is_refused(api: FakeKubeAPI, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "taken").write_text("x")
    assert main(["snapshot", str(tmp_path / "taken"), "--kubeconfig",
                 str(api.kubeconfig(tmp_path / "kubeconfig"))]) == 2
    assert capsys.readouterr().err == f"gpuwhy: {tmp_path}/taken exists and is not a directory\n"


def test_a_cluster_error_is_one_line_and_writes_nothing(api: FakeKubeAPI, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    api.inject("status", "/events$", status=forbidden_status("list", "events"))
    assert main(["snapshot", str(tmp_path / "b"), "--kubeconfig",
                 str(api.kubeconfig(tmp_path / "kubeconfig"))]) == 3
    assert capsys.readouterr().err == (
        'gpuwhy: Forbidden: User "system:serviceaccount:gpuwhy:gpuwhy" cannot list events at the '
        'cluster scope (RBAC needs verb "list" on resource "events").\n')
    assert not (tmp_path / "b").exists()
