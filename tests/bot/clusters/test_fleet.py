"""Several clusters, one bot: two live API servers and one dump directory behind one app."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
import yaml

from bot.cli.main import main
from bot.clusters.fleet import Fleet, UnknownClusterError, build_fleet, split_cluster
from bot.clusters.sources import LiveSource, SnapshotSource, WatchSource
from bot.config import BotConfig, ChannelAccess, ClusterSource
from bot.digest import Scope, digest_blocks, digest_text, last_full_week, load_digest
from bot.store import Store, StoredIncident
from bot.web.metrics import READINGS
from bot.web.metrics import page as metrics_page
from bot.web.serve import clusters_up, readiness_checks
from tests.bot.slack.test_slack_app import (
    CHANNEL,
    TRIAGED_AT,
    ack_text,
    ask,
    dispatch,
    event_body,
    make_app,
    wait_until,
)
from tests.conftest import SCENARIOS
from tests.kubeapi import FakeKubeAPI
from tests.paths import FIXTURES
from tests.slackfake import (
    FakeSlack,
    ServeProcess,
    button_body,
    command_body,
    http,
    sign,
)
from triage.refs import PodRef, parse_ref

EXTRA = FIXTURES / "scenarios-extra"
RESEARCH_CHANNEL, LAB_CHANNEL, ALL_CHANNEL = "C0RESEARCH", "C0LAB", "C0ALL"
SECRET = "0a4d55a8d778e5022fab701977c5d840"


@dataclass
class Clusters:
    fleet: Fleet
    config: BotConfig
    prod: FakeKubeAPI
    research: FakeKubeAPI


def fleet_config(tmp_path: Path, prod: FakeKubeAPI, research: FakeKubeAPI,
                 **extra: ClusterSource) -> BotConfig:
    return BotConfig(
        database_url="sqlite://",
        clusters={
            "prod": ClusterSource(kubeconfig=str(prod.kubeconfig(tmp_path / "prod.yaml"))),
            "research": ClusterSource(
                kubeconfig=str(research.kubeconfig(tmp_path / "research.yaml")),
                context="fake"),
            "lab": ClusterSource(snapshot=str(EXTRA / "funnel-edges")),
            **extra,
        },
        default_cluster="prod",
        channels={
            CHANNEL: ("research", "hami"),  # the list form: any cluster, these namespaces
            RESEARCH_CHANNEL: ChannelAccess(cluster="research"),
            LAB_CHANNEL: ChannelAccess(cluster="lab", namespaces=("lab",)),
            ALL_CHANNEL: ChannelAccess(namespaces=("*",), clusters=("*",)),
        })


@pytest.fixture
def clusters(tmp_path: Path) -> Iterator[Clusters]:
    with FakeKubeAPI(SCENARIOS / "seven-states") as prod, \
            FakeKubeAPI(SCENARIOS / "hami-sharing") as research:
        config = fleet_config(tmp_path, prod, research,
                              broken=ClusterSource(kubeconfig=str(tmp_path / "missing.yaml")))
        fleet = build_fleet(config, watch=True)
        try:
            for source in fleet.sources.values():
                if isinstance(source, WatchSource):
                    assert source.wait_ready(10)
            yield Clusters(fleet, config, prod, research)
        finally:
            fleet.stop()


def headline_and_byline(slack: FakeSlack, count: int = 1) -> tuple[str, str]:
    post = slack.wait_for("chat.postMessage", count)[-1]
    blocks = post.params["blocks"]
    return blocks[0]["text"]["text"], blocks[1]["elements"][0]["text"]


def test_the_named_cluster_answers(clusters: Clusters, slack: FakeSlack) -> None:
    app = make_app(slack, clusters.fleet, config=clusters.config)
    ask(app, slack, "prod research/full", channel=ALL_CHANNEL)
    assert headline_and_byline(slack) == ("⏳ *exhausted* — research/full",
                                          "asked by <@U0ALICE> · cluster *prod*")
    ask(app, slack, "research hami/needs-40g", channel=ALL_CHANNEL)
    assert headline_and_byline(slack, 2) == ("🧮 *device-unfit* — hami/needs-40g",
                                             "asked by <@U0ALICE> · cluster *research*")
    ask(app, slack, "lab lab/drained-holder", channel=ALL_CHANNEL)
    assert headline_and_byline(slack, 3)[1] == "asked by <@U0ALICE> · cluster *lab*"
    # Each live question went to its own API server.
    assert any(r.path == "/api/v1/namespaces/research/pods/full" for r in clusters.prod.requests)
    assert not any("research/pods/full" in r.path for r in clusters.research.requests)
    assert any(r.path == "/api/v1/namespaces/hami/pods/needs-40g"
               for r in clusters.research.requests)


def test_a_question_without_a_cluster_goes_to_the_channels_default(
        clusters: Clusters, slack: FakeSlack) -> None:
    app = make_app(slack, clusters.fleet, config=clusters.config)
    ask(app, slack, "hami/needs-40g", channel=RESEARCH_CHANNEL)  # the channel's cluster
    assert headline_and_byline(slack)[1] == "asked by <@U0ALICE> · cluster *research*"
    ask(app, slack, "research/full", channel=CHANNEL)  # no cluster of its own: default_cluster
    assert headline_and_byline(slack, 2) == ("⏳ *exhausted* — research/full",
                                             "asked by <@U0ALICE> · cluster *prod*")
    ask(app, slack, "lab/drained-holder", channel=LAB_CHANNEL)
    assert headline_and_byline(slack, 3)[1] == "asked by <@U0ALICE> · cluster *lab*"


@pytest.mark.parametrize(("channel", "text", "refusal"), [
    (RESEARCH_CHANNEL, "prod research/full",
     "Sorry, cluster `prod` can't be described in this channel. Please ask in the channel for "
     "that cluster."),
    (LAB_CHANNEL, "research hami/needs-40g",
     "Sorry, cluster `research` can't be described in this channel. Please ask in the channel "
     "for that cluster."),
    (LAB_CHANNEL, "lab research/full",
     "Sorry, namespace `research` can't be described in this channel. Please ask in the "
     "channel for that team."),
    (CHANNEL, "prod ml/finetune",
     "Sorry, namespace `ml` can't be described in this channel. Please ask in the channel for "
     "that team."),
])
def test_access_is_per_channel_by_cluster_and_namespace(channel: str, text: str, refusal: str,
                                                        clusters: Clusters,
                                                        slack: FakeSlack) -> None:
    app = make_app(slack, clusters.fleet, config=clusters.config)
    assert ack_text(ask(app, slack, text, channel=channel)) == refusal
    slack.settle()
    assert slack.calls_to("chat.postMessage") == []


def test_an_unknown_cluster_gets_the_known_ones_privately(clusters: Clusters,
                                                          slack: FakeSlack) -> None:
    app = make_app(slack, clusters.fleet, config=clusters.config)
    assert ack_text(ask(app, slack, "staging research/full", channel=ALL_CHANNEL)) == (
        "There is no cluster `staging`. Known clusters: broken, lab, prod, research. "
        "usage: /gpuwhy [CLUSTER] NAMESPACE/POD  (also: NAMESPACE POD, -n NAMESPACE POD, "
        "pod/POD -n NAMESPACE)")
    assert ack_text(ask(app, slack, "stats staging", channel=ALL_CHANNEL)).startswith(
        "There is no cluster `staging`. Known clusters: broken, lab, prod, research. "
        "usage: /gpuwhy stats [CLUSTER] [WEEKS]")


def test_a_failing_cluster_leaves_the_others_answering(clusters: Clusters, slack: FakeSlack,
                                                       tmp_path: Path) -> None:
    app = make_app(slack, clusters.fleet, config=clusters.config)
    ask(app, slack, "broken research/full", channel=ALL_CHANNEL)
    [reply] = slack.wait_for("response_url")
    assert reply.params["text"] == (f"Cluster broken is unavailable: The kubeconfig file "
                                    f"{tmp_path / 'missing.yaml'} does not exist.")
    ask(app, slack, "prod research/full", channel=ALL_CHANNEL)
    assert headline_and_byline(slack)[0] == "⏳ *exhausted* — research/full"
    lines = {name: check() for name, check in readiness_checks(clusters.fleet).items()}
    assert (lines["clusters"].ready, lines["clusters"].detail) == (True, "3 of 4 answering")
    assert lines["cluster prod"].detail == "ready"
    assert lines["cluster broken"].detail.startswith("unavailable: The kubeconfig file ")


def test_a_cluster_whose_server_goes_away_fails_alone(tmp_path: Path, slack: FakeSlack,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    with FakeKubeAPI(SCENARIOS / "seven-states") as prod:
        with FakeKubeAPI(SCENARIOS / "hami-sharing") as gone:
            pass  # started and stopped: its port now refuses connections
        config = fleet_config(tmp_path, prod, gone)
        fleet = build_fleet(config, watch=True)
        try:
            prod_source = fleet.source("prod")
            assert isinstance(prod_source, WatchSource) and prod_source.wait_ready(10)
            research = fleet.source("research")
            assert isinstance(research, WatchSource)
            wait_until(lambda: research.cache.last_error, timeout=20)  # its first list failed
            app = make_app(slack, fleet, config=config)
            ask(app, slack, "research hami/needs-40g", channel=ALL_CHANNEL)
            [reply] = slack.wait_for("response_url")
            assert f"Cannot reach the Kubernetes API server at {gone.url}" in \
                reply.params["text"]
            ask(app, slack, "research/full", channel=ALL_CHANNEL)
            assert headline_and_byline(slack)[1] == "asked by <@U0ALICE> · cluster *prod*"
            lines = {name: check().detail for name, check in readiness_checks(fleet).items()}
            assert lines["clusters"] == "2 of 3 answering"
            assert lines["cluster research"] == (
                f"unavailable: Cannot reach the Kubernetes API server at {gone.url}: "
                "connection refused.")
        finally:
            fleet.stop()


def test_incidents_and_stats_are_per_cluster(clusters: Clusters, slack: FakeSlack,
                                             tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'fleet.db'}")
    store.upgrade()
    app = make_app(slack, clusters.fleet, config=clusters.config, store=store)
    for text in ("prod research/full", "prod research/big", "research hami/needs-40g"):
        ask(app, slack, text, channel=ALL_CHANNEL)
    slack.wait_for("chat.postMessage", 3)

    def recorded() -> list[StoredIncident] | None:
        found = store.incidents_between(TRIAGED_AT, TRIAGED_AT.replace(hour=23))
        return found if len(found) == 3 else None

    incidents = wait_until(recorded)
    assert sorted((i.cluster, i.verdict.ref) for i in incidents) == [
        ("prod", "research/big"), ("prod", "research/full"), ("research", "hami/needs-40g")]
    ask(app, slack, "stats prod 1", channel=ALL_CHANNEL)
    [prod_stats] = slack.wait_for("response_url")
    assert prod_stats.params["text"].splitlines()[0] == (
        "gpuwhy answers per week (UTC) · cluster prod")
    assert prod_stats.params["text"].splitlines()[-2].split() == ["total", "2"]
    ask(app, slack, "stats 1", channel=RESEARCH_CHANNEL)  # the channel sees its cluster only
    research_stats = slack.wait_for("response_url", 2)[-1]
    assert research_stats.params["text"].splitlines()[2].split() == ["device-unfit", "1"]
    assert research_stats.params["text"].splitlines()[-2].split() == ["total", "1"]


@pytest.mark.parametrize("asked_by", ["button", "thread"])
@pytest.mark.parametrize(("asked", "shown"), [
    ("prod research/full", False),  # the channel now describes research only
    ("research hami/needs-40g", True),  # its cluster: not the default one
])
def test_devices_recheck_the_answers_cluster(asked: str, shown: bool, asked_by: str,
                                             clusters: Clusters, slack: FakeSlack,
                                             tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'fleet.db'}")
    store.upgrade()
    app = make_app(slack, clusters.fleet, config=clusters.config, store=store)
    ask(app, slack, asked, channel=ALL_CHANNEL)
    [answer] = slack.wait_for("chat.postMessage")
    ts = answer.answer["ts"]
    wait_until(lambda: store.incident_for_thread(ALL_CHANNEL, ts))
    narrowed = replace(clusters.config, channels={
        **clusters.config.channels,
        ALL_CHANNEL: ChannelAccess(cluster="research", namespaces=("*",))})
    restarted = make_app(slack, clusters.fleet, config=narrowed, store=store)
    ref = asked.split()[1]
    if asked_by == "button":
        dispatch(restarted, button_body(channel=ALL_CHANNEL, message_ts=ts, value=ref,
                                        response_url=slack.response_url("button")))
    else:
        dispatch(restarted, event_body("show devices", thread_ts=ts, event_id="Ev-cluster",
                                       channel=ALL_CHANNEL),
                 content_type="application/json")
    if shown:
        devices = slack.wait_for("chat.postMessage", 2)[1]
        assert devices.params["thread_ts"] == ts
        assert devices.params["text"].startswith("Devices for device-unfit — hami/needs-40g:")
        assert slack.calls_to("chat.postEphemeral") == []
    else:
        [ephemeral] = slack.wait_for("chat.postEphemeral")
        assert ephemeral.params["text"] == (
            "Sorry, cluster `prod` can't be described in this channel. Please ask in the "
            "channel for that cluster.")
        assert (ephemeral.params["user"], ephemeral.params["thread_ts"]) == ("U0ALICE", ts)
        slack.settle()
        assert len(slack.calls_to("chat.postMessage")) == 1


@pytest.mark.parametrize(("text", "split"), [
    ("prod research/full", ("prod", "research/full")),
    ("prod research full", ("prod", "research full")),
    ("prod -n research full", ("prod", "-n research full")),
    ("research full", (None, "research full")),  # "full" alone is no ref: namespace + pod
    ("research/full", (None, "research/full")),
    ("-n research full", (None, "-n research full")),
    ("research/full extra", (None, "research/full extra")),
])
def test_split_cluster(text: str, split: tuple[str | None, str]) -> None:
    assert split_cluster(text, ["prod", "research"]) == split


def test_split_cluster_names_an_unknown_one() -> None:
    with pytest.raises(UnknownClusterError) as error:
        split_cluster("staging research/full", ["prod", "research"])
    assert str(error.value) == "There is no cluster `staging`. Known clusters: prod, research."
    # One cluster: a stray first word is a bad ref, not an unknown cluster.
    assert split_cluster("staging research/full", ["prod"]) == (None, "staging research/full")
    assert Fleet.single(FixedName()).names == ("one",)


class FixedName:
    cluster = "one"

    def triage(self, ref: PodRef) -> object:
        raise AssertionError("not asked")

    def as_of(self) -> None:
        return None


# --- the terminal: gpuwhy triage --cluster, stats / digest --cluster ---------------------------

def config_file(tmp_path: Path, config: BotConfig) -> Path:
    """The YAML an operator writes for ``config``'s clusters and default."""
    clusters = {name: {k: v for k, v in vars(where).items() if v not in (None, False)}
                for name, where in config.clusters.items()}
    path = tmp_path / "gpuwhy.yaml"
    path.write_text(yaml.safe_dump({"clusters": clusters,
                                    "default_cluster": config.default_cluster}))
    return path


def test_a_one_shot_fleet_builds_one_shot_live_sources(tmp_path: Path) -> None:
    """`gpuwhy triage --cluster`: the named cluster's live source answers once, as the
    --kubeconfig one does (no metrics, what it read frozen); serve's are not one-shot."""
    with FakeKubeAPI(SCENARIOS / "seven-states") as prod, \
            FakeKubeAPI(SCENARIOS / "hami-sharing") as research:
        config = fleet_config(tmp_path, prod, research)
        for one_shot in (True, False):
            source = build_fleet(config, watch=False, only="prod", one_shot=one_shot).source()
            assert isinstance(source, LiveSource) and source.one_shot is one_shot


def test_cli_triage_reads_the_named_cluster(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeKubeAPI(SCENARIOS / "seven-states") as prod, \
            FakeKubeAPI(SCENARIOS / "hami-sharing") as research:
        path = config_file(tmp_path, fleet_config(tmp_path, prod, research))
        monkeypatch.setenv("GPUWHY_CONFIG", str(path))
        db = f"sqlite:///{tmp_path / 'cli.db'}"
        assert main(["triage", "hami/needs-40g", "--cluster", "research", "--db", db]) == 0
        assert capsys.readouterr().out.startswith("🧮 device-unfit — hami/needs-40g\n")
        assert main(["triage", "lab/drained-holder", "--cluster", "lab", "--db", db]) == 0
        assert capsys.readouterr().out.startswith("✅ scheduled — lab/drained-holder\n")
        assert not any("needs-40g" in r.path for r in prod.requests)
    assert main(["triage", "research/full", "--cluster", "staging"]) == 2
    assert capsys.readouterr().err == (
        "gpuwhy: There is no cluster `staging`. Known clusters: lab, prod, research.\n")
    assert main(["triage", "research/full", "--cluster", "lab", "--snapshot", "x"]) == 2
    assert "drop --snapshot" in capsys.readouterr().err
    assert main(["stats", "--db", db, "--cluster", "lab", "--weeks", "1"]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0] == "gpuwhy answers per week (UTC) · cluster lab"
    assert table[-2].split() == ["total", "1"]


def test_cli_triage_of_an_unreachable_cluster_is_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeKubeAPI(SCENARIOS / "seven-states") as prod, FakeKubeAPI() as gone:
        pass  # both stopped: their ports refuse connections
    path = config_file(tmp_path, fleet_config(tmp_path, prod, gone))
    monkeypatch.setenv("GPUWHY_CONFIG", str(path))
    assert main(["triage", "research/full", "--cluster", "prod", "--no-record"]) == 3
    err = capsys.readouterr().err
    assert err == (f"gpuwhy: Cannot reach the Kubernetes API server at {prod.url}: "
                   "connection refused.\n")


def test_the_digest_has_one_section_per_cluster(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    store = Store(f"sqlite:///{tmp_path / 'digest.db'}")
    store.upgrade()
    seven = SnapshotSource(SCENARIOS / "seven-states")
    hami = SnapshotSource(SCENARIOS / "hami-sharing")
    monday = datetime(2026, 11, 23, tzinfo=ZoneInfo("UTC"))  # the week before TRIAGED_AT
    for n, (cluster, source, ref) in enumerate([
            ("prod", seven, "research/full"), ("prod", seven, "research/big"),
            ("prod", seven, "research/full"), ("research", hami, "hami/needs-40g")]):
        store.record(source.triage(parse_ref(ref)), cluster=cluster, asked_by="U0BOB",
                     source="slack", channel=ALL_CHANNEL, message_ts=f"1.{n}",
                     at=monday + timedelta(hours=10 + n))
    digest = load_digest(store, monday, ZoneInfo("UTC"))
    text = digest_text(digest)
    assert ("Per cluster\n"
            "  prod: 3 answers (0 before) · exhausted 2, too-large 1 · top namespaces "
            "research 3\n"
            "  research: 1 answer (0 before) · device-unfit 1 · top namespaces hami 1\n") in text
    sections = [b["text"]["text"] for b in digest_blocks(digest)
                if b["type"] == "section" and "text" in b
                and b["text"]["text"].startswith("*Cluster ")]
    assert sections == [
        "*Cluster prod* · 3 answers, 0 the week before\n⏳ `exhausted` 2\n⛔ `too-large` 1\n"
        "_top namespaces:_ research 3",
        "*Cluster research* · 1 answer, 0 the week before\n🧮 `device-unfit` 1\n"
        "_top namespaces:_ hami 1"]
    only = load_digest(store, monday, ZoneInfo("UTC"),
                       scope=Scope(cluster="research", label="cluster research"))
    assert (only.total, only.clusters) == (1, ())


def test_a_cause_is_first_time_in_the_cluster_that_never_had_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = f"sqlite:///{tmp_path / 'digest.db'}"
    store = Store(db)
    store.upgrade()
    seven = SnapshotSource(SCENARIOS / "seven-states")
    week = last_full_week(datetime.now(UTC), ZoneInfo("UTC"))  # what `gpuwhy digest` reports
    for cluster, ref, at in [
            ("prod", "research/full", week - timedelta(weeks=3)),  # long before, elsewhere
            ("research", "research/full", week + timedelta(hours=10)),
            ("prod", "research/big", week + timedelta(hours=11))]:
        store.record(seven.triage(parse_ref(ref)), cluster=cluster, asked_by="U0BOB",
                     source="slack", at=at)
    assert main(["digest", "--db", db, "--cluster", "research"]) == 0
    research = capsys.readouterr().out
    assert "First time: exhausted\n" in research
    assert main(["digest", "--db", db, "--cluster", "prod"]) == 0
    assert "First time: too-large\n" in capsys.readouterr().out
    assert main(["digest", "--db", db]) == 0  # the fleet had exhausted before
    assert "First time: too-large\n" in capsys.readouterr().out


def test_serve_answers_for_every_configured_cluster(tmp_path: Path, slack: FakeSlack) -> None:
    with FakeKubeAPI(SCENARIOS / "seven-states") as prod, FakeKubeAPI() as gone:
        pass  # research's server is gone: it says why, prod and lab answer
    with FakeKubeAPI(SCENARIOS / "seven-states") as prod:
        config = fleet_config(tmp_path, prod, gone)
        path = config_file(tmp_path, config)
        served = ServeProcess([], {
            "SLACK_BOT_TOKEN": "xoxb-fleet", "SLACK_SIGNING_SECRET": SECRET,
            "SLACK_API_URL": slack.api_url, "GPUWHY_CONFIG": str(path),
            "GPUWHY_DATABASE_URL": f"sqlite:///{tmp_path / 'serve.db'}"}, verbose=True)
        try:
            port = served.port()
            deadline = time.monotonic() + 20
            # Ready once a cluster answers; the dead one says why, not "loading" (lab may
            # still be loading its cache on a busy machine: wait for it too)
            while (ready := http(port, "/readyz"))[0] != 200 or \
                    "cluster research: unavailable" not in ready[1] or \
                    "cluster lab: ready" not in ready[1]:
                assert time.monotonic() < deadline, ready
                time.sleep(0.05)
            lines = ready[1].splitlines()
            assert lines[:2] == ["ready", "clusters: 2 of 3 answering"]
            assert set(lines[2:]) == {
                "cluster prod: ready", "cluster lab: ready", "store: ok",
                f"cluster research: unavailable: Cannot reach the Kubernetes API server at "
                f"{gone.url}: connection refused."}
            body = command_body("lab lab/drained-holder", response_url=slack.response_url())
            assert http(port, "/slack/events", body, {
                "Content-Type": "application/x-www-form-urlencoded",
                **sign(SECRET, body)}) == (200, "")
            [post] = slack.wait_for("chat.postMessage")
            # The dump is as old as the repository's copy of it: the byline may date it.
            assert post.params["blocks"][1]["elements"][0]["text"].startswith(
                "asked by <@U0ALICE> · cluster *lab*")
        finally:
            assert served.stop() == 0


def test_the_cluster_up_gauge(clusters: Clusters) -> None:
    READINGS.clusters(lambda: clusters_up(clusters.fleet))
    try:
        page = metrics_page().decode()
    finally:
        READINGS.clusters(None)
    assert 'gpuwhy_cluster_up{cluster="prod"} 1.0' in page
    assert 'gpuwhy_cluster_up{cluster="lab"} 1.0' in page
    assert 'gpuwhy_cluster_up{cluster="broken"} 0.0' in page
