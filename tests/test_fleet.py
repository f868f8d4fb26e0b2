"""Several clusters, one bot: two live API servers and one dump directory behind one app."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from test_slack_app import CHANNEL, TRIAGED_AT, ack_text, ask, make_app, wait_until

from bot.config import BotConfig, ChannelAccess, ClusterSource
from bot.fleet import Fleet, UnknownClusterError, build_fleet, split_cluster
from bot.serve import readiness_checks
from bot.sources import WatchSource
from bot.store import Store, StoredIncident
from tests.conftest import SCENARIOS
from tests.kubeapi import FakeKubeAPI
from tests.slackfake import FakeSlack
from triage.refs import PodRef

EXTRA = Path(__file__).parent / "fixtures" / "scenarios-extra"
RESEARCH_CHANNEL, LAB_CHANNEL, ALL_CHANNEL = "C0RESEARCH", "C0LAB", "C0ALL"


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
            assert lines["cluster research"] == "loading"
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
