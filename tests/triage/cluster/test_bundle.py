"""`gpuwhy snapshot DIR`: a support bundle that triages exactly like the live cluster."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.cli.bundle import README
from bot.cli.main import main
from bot.clusters.sources import LiveSource, SnapshotSource
from tests.kubeapi import FakeKubeAPI, forbidden_status
from tests.paths import FIXTURES
from triage.refs import PodRef
from triage.snapshot import DUMP_FILES

SEVEN = FIXTURES / "scenarios" / "seven-states"
FINISHED_REMARK = re.compile(r" \([^()]* (is|are) finished and holds? nothing\)")
ALL_SCENARIOS = sorted(d for folder in ("scenarios", "scenarios-extra")
                       for d in (FIXTURES / folder).iterdir() if (d / "expected.json").exists())


@pytest.fixture
def api() -> Iterator[FakeKubeAPI]:
    with FakeKubeAPI(SEVEN) as server:
        yield server


@pytest.mark.parametrize("directory", ALL_SCENARIOS, ids=lambda d: f"{d.parent.name}/{d.name}")
def test_the_bundle_triages_like_the_live_cluster(directory: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    refs = json.loads((directory / "expected.json").read_text())
    with FakeKubeAPI(directory) as server:
        kubeconfig = str(server.kubeconfig(tmp_path / "kubeconfig"))
        assert main(["snapshot", str(tmp_path / "bundle"), "--kubeconfig", kubeconfig]) == 0
        live = LiveSource(kubeconfig=kubeconfig)
        live_verdicts = {ref: live.triage(PodRef(*ref.split("/"))).to_dict() for ref in refs}
    assert "gpuwhy snapshot: wrote" in capsys.readouterr().out
    bundle = SnapshotSource(tmp_path / "bundle")
    for ref, verdict in live_verdicts.items():
        answer = bundle.triage(PodRef(*ref.split("/"))).to_dict()
        # The one difference: finished pods events name are in the bundle (a live read lists
        # none), so an exhausted node's action may add which of them hold nothing.
        answer["action"] = FINISHED_REMARK.sub("", answer["action"])
        assert answer == verdict, ref
    if directory.parent.name == "scenarios":
        assert {ref: v["cause"] for ref, v in live_verdicts.items()} == {
            ref: answer["cause"] for ref, answer in refs.items()}


def finished_pods(directory: Path) -> set[str]:
    pods = json.loads((directory / "pods.json").read_text())["items"]
    return {f"{p['metadata']['namespace']}/{p['metadata']['name']}" for p in pods
            if p["status"].get("phase") in ("Succeeded", "Failed")}


def test_finished_pods_that_events_name_are_in_every_bundle(tmp_path: Path) -> None:
    """A live triage of a finished pod GETs it; a bundle of every namespace keeps the finished
    pods its events or workloads name, so the same question gets the same answer."""
    directory = FIXTURES / "scenarios-extra" / "funnel-edges"
    with FakeKubeAPI(directory) as server:
        kubeconfig = str(server.kubeconfig(tmp_path / "kubeconfig"))
        assert main(["snapshot", str(tmp_path / "all"), "--kubeconfig", kubeconfig]) == 0
        live = {name: LiveSource(kubeconfig=kubeconfig).triage(PodRef("lab", name)).to_dict()
                for name in ("finished-a", "failed-b")}
        finished_lists = [r.query.get("fieldSelector") for r in server.requests
                          if r.path == "/api/v1/pods"
                          and "status.phase=" in r.query.get("fieldSelector", "")]
    assert live["finished-a"]["cause"] == "scheduled"
    for name, verdict in live.items():
        assert SnapshotSource(tmp_path / "all").triage(PodRef("lab", name)).to_dict() == verdict
    assert finished_lists == ["status.phase=Succeeded", "status.phase=Failed"]


def test_finished_pods_nothing_names_stay_out_of_a_bundle(tmp_path: Path) -> None:
    pods = json.loads((SEVEN / "pods.json").read_text())["items"]
    assert {"team-b/done", "team-b/crashed"} <= finished_pods(SEVEN)  # no event is about them
    with FakeKubeAPI(SEVEN) as server:
        kubeconfig = str(server.kubeconfig(tmp_path / "kubeconfig"))
        assert main(["snapshot", str(tmp_path / "all"), "--kubeconfig", kubeconfig]) == 0
    bundled = json.loads((tmp_path / "all" / "pods.json").read_text())["items"]
    assert len(bundled) == len(pods) - 2
    assert SnapshotSource(tmp_path / "all").triage(PodRef("team-b", "done")).cause == \
        "pod-not-found"


@pytest.mark.parametrize("ref", ["research/full", "ml/finetune", "infer/vllm", "research/typo"])
def test_triage_of_the_bundle_prints_what_live_triage_prints(
        api: FakeKubeAPI, tmp_path: Path, capsys: pytest.CaptureFixture[str], ref: str) -> None:
    kubeconfig = str(api.kubeconfig(tmp_path / "kubeconfig"))
    assert main(["snapshot", str(tmp_path / "bundle"), "--kubeconfig", kubeconfig]) == 0
    capsys.readouterr()
    outputs = []
    for source in (["--kubeconfig", kubeconfig], ["--snapshot", str(tmp_path / "bundle")]):
        for output_format in ("json", "text"):
            assert main(["triage", ref, "--no-record", "--format", output_format, *source]) == 0
            outputs.append(capsys.readouterr().out)
    live_json, live_text, bundle_json, bundle_text = outputs
    assert bundle_json == live_json
    assert bundle_text == live_text
    assert json.loads(live_json)["ref"] == ref


def test_a_namespace_bundle_keeps_its_finished_pods(api: FakeKubeAPI, tmp_path: Path) -> None:
    kubeconfig = str(api.kubeconfig(tmp_path / "kubeconfig"))
    assert main(["snapshot", str(tmp_path / "b"), "-n", "team-b", "--kubeconfig", kubeconfig]) == 0
    # no queues.json: the cluster does not serve kueue.x-k8s.io
    assert sorted(p.name for p in (tmp_path / "b").iterdir()) == sorted(
        [*(set(DUMP_FILES) - {"queues.json"}), README])
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


LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def _with_secrets(item: dict[str, Any], template: bool) -> dict[str, Any]:
    """The object as `kubectl apply` leaves it: env values inline, and its whole manifest
    (the same values again) in the last-applied annotation."""
    spec = item["spec"]["template"]["spec"] if template else item["spec"]
    spec["containers"][0]["env"] = [
        {"name": "DB_PASSWORD", "value": "hunter2-db"},
        {"name": "API_TOKEN", "valueFrom": {"secretKeyRef": {"name": "api", "key": "token"}}},
    ]
    item["metadata"].setdefault("annotations", {})[LAST_APPLIED] = json.dumps(
        {"spec": {"env": [{"name": "DB_PASSWORD", "value": "hunter2-db"}]}})
    return item


def test_a_bundle_carries_no_env_value_and_is_private(api: FakeKubeAPI, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    pod = _with_secrets(api.get_object("Pod", "ml", "train-a"), template=False)
    api.apply(pod)
    api.apply(_with_secrets(api.get_object("Job", "ml", "finetune"), template=True))
    kubeconfig = str(api.kubeconfig(tmp_path / "kubeconfig"))
    assert main(["snapshot", str(tmp_path / "bundle"), "--kubeconfig", kubeconfig]) == 0
    assert "env values and config annotations redacted, readable by you only" in \
        capsys.readouterr().out
    bundle = tmp_path / "bundle"
    for path in bundle.iterdir():
        assert "hunter2-db" not in path.read_text(), path.name
        assert path.stat().st_mode & 0o777 == 0o600, path.name
    assert bundle.stat().st_mode & 0o777 == 0o700
    [written] = [p for p in json.loads((bundle / "pods.json").read_text())["items"]
                 if p["metadata"]["name"] == "train-a"]
    assert written["spec"]["containers"][0]["env"] == [
        {"name": "DB_PASSWORD", "value": "(redacted by gpuwhy snapshot)"},
        {"name": "API_TOKEN", "valueFrom": {"secretKeyRef": {"name": "api", "key": "token"}}},
    ]
    assert written["metadata"]["annotations"][LAST_APPLIED] == "(redacted by gpuwhy snapshot)"
    [job] = [w for w in json.loads((bundle / "workloads.json").read_text())["items"]
             if w["kind"] == "Job"]
    assert job["spec"]["template"]["spec"]["containers"][0]["env"][0]["value"] == \
        "(redacted by gpuwhy snapshot)"
    readme = (bundle / README).read_text()
    assert "env values" in readme and LAST_APPLIED in readme and "0600" in readme
    # Redaction costs no answer.
    assert SnapshotSource(bundle).triage(PodRef("ml", "finetune")).cause == "quota-exceeded"


def test_an_existing_bundle_directory_is_made_private(api: FakeKubeAPI, tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    bundle.mkdir(mode=0o755)
    (bundle / "pods.json").write_text("{}")
    (bundle / "pods.json").chmod(0o644)
    assert main(["snapshot", str(bundle), "--kubeconfig",
                 str(api.kubeconfig(tmp_path / "kubeconfig"))]) == 0
    assert bundle.stat().st_mode & 0o777 == 0o700
    assert (bundle / "pods.json").stat().st_mode & 0o777 == 0o600


KUEUE = FIXTURES / "scenarios" / "kueue-basics"


def test_a_bundle_of_a_kueue_cluster_has_queues_json(tmp_path: Path) -> None:
    with FakeKubeAPI(KUEUE) as server:
        kubeconfig = str(server.kubeconfig(tmp_path / "kubeconfig"))
        assert main(["snapshot", str(tmp_path / "b"), "--kubeconfig", kubeconfig]) == 0
        paths = {r.path for r in server.requests}
    written = json.loads((tmp_path / "b" / "queues.json").read_text())["items"]
    recorded = json.loads((KUEUE / "queues.json").read_text())["items"]
    assert {(o["kind"], o["metadata"]["name"]) for o in written} == {
        (o["kind"], o["metadata"]["name"]) for o in recorded}
    assert "/apis/kueue.x-k8s.io/v1beta2/clusterqueues" in paths  # the preferred version
    for ref in json.loads((KUEUE / "expected.json").read_text()):
        namespace, name = ref.split("/")
        expected = json.loads((KUEUE / "expected.json").read_text())[ref]["cause"]
        assert SnapshotSource(tmp_path / "b").triage(PodRef(namespace, name)).cause == expected
