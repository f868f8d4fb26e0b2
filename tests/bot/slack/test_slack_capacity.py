"""`/gpuwhy capacity` and `/gpuwhy where` end to end: signed commands in, the fake Slack Web API
out; one message within Block Kit's limits, holders of hidden namespaces counted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from slack_bolt import App

from bench.generate import generate
from bot.answer.capacity import MAX_GROUP_BLOCKS, capacity_blocks
from bot.clusters.sources import SnapshotSource
from bot.config import BotConfig, PrometheusConfig
from scoring.verdict import Verdict
from tests.bot.slack.test_slack_app import SEVEN_STATES, ack_text, ask, make_app
from tests.prometheus import URL as PROMETHEUS
from tests.prometheus import seven_states_prometheus
from tests.slackfake import FakeSlack, block_kit_problems, live_mrkdwn
from triage.classify.capacity import CapacityGroup, CapacityView, NamespaceHolding
from triage.errors import ClusterError
from triage.refs import PodRef
from triage.snapshot import Snapshot

CHANNEL = "C0SUPPORT"


@pytest.fixture(scope="module")
def seven_states() -> SnapshotSource:
    return SnapshotSource(SEVEN_STATES)


def posted_text(slack: FakeSlack) -> tuple[str, list[dict[str, Any]]]:
    [call] = slack.wait_for("chat.postMessage")
    blocks = json.loads(call.params["blocks"]) if isinstance(call.params["blocks"], str) \
        else call.params["blocks"]
    assert block_kit_problems(blocks) == []
    texts = [b["text"]["text"] if "text" in b else b["elements"][0]["text"] for b in blocks]
    return "\n".join(texts), blocks


def test_capacity_is_posted_in_the_channel(slack: FakeSlack,
                                           seven_states: SnapshotSource) -> None:
    app = make_app(slack, seven_states)
    assert ack_text(ask(app, slack, "capacity")) == ""
    text, blocks = posted_text(slack)
    # a summary, the five GPU groups of seven-states, the byline
    assert len(blocks) == 7
    assert text.startswith("*seven-states: 18 GPUs on 5 of 6 nodes: 4 held, 10 free*")
    assert "*nvidia.com/gpu · pool a10-full · NVIDIA-A10*\n1 node, 2 GPUs: 2 allocatable, " \
           "2 held, 0 free\nheld by: ml 1, team-b 1" in text
    assert "asked by <@U0ALICE>" in text


def test_a_channel_limited_to_some_namespaces_sees_the_others_counted(
        slack: FakeSlack, seven_states: SnapshotSource) -> None:
    config = BotConfig(database_url="sqlite://", channels={CHANNEL: ("research",)})
    app = make_app(slack, seven_states, config=config)
    ask(app, slack, "capacity a10-full")
    text, _ = posted_text(slack)
    # ml/train-a and team-b/train-b hold one each
    assert "held by: other namespaces 2" in text
    assert "team-b" not in text and " ml " not in text


def test_capacity_of_an_unknown_group_names_the_known_ones(
        slack: FakeSlack, seven_states: SnapshotSource) -> None:
    app = make_app(slack, seven_states)
    ask(app, slack, "capacity h200")
    [reply] = slack.wait_for("response_url")
    assert reply.params["text"].startswith("No GPU group is named h200; known: NVIDIA-A10, ")
    assert not slack.calls_to("chat.postMessage")


def test_where_is_posted_with_the_word(slack: FakeSlack, seven_states: SnapshotSource) -> None:
    app = make_app(slack, seven_states)
    assert ack_text(ask(app, slack, "where 2 nvidia.com/gpu --ns research")) == ""
    text, _ = posted_text(slack)
    assert text.startswith("✅ fits — 2 × nvidia.com/gpu on one node: free now on gpu-a100-1\n")


def test_where_in_a_limited_channel_counts_hidden_holders(
        slack: FakeSlack, seven_states: SnapshotSource) -> None:
    config = BotConfig(database_url="sqlite://", channels={CHANNEL: ("ml",)})
    app = make_app(slack, seven_states, config=config)
    ask(app, slack, "where 3 --ns ml")
    text, _ = posted_text(slack)
    # 3 could fit only on gpu-a100-1 (4), where research/ok holds 2: exhausted
    assert text.startswith("⏳ exhausted — 3 × nvidia.com/gpu on one node")
    assert "  gpu-a100-1: 2 free, 1 pod in another namespace\n" in text
    assert "research" not in text
    assert live_mrkdwn(text.replace("<@U0ALICE>", "")) == []


@pytest.mark.parametrize(("text", "says"), [
    ("where", "usage: /gpuwhy where"),
    ("where lots", "usage: /gpuwhy where"),
    ("where 0", "usage: /gpuwhy where"),
    ("where 2 --ns", "--ns needs a namespace"),
    ("where 1 --ns ml", "Sorry, namespace `ml` can't be described in this channel."),
    ("capacity a b", "usage: /gpuwhy capacity"),
])
def test_bad_asks_get_a_private_line(slack: FakeSlack, seven_states: SnapshotSource,
                                     text: str, says: str) -> None:
    config = BotConfig(database_url="sqlite://", channels={CHANNEL: ("research",)})
    app = make_app(slack, seven_states, config=config)
    assert says in ack_text(ask(app, slack, text))
    slack.settle(0.1)
    assert not slack.calls_to("chat.postMessage")


class UnreadableSource:
    cluster = "broken"

    def as_of(self) -> None:
        return None

    def triage(self, ref: PodRef) -> Verdict:
        raise ClusterError("the API server at https://10.0.0.1 did not answer within 10 s")

    def cluster_snapshot(self) -> Snapshot:
        raise ClusterError("the API server at https://10.0.0.1 did not answer within 10 s")


@pytest.mark.parametrize("text", ["capacity", "where 1"])
def test_an_unreadable_cluster_is_one_sentence(slack: FakeSlack, text: str) -> None:
    app: App = make_app(slack, UnreadableSource())
    ask(app, slack, text)
    [reply] = slack.wait_for("response_url")
    assert reply.params["text"] == "the API server at https://10.0.0.1 did not answer within 10 s"


def test_the_generated_cluster_is_one_message(slack: FakeSlack, tmp_path: Path) -> None:
    generate(tmp_path / "cluster", 500, 5000)
    app = make_app(slack, SnapshotSource(tmp_path / "cluster"))
    ask(app, slack, "capacity")
    text, blocks = posted_text(slack)
    assert len(blocks) <= 50 and "a100-9" in text


def test_a_hundred_groups_stay_one_message() -> None:
    groups = [CapacityGroup("device-plugin", "nvidia.com/gpu", f"pool-{n:03d}", "NVIDIA-A100",
                            nodes=1000, capacity=8000 - n, allocatable=8000, held=4000,
                            free=3000, largest_free=8, largest_free_node=f"node-{n}-0",
                            holders=[NamespaceHolding(f"team-{i}", 100, 10) for i in range(3)],
                            holders_total=40)
              for n in range(100)]
    view = CapacityView("big", "", 100_000, 100_000, groups)
    blocks = capacity_blocks(view, byline="asked by <@U0ALICE>")
    assert block_kit_problems(blocks) == []
    assert len(blocks) == MAX_GROUP_BLOCKS + 2
    assert blocks[-1]["elements"][0]["text"].startswith(
        f"+{100 - MAX_GROUP_BLOCKS} smaller groups (")


def test_capacity_in_slack_counts_idle_held_gpus(slack: FakeSlack,
                                                 seven_states: SnapshotSource) -> None:
    config = BotConfig(database_url="sqlite://", prometheus=PrometheusConfig(url=PROMETHEUS))
    app = make_app(slack, seven_states, config=config)
    with seven_states_prometheus():
        ask(app, slack, "capacity a10-full")
        text, _ = posted_text(slack)
    # team-b/train-b's GPU at 0 % (tests/fixtures/dcgm/seven-states/utilisation.json)
    assert "idle all of the last hour: 1 of the 2 held" in text
