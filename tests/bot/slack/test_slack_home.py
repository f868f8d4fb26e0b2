"""The App Home tab end to end: app_home_opened in, views.publish to the fake Slack Web API out;
refreshed at most once a minute per user; its Triage buttons answer in the app's DM."""

from __future__ import annotations

import json
import urllib.parse
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from slack_bolt import App

from bench.generate import generate
from bot.answer.home import HOME_TRIAGE_ACTION
from bot.clusters.sources import SnapshotSource
from bot.config import BotConfig
from bot.slack.app import create_app, slack_client
from bot.store import RecordingStore, Store
from tests.bot.slack.test_slack_app import SECRET, SEVEN_STATES, dispatch
from tests.slackfake import (
    APP_ID,
    BOT_USER,
    MAX_VIEW_BLOCKS,
    TEAM,
    FakeSlack,
    block_kit_problems,
    button_payload,
)
from triage.refs import parse_ref

# seven-states' pending pods were created at 12:50:45-12:51 UTC on 2026-11-30
OPENED_AT = datetime(2026, 11, 30, 14, 5, tzinfo=UTC)


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def home_app(slack: FakeSlack, source: Any, clock: Clock, *, store: Store | None = None,
             config: BotConfig | None = None) -> App:
    client = slack_client({"SLACK_BOT_TOKEN": "xoxb-test", "SLACK_API_URL": slack.api_url})
    return create_app(config or BotConfig(database_url="sqlite://"), source, store, client,
                      signing_secret=SECRET, clock=clock)


def open_home(app: App, user: str = "U0ALICE", event_id: str = "Ev1", tab: str = "home") -> None:
    body = json.dumps({
        "token": "legacy-verification-token", "team_id": TEAM, "api_app_id": APP_ID,
        "type": "event_callback", "event_id": event_id, "event_time": 1764511999,
        "event": {"type": "app_home_opened", "user": user, "channel": "D0HOME", "tab": tab,
                  "event_ts": "1764511999.000100"},
        "authorizations": [{"team_id": TEAM, "user_id": BOT_USER, "is_bot": True,
                            "is_enterprise_install": False}]})
    assert dispatch(app, body, content_type="application/json").status == 200


def published(slack: FakeSlack, count: int = 1) -> list[dict[str, Any]]:
    calls = slack.wait_for("views.publish", count)
    assert all(call.answer["ok"] for call in calls), [c.answer for c in calls]
    views = []
    for call in calls:
        view = call.params["view"]
        views.append(json.loads(view) if isinstance(view, str) else view)
    return views


def view_text(view: dict[str, Any]) -> str:
    texts = []
    for block in view["blocks"]:
        if "text" in block:
            texts.append(block["text"]["text"])
        else:
            texts.extend(element["text"] for element in block["elements"])
    return "\n".join(texts)


@pytest.fixture(scope="module")
def seven_states() -> SnapshotSource:
    return SnapshotSource(SEVEN_STATES)


def test_the_home_shows_capacity_stuck_pods_repairs(slack: FakeSlack,
                                                    seven_states: SnapshotSource) -> None:
    open_home(home_app(slack, seven_states, Clock(OPENED_AT)))
    [view] = published(slack)
    assert block_kit_problems(view["blocks"], MAX_VIEW_BLOCKS) == []
    text = view_text(view)
    assert "*seven-states: 18 GPUs on 5 of 6 nodes: 4 held, 10 free*" in text
    # the six pending GPU pods of seven-states, each its own word (expected.json)
    for word in ("too-large", "allocatable-zero", "exhausted", "no-gpu-node",
                 "taint-untolerated", "selector-mismatch"):
        assert f"*{word}* (1)" in text
    assert "research/full · 1 pod · waiting 1 h" in text
    # nodes.json: gpu-v100-broken allocatable 0 of 4; gpu-t4-noplugin GFD count 1, no plugin
    assert "gpu-v100-broken: allocatable 0, 4 out (v100-broken)" in text
    assert "gpu-t4-noplugin: no device plugin, 1 out (t4-noplugin)" in text
    assert "No incident store: no digest." in text
    buttons = [b["accessory"] for b in view["blocks"] if "accessory" in b]
    assert len(buttons) == 6
    assert {b["value"] for b in buttons} >= {"seven-states research/full"}


def test_the_home_is_refreshed_at_most_once_a_minute(slack: FakeSlack,
                                                     seven_states: SnapshotSource) -> None:
    clock = Clock(OPENED_AT)
    app = home_app(slack, seven_states, clock)
    open_home(app, event_id="Ev1")
    published(slack)
    clock.now += timedelta(seconds=59)
    open_home(app, event_id="Ev2")
    open_home(app, user="U0BOB", event_id="Ev3")  # another user's Home is their own
    published(slack, 2)
    clock.now += timedelta(seconds=2)
    open_home(app, event_id="Ev4")
    views = published(slack, 3)
    slack.settle(0.2)
    assert len(slack.calls_to("views.publish")) == 3
    assert [c.params["user_id"] for c in slack.calls_to("views.publish")] == [
        "U0ALICE", "U0BOB", "U0ALICE"]
    assert "refreshed 2026-11-30 14:06 UTC" in view_text(views[2])


def test_the_messages_tab_publishes_nothing(slack: FakeSlack,
                                            seven_states: SnapshotSource) -> None:
    open_home(home_app(slack, seven_states, Clock(OPENED_AT)), tab="messages")
    slack.settle(0.3)
    assert not slack.calls_to("views.publish")


def test_this_weeks_digest_so_far(slack: FakeSlack, seven_states: SnapshotSource,
                                  tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'incidents.db'}")
    store.upgrade()
    recorder = RecordingStore(store)
    for ref in ("research/full", "research/big", "research/full"):
        recorder.record(seven_states.triage(parse_ref(ref)), cluster="seven-states",
                        asked_by="U0ALICE", source="slack", at=OPENED_AT - timedelta(hours=1))
    assert recorder.flush()
    open_home(home_app(slack, seven_states, Clock(OPENED_AT), store=store))
    [view] = published(slack)
    text = view_text(view)
    assert "This week so far" in text and "exhausted" in text.split("This week so far")[1]
    assert "3 answers" in text.split("This week so far")[1]
    store.close()


def test_a_namespace_some_channel_may_not_see_is_counted(slack: FakeSlack,
                                                         seven_states: SnapshotSource) -> None:
    config = BotConfig(database_url="sqlite://",
                       channels={"C0SUPPORT": ("*",), "C0TEAMB": ("team-b", "research")})
    open_home(home_app(slack, seven_states, Clock(OPENED_AT), config=config))
    text = view_text(published(slack)[0])
    # gpu-a10-full's holders: ml/train-a (ml is hidden from C0TEAMB) and team-b/train-b
    assert "held by: team-b 1, other namespaces 1" in text
    assert "research/full" in text


def test_the_triage_button_answers_in_the_apps_dm(slack: FakeSlack,
                                                   seven_states: SnapshotSource) -> None:
    app = home_app(slack, seven_states, Clock(OPENED_AT))
    payload = button_payload(channel="D0HOME", message_ts="", value="seven-states research/full")
    payload["actions"][0]["action_id"] = HOME_TRIAGE_ACTION
    payload["container"] = {"type": "view", "view_id": "V1"}
    dispatch(app, urllib.parse.urlencode({"payload": json.dumps(payload)}))
    [post] = slack.wait_for("chat.postMessage")
    assert post.params["channel"] == "U0ALICE"
    assert post.params["text"].startswith("⏳ exhausted — research/full")


def test_the_generated_cluster_fits_one_home_view(slack: FakeSlack, tmp_path: Path) -> None:
    generate(tmp_path / "cluster", 500, 5000)
    # the generated pending pods were created at 2026-11-30 12:50 (from seven-states)
    open_home(home_app(slack, SnapshotSource(tmp_path / "cluster"),
                       Clock(datetime(2026, 12, 1, 9, 0, tzinfo=UTC))))
    [view] = published(slack)
    assert block_kit_problems(view["blocks"], MAX_VIEW_BLOCKS) == []
    text = view_text(view)
    # 300 pending pods in namespace bench (bench/generate.py), the newest 8 triaged
    assert "+292 older stuck workloads" in text
    assert len([b for b in view["blocks"] if "accessory" in b]) == 8
    assert "Nodes to repair" in text and "This week so far" in text
