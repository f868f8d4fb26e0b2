"""The bolt app end to end: signed requests in, calls to a local fake Slack Web API out."""

from __future__ import annotations

import json
import logging
import sqlite3
import time
import urllib.parse
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from slack_bolt import App, BoltRequest, BoltResponse

from bot.answer import blocks
from bot.clusters.sources import LiveSource, SnapshotSource
from bot.config import BotConfig
from bot.digest import stats_blocks, stats_text
from bot.slack.app import create_app, slack_client
from bot.store import Store
from scoring.verdict import Verdict
from tests.kubeapi import FakeKubeAPI
from tests.paths import FIXTURES
from tests.slackfake import (
    FakeSlack,
    button_body,
    command_body,
    live_mrkdwn,
    message_event,
    sign,
)
from triage.errors import ClusterError
from triage.refs import USAGE, PodRef
from triage.vocabulary import CAUSES

SEVEN_STATES = FIXTURES / "scenarios" / "seven-states"
SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
TRIAGED_AT = datetime(2026, 11, 30, 14, 5, tzinfo=UTC)
CHANNEL = "C0SUPPORT"
FORM = "application/x-www-form-urlencoded"
Headers = dict[str, str | Sequence[str]]


def golden(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / "golden" / f"{name}.json")
                                      .read_text(encoding="utf-8"))
    return data


def as_posted(name: str, byline: str = "asked by <@U0ALICE>") -> dict[str, Any]:
    """A golden answer as the channel sees it: the byline under the headline."""
    want = golden(name)
    context = {"type": "context", "elements": [{"type": "mrkdwn", "text": byline}]}
    return {**want, "blocks": [want["blocks"][0], context, *want["blocks"][1:]],
            "text": f"{want['text']} · {byline}"}


class FailingSource:
    """A triage source whose cluster cannot be read, or that breaks in some other way."""

    cluster = "broken"

    def __init__(self, error: Exception) -> None:
        self.error = error

    def as_of(self) -> datetime | None:
        return None

    def triage(self, ref: PodRef) -> Verdict:
        raise self.error


class FixedSource:
    cluster = "fixed"

    def __init__(self, verdict: Verdict) -> None:
        self.verdict = verdict
        self.asked: list[PodRef] = []

    def as_of(self) -> datetime | None:
        return None

    def triage(self, ref: PodRef) -> Verdict:
        self.asked.append(ref)
        return self.verdict


def verdict_fixture(name: str) -> Verdict:
    data = json.loads((FIXTURES / "verdicts" / f"{name}.json").read_text(encoding="utf-8"))
    return Verdict.from_dict(data)


def simple_source() -> FixedSource:
    return FixedSource(Verdict(ref="research/full", cause="exhausted", action="wait"))


@pytest.fixture(scope="module")
def seven_states() -> SnapshotSource:
    return SnapshotSource(SEVEN_STATES)


def make_app(slack: FakeSlack, source: Any, *, store: Store | None = None,
             config: BotConfig | None = None) -> App:
    client = slack_client({"SLACK_BOT_TOKEN": "xoxb-test", "SLACK_API_URL": slack.api_url})
    return create_app(config or BotConfig(database_url="sqlite://"), source, store, client,
                      signing_secret=SECRET, clock=lambda: TRIAGED_AT)


def dispatch(app: App, body: str, *, content_type: str = FORM, secret: str = SECRET,
             timestamp: int | None = None, extra: dict[str, str] | None = None) -> BoltResponse:
    headers: Headers = {"content-type": content_type, **sign(secret, body, timestamp),
                        **(extra or {})}
    return app.dispatch(BoltRequest(body=body, headers=headers))


def ask(app: App, slack: FakeSlack, text: str, **kwargs: Any) -> BoltResponse:
    return dispatch(app, command_body(text, response_url=slack.response_url(), **kwargs))


def ack_text(response: BoltResponse) -> str:
    """The ephemeral text of an ack: bolt sends plain text alone as text/plain."""
    assert response.status == 200
    assert response.headers["content-type"] == ["text/plain;charset=utf-8"]
    return response.body


def event_body(text: str, *, thread_ts: str | None, event_id: str, **kwargs: Any) -> str:
    return json.dumps(message_event(text, thread_ts=thread_ts, event_id=event_id, **kwargs))


def web_calls(slack: FakeSlack) -> list[str]:
    """Calls besides the token check bolt makes at start-up."""
    return [call.method for call in slack.calls if call.method != "auth.test"]


Answer = Callable[..., str]


@pytest.fixture
def answered(caplog: pytest.LogCaptureFixture) -> Answer:
    """Ask, wait until the answer is posted and remembered; returns its message ts."""
    caplog.set_level(logging.INFO, logger="bot.slack.listeners.state")

    def answer(app: App, slack: FakeSlack, text: str = "research/full", **kwargs: Any) -> str:
        count = len(slack.calls_to("chat.postMessage")) + 1
        ask(app, slack, text, **kwargs)
        ts = str(slack.wait_for("chat.postMessage", count)[-1].answer["ts"])
        wait_until(lambda: f"ts {ts}" in caplog.text or None)
        return ts

    return answer


# --- the answer ---------------------------------------------------------------------------

@pytest.mark.parametrize("text", ["research/full", "research full", "-n research full",
                                  "pod/full -n research", "  research/full  "])
def test_answer_is_posted_in_the_channel(text: str, slack: FakeSlack,
                                         seven_states: SnapshotSource) -> None:
    app = make_app(slack, seven_states)
    response = ask(app, slack, text)
    assert (response.status, response.body) == (200, "")
    [post] = slack.wait_for("chat.postMessage")
    want = as_posted("seven-states--research--full")
    assert post.params["channel"] == CHANNEL
    assert post.params["blocks"] == want["blocks"]
    assert post.params["text"] == want["text"]
    assert "thread_ts" not in post.params
    assert post.headers["Authorization"] == "Bearer xoxb-test"


def test_app_compiles_the_answer_templates_before_the_first_command(
        slack: FakeSlack, seven_states: SnapshotSource, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first answer does not wait for its templates to compile: once the app is made,
    answering needs no template source at all."""
    blocks._ENV.cache.clear()  # type: ignore[union-attr]  # other tests compiled them
    app = make_app(slack, seven_states)

    def no_source(*_: object) -> None:
        raise AssertionError("a template was compiled while answering")

    monkeypatch.setattr(blocks._ENV.loader, "get_source", no_source)
    ask(app, slack, "research/full")
    [post] = slack.wait_for("chat.postMessage")
    assert post.params["blocks"] == as_posted("seven-states--research--full")["blocks"]


def test_workload_name_is_answered_with_its_kind(slack: FakeSlack,
                                                 seven_states: SnapshotSource) -> None:
    app = make_app(slack, seven_states)
    ask(app, slack, "ml/finetune")
    [post] = slack.wait_for("chat.postMessage")
    assert post.params["blocks"] == as_posted("seven-states--ml--finetune")["blocks"]
    assert post.params["blocks"][0]["text"]["text"] == "🔒 *quota-exceeded* — ml/finetune (Job)"


def test_answer_is_recorded_with_its_thread(tmp_path: Path, slack: FakeSlack,
                                            seven_states: SnapshotSource,
                                            answered: Answer) -> None:
    database = tmp_path / "gpuwhy.db"
    store = Store(f"sqlite:///{database}")
    store.upgrade()
    app = make_app(slack, seven_states, store=store)
    ts = answered(app, slack, "research/full", user="U0BOB")
    incident = wait_until(lambda: store.incident_for_thread(CHANNEL, ts))
    assert incident.verdict.cause == "exhausted"
    assert incident.created_at == TRIAGED_AT
    with sqlite3.connect(database) as db:
        rows = db.execute("SELECT asked_by, source, channel, message_ts, namespace, name "
                          "FROM incidents").fetchall()
    assert rows == [("U0BOB", "slack", CHANNEL, ts, "research", "full")]


def wait_until(probe: Any, timeout: float = 5) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (value := probe()) is not None:
            return value
        time.sleep(0.02)
    raise AssertionError("condition not met in time")


def test_store_failure_does_not_stop_the_reply(tmp_path: Path, slack: FakeSlack,
                                               seven_states: SnapshotSource,
                                               caplog: pytest.LogCaptureFixture,
                                               answered: Answer) -> None:
    store = Store(f"sqlite:///{tmp_path / 'no-schema.db'}")  # never upgraded: no tables
    app = make_app(slack, seven_states, store=store)
    ts = answered(app, slack)
    dispatch(app, event_body("show devices", thread_ts=ts, event_id="Ev-store"),
             content_type="application/json")
    replies = slack.wait_for("chat.postMessage", 2)
    wait_until(lambda: "not stored yet" in caplog.text or None)
    assert "cannot claim event Ev-store, answering anyway" in caplog.text
    assert replies[1].params["thread_ts"] == ts


def test_answer_goes_to_the_asker_when_the_bot_is_not_in_the_channel(
        slack: FakeSlack, seven_states: SnapshotSource) -> None:
    slack.fail("chat.postMessage", "not_in_channel")
    app = make_app(slack, seven_states)
    ask(app, slack, "research/full")
    [reply] = slack.wait_for("response_url")
    assert reply.params["blocks"] == as_posted("seven-states--research--full")["blocks"]
    assert reply.params["text"].endswith("(I can't post in this channel; invite me to get a "
                                         "thread.)")


def test_rate_limited_post_is_retried_after_retry_after(slack: FakeSlack,
                                                        seven_states: SnapshotSource) -> None:
    slack.rate_limit("chat.postMessage", times=1, retry_after=1)
    app = make_app(slack, seven_states)
    started = time.monotonic()
    ask(app, slack, "research/full")
    first, second = slack.wait_for("chat.postMessage", 2)
    assert time.monotonic() - started >= 1
    assert first.params == second.params
    slack.settle()
    assert web_calls(slack) == ["chat.postMessage", "chat.postMessage"]


# --- bad input, help, failures --------------------------------------------------------------

@pytest.mark.parametrize(("text", "message"), [
    ("", USAGE),
    ("   ", USAGE),
    ("research", USAGE),
    ("research/full extra words", USAGE),
    ("-n research", USAGE),
    ("-n a -n b pod", USAGE),
    ("x" * 400, "that is 400 characters; a pod reference is shorter. " + USAGE),
    ("Research/full", "`Research` is not a valid namespace name. " + USAGE),
    ("research/Bad_Name", "`Bad_Name` is not a valid pod or workload name. " + USAGE),
    ("<!channel>/x", "`&lt;!channel&gt;` is not a valid namespace name. " + USAGE),
    ("research/a/b", "`research/a/b` has more than one `/`. " + USAGE),
    ("help research/full", USAGE),
    ("status", USAGE),
    ("show devices", "Reply `show devices` in the thread of a gpuwhy answer, or press its Show "
                     "devices button. " + USAGE),
    ("  Show Devices ", "Reply `show devices` in the thread of a gpuwhy answer, or press its Show "
                        "devices button. " + USAGE),
])
def test_bad_input_gets_the_usage_line_and_nothing_else(text: str, message: str,
                                                        slack: FakeSlack,
                                                        seven_states: SnapshotSource) -> None:
    app = make_app(slack, seven_states)
    assert ack_text(ask(app, slack, text)) == message
    slack.settle()
    assert web_calls(slack) == []


def test_help_lists_usage_and_every_cause(slack: FakeSlack,
                                          seven_states: SnapshotSource) -> None:
    text = ack_text(ask(make_app(slack, seven_states), slack, "help"))
    lines = text.splitlines()
    assert lines[0] == USAGE
    assert lines[1] == "usage: /gpuwhy stats [WEEKS]  (WEEKS: 1 to 52)"
    assert lines[-len(CAUSES):] == [f"{c.emoji} `{c.cause}` — {c.summary}" for c in CAUSES]
    words = [line.split("`")[1] for line in lines[-len(CAUSES):]]
    assert words == [
        "quota-exceeded", "runtimeclass-missing", "queued", "no-gpu-request",
        "selector-mismatch",
        "taint-untolerated", "no-gpu-node", "allocatable-zero", "too-large", "exhausted",
        "device-unfit", "other-constraint", "scheduler-unavailable", "node-runtime-error",
        "scheduled", "pod-not-found"]


@pytest.mark.parametrize(("error", "sentence"), [
    ("The cluster at https://127.0.0.1:1 is unreachable: connection refused.",
     "The cluster at https://127.0.0.1:1 is unreachable: connection refused."),
    ("gpuwhy may not list pods\n  in namespace research.",
     "gpuwhy may not list pods in namespace research."),
    ("", "Sorry, the cluster could not be read. Please try again in a minute."),
])
def test_cluster_failure_is_one_plain_sentence(error: str, sentence: str,
                                               slack: FakeSlack) -> None:
    app = make_app(slack, FailingSource(ClusterError(error)))
    assert ask(app, slack, "research/full").body == ""
    [reply] = slack.wait_for("response_url")
    assert reply.params == {"text": sentence}
    slack.settle()
    assert web_calls(slack) == ["response_url"]


def test_unreachable_live_cluster_is_one_plain_sentence(tmp_path: Path,
                                                        slack: FakeSlack) -> None:
    with FakeKubeAPI() as gone:  # started and stopped: its port now refuses connections
        kubeconfig = gone.kubeconfig(tmp_path / "kubeconfig")
    app = make_app(slack, LiveSource(str(kubeconfig)))
    ask(app, slack, "research/full")
    [reply] = slack.wait_for("response_url")
    assert reply.params == {"text": f"Cannot reach the Kubernetes API server at {gone.url}: "
                                    "connection refused."}
    assert slack.calls_to("chat.postMessage") == []


def test_unexpected_failure_is_an_apology_and_a_logged_traceback(
        slack: FakeSlack, caplog: pytest.LogCaptureFixture) -> None:
    app = make_app(slack, FailingSource(KeyError("internal detail 42")))
    with caplog.at_level(logging.ERROR):
        ask(app, slack, "research/full")
        [reply] = slack.wait_for("response_url")
    assert reply.params["text"] == ("Sorry, something went wrong while answering that. "
                                    "It has been logged; please try again.")
    assert "internal detail" not in json.dumps(reply.params)
    assert "Traceback" in caplog.text and "internal detail 42" in caplog.text


# --- access control ---------------------------------------------------------------------------

ACCESS = BotConfig(database_url="sqlite://", channels={CHANNEL: ("research",), "C0ALL": ("*",)})


@pytest.mark.parametrize(("channel", "text", "refusal"), [
    ("C0RANDOM", "research/full",
     "Sorry, I don't answer in this channel. Please ask in your support channel."),
    ("C0RANDOM", "stats", "Sorry, I don't answer in this channel. Please ask in your support "
                          "channel."),
    (CHANNEL, "ml/finetune", "Sorry, namespace `ml` can't be described in this channel. "
                             "Please ask in the channel for that team."),
])
def test_access_is_refused_politely_and_logged(channel: str, text: str, refusal: str,
                                               slack: FakeSlack,
                                               caplog: pytest.LogCaptureFixture) -> None:
    source = simple_source()
    app = make_app(slack, source, config=ACCESS)
    with caplog.at_level(logging.INFO):
        assert ack_text(ask(app, slack, text, channel=channel)) == refusal
    assert "refused" in caplog.text
    slack.settle()
    assert web_calls(slack) == []
    assert source.asked == []  # no triage at all


@pytest.mark.parametrize(("channel", "text"),
                         [(CHANNEL, "research/full"), ("C0ALL", "ml/finetune")])
def test_allowed_channels_get_answers(channel: str, text: str, slack: FakeSlack,
                                      seven_states: SnapshotSource) -> None:
    ask(make_app(slack, seven_states, config=ACCESS), slack, text, channel=channel)
    assert slack.wait_for("chat.postMessage")[0].params["channel"] == channel


# --- "show devices" ---------------------------------------------------------------------------

@pytest.mark.parametrize("text", ["show devices", "  Show Devices  ", "SHOW DEVICES"])
def test_show_devices_in_the_thread(text: str, slack: FakeSlack, seven_states: SnapshotSource,
                                    answered: Answer) -> None:
    app = make_app(slack, seven_states)
    ts = answered(app, slack)
    response = dispatch(app, event_body(text, thread_ts=ts, event_id="Ev1"),
                        content_type="application/json")
    assert response.status == 200
    reply = slack.wait_for("chat.postMessage", 2)[1]
    want = golden("seven-states--research--full")
    assert reply.params["thread_ts"] == ts
    assert reply.params["channel"] == CHANNEL
    assert reply.params["blocks"] == want["devices_blocks"]
    assert reply.params["text"] == want["devices_text"]


def test_show_devices_button_replies_in_the_thread(slack: FakeSlack,
                                                   seven_states: SnapshotSource,
                                                   answered: Answer) -> None:
    app = make_app(slack, seven_states)
    answered(app, slack, "research/full")
    ts = answered(app, slack, "research/big")
    body = button_body(channel=CHANNEL, message_ts=ts, value="research/big",
                       response_url=slack.response_url("button"))
    assert dispatch(app, body).status == 200
    reply = slack.wait_for("chat.postMessage", 3)[2]
    assert reply.params["thread_ts"] == ts
    assert reply.params["blocks"] == golden("seven-states--research--big")["devices_blocks"]


def test_button_of_a_forgotten_answer_says_so(slack: FakeSlack,
                                              seven_states: SnapshotSource) -> None:
    app = make_app(slack, seven_states)
    body = button_body(channel=CHANNEL, message_ts="1700000000.000001", value="research/full",
                       response_url=slack.response_url("button"))
    assert dispatch(app, body).status == 200
    [reply] = slack.wait_for("response_url")
    assert reply.params["text"] == ("I no longer have that answer, so I can't show its devices. "
                                    "Ask again with /gpuwhy research/full.")
    assert reply.params["replace_original"] is False


def test_show_devices_after_a_restart_comes_from_the_store(tmp_path: Path, slack: FakeSlack,
                                                           seven_states: SnapshotSource,
                                                           answered: Answer) -> None:
    store = Store(f"sqlite:///{tmp_path / 'gpuwhy.db'}")
    store.upgrade()
    ts = answered(make_app(slack, seven_states, store=store), slack)
    wait_until(lambda: store.incident_for_thread(CHANNEL, ts))
    restarted = make_app(slack, FailingSource(ClusterError("unreachable")), store=store)
    dispatch(restarted, event_body("show devices", thread_ts=ts, event_id="Ev-restart"),
             content_type="application/json")
    reply = slack.wait_for("chat.postMessage", 2)[1]
    assert reply.params["blocks"] == golden("seven-states--research--full")["devices_blocks"]


@pytest.mark.parametrize(("text", "thread_ts"), [
    ("show devices", "1699999999.000001"),  # some other thread
    ("thanks, that was it", "ours"),  # other text in our thread
    ("show devices please", "ours"),
    ("show devices", None),  # top level, no thread
])
def test_other_messages_are_ignored(text: str, thread_ts: str | None, slack: FakeSlack,
                                    seven_states: SnapshotSource, answered: Answer) -> None:
    app = make_app(slack, seven_states)
    ts = answered(app, slack)
    thread = ts if thread_ts == "ours" else thread_ts
    response = dispatch(app, event_body(text, thread_ts=thread, event_id="Ev-other"),
                        content_type="application/json")
    assert response.status == 200
    slack.settle()
    assert web_calls(slack) == ["chat.postMessage"]


def test_a_retried_event_is_answered_once(slack: FakeSlack, seven_states: SnapshotSource,
                                          answered: Answer) -> None:
    app = make_app(slack, seven_states)
    body = event_body("show devices", thread_ts=answered(app, slack), event_id="Ev-retried")
    first = dispatch(app, body, content_type="application/json")
    retries = [dispatch(app, body, content_type="application/json",
                        extra={"x-slack-retry-num": str(n), "x-slack-retry-reason": "http_timeout"})
               for n in (1, 2)]
    assert [r.status for r in (first, *retries)] == [200, 200, 200]
    slack.wait_for("chat.postMessage", 2)
    slack.settle(0.5)
    assert web_calls(slack) == ["chat.postMessage", "chat.postMessage"]


@pytest.mark.parametrize(("config", "refusal"), [
    (BotConfig(database_url="sqlite://", channels={CHANNEL: ("ml",)}),
     "Sorry, namespace `research` can't be described in this channel. "
     "Please ask in the channel for that team."),
    (BotConfig(database_url="sqlite://", channels={"C0OTHER": ("*",)}),
     "Sorry, I don't answer in this channel. Please ask in your support channel."),
])
@pytest.mark.parametrize("asked_by", ["button", "thread"])
def test_devices_are_refused_where_access_was_withdrawn(
        config: BotConfig, refusal: str, asked_by: str, tmp_path: Path, slack: FakeSlack,
        caplog: pytest.LogCaptureFixture, answered: Answer) -> None:
    store = Store(f"sqlite:///{tmp_path / 'gpuwhy.db'}")
    store.upgrade()
    ts = answered(make_app(slack, simple_source(), store=store), slack)
    wait_until(lambda: store.incident_for_thread(CHANNEL, ts))
    reconfigured = make_app(slack, simple_source(), store=store, config=config)
    with caplog.at_level(logging.INFO):
        if asked_by == "button":
            dispatch(reconfigured, button_body(channel=CHANNEL, message_ts=ts,
                                               value="research/full",
                                               response_url=slack.response_url("button")))
        else:
            dispatch(reconfigured, event_body("show devices", thread_ts=ts, event_id="Ev-acl"),
                     content_type="application/json")
        [ephemeral] = slack.wait_for("chat.postEphemeral")
    assert ephemeral.params["text"] == refusal
    assert (ephemeral.params["user"], ephemeral.params["thread_ts"]) == ("U0ALICE", ts)
    assert "refused devices of research/full for U0ALICE" in caplog.text
    slack.settle()
    assert web_calls(slack) == ["chat.postMessage", "chat.postEphemeral"]


def test_button_failure_is_an_apology(slack: FakeSlack, answered: Answer,
                                      caplog: pytest.LogCaptureFixture) -> None:
    app = make_app(slack, simple_source())
    ts = answered(app, slack)
    slack.fail("chat.postMessage", "channel_not_found")
    with caplog.at_level(logging.ERROR):
        dispatch(app, button_body(channel=CHANNEL, message_ts=ts, value="research/full",
                                  response_url=slack.response_url("button")))
        [reply] = slack.wait_for("response_url")
    assert reply.params == {"text": "Sorry, something went wrong while answering that. It has "
                                     "been logged; please try again.",
                            "replace_original": False}
    assert "channel_not_found" in caplog.text


def test_thread_failure_is_logged_and_nothing_else(slack: FakeSlack, answered: Answer,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    app = make_app(slack, simple_source())
    ts = answered(app, slack)
    slack.fail("chat.postMessage", "channel_not_found")
    with caplog.at_level(logging.ERROR):
        dispatch(app, event_body("show devices", thread_ts=ts, event_id="Ev-fail"),
                 content_type="application/json")
        slack.wait_for("chat.postMessage", 2)
        wait_until(lambda: f"showing devices of {CHANNEL}/{ts} for U0ALICE failed" in caplog.text
                   or None)
    slack.settle()
    assert web_calls(slack) == ["chat.postMessage", "chat.postMessage"]


# --- mrkdwn injection -------------------------------------------------------------------------

HOSTILE_SHOWN = "&lt;!channel&gt; &lt;@U1&gt; &lt;http://x|y&gt; &amp;amp;"
OWN_DATE = "<!date^1796047500^{date_short_pretty} {time}|2026-11-30 14:05 UTC>"


def said(call: Any) -> list[str]:
    """Every text of a message the app sent: the fallback and each text inside the blocks."""
    texts: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                if key == "text" and isinstance(item, str):
                    texts.append(item)
                else:
                    walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk({"text": call.params.get("text", ""), "blocks": call.params.get("blocks", [])})
    return texts


def test_hostile_cluster_strings_reach_slack_inert(slack: FakeSlack, answered: Answer) -> None:
    app = make_app(slack, FixedSource(verdict_fixture("hostile")))
    ts = answered(app, slack)
    dispatch(app, event_body("show devices", thread_ts=ts, event_id="Ev-hostile"),
             content_type="application/json")
    answer, devices = slack.wait_for("chat.postMessage", 2)
    assert answer.answer["ok"] and devices.answer["ok"]  # Slack took the blocks
    # The only live mrkdwn: the asker's mention in the answer, and the devices table's date.
    for call, mentions in ((answer, ["<@U0ALICE>", "<@U0ALICE>"]), (devices, [])):
        texts = said(call)
        assert [t for text in texts for t in live_mrkdwn(text) if t != OWN_DATE] == mentions
        assert any(HOSTILE_SHOWN in text for text in texts)
    assert answer.params["text"].count(HOSTILE_SHOWN) == 4


@pytest.mark.parametrize("failure", ["cluster", "forgotten", "not_in_channel"])
def test_hostile_strings_in_ephemeral_replies_are_inert(failure: str, slack: FakeSlack) -> None:
    hostile = verdict_fixture("hostile")
    if failure == "cluster":
        app = make_app(slack, FailingSource(ClusterError(f"cannot read {hostile.ref}.")))
        ask(app, slack, "research/full")
    elif failure == "forgotten":
        app = make_app(slack, FixedSource(hostile))
        dispatch(app, button_body(channel=CHANNEL, message_ts="1700000000.000001",
                                  value=hostile.ref, response_url=slack.response_url()))
    else:
        slack.fail("chat.postMessage", "not_in_channel")
        app = make_app(slack, FixedSource(hostile))
        ask(app, slack, "research/full")
    [reply] = slack.wait_for("response_url")
    assert reply.answer["ok"]
    texts = said(reply)
    # The answer meant for the channel keeps its byline, the asker's mention.
    mentions = ["<@U0ALICE>", "<@U0ALICE>"] if failure == "not_in_channel" else []
    assert [t for text in texts for t in live_mrkdwn(text)] == mentions
    assert "research/" + HOSTILE_SHOWN in texts[0]


# --- signatures -------------------------------------------------------------------------------

@pytest.mark.parametrize("case", ["forged", "missing", "stale", "future"])
def test_unsigned_or_stale_requests_are_refused(case: str, slack: FakeSlack,
                                                seven_states: SnapshotSource) -> None:
    app = make_app(slack, seven_states)
    body = command_body("research/full", response_url=slack.response_url())
    if case == "missing":
        response = app.dispatch(BoltRequest(body=body, headers={"content-type": FORM}))
    elif case == "forged":
        response = dispatch(app, body, secret="not-the-secret")
    else:
        skew = -301 if case == "stale" else 301
        response = dispatch(app, body, timestamp=int(time.time()) + skew)
    assert response.status == 401
    slack.settle()
    assert web_calls(slack) == []


def test_a_tampered_body_is_refused(slack: FakeSlack, seven_states: SnapshotSource) -> None:
    app = make_app(slack, seven_states)
    body = command_body("research/full", response_url=slack.response_url())
    headers: Headers = {"content-type": FORM, **sign(SECRET, body)}
    tampered = body.replace(urllib.parse.quote("research/full", safe=""), "ml%2Ffinetune")
    assert tampered != body
    assert app.dispatch(BoltRequest(body=tampered, headers=headers)).status == 401
    slack.settle()
    assert web_calls(slack) == []


# --- stats ------------------------------------------------------------------------------------

def test_stats_answers_from_the_store(tmp_path: Path, slack: FakeSlack,
                                      seven_states: SnapshotSource, answered: Answer) -> None:
    store = Store(f"sqlite:///{tmp_path / 'gpuwhy.db'}")
    store.upgrade()
    app = make_app(slack, seven_states, store=store)
    ts = answered(app, slack)
    wait_until(lambda: store.incident_for_thread(CHANNEL, ts))
    assert ask(app, slack, "stats 2").body == ""
    [reply] = slack.wait_for("response_url")
    assert reply.answer["ok"]
    # The same numbers as `gpuwhy stats --weeks 2` at that moment.
    assert reply.params["text"] == stats_text(store, 2, TRIAGED_AT)
    assert reply.params["blocks"] == stats_blocks(store, 2, TRIAGED_AT)
    rows = {line.split()[0]: line.split()[1:] for line in reply.params["text"].splitlines()[2:4]}
    assert rows == {"exhausted": ["0", "1"], "total": ["0", "1"]}


def test_stats_when_the_store_fails_is_one_sentence(tmp_path: Path, slack: FakeSlack) -> None:
    store = Store(f"sqlite:///{tmp_path / 'no-schema.db'}")  # never upgraded: no tables
    ask(make_app(slack, simple_source(), store=store), slack, "stats")
    [reply] = slack.wait_for("response_url")
    assert reply.params["text"].startswith("database sqlite:///")
    assert "\n" not in reply.params["text"] and "Traceback" not in reply.params["text"]


@pytest.mark.parametrize(("text", "start"), [
    ("stats 0", "weeks must be from 1 to 52, not 0."),
    ("stats many", "weeks must be a whole number from 1 to 52, not 'many'."),
    ("stats 1 2", "usage: /gpuwhy stats [WEEKS]"),
    ("stats 53", "weeks must be from 1 to 52, not 53."),
    ("stats -1", "weeks must be from 1 to 52, not -1."),
])
def test_bad_stats_input_gets_its_usage(text: str, start: str, slack: FakeSlack,
                                        seven_states: SnapshotSource) -> None:
    assert ack_text(ask(make_app(slack, seven_states), slack, text)).startswith(start)


def test_stats_without_a_store_says_so(slack: FakeSlack, seven_states: SnapshotSource) -> None:
    assert ack_text(ask(make_app(slack, seven_states), slack, "stats")) == (
        "Stats need the incident store, and this gpuwhy runs without one.")
