"""`gpuwhy db current` and `gpuwhy db prune`, on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import alembic.command
import pytest

from bot.cli.main import main
from bot.store import Store, alembic_config
from scoring.verdict import Verdict
from tests.paths import REPO

VERSIONS = REPO / "migrations" / "versions"
# The newest migration, read off the file names (0001_..., 0002_...), not from the code.
HEAD = max(path.name.split("_")[0] for path in VERSIONS.glob("[0-9]*_*.py"))
NOW = datetime.now(UTC)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_current_at_head_and_behind(database_url: str,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    store = Store(database_url)
    assert run(capsys, "db", "current", "--db", database_url) == (
        1, f"database {store.url} is at no schema yet, the newest is {HEAD}: run gpuwhy db "
           "upgrade\n", "")
    store.upgrade()
    assert run(capsys, "db", "current", "--db", database_url) == (
        0, f"database {store.url} is at {HEAD} (the newest)\n", "")
    with store.engine.begin() as connection:
        alembic.command.downgrade(alembic_config(connection), "0001")
    code, out, _ = run(capsys, "db", "current", "--db", database_url)
    assert (code, out) == (1, f"database {store.url} is at 0001, the newest is {HEAD}: run "
                              "gpuwhy db upgrade\n")
    store.close()


def test_current_of_an_unreachable_store_is_one_line(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "db", "current", "--db",
                         "postgresql+psycopg://gpuwhy:secret@127.0.0.1:1/gpuwhy")
    assert (code, out) == (4, "")
    assert err.startswith("gpuwhy db current: database postgresql+psycopg://gpuwhy:***@")
    assert err.count("\n") == 1 and "secret" not in err


def event_claims(store: Store) -> list[str]:
    with store.engine.connect() as connection:
        rows = connection.exec_driver_sql("SELECT event_id FROM slack_events").fetchall()
    return sorted(row[0] for row in rows)


def _fill(store: Store) -> None:
    for days in (1, 10, 40, 400):
        store.record(Verdict(f"ml/p{days}", "exhausted", "wait"), cluster="c", asked_by="U1",
                     source="slack", at=NOW - timedelta(days=days))
        assert store.claim_event(f"Ev{days}", at=NOW - timedelta(days=days)) is True
    assert store.claim_digest("2026-W01", "C1") is True  # claimed now


def test_prune_dry_run_counts_and_keeps(database_url: str,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    store = Store(database_url)
    store.upgrade()
    _fill(store)
    code, out, err = run(capsys, "db", "prune", "--older-than", "30", "--dry-run",
                         "--db", database_url)
    assert (code, err) == (0, "")
    assert out.startswith("would delete 2 incidents, 2 Slack event claims and 0 digest claims "
                          "older than ")
    everything = store.incidents_between(NOW - timedelta(days=1000), NOW)
    assert len(everything) == 4
    assert event_claims(store) == ["Ev1", "Ev10", "Ev40", "Ev400"]
    store.close()


def test_prune_deletes_only_what_is_older(database_url: str,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    store = Store(database_url)
    store.upgrade()
    _fill(store)
    code, out, _ = run(capsys, "db", "prune", "--older-than", "5", "--db", database_url)
    assert code == 0
    assert out.startswith("deleted 3 incidents, 3 Slack event claims and 0 digest claims ")
    left = store.incidents_between(NOW - timedelta(days=1000), NOW)
    assert [incident.verdict.ref for incident in left] == ["ml/p1"]
    assert event_claims(store) == ["Ev1"]
    # The digest claim of this week is kept whatever --older-than says: no second post.
    assert store.claim_digest("2026-W01", "C1") is False
    store.close()


def test_prune_removes_old_digest_claims(database_url: str,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    store = Store(database_url)
    store.upgrade()
    assert store.claim_digest("2020-W01", "C1") is True
    with store.engine.begin() as connection:
        connection.exec_driver_sql("UPDATE digest_runs SET claimed_at = '2020-01-06 09:00:00'")
    code, out, _ = run(capsys, "db", "prune", "--older-than", "30", "--db", database_url)
    assert (code, "and 1 digest claims" in out) == (0, True)
    assert store.claim_digest("2020-W01", "C1") is True
    store.close()


def test_prune_dry_run_never_migrates(tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    db = f"sqlite:///{tmp_path / 'new.db'}"
    code, out, err = run(capsys, "db", "prune", "--older-than", "30", "--dry-run", "--db", db)
    assert (code, out) == (4, "")
    assert err == (f"gpuwhy db prune: database {db} is not at the newest schema; run gpuwhy "
                   "db upgrade first\n")
    assert run(capsys, "db", "current", "--db", db)[0] == 1  # still no schema


@pytest.mark.parametrize(("days", "problem"), [
    ("abc", "--older-than must be a whole number from 1 to 36500 days, not 'abc'"),
    ("0", "--older-than must be from 1 to 36500 days, not 0"),
    ("-3", "--older-than must be from 1 to 36500 days, not -3"),
    ("99999999", "--older-than must be from 1 to 36500 days, not 99999999"),
])
def test_prune_bad_days_is_one_line(days: str, problem: str, tmp_path: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "untouched.db"
    assert run(capsys, "db", "prune", f"--older-than={days}", "--db", f"sqlite:///{db}") == (
        2, "", f"gpuwhy db prune: {problem}\n")
    assert not db.exists()


def test_current_of_a_new_path_creates_no_file(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """A typo in --db must not leave an empty store behind for the bot to open later."""
    path = tmp_path / "typo.db"
    assert run(capsys, "db", "current", "--db", f"sqlite:///{path}") == (
        1, f"database sqlite:///{path} is at no schema yet, the newest is {HEAD}: run gpuwhy "
           "db upgrade\n", "")
    assert not path.exists()
    assert run(capsys, "doctor", "--db", f"sqlite:///{path}", "--kubeconfig",
               str(tmp_path / "none"))[0] == 1
    assert not path.exists()
