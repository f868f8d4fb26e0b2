"""Answers as the asker sees them: who asked, the data's age, private replies, hidden names."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from test_slack_app import CHANNEL, TRIAGED_AT, ask, make_app

from bot.byline import age_text, byline
from bot.sources import SnapshotSource
from tests.slackfake import FakeSlack

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
