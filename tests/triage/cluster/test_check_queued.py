"""`gpuwhy check -f job.yaml` for a Job with a kueue.x-k8s.io/queue-name label: would Kueue
admit it now, in which flavor, and would the flavor's nodes take it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.cli.main import main
from tests.kubeapi import FakeKubeAPI
from tests.paths import FIXTURES

KUEUE = FIXTURES / "scenarios" / "kueue-basics"


def job(queue: str, gpus: int, parallelism: int = 1) -> str:
    return f"""\
apiVersion: batch/v1
kind: Job
metadata:
  name: probe
  namespace: team-a
  labels: {{kueue.x-k8s.io/queue-name: "{queue}"}}
spec:
  parallelism: {parallelism}
  suspend: true
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: trainer:1
        resources:
          limits: {{nvidia.com/gpu: {gpus}}}
"""


@pytest.fixture
def api() -> Iterator[FakeKubeAPI]:
    with FakeKubeAPI(KUEUE) as server:
        yield server


def check(api: FakeKubeAPI, tmp_path: Path, manifest: str,
          capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    path = tmp_path / "job.yaml"
    path.write_text(manifest)
    code = main(["check", "-f", str(path), "--kubeconfig",
                 str(api.kubeconfig(tmp_path / "kubeconfig", namespace="team-a"))])
    return code, capsys.readouterr().out


def test_a_full_queue_would_queue_it(api: FakeKubeAPI, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    code, out = check(api, tmp_path, job("team-a-lq", 2), capsys)
    assert code == 1
    assert ("⏸ would be queued in LocalQueue team-a/team-a-lq: flavor a100 has 0 of 8 "
            "nvidia.com/gpu free; it needs 2.") in out


def test_too_large_for_the_queue_would_wait_forever(api: FakeKubeAPI, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    code, out = check(api, tmp_path, job("team-a-lq", 8, parallelism=2), capsys)
    assert code == 1
    assert "needs 16 nvidia.com/gpu, more than ClusterQueue team-a-cq can ever give" in out


def test_a_missing_local_queue_names_the_existing_ones(api: FakeKubeAPI, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    code, out = check(api, tmp_path, job("team-a-queue", 1), capsys)
    assert code == 1 and "the namespace has LocalQueue team-a-lq" in out


def test_room_in_the_queue_would_admit_it_and_check_the_flavors_nodes(
        api: FakeKubeAPI, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cluster_queue = api.get_object("ClusterQueue", "", "team-a-cq")
    cluster_queue["status"]["flavorsReservation"][0]["resources"][2]["total"] = "4"
    api.apply(cluster_queue)
    code, out = check(api, tmp_path, job("team-a-lq", 4), capsys)
    assert ("would be admitted (flavor a100): ClusterQueue team-a-cq, flavor a100: 4 of 8 "
            "nvidia.com/gpu free, it needs 4.") in out
    # Kueue would set pool=a100: the a100 nodes decide (a100-node-2 has 4 free)
    assert code == 0 and "✅ would schedule — 5 nodes: 3 not fit (3 selector-mismatch)" in out, out
    dry_run = api.dry_runs[-1]
    assert "nodeSelector" not in dry_run["spec"]  # the manifest's pod as written
