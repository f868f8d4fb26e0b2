"""`gpuwhy digest`, `gpuwhy stats`, `gpuwhy db upgrade`: output, posting, and bad input."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from slack_sdk import WebClient

from bot.cli.main import main
from bot.config import DigestSchedule, load_config
from bot.digest import Blocks, DigestScheduler, last_full_week, stats_blocks, week_key
from bot.store import Store
from scoring.verdict import Verdict
from tests.slackfake import FakeSlack


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("GPUWHY_DATABASE_URL", "GPUWHY_CONFIG", "SLACK_BOT_TOKEN", "SLACK_API_URL",
                 "XDG_DATA_HOME", "GPUWHY_DIGEST_CHANNEL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def db(tmp_path: Path) -> str:
    """A store with two answers in the last full week (UTC) and one the week before."""
    url = f"sqlite:///{tmp_path / 'gpuwhy.db'}"
    store = Store(url)
    store.upgrade()
    last_week = last_full_week(datetime.now(UTC), ZoneInfo("UTC")) + timedelta(days=2)
    for number, (ref, cause, at) in enumerate((
            ("ml/train", "exhausted", last_week),
            ("ml/train", "exhausted", last_week + timedelta(hours=1)),
            ("ml/train", "allocatable-zero", last_week - timedelta(days=7)))):
        store.record(Verdict(ref, cause, "act"), cluster="prod", asked_by="U1", source="slack",
                     channel="C1", message_ts=f"1.{number}", at=at)
    store.close()
    return url


@pytest.fixture
def slack(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeSlack]:
    fake = FakeSlack()
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-test")
    monkeypatch.setenv("SLACK_API_URL", fake.api_url)
    yield fake
    fake.close()


def last_week_key() -> str:
    return week_key(last_full_week(datetime.now(UTC), ZoneInfo("UTC")))


def test_digest_prints_last_week(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["digest", "--db", db]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"gpuwhy digest {last_week_key()}")
    assert "2 answers, 1 the week before" in out
    assert "Asked more than once: ml/train ×2" in out


def test_stats_prints_a_table(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["stats", "--db", db, "--weeks", "3"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "gpuwhy answers per week (UTC)"
    assert lines[1].split()[1:3] == [week_key(last_full_week(datetime.now(UTC),
                                                              ZoneInfo("UTC")) - timedelta(7)),
                                     last_week_key()]
    assert lines[2].split() == ["allocatable-zero", "1", "0", "0"]
    assert lines[3].split() == ["exhausted", "0", "2", "0"]


def test_terminal_and_slack_stats_show_the_same_numbers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`gpuwhy stats` and `/gpuwhy stats` (stats_blocks, as the slash command sends it)."""
    config = tmp_path / "gpuwhy.yaml"
    config.write_text("digest:\n  timezone: Etc/GMT+12\n")  # no DST: 7 days = one week
    monkeypatch.setenv("GPUWHY_CONFIG", str(config))
    db = f"sqlite:///{tmp_path / 'gpuwhy.db'}"
    store = Store(db)
    store.upgrade()
    now = datetime.now(UTC)
    for number, (cause, ago) in enumerate((("exhausted", timedelta(days=14)),
                                           ("exhausted", timedelta(days=7)),
                                           ("exhausted", timedelta(days=7, seconds=1)),
                                           ("allocatable-zero", timedelta(seconds=1)))):
        store.record(Verdict(f"ml/p{number}", cause, "act"), cluster="prod", asked_by="cli",
                     source="cli", at=now - ago)
    assert main(["stats", "--db", db, "--weeks", "3"]) == 0
    terminal = capsys.readouterr().out.rstrip("\n")
    slack = stats_blocks(store, 3, datetime.now(UTC), load_config().digest.timezone)
    store.close()
    assert slack[0]["text"]["text"] == f"```{terminal}```"
    lines = terminal.splitlines()
    assert lines[0] == "gpuwhy answers per week (Etc/GMT+12)"
    assert [line.split()[1:] for line in lines[2:5]] == [
        ["0", "0", "1"], ["1", "2", "0"], ["1", "2", "1"]]
    assert [line.split()[0] for line in lines[2:5]] == ["allocatable-zero", "exhausted", "total"]


def test_db_upgrade_creates_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "new" / "gpuwhy.db"
    assert main(["db", "upgrade", "--db", f"sqlite:///{path}"]) == 0
    assert path.exists()
    assert "is up to date" in capsys.readouterr().out


def test_db_url_from_the_environment(
    db: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("GPUWHY_DATABASE_URL", db)
    assert main(["digest"]) == 0
    assert "2 answers" in capsys.readouterr().out


def test_db_flag_beats_the_environment(
    db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    elsewhere = tmp_path / "elsewhere.db"
    monkeypatch.setenv("GPUWHY_DATABASE_URL", f"sqlite:///{elsewhere}")
    assert main(["digest", "--db", db]) == 0
    assert "2 answers" in capsys.readouterr().out
    assert not elsewhere.exists()


def test_default_store_is_in_the_user_data_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert main(["db", "upgrade"]) == 0
    path = tmp_path / "xdg" / "gpuwhy" / "gpuwhy.db"
    assert capsys.readouterr().out == f"database sqlite:///{path} is up to date\n"
    assert path.is_file()


def test_config_file_names_the_store_as_for_serve(
    db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A CronJob running `gpuwhy digest` with the bot's config reads the bot's store."""
    config = tmp_path / "gpuwhy.yaml"
    config.write_text(f"database_url: {db}\n")
    monkeypatch.setenv("GPUWHY_CONFIG", str(config))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert main(["digest"]) == 0
    assert "2 answers" in capsys.readouterr().out
    assert not (tmp_path / "xdg").exists()


def test_post_goes_out_once_per_week(
    db: str, slack: FakeSlack, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["digest", "--db", db, "--post", "C-digest"]) == 0
    assert main(["digest", "--db", db, "--post", "C-digest"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [f"posted the digest {last_week_key()} to C-digest",
                   f"the digest {last_week_key()} was already posted to C-digest"]
    (call,) = slack.calls_to("chat.postMessage")
    assert call.params["channel"] == "C-digest"
    assert call.headers["Authorization"] == "Bearer xoxb-test"
    blocks = call.params["blocks"]
    blocks = json.loads(blocks) if isinstance(blocks, str) else blocks
    assert blocks[0]["text"]["text"] == f"gpuwhy digest {last_week_key()}"


def test_post_without_a_channel_goes_to_the_configured_one(
    db: str, slack: FakeSlack, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str]
) -> None:
    """What the digest CronJob runs: `gpuwhy digest --post` with the bot's config."""
    config = tmp_path / "gpuwhy.yaml"
    config.write_text("digest: {channel: C0PLATFORM}\n")
    monkeypatch.setenv("GPUWHY_CONFIG", str(config))
    assert main(["digest", "--db", db, "--post"]) == 0
    assert capsys.readouterr().out == f"posted the digest {last_week_key()} to C0PLATFORM\n"
    monkeypatch.setenv("GPUWHY_DIGEST_CHANNEL", "C0OTHER")
    assert main(["digest", "--db", db, "--post"]) == 0
    assert [call.params["channel"] for call in slack.calls_to("chat.postMessage")] == [
        "C0PLATFORM", "C0OTHER"]


def test_post_without_any_channel_is_one_line(db: str, slack: FakeSlack,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["digest", "--db", db, "--post"]) == 2
    assert capsys.readouterr().err == (
        "gpuwhy digest: --post without a channel posts to the config's digest.channel (or "
        "GPUWHY_DIGEST_CHANNEL), which is not set\n")
    assert slack.calls_to("chat.postMessage") == []


def test_failed_post_is_one_line_and_can_be_retried(
    db: str, slack: FakeSlack, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str]
) -> None:
    slack.fail("chat.postMessage", "channel_not_found")
    assert main(["digest", "--db", db, "--post", "C-gone"]) == 4
    assert capsys.readouterr().err == \
        "gpuwhy digest: posting to C-gone: Slack answered channel_not_found\n"
    working = FakeSlack()
    monkeypatch.setenv("SLACK_API_URL", working.api_url)
    assert main(["digest", "--db", db, "--post", "C-gone"]) == 0  # the claim was given back
    assert len(working.calls_to("chat.postMessage")) == 1
    working.close()


def test_unreachable_slack(db: str, monkeypatch: pytest.MonkeyPatch,
                           capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-test")
    monkeypatch.setenv("SLACK_API_URL", "http://127.0.0.1:1/api/")
    assert main(["digest", "--db", db, "--post", "C1"]) == 4
    err = capsys.readouterr().err
    assert err.startswith("gpuwhy digest: posting to C1: ") and err.count("\n") == 1


def test_post_without_a_token(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["digest", "--db", db, "--post", "C1"]) == 2
    assert capsys.readouterr().err == \
        "gpuwhy digest: SLACK_BOT_TOKEN is not set; it is needed to post\n"


@pytest.mark.parametrize("command", ["digest", "stats"])
@pytest.mark.parametrize("weeks", ["0", "-1", "abc", "53", "1000", ""])
def test_bad_weeks(db: str, command: str, weeks: str,
                   capsys: pytest.CaptureFixture[str]) -> None:
    assert main([command, "--db", db, "--weeks", weeks]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"gpuwhy {command}: weeks must be") and err.count("\n") == 1


@pytest.mark.parametrize(("url", "code", "says"), [
    ("not-a-url", 2, "is not a database URL"),
    ("oracle+nothere://h/db", 2, "unsupported driver"),
    ("postgresql+psycopg://gpuwhy:pw@127.0.0.1:1/gpuwhy", 4, "Connection refused"),
    ("postgresql+psycopg://gpuwhy:pw@127.0.0.1:port/gpuwhy", 2, "is not a database URL"),
    ("sqlite:////proc/gpuwhy/gpuwhy.db", 4, "cannot create its directory"),
])
@pytest.mark.parametrize("command", [["digest"], ["stats"], ["db", "upgrade"]])
def test_bad_database(command: list[str], url: str, code: int, says: str,
                      capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*command, "--db", url]) == code
    err = capsys.readouterr().err
    assert err.startswith(f"gpuwhy {' '.join(command)}: ") and says in err
    assert err.count("\n") == 1 and "Traceback" not in err and ":pw@" not in err


@pytest.mark.parametrize("command", ["digest", "stats"])
def test_bad_timezone_in_config(command: str, db: str, tmp_path: Path,
                                monkeypatch: pytest.MonkeyPatch,
                                capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "gpuwhy.yaml"
    config.write_text("digest:\n  timezone: Mars/Olympus\n")
    monkeypatch.setenv("GPUWHY_CONFIG", str(config))
    assert main([command, "--db", db]) == 2
    assert capsys.readouterr().err == (
        f"gpuwhy {command}: config {config}: digest.timezone = 'Mars/Olympus': not an IANA "
        "timezone name (e.g. Europe/Berlin, UTC)\n")


@pytest.mark.parametrize("command", [["digest"], ["stats"], ["db", "upgrade"]])
def test_unreadable_config(command: list[str], tmp_path: Path,
                           monkeypatch: pytest.MonkeyPatch,
                           capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("GPUWHY_CONFIG", str(tmp_path / "missing.yaml"))
    assert main(command) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"gpuwhy {' '.join(command)}: config ") and "cannot read" in err
    assert err.count("\n") == 1


def test_scheduler_logs_what_slack_answered(
    db: str, slack: FakeSlack, caplog: pytest.LogCaptureFixture
) -> None:
    """A post that raises Slack's own error (as `gpuwhy serve` passes one) logs one line."""
    client = WebClient(token="xoxb-test", base_url=slack.api_url)

    def post(channel: str, text: str, blocks: Blocks) -> None:
        client.chat_postMessage(channel=channel, text=text, blocks=blocks)

    slack.fail("chat.postMessage", "not_in_channel")
    store = Store(db)
    scheduler = DigestScheduler(store, post, DigestSchedule(channel="C1", weekday=0, hour=0))
    stop = threading.Event()
    thread = threading.Thread(target=scheduler.run_forever, args=(stop, 0.05))
    with caplog.at_level(logging.WARNING, logger="bot.digest"):
        thread.start()
        slack.wait_for("chat.postMessage", count=2)  # failed, claim given back, tried again
        stop.set()
        thread.join(timeout=5)
    assert "weekly digest: Slack answered not_in_channel" in caplog.messages
    store.close()


def test_a_fresh_store_posts_no_empty_digest(tmp_path: Path, slack: FakeSlack,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """The first start on a new store: last week had no answers, so nothing is posted (no
    "No answers, 0 the week before"), and nothing is claimed: it is not a post."""
    db = f"sqlite:///{tmp_path / 'fresh.db'}"
    assert main(["digest", "--db", db, "--post", "C0PLATFORM"]) == 0
    assert capsys.readouterr().out == (
        f"the digest {last_week_key()} has no answers: nothing posted to C0PLATFORM\n")
    assert slack.calls_to("chat.postMessage") == []
    scheduler = DigestScheduler(Store(db), lambda *posted: pytest.fail(f"posted {posted}"),
                                DigestSchedule(channel="C0PLATFORM"))
    assert scheduler.run_pending(datetime.now(UTC) + timedelta(days=7)) is False
    scheduler.store.close()


def test_unreachable_slack_is_the_commands_own_line_alone(db: str, tmp_path: Path) -> None:
    """In a process, as an operator runs them: no slack_sdk ERROR lines before the line of
    `gpuwhy digest --post` or of doctor's slack check (Socket Mode credentials too)."""
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("GPUWHY_", "SLACK_", "KUBECONFIG"))}
    env.update(SLACK_BOT_TOKEN="xoxb-test", SLACK_APP_TOKEN="xapp-test",
               SLACK_API_URL="http://127.0.0.1:1/api/", GPUWHY_DATABASE_URL=db,
               KUBECONFIG=str(tmp_path / "none"))
    digest = subprocess.run([sys.executable, "-m", "bot.cli", "digest", "--post", "C1"],
                            capture_output=True, text=True, env=env, timeout=60, check=False)
    assert (digest.returncode, digest.stderr) == (4, (
        "gpuwhy digest: posting to C1: cannot reach the Slack Web API at "
        "http://127.0.0.1:1/api/: connection refused\n"))
    doctor = subprocess.run([sys.executable, "-m", "bot.cli", "doctor"], capture_output=True,
                            text=True, env=env, timeout=60, check=False)
    assert doctor.stderr == ""
    assert ("FAIL  slack    the bot token: cannot reach the Slack Web API at "
            "http://127.0.0.1:1/api/: connection refused\n") in doctor.stdout
