"""`gpuwhy doctor` against the test API server (permissions granted and denied), the local Slack
Web API and real stores: one line per check, exit 0 only when every check passes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import alembic.command
import pytest
import yaml

from bot.cli.doctor import BOT_SCOPES, READ_RESOURCES, READ_VERBS, kueue_reads
from bot.cli.main import main
from bot.store import Store, alembic_config
from tests.conftest import SCENARIOS
from tests.kubeapi import FakeKubeAPI, forbidden_status
from tests.paths import REPO
from tests.slackfake import FakeSlack, FakeSocketMode
from triage.cluster.resources import JOB_RESOURCES

DEPLOY = REPO / "deploy"
CHECKS = ["config", "slack", "cluster", "access", "store"]
HEAD = max(path.name.split("_")[0] for path in
           (DEPLOY.parent / "migrations" / "versions").glob("[0-9]*_*.py"))


@pytest.fixture
def api() -> Iterator[FakeKubeAPI]:
    with FakeKubeAPI(SCENARIOS / "seven-states") as server:  # fails the test on any write
        yield server


@pytest.fixture
def setup(api: FakeKubeAPI, slack: FakeSlack, tmp_path: Path,
          monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """A working installation in HTTP mode; the doctor arguments for it."""
    for name in ("SLACK_APP_TOKEN", "GPUWHY_DATABASE_URL", "GPUWHY_CLUSTER",
                 "GPUWHY_DIGEST_CHANNEL", "KUBECONFIG"):
        monkeypatch.delenv(name, raising=False)
    config = tmp_path / "gpuwhy.yaml"
    config.write_text("cluster: prod-gpu\nchannels: {C0SUPPORT: ['*']}\n")
    monkeypatch.setenv("GPUWHY_CONFIG", str(config))
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-test")
    monkeypatch.setenv("SLACK_SIGNING_SECRET", "secret")
    monkeypatch.setenv("SLACK_API_URL", slack.api_url)
    db = f"sqlite:///{tmp_path / 'gpuwhy.db'}"
    store = Store(db)
    store.upgrade()
    store.close()
    return ["doctor", "--kubeconfig", str(api.kubeconfig(tmp_path / "kubeconfig")),
            "--db", db]


def doctor(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, str],
                                                                         str]:
    """Exit code, each check's line by name, and the verdict line."""
    code = main(argv)
    captured = capsys.readouterr()
    assert captured.err == "" and "Traceback" not in captured.out
    *lines, verdict = captured.out.splitlines()
    checks = {line[6:].split()[0]: line for line in lines}
    assert list(checks) == CHECKS
    return code, checks, verdict


def failed(checks: dict[str, str]) -> list[str]:
    return [name for name, line in checks.items() if line.startswith("FAIL")]


def test_everything_passes(setup: list[str], api: FakeKubeAPI, slack: FakeSlack,
                           capsys: pytest.CaptureFixture[str]) -> None:
    code, checks, verdict = doctor(setup, capsys)
    assert (code, verdict, failed(checks)) == (0, "gpuwhy doctor: all 5 checks passed", [])
    assert checks["cluster"] == f"ok    cluster  {api.url}: Kubernetes v1.36.2"
    assert checks["access"] == ("ok    access   all 51 reads allowed (get, list, watch on 17 "
                                "resources)")
    assert "HTTP mode: SLACK_SIGNING_SECRET is set" in checks["slack"]
    assert checks["store"] == f"ok    store    {setup[-1]} at {HEAD} (the newest)"
    # One review per verb and resource, DRA's included, asked cluster-wide.
    asked = {(r["verb"], r["group"], r["resource"], r["namespace"]) for r in api.access_reviews}
    assert len(api.access_reviews) == len(asked) == len(READ_RESOURCES) * len(READ_VERBS)
    for resource in ("resourceclaims", "resourceclaimtemplates", "deviceclasses",
                     "resourceslices"):
        assert {("get", "resource.k8s.io", resource, ""), ("list", "resource.k8s.io", resource, ""),
                ("watch", "resource.k8s.io", resource, "")} <= asked
    assert ("watch", "", "pods", "") in asked and ("list", "apps", "replicasets", "") in asked
    assert {("watch", "scheduling.k8s.io", "podgroups", ""),
            ("list", "scheduling.k8s.io", "workloads", ""),
            ("watch", "resource.k8s.io", "devicetaintrules", "")} <= asked
    assert [call.method for call in slack.calls] == ["auth.test"]


def test_denied_permissions_are_named(setup: list[str], api: FakeKubeAPI,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    api.deny("watch", "pods")
    api.deny("list", "resourceslices", "resource.k8s.io")
    code, checks, verdict = doctor(setup, capsys)
    assert (code, failed(checks)) == (1, ["access"])
    assert checks["access"] == (
        "FAIL  access   2 of 51 reads are not allowed: watch pods, list "
        "resourceslices.resource.k8s.io (deploy/base/rbac.yaml grants them all)")
    assert verdict == "gpuwhy doctor: 1 of 5 checks failed (access)"


# Groups checked only where the cluster serves them: (cluster, the read denied, the answer).
# seven-states' 51 reads; Kueue's six kinds add 18; JobSets and RayJobs 6 more.
SERVED_ONLY = {
    "kueue": (SCENARIOS / "kueue-basics", ("list", "workloads", "kueue.x-k8s.io"),
              "1 of 69 reads are not allowed: list workloads.kueue.x-k8s.io"),
    "jobsets": (REPO / "tests" / "fixtures" / "scenarios-extra" / "kueue-jobsets",
                ("get", "jobsets", "jobset.x-k8s.io"),
                "1 of 75 reads are not allowed: get jobsets.jobset.x-k8s.io"),
}


@pytest.mark.parametrize("group", sorted(SERVED_ONLY))
def test_a_group_is_checked_where_it_is_served(setup: list[str], slack: FakeSlack,
                                               tmp_path: Path, group: str,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    cluster, denied, said = SERVED_ONLY[group]
    with FakeKubeAPI(cluster) as api:
        api.deny(*denied)
        argv = [*setup[:2], str(api.kubeconfig(tmp_path / group)), *setup[3:]]
        code, checks, _ = doctor(argv, capsys)
    assert (code, failed(checks)) == (1, ["access"])
    assert checks["access"] == f"FAIL  access   {said} (deploy/base/rbac.yaml grants them all)"


def test_the_shipped_role_grants_what_doctor_checks() -> None:
    rules = yaml.safe_load_all((DEPLOY / "base" / "rbac.yaml").read_text())
    role = next(document for document in rules if document["kind"] == "ClusterRole")
    granted = {(group, resource, verb) for rule in role["rules"] for group in rule["apiGroups"]
               for resource in rule["resources"] for verb in rule["verbs"]}
    # besides, optional and not checked: get on Kueue's visibility API (a queued position)
    assert granted - {("visibility.kueue.x-k8s.io", "clusterqueues/pendingworkloads", "get")} == {
        (r.group, r.plural, verb) for r in (*READ_RESOURCES, *kueue_reads("v1"),
                                            *JOB_RESOURCES.values())
        for verb in READ_VERBS}


def test_the_slack_manifest_asks_for_the_scopes_doctor_checks(slack: FakeSlack) -> None:
    manifest = yaml.safe_load((DEPLOY / "slack-app-manifest.yaml").read_text())
    assert sorted(manifest["oauth_config"]["scopes"]["bot"]) == sorted(BOT_SCOPES)
    assert sorted(slack.scopes) == sorted(BOT_SCOPES)  # the fake grants what the app asks


def test_a_missing_scope_is_named(setup: list[str], slack: FakeSlack,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    slack.scopes.remove("groups:history")
    code, checks, _ = doctor(setup, capsys)
    assert (code, failed(checks)) == (1, ["slack"])
    assert checks["slack"] == ("FAIL  slack    the bot token lacks the scopes groups:history: "
                               "add them under OAuth & Permissions and reinstall the app")


def test_a_rejected_token(setup: list[str], slack: FakeSlack,
                          capsys: pytest.CaptureFixture[str]) -> None:
    slack.fail("auth.test", "invalid_auth")
    code, checks, _ = doctor(setup, capsys)
    assert (code, failed(checks)) == (1, ["slack"])
    assert checks["slack"] == "FAIL  slack    the bot token: Slack answered invalid_auth"


def test_unreachable_slack(setup: list[str], monkeypatch: pytest.MonkeyPatch,
                           capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("SLACK_API_URL", "http://127.0.0.1:1/api/")
    code, checks, _ = doctor(setup, capsys)
    assert (code, failed(checks)) == (1, ["slack"])
    assert checks["slack"] == ("FAIL  slack    the bot token: cannot reach the Slack Web API at "
                               "http://127.0.0.1:1/api/: connection refused")


def test_no_token_and_no_mode(setup: list[str], monkeypatch: pytest.MonkeyPatch,
                              capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("SLACK_SIGNING_SECRET")
    code, checks, _ = doctor(setup, capsys)
    assert (code, failed(checks)) == (1, ["slack"])
    assert checks["slack"].endswith("neither SLACK_APP_TOKEN (Socket Mode) nor "
                                    "SLACK_SIGNING_SECRET (HTTP mode) is set")
    monkeypatch.delenv("SLACK_BOT_TOKEN")
    assert doctor(setup, capsys)[1]["slack"] == "FAIL  slack    SLACK_BOT_TOKEN is not set"


def test_socket_mode_app_token(setup: list[str], slack: FakeSlack,
                               monkeypatch: pytest.MonkeyPatch,
                               capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("SLACK_APP_TOKEN", "xapp-test")
    code, checks, _ = doctor(setup, capsys)  # no Socket Mode endpoint: Slack refuses it
    assert (code, failed(checks)) == (1, ["slack"])
    assert checks["slack"].endswith("Socket Mode: the app token: Slack answered invalid_auth "
                                    "(it needs the connections:write scope)")
    slack.socket = FakeSocketMode()
    code, checks, _ = doctor(setup, capsys)
    assert (code, failed(checks)) == (0, [])
    assert checks["slack"].endswith("Socket Mode: the app token opens a connection")
    [opened] = slack.calls_to("apps.connections.open")[1:]
    assert opened.headers["Authorization"] == "Bearer xapp-test"


def test_a_bad_config(setup: list[str], tmp_path: Path,
                      capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "gpuwhy.yaml").write_text("digest: {hour: 30}\n")
    code, checks, _ = doctor(setup, capsys)
    assert (code, failed(checks)) == (1, ["config"])
    assert checks["config"] == (f"FAIL  config   config {tmp_path / 'gpuwhy.yaml'}: "
                                "digest.hour = 30: must be at most 23")


def test_an_unreachable_cluster(setup: list[str], api: FakeKubeAPI,
                                capsys: pytest.CaptureFixture[str]) -> None:
    url = api.url
    api.stop()
    code, checks, _ = doctor(setup, capsys)
    assert (code, failed(checks)) == (1, ["cluster", "access"])
    assert checks["cluster"].startswith(f"FAIL  cluster  Cannot reach the Kubernetes API server "
                                        f"at {url}: ")
    assert checks["access"] == "FAIL  access   not checked: the cluster did not answer"


def test_forbidden_reviews(setup: list[str], api: FakeKubeAPI,
                           capsys: pytest.CaptureFixture[str]) -> None:
    api.inject("status", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
               method="POST", times=1000,
               status=forbidden_status("create", "selfsubjectaccessreviews",
                                       "authorization.k8s.io"))
    code, checks, _ = doctor(setup, capsys)
    assert (code, failed(checks)) == (1, ["access"])
    assert checks["access"].startswith("FAIL  access   cannot review gpuwhy's access: Forbidden")


def test_a_store_behind_or_down(setup: list[str], tmp_path: Path,
                                capsys: pytest.CaptureFixture[str]) -> None:
    db = setup[-1]
    store = Store(db)
    with store.engine.begin() as connection:
        alembic.command.downgrade(alembic_config(connection), "0001")
    code, checks, _ = doctor(setup, capsys)
    assert (code, failed(checks)) == (1, ["store"])
    assert checks["store"].startswith(f"FAIL  store    {db} is at 0001, the newest is ")
    assert checks["store"].endswith("run gpuwhy db upgrade (gpuwhy serve does at start-up)")
    store.close()
    down = [*setup[:-1], "postgresql+psycopg://gpuwhy:secret@127.0.0.1:1/gpuwhy"]
    code, checks, _ = doctor(down, capsys)
    assert (code, failed(checks)) == (1, ["store"])
    assert "secret" not in checks["store"] and "127.0.0.1:1" in checks["store"]
