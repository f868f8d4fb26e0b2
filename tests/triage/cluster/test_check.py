"""`gpuwhy check -f manifest.yaml`: server-side dry-run, then the funnel on the would-be pod."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.cli.main import main
from tests.kubeapi import FakeKubeAPI, status_body
from tests.paths import FIXTURES

SEVEN = FIXTURES / "scenarios" / "seven-states"

JOB = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: finetune
  namespace: ml
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: train
        image: trainer:1
        resources:
          limits:
            nvidia.com/gpu: 1
"""

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: vllm
spec:
  selector:
    matchLabels: {app: vllm}
  template:
    metadata:
      labels: {app: vllm}
    spec:
      runtimeClassName: nvidia
      containers:
      - name: vllm
        image: vllm:1
        resources:
          limits: {nvidia.com/gpu: 1}
"""


STATEFULSET = """\
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: db
  namespace: research
spec:
  serviceName: db
  selector:
    matchLabels: {app: db}
  template:
    metadata:
      labels: {app: db}
    spec:
      nodeSelector: {pool: a100}
      containers:
      - name: db
        image: db:1
        resources:
          limits: {nvidia.com/gpu: 5}
"""


def pod(name: str, pool: str, gpus: int = 1) -> str:
    return f"""\
apiVersion: v1
kind: Pod
metadata:
  name: {name}
spec:
  nodeSelector:
    pool: {pool}
  containers:
  - name: main
    image: app:1
    resources:
      limits:
        nvidia.com/gpu: {gpus}
"""


@pytest.fixture
def api() -> Iterator[FakeKubeAPI]:
    with FakeKubeAPI(SEVEN) as server:
        yield server


def check(api: FakeKubeAPI, tmp_path: Path, manifest: str, *extra: str) -> int:
    path = tmp_path / "manifest.yaml"
    path.write_text(manifest)
    kubeconfig = api.kubeconfig(tmp_path / "kubeconfig", namespace="research")
    return main(["check", "-f", str(path), "--kubeconfig", str(kubeconfig), *extra])


def test_a_pod_that_fits_would_schedule(api: FakeKubeAPI, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    assert check(api, tmp_path, pod("small", "a100")) == 0
    out = capsys.readouterr().out
    assert out.startswith("Pod/small in namespace research (server dry-run; nothing created)\n")
    assert "✅ would schedule — 6 nodes: 5 not fit (5 selector-mismatch), 1 fit (gpu-a100-1" in out
    assert [d["metadata"] for d in api.dry_runs] == [
        {"generateName": "small-", "namespace": "research"}]


def test_the_funnel_says_why_it_would_not_schedule(api: FakeKubeAPI, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert check(api, tmp_path, pod("big", "a10-full", gpus=1)) == 1
    out = capsys.readouterr().out
    assert "would not schedule:\n⏳ exhausted — research/big" in out
    assert "held by ml/train-a, team-b/train-b" in out


def test_a_full_quota_is_reported_from_admission(api: FakeKubeAPI, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert check(api, tmp_path, JOB) == 1
    out = capsys.readouterr().out
    assert out.splitlines()[:3] == [
        "Job/finetune in namespace ml (server dry-run; nothing created)",
        '🔒 quota-exceeded — admission would reject it: pods "finetune-" is forbidden: exceeded '
        "quota: gpu-quota, requested: requests.nvidia.com/gpu=1, used: "
        "requests.nvidia.com/gpu=1, limited: requests.nvidia.com/gpu=1",
        "Next: raise the quota or free usage",
    ]
    assert api.dry_runs[0]["metadata"]["generateName"] == "finetune-"


def test_a_missing_runtimeclass_is_reported_from_admission(
        api: FakeKubeAPI, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert check(api, tmp_path, DEPLOYMENT, "-n", "infer") == 1
    out = capsys.readouterr().out
    assert ('🧩 runtimeclass-missing — admission would reject it: pods "vllm-" is forbidden: pod '
            'rejected: RuntimeClass "nvidia" not found') in out


def test_a_webhook_denial_is_quoted(api: FakeKubeAPI, tmp_path: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    api.inject("status", "/pods$", method="POST", status=status_body(
        400, "BadRequest", 'admission webhook "validate.policy.example" denied the request: '
        "GPU pods need a team label"))
    assert check(api, tmp_path, pod("p", "a100")) == 1
    assert ('⛔ rejected at admission — admission webhook "validate.policy.example" denied the '
            "request: GPU pods need a team label") in capsys.readouterr().out


def test_every_pod_of_a_multi_document_manifest_is_checked(
        api: FakeKubeAPI, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manifest = pod("fits", "a100") + "---\nkind: ConfigMap\napiVersion: v1\nmetadata: {name: c}\n" \
        "---\n" + pod("nowhere", "h200")
    assert check(api, tmp_path, manifest) == 1
    out = capsys.readouterr().out
    assert "✅ would schedule" in out
    assert "🎯 selector-mismatch — research/nowhere" in out


def test_cannot_create_is_a_forbidden_sentence(api: FakeKubeAPI, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    api.inject("status", "/pods$", method="POST", status=status_body(
        403, "Forbidden", 'pods is forbidden: User "dev" cannot create resource "pods" in API '
        'group "" in the namespace "research"', {"kind": "pods"}))
    assert check(api, tmp_path, pod("p", "a100")) == 3
    assert capsys.readouterr().err == (
        'gpuwhy: Forbidden: User "dev" cannot create pods in namespace "research" (RBAC needs '
        'verb "create" on resource "pods").\n')


@pytest.mark.parametrize(("manifest", "message"), [
    (None, "gpuwhy: {path}: no such file\n"),
    ("kind: Pod\n  bad: [\n", "gpuwhy: {path}: not valid YAML (line 2)\n"),
    ("apiVersion: v1\nkind: Service\nmetadata: {name: s}\n",
     "gpuwhy: {path}: no Pod and no pod template (Deployment, ReplicaSet, StatefulSet, "
     "DaemonSet, Job, CronJob) in it\n"),
    ("apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec: {}\n",
     "gpuwhy: Job/j: no pod template at spec.template\n"),
    ("- just\n- a list\n", "gpuwhy: {path}: a document is not a Kubernetes object\n"),
    ("", "gpuwhy: {path}: no Pod and no pod template (Deployment, ReplicaSet, StatefulSet, "
     "DaemonSet, Job, CronJob) in it\n"),
    (b"\xff\xfe", "gpuwhy: {path}: not UTF-8 text\n"),
    ("__directory__", "gpuwhy: {path}: cannot read: Is a directory\n"),
], ids=["missing", "not-yaml", "service", "no-template", "list-of-scalars", "empty", "binary",
        "directory"])
def test_a_bad_manifest_is_one_line_and_exit_2(api: FakeKubeAPI, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str],
                                               manifest: str | bytes | None,
                                               message: str) -> None:
    path = tmp_path / "manifest.yaml"
    if manifest == "__directory__":
        path.mkdir()
    elif isinstance(manifest, bytes):
        path.write_bytes(manifest)
    elif manifest is not None:
        path.write_text(manifest)
    assert main(["check", "-f", str(path), "--kubeconfig",
                 str(api.kubeconfig(tmp_path / "kubeconfig"))]) == 2
    captured = capsys.readouterr()
    assert captured.err == message.format(path=path)
    assert api.requests == []


def test_a_statefulset_template_is_checked(api: FakeKubeAPI, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    assert check(api, tmp_path, STATEFULSET) == 1
    out = capsys.readouterr().out
    assert out.startswith("StatefulSet/db in namespace research (server dry-run; nothing "
                          "created)\n")
    assert "too-large — research/db" in out
    assert [d["metadata"] for d in api.dry_runs] == [
        {"labels": {"app": "db"}, "generateName": "db-", "namespace": "research"}]


@pytest.mark.parametrize("manifest", [pod("p", "a100"), DEPLOYMENT, JOB, STATEFULSET],
                         ids=["pod", "deployment", "job", "statefulset"])
def test_check_writes_nothing_but_one_dry_run_create(api: FakeKubeAPI, tmp_path: Path,
                                                     manifest: str) -> None:
    check(api, tmp_path, manifest, *(["-n", "infer"] if manifest == DEPLOYMENT else []))
    writes = [(r.method, r.path, r.query) for r in api.requests if r.method != "GET"]
    assert len(writes) == 1
    method, path, query = writes[0]
    assert (method, query) == ("POST", {"dryRun": "All"})
    assert path.startswith("/api/v1/namespaces/") and path.endswith("/pods")
    assert api.unexpected_writes == []


def test_namespace_flag_must_agree_with_the_manifest(api: FakeKubeAPI, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    assert check(api, tmp_path, JOB, "-n", "research") == 2
    assert capsys.readouterr().err.endswith(
        "names namespace ml, not research; drop -n or make them agree\n")
    assert api.dry_runs == []


# --- what a pre-flight reports beyond the funnel --------------------------------------------

CPU_ONLY = """\
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers:
  - name: web
    image: web:1
    resources: {limits: {cpu: "1"}}
"""


def test_the_manifests_name_is_kept(api: FakeKubeAPI, tmp_path: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    assert check(api, tmp_path, pod("big", "a10-full")) == 1
    out = capsys.readouterr().out
    assert api.dry_runs[0]["metadata"]["generateName"] == "big-"
    assert "x7k2q" not in out  # the name the dry run generated
    assert "would not schedule:\n⏳ exhausted — research/big\nNext: gpu-a10-full has 2/2" in out


def test_a_pod_asking_for_no_gpu_would_schedule(api: FakeKubeAPI, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert check(api, tmp_path, CPU_ONLY) == 0
    assert capsys.readouterr().out == (
        "Pod/web in namespace research (server dry-run; nothing created)\n"
        "✅ would schedule (asks for no GPU)\n\n")


def test_configured_gpu_resources_are_honoured(api: FakeKubeAPI, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "gpuwhy.yaml"
    config.write_text("triage: {gpu_resources: [example.com/accel]}\n")
    monkeypatch.setenv("GPUWHY_CONFIG", str(config))
    assert check(api, tmp_path, pod("small", "a100")) == 0  # nvidia.com/gpu: not a GPU here
    assert "✅ would schedule (asks for no GPU)" in capsys.readouterr().out


def test_a_scheduler_nobody_runs_is_scheduler_unavailable(
        api: FakeKubeAPI, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manifest = pod("small", "a100").replace("spec:\n", "spec:\n  schedulerName: volcano\n")
    assert check(api, tmp_path, manifest) == 1
    out = capsys.readouterr().out
    assert out.splitlines()[1:4] == [
        "would not schedule:",
        "📭 scheduler-unavailable — research/small",
        "Next: spec.schedulerName volcano: no pod in the cluster was bound by a scheduler of "
        "that name, so nothing would schedule this one. Start that scheduler, or fix "
        "schedulerName (GPU-wise: 6 nodes: 5 not fit (5 selector-mismatch), 1 fit "
        "(gpu-a100-1: 0.75)).",
    ]


def test_a_scheduler_that_bound_pods_is_taken_to_run(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    hami = FIXTURES / "scenarios" / "hami-sharing"
    manifest = pod("small", "x").replace("  nodeSelector:\n    pool: x\n",
                                         "  schedulerName: hami-scheduler\n")
    with FakeKubeAPI(hami) as server:
        assert check(server, tmp_path, manifest, "-n", "hami") == 0
    assert "✅ would schedule — " in capsys.readouterr().out


def test_a_missing_volume_claim_is_other_constraint(api: FakeKubeAPI, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    manifest = pod("small", "a100") + (
        "  volumes:\n  - name: data\n    persistentVolumeClaim: {claimName: datasets}\n")
    assert check(api, tmp_path, manifest) == 1
    assert capsys.readouterr().out.splitlines()[1:4] == [
        "would not schedule:",
        "🧷 other-constraint — research/small",
        "Next: PersistentVolumeClaim research/datasets does not exist, and the scheduler does "
        "not place a pod before its claims do (it says persistentvolumeclaim not found). Create "
        "the claim or fix claimName.",
    ]
    api.apply({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
               "metadata": {"name": "datasets", "namespace": "research"},
               "spec": {"accessModes": ["ReadWriteOnce"],
                        "resources": {"requests": {"storage": "1Gi"}}},
               "status": {"phase": "Bound"}})
    assert check(api, tmp_path, manifest) == 0
