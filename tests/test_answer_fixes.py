"""Answers as the asker sees them: who asked, the data's age, private replies, hidden names."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from test_slack_app import CHANNEL, TRIAGED_AT, ask, make_app, wait_until

from bot.byline import age_text, byline
from bot.sources import SnapshotSource
from bot.store import Store
from tests.slackfake import FakeSlack
from triage.refs import parse_ref
from triage.snapshot import Snapshot
from triage.suggest import closest_names

HOUR = timedelta(hours=1)
SEVEN_STATES = Path(__file__).parent / "fixtures" / "scenarios" / "seven-states"


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    fake = FakeSlack()
    yield fake
    fake.close()


def dump_written(tmp_path: Path, age: timedelta) -> Path:
    """A copy of seven-states whose files were written ``age`` before the bot's clock."""
    dump = shutil.copytree(SEVEN_STATES, tmp_path / "dump", copy_function=shutil.copy)
    stamp = (TRIAGED_AT - age).timestamp()
    for path in dump.iterdir():
        os.utime(path, (stamp, stamp))
    return dump


def test_posted_answer_says_who_asked(tmp_path: Path, slack: FakeSlack) -> None:
    app = make_app(slack, SnapshotSource(dump_written(tmp_path, timedelta(seconds=30))))
    ask(app, slack, "research/full", user="U0BOB")
    [post] = slack.wait_for("chat.postMessage")
    assert post.params["blocks"][1] == {
        "type": "context", "elements": [{"type": "mrkdwn", "text": "asked by <@U0BOB>"}]}
    assert post.params["text"].endswith(" · asked by <@U0BOB>")
    assert post.params["channel"] == CHANNEL


def test_answer_from_an_old_dump_says_how_old(tmp_path: Path, slack: FakeSlack) -> None:
    app = make_app(slack, SnapshotSource(dump_written(tmp_path, timedelta(days=3, hours=2))))
    ask(app, slack, "research/full", user="U0BOB")
    [post] = slack.wait_for("chat.postMessage")
    assert post.params["blocks"][1]["elements"][0]["text"] == (
        "asked by <@U0BOB> · :hourglass: data 3 days old (2026-11-27 12:05 UTC)")


@pytest.mark.parametrize(("age", "text"), [
    (timedelta(seconds=6), "6 s"), (timedelta(seconds=59), "59 s"),
    (timedelta(minutes=12, seconds=50), "12 min"), (timedelta(hours=5, minutes=59), "5 h"),
    (timedelta(days=1, hours=3), "1 day"), (timedelta(days=40), "40 days"),
])
def test_ages_are_said_in_their_largest_unit(age: timedelta, text: str) -> None:
    assert age_text(age) == text


def test_byline_names_the_cluster_and_keeps_a_strange_user_inert() -> None:
    line = byline("<!channel>", cluster="prod <x>", as_of=None, now=TRIAGED_AT)
    assert line == "asked by &lt;!channel&gt; · cluster *prod &lt;x&gt;*"


def test_pod_not_found_is_answered_privately(tmp_path: Path, slack: FakeSlack) -> None:
    store = Store(f"sqlite:///{tmp_path / 'gpuwhy.db'}")
    store.upgrade()
    app = make_app(slack, SnapshotSource(dump_written(tmp_path, timedelta(0))), store=store)
    ask(app, slack, "research/typo", user="U0BOB")
    [reply] = slack.wait_for("response_url")
    assert reply.params["text"].startswith("🔍 pod-not-found — research/typo: no pod, ")
    assert [b["type"] for b in reply.params["blocks"]] == ["section", "section", "section"]
    slack.settle()
    assert slack.calls_to("chat.postMessage") == []
    [incident] = wait_until(lambda: store.incidents_between(TRIAGED_AT, TRIAGED_AT + HOUR)
                            or None)
    assert (incident.verdict.cause, incident.channel, incident.message_ts) == (
        "pod-not-found", CHANNEL, None)


@pytest.mark.parametrize(("typed", "suggested"), [
    ("research/ful", ["research/full"]),
    ("research/fulll", ["research/full"]),
    ("ml/finetun", ["ml/finetune"]),
    ("infer/vlm", ["infer/vllm"]),
    ("team-b/train", ["team-b/train-b"]),
    ("research/train-a", []),  # ml/train-a is in another namespace
    ("research/zzzzzzzz", []),
])
def test_closest_names_in_the_namespace(typed: str, suggested: list[str]) -> None:
    assert closest_names(Snapshot.from_dir(SEVEN_STATES), parse_ref(typed)) == suggested


def test_closest_names_nearest_first_at_most_three() -> None:
    snapshot = Snapshot.from_dir(SEVEN_STATES)
    assert closest_names(snapshot, parse_ref("research/bog")) == ["research/big"]
    pods = [{"kind": "Pod", "metadata": {"namespace": "lab", "name": name}}
            for name in ("job-1", "job-2", "job-3", "job-10", "jobs")]
    crowded = Snapshot(pods=pods)
    assert closest_names(crowded, parse_ref("lab/job")) == ["lab/job-1", "lab/job-10",
                                                            "lab/job-2"]
