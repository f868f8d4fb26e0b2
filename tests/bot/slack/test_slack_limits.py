"""Every message the bot sends fits Slack's Block Kit limits (the local Slack refuses what the
real one would), and a message Slack refuses anyway is logged and sent as plain text."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

import bot.slack.listeners.commands
from bot.answer.blocks import verdict_blocks
from bot.digest import digest_blocks, load_digest, stats_blocks, week_start
from bot.store import Store
from scoring.verdict import NodeReport, Verdict
from tests.bot.slack.test_slack_app import ask, make_app, simple_source, wait_until
from tests.slackfake import FakeSlack, block_kit_problems
from triage.vocabulary import CAUSES

UTC_ZONE = ZoneInfo("UTC")
NOW = datetime(2026, 11, 30, 14, 5, tzinfo=UTC)
LONG_NAMESPACE = "n" * 63  # Kubernetes' longest namespace
LONG_NODE = ("node-" + "x" * 58 + ".") * 3 + "z" * 56  # a 253-character DNS name


def every_cause_over(store: Store, weeks: int) -> None:
    """Each cause answered once in each of the last ``weeks`` weeks, from long names."""
    for week in range(weeks):
        at = NOW - timedelta(weeks=week)
        for number, info in enumerate(CAUSES):
            verdict = Verdict(ref=f"{LONG_NAMESPACE[:60]}{number:02d}/{'p' * 200}",
                              cause=str(info.cause), action="act",
                              nodes=[NodeReport(name=f"{LONG_NODE[:250]}{number:02d}",
                                                outcome=str(info.cause))])
            store.record(verdict, cluster="c", asked_by="U1", source="cli", at=at)


@pytest.fixture
def busy_store(tmp_path: Path) -> Store:
    store = Store(f"sqlite:///{tmp_path / 'gpuwhy.db'}")
    store.upgrade()
    return store


def test_stats_52_with_all_15_causes_fits(busy_store: Store) -> None:
    every_cause_over(busy_store, 52)
    blocks = stats_blocks(busy_store, 52, NOW)
    assert block_kit_problems(blocks) == []
    shown = "\n".join(block["text"]["text"] for block in blocks if block["type"] == "section")
    assert all(str(info.cause) in shown for info in CAUSES)
    # The 52 weeks, this one (in progress) last, each in exactly one table.
    assert shown.count("2026-W49*") == 1 and shown.count("2025-W50") == 1


def test_slash_stats_52_is_accepted_by_slack(busy_store: Store, slack: FakeSlack) -> None:
    every_cause_over(busy_store, 2)
    app = make_app(slack, simple_source(), store=busy_store)
    ask(app, slack, "stats 52")
    [reply] = slack.wait_for("response_url")
    assert reply.answer == {"ok": True}
    assert reply.params["blocks"]


def test_the_worst_case_digest_fits(busy_store: Store) -> None:
    every_cause_over(busy_store, 3)
    every_cause_over(busy_store, 3)  # every pod asked about twice: repeat offenders, long refs
    last_week = week_start(NOW, UTC_ZONE) - timedelta(weeks=1)
    digest = load_digest(busy_store, last_week, UTC_ZONE)
    blocks = digest_blocks(digest)
    assert block_kit_problems(blocks) == []
    assert digest.total and digest.repeat_offenders and digest.top_nodes


def test_a_refused_answer_is_logged_and_posted_as_plain_text(
        slack: FakeSlack, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    def oversized(verdict: Verdict, byline: str | None = None) -> list[dict[str, Any]]:
        blocks = verdict_blocks(verdict, byline)
        # A section past what it may hold.
        return [{"type": "section", "text": {"type": "mrkdwn", "text": "x" * 3001}}, *blocks]

    monkeypatch.setattr(bot.slack.listeners.commands, "verdict_blocks", oversized)
    caplog.set_level(logging.WARNING)
    app = make_app(slack, simple_source())
    ask(app, slack, "research/full")
    refused, plain = slack.wait_for("chat.postMessage", 2)
    assert refused.answer["error"] == "invalid_blocks"
    assert plain.answer["ok"] and "blocks" not in plain.params
    assert plain.params["text"].startswith("⏳ exhausted")
    wait_until(lambda: "Slack refused the answer for research/full (invalid_blocks" in caplog.text
               or None)


def test_a_refused_stats_reply_is_sent_as_plain_text(
        busy_store: Store, slack: FakeSlack, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(bot.slack.listeners.commands, "stats_blocks",
                        lambda *args: [{"type": "section", "text": {"type": "mrkdwn",
                                                                    "text": "x" * 3001}}])
    caplog.set_level(logging.WARNING)
    every_cause_over(busy_store, 1)
    ask(make_app(slack, simple_source(), store=busy_store), slack, "stats")
    refused, plain = slack.wait_for("response_url", 2)
    assert refused.answer["error"] == "invalid_blocks"
    assert plain.answer == {"ok": True} and "blocks" not in plain.params
    assert "gpuwhy answers per week" in plain.params["text"]
    assert "Slack refused stats for 4 weeks (HTTP 400" in caplog.text
