"""The config schema: every mistake is one line naming the key and the value, at start-up."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
import yaml

from bot.cli.main import main
from bot.config import BotConfig, ConfigError, DigestSchedule, load_config
from bot.config.load import config_schema
from tests.conftest import SCENARIOS
from tests.paths import REPO

README = REPO / "README.md"
SEVEN = str(SCENARIOS / "seven-states")


def _load(tmp_path: Path, text: str, **environ: str) -> BotConfig:
    path = tmp_path / "gpuwhy.yaml"
    path.write_text(text, encoding="utf-8")
    return load_config({"GPUWHY_CONFIG": str(path), **environ})


def _error(tmp_path: Path, text: str, **environ: str) -> str:
    with pytest.raises(ConfigError) as caught:
        _load(tmp_path, text, **environ)
    message = str(caught.value)
    assert "\n" not in message
    prefix = f"config {tmp_path / 'gpuwhy.yaml'}: "
    assert message.startswith(prefix)
    return message.removeprefix(prefix)


@pytest.mark.parametrize(("text", "problem"), [
    # A string where a list belongs used to be read letter by letter.
    ('triage:\n  gpu_resources: "nvidia.com/gpu"\n',
     "triage.gpu_resources = 'nvidia.com/gpu': must be a list, not a string "
     "(write [nvidia.com/gpu])"),
    ("channels: {C1: research}\n",
     "channels.C1 = 'research': must be a list, not a string (write [research])"),
    ("digest: {weekday: 9, hour: 30}\n",
     "digest.weekday = 9: must be at most 6; digest.hour = 30: must be at most 23"),
    ("digest: {weekday: -1}\n", "digest.weekday = -1: must be at least 0"),
    ('digest: {hour: "9"}\n', "digest.hour = '9': must be a whole number"),
    ("digest: {hour: true}\n", "digest.hour = True: must be a whole number"),
    ("digest: {timezone: Mars/Olympus}\n",
     "digest.timezone = 'Mars/Olympus': not an IANA timezone name (e.g. Europe/Berlin, UTC)"),
    ("digest: {timezone: ../../etc/passwd}\n",
     "digest.timezone = '../../etc/passwd': not an IANA timezone name (e.g. Europe/Berlin, "
     "UTC)"),
    ('digest: {channel: "gpu help"}\n',
     "digest.channel = 'gpu help': not a Slack channel id (C0123ABCD) or #name"),
    ("digest: 3\n", "digest = 3: must be a section (a mapping of keys)"),
    ("cluster: prod\nclusterr: prod\n", "clusterr: unknown key (did you mean cluster?)"),
    ("digest: {weekdays: 1}\n", "digest.weekdays: unknown key (did you mean weekday?)"),
    ("triage: {node_policy: fastest}\n",
     "triage.node_policy = 'fastest': must be one of binpack or spread"),
    ("triage: {gpu_resources: []}\n", "triage.gpu_resources = []: must not be empty"),
    ("triage: {gpu_resources: [nvidia.com/gpu, gpu]}\n",
     "triage.gpu_resources.1 = 'gpu': not a resource name such as nvidia.com/gpu"),
    ("triage: {gpu_drivers: [gpu.nvidia.com, NVIDIA GPUs]}\n",
     "triage.gpu_drivers.1 = 'NVIDIA GPUs': not a DRA driver name such as gpu.nvidia.com"),
    ("triage: {pool_labels: [pool, 'node pool']}\n",
     "triage.pool_labels.1 = 'node pool': not a label key such as pool or karpenter.sh/nodepool"),
    ("triage: {gpu_drivers: gpu.nvidia.com}\n",
     "triage.gpu_drivers = 'gpu.nvidia.com': must be a list, not a string "
     "(write [gpu.nvidia.com])"),
    ("channels: [C1]\n", "channels = ['C1']: must be a mapping (key: value)"),
    ('channels: {"#gpu-help": ["*"]}\n',
     "channels: key '#gpu-help': not a Slack channel id (C0123ABCD)"),
    ("channels: {C1: [Research]}\n",
     "channels.C1.0 = 'Research': not a namespace name or \"*\""),
    ("cluster: 7\n", "cluster = 7: must be a string"),
    ("watch: {stale_after_seconds: 5}\n", "watch.stale_after_seconds = 5: must be at least 10"),
    ("watch: {stale_after: 60}\n",
     "watch.stale_after: unknown key "
     "(did you mean stale_after_seconds?)"),
])
def test_each_mistake_names_the_key_and_the_value(text: str, problem: str,
                                                  tmp_path: Path) -> None:
    assert _error(tmp_path, text) == problem


def test_a_database_url_error_does_not_show_the_value(tmp_path: Path) -> None:
    assert _error(tmp_path, "database_url: {password: hunter2}\n") == (
        "database_url: must be a string")


def test_environment_values_are_checked_and_named(tmp_path: Path) -> None:
    problem = _error(tmp_path, "digest: {weekday: 1}\n", GPUWHY_CLUSTER="prod",
                     GPUWHY_DIGEST_CHANNEL="gpu help")
    assert problem == ("GPUWHY_DIGEST_CHANNEL (digest.channel) = 'gpu help': not a Slack "
                       "channel id (C0123ABCD) or #name")


def test_environment_overrides_the_file(tmp_path: Path) -> None:
    config = _load(tmp_path, "cluster: from-file\ndigest: {channel: C0FILE, hour: 7}\n",
                   GPUWHY_CLUSTER="from-env", GPUWHY_DIGEST_CHANNEL="C0ENV",
                   GPUWHY_DATABASE_URL="sqlite:////tmp/env.db")
    assert (config.cluster, config.digest.channel, config.digest.hour, config.database_url) == (
        "from-env", "C0ENV", 7, "sqlite:////tmp/env.db")


def test_the_environment_alone_is_a_configuration() -> None:
    config = load_config({"GPUWHY_DIGEST_CHANNEL": "C0ENV"})
    assert config.digest.channel == "C0ENV" and config.cluster == "default"
    assert config.triage.gpu_resources == ("nvidia.com/gpu", "nvidia.com/gpu.shared",
                                           "nvidia.com/mig-*", "amd.com/gpu")
    assert config.triage.gpu_drivers == ("gpu.nvidia.com", "gpu.amd.com",
                                         "hami-core-gpu.project-hami.io")


def test_an_empty_file_means_every_default(tmp_path: Path) -> None:
    config = _load(tmp_path, "")
    assert config == BotConfig()


def test_the_defaults_written_out_pass_the_schema_unchanged() -> None:
    """With nothing to check (no file, no variable) load_config skips the schema: every
    default must be a value the schema accepts and keeps as it is."""
    defaults = BotConfig()
    assert config_schema().validate_python(dataclasses.asdict(defaults)) == defaults
    assert load_config({}) == defaults


def test_a_list_at_the_top_level_is_one_line(tmp_path: Path) -> None:
    assert _error(tmp_path, "- cluster\n") == "expected a mapping of keys at the top level"


def test_readme_example_is_valid(tmp_path: Path) -> None:
    section = README.read_text(encoding="utf-8").split("## Configuration", 1)[1]
    match = re.search(r"```yaml\n(.*?)```", section, re.S)
    assert match is not None
    data = yaml.safe_load(match.group(1))
    config = _load(tmp_path, match.group(1))
    assert config.channels == {k: tuple(v) for k, v in data["channels"].items()}
    assert config.digest == DigestSchedule(**data["digest"])
    assert config.triage.gpu_resources == tuple(data["triage"]["gpu_resources"])
    assert config.triage.gpu_drivers == tuple(data["triage"]["gpu_drivers"])
    assert config.triage.pool_labels == tuple(data["triage"]["pool_labels"])


@pytest.mark.parametrize("argv", [
    ["triage", "research/ok", "--snapshot", SEVEN],
    ["demo", "--no-record"],
    ["stats"],
    ["digest"],
    ["db", "upgrade"],
])
def test_every_command_that_reads_the_config_stops_with_one_line(
        argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "gpuwhy.yaml"
    path.write_text("triage:\n  gpu_resources: nvidia.com/gpu\n", encoding="utf-8")
    monkeypatch.setenv("GPUWHY_CONFIG", str(path))
    monkeypatch.setenv("GPUWHY_DATABASE_URL", f"sqlite:///{tmp_path / 'store.db'}")
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err
    assert "triage.gpu_resources = 'nvidia.com/gpu': must be a list" in captured.err
    assert not (tmp_path / "store.db").exists()


ISSUE_CLUSTERS = """\
clusters:
  prod:     {kubeconfig: /etc/gpuwhy/prod.yaml, context: prod-admin}
  research: {in_cluster: true}
  lab:      {snapshot: /data/lab-dump}
default_cluster: prod
channels:
  C0RESEARCH: {cluster: research, namespaces: ["*"]}
  C0ML: [ml]
"""


def test_several_clusters_as_written(tmp_path: Path) -> None:
    config = _load(tmp_path, ISSUE_CLUSTERS)
    assert [(name, where.kind) for name, where in config.clusters.items()] == [
        ("prod", "kubeconfig"), ("research", "in-cluster"), ("lab", "snapshot")]
    assert config.clusters["prod"].context == "prod-admin"
    assert (config.channel_cluster("C0RESEARCH"), config.channel_cluster("C0ML")) == (
        "research", "prod")
    assert config.cluster_allowed("C0RESEARCH", "research")
    assert not config.cluster_allowed("C0RESEARCH", "prod")
    assert config.cluster_allowed("C0ML", "lab")  # the list form: any cluster
    assert config.namespace_allowed("C0ML", "ml") and not config.namespace_allowed("C0ML", "x")


@pytest.mark.parametrize(("text", "problem"), [
    ("clusters: {prod: {}}\n",
     "clusters.prod = {}: give exactly one of kubeconfig (with context), in_cluster: true, "
     "snapshot (found none)"),
    ("clusters: {prod: {snapshot: /x, in_cluster: true}}\n",
     "clusters.prod = {'snapshot': '/x', 'in_cluster': True}: give exactly one of kubeconfig "
     "(with context), in_cluster: true, snapshot (found in_cluster, snapshot)"),
    ("clusters: {Prod: {snapshot: /x}}\n",
     "clusters: key 'Prod': not a cluster name (lower case letters, digits, -)"),
    ("clusters: {prod: {snapshot: /x, kubeconfg: /y}}\n",
     "clusters.prod.kubeconfg: unknown key "
     "(did you mean kubeconfig?)"),
    ("clusters: {prod: {in_cluster: 'yes'}}\n",
     "clusters.prod.in_cluster = 'yes': must be true or false"),
    ("clusters: [prod]\n", "clusters = ['prod']: must be a mapping (key: value)"),
    ("default_cluster: prod\n", "default_cluster = 'prod': no clusters are configured"),
    ("clusters: {a: {snapshot: /x}}\ndefault_cluster: b\n",
     "default_cluster = 'b': not one of clusters (a)"),
    ("clusters: {a: {snapshot: /x}}\nchannels: {C1: {cluster: b}}\n",
     "channels.C1.cluster = 'b': not one of clusters (a)"),
    ("clusters: {a: {snapshot: /x}}\nchannels: {C1: {clusters: [a, c]}}\n",
     "channels.C1.clusters = 'c': not one of clusters (a)"),
    ("channels: {C1: {namespaces: [ml], clusterz: a}}\n",
     "channels.C1.clusterz: unknown key "
     "(did you mean cluster?)"),
    ("channels: {C1: {namespaces: research}}\n",
     "channels.C1.namespaces = 'research': must be a list, not a string (write [research])"),
])
def test_cluster_mistakes_are_one_line(text: str, problem: str, tmp_path: Path) -> None:
    assert _error(tmp_path, text) == problem


def test_readme_several_clusters_example_is_valid(tmp_path: Path) -> None:
    section = README.read_text(encoding="utf-8").split("## Several clusters", 1)[1]
    match = re.search(r"```yaml\n(.*?)```", section, re.S)
    assert match is not None
    config = _load(tmp_path, match.group(1))
    assert sorted(config.clusters) == ["lab", "prod", "research"]
    assert [config.channel_cluster(c) for c in ("C0RESEARCH", "C0PLATFORM", "C0TEAMB")] == [
        "research", "prod", "prod"]
    assert not config.cluster_allowed("C0RESEARCH", "lab")
    assert config.cluster_allowed("C0PLATFORM", "lab") and config.cluster_allowed("C0TEAMB", "lab")


@pytest.mark.parametrize(("text", "problem"), [
    ("routes: [{chanel: C1}]\n", "routes.0.chanel: unknown key (did you mean channel?)"),
    ("channels: {C1: {namespacs: [a]}}\n",
     "channels.C1.namespacs: unknown key (did you mean namespaces?)"),
    ("prometheus: {labels: {nod: node}}\n",
     "prometheus.labels.nod: unknown key (did you mean node?)"),
    ("clusters: {p: {snapshot: /x, prometheus: {tiemout: 2}}}\n",
     "clusters.p.prometheus.tiemout: unknown key (did you mean timeout?)"),
    ("alerts: {pending: 5m}\n", "alerts.pending: unknown key (did you mean pending_after?)"),
    ("wholly_unknown: 1\n", "wholly_unknown: unknown key"),
])
def test_an_unknown_key_names_the_key_it_likely_means(text: str, problem: str,
                                                      tmp_path: Path) -> None:
    assert _error(tmp_path, text) == problem


@pytest.mark.parametrize(("name", "text", "problem"), [
    ("gpuwhy.yaml", "cluster: a\ndigest: {hour: 3}\ncluster: b\n",
     "line 3: key 'cluster' is given twice (first on line 1); give it once"),
    ("gpuwhy.yaml", "digest:\n  hour: 3\n  weekday: 1\n  hour: 4\n",
     "line 4: key 'hour' is given twice (first on line 2); give it once"),
    ("gpuwhy.json", '{"cluster": "a", "cluster": "b"}',
     "key 'cluster' is given twice; give it once"),
])
def test_a_key_given_twice_is_an_error(name: str, text: str, problem: str,
                                       tmp_path: Path) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ConfigError) as error:
        load_config({"GPUWHY_CONFIG": str(path)})
    assert str(error.value) == f"config {path}: {problem}"
