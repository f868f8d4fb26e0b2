"""gpuwhy's metrics move where the work happens: answers, triage time, Slack errors, store
writes, digest posts; readings of live objects appear only while registered."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from prometheus_client.parser import text_string_to_metric_families
from slack_sdk.errors import SlackApiError

from bot.app import slack_client
from bot.cli import main
from bot.digest import load_digest, post_once
from bot.metrics import READINGS, REGISTRY, CacheReading, page
from bot.store import RecordingStore, Store
from tests.conftest import SCENARIOS
from tests.slackfake import FakeSlack
from triage.verdict import Verdict

SEVEN = str(SCENARIOS / "seven-states")


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    fake = FakeSlack()
    yield fake
    fake.close()


def test_a_cli_answer_is_counted_and_timed(capsys: pytest.CaptureFixture[str]) -> None:
    answers = sample("gpuwhy_answers_total", cause="exhausted", source="cli")
    timed = sample("gpuwhy_triage_duration_seconds_count", reader="snapshot")
    assert main(["triage", "research/full", "--snapshot", SEVEN, "--no-record"]) == 0
    capsys.readouterr()
    assert sample("gpuwhy_answers_total", cause="exhausted", source="cli") == answers + 1
    assert sample("gpuwhy_triage_duration_seconds_count", reader="snapshot") == timed + 1


def test_slack_errors_are_counted_by_method_and_error(slack: FakeSlack) -> None:
    client = slack_client({"SLACK_BOT_TOKEN": "xoxb-test", "SLACK_API_URL": slack.api_url})
    slack.fail("chat.postMessage", "channel_not_found")
    before = sample("gpuwhy_slack_api_errors_total", method="chat.postMessage",
                    error="channel_not_found")
    with pytest.raises(SlackApiError):
        client.chat_postMessage(channel="C0NOPE", text="hello")
    assert sample("gpuwhy_slack_api_errors_total", method="chat.postMessage",
                  error="channel_not_found") == before + 1
    client.auth_test()  # a call that works counts nothing
    assert sample("gpuwhy_slack_api_errors_total", method="auth.test",
                  error="channel_not_found") == 0


def test_slack_unreachable_is_counted() -> None:
    client = slack_client({"SLACK_BOT_TOKEN": "xoxb-test",
                           "SLACK_API_URL": "http://127.0.0.1:1/api/"})
    before = sample("gpuwhy_slack_api_errors_total", method="auth.test", error="unreachable")
    with pytest.raises(OSError):
        client.auth_test()
    assert sample("gpuwhy_slack_api_errors_total", method="auth.test",
                  error="unreachable") == before + 1


def test_refused_store_writes_are_counted(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'store.db'}")
    store.upgrade()
    with store.engine.begin() as connection:
        connection.exec_driver_sql("ALTER TABLE incidents RENAME TO incidents_away")
    recorder = RecordingStore(store)
    before = sample("gpuwhy_store_writes_failed_total")
    verdict = Verdict("ml/a", "exhausted", "wait")
    assert recorder.record(verdict, cluster="c", asked_by="U1", source="slack") is None
    assert recorder.flush() is False  # the retry fails too
    assert sample("gpuwhy_store_writes_failed_total") == before + 2
    with store.engine.begin() as connection:
        connection.exec_driver_sql("ALTER TABLE incidents_away RENAME TO incidents")
    assert recorder.flush() is True
    assert sample("gpuwhy_store_writes_failed_total") == before + 2
    store.close()


def test_digest_posts_are_counted_by_result(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'store.db'}")
    store.upgrade()
    utc = ZoneInfo("UTC")
    digest = load_digest(store, datetime(2026, 11, 23, tzinfo=utc), utc)
    before = {result: sample("gpuwhy_digest_posts_total", result=result)
              for result in ("posted", "already-posted", "failed")}

    def down(channel: str, text: str, blocks: object) -> None:
        raise ConnectionError("slack is down")

    with pytest.raises(ConnectionError):
        post_once(store, digest, "C1", down)
    assert post_once(store, digest, "C1", lambda *_: None) is True
    assert post_once(store, digest, "C1", lambda *_: None) is False
    after = {result: sample("gpuwhy_digest_posts_total", result=result) for result in before}
    assert {result: after[result] - before[result] for result in before} == {
        "posted": 1, "already-posted": 1, "failed": 1}
    store.close()


def test_readings_appear_only_while_registered() -> None:
    assert sample("gpuwhy_watch_cache_age_seconds") == 0
    READINGS.watch_cache(lambda: CacheReading(12.5, {"nodes": 6, "pods": 40}))
    READINGS.incidents_waiting(lambda: 3)
    try:
        families = {family.name: family for family in
                    text_string_to_metric_families(page().decode())}
        assert families["gpuwhy_watch_cache_age_seconds"].samples[0].value == 12.5
        assert {s.labels["kind"]: s.value
                for s in families["gpuwhy_watch_cache_objects"].samples} == {
            "nodes": 6, "pods": 40}
        assert families["gpuwhy_incidents_waiting"].samples[0].value == 3
    finally:
        READINGS.watch_cache(None)
        READINGS.incidents_waiting(None)
    names = {family.name for family in text_string_to_metric_families(page().decode())}
    assert "gpuwhy_watch_cache_age_seconds" not in names
    assert {"gpuwhy_answers", "gpuwhy_triage_duration_seconds",
            "gpuwhy_kubernetes_api_requests", "gpuwhy_slack_api_errors",
            "gpuwhy_store_writes_failed", "gpuwhy_digest_posts"} <= names
