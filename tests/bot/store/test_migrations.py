"""Alembic migrations: up from empty, down to nothing, up again; models match the head."""

from __future__ import annotations

import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import alembic.command
import alembic.config
import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import inspect, text

from bot.cli.main import main
from bot.store import MIGRATIONS_DIR, Store, alembic_config
from bot.store.models import Base
from scoring.verdict import Verdict
from tests.paths import REPO

ALERT_TABLES = {"alert_claims", "alert_threads", "alert_posts"}
TABLES = {"incidents", "digest_runs", "slack_events", "slack_requests", *ALERT_TABLES}


def tables(store: Store) -> set[str]:
    return set(inspect(store.engine).get_table_names()) - {"alembic_version"}


def revision(store: Store) -> str | None:
    with store.engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def test_upgrade_downgrade_upgrade(database_url: str) -> None:
    store = Store(database_url)
    head = ScriptDirectory(str(MIGRATIONS_DIR)).get_current_head()
    assert tables(store) == set()

    store.upgrade()
    assert tables(store) == TABLES
    assert revision(store) == head

    with store.engine.begin() as connection:
        alembic.command.downgrade(alembic_config(connection), "base")
    assert tables(store) == set()
    assert revision(store) is None

    store.upgrade()
    store.upgrade()  # a second start changes nothing
    assert tables(store) == TABLES
    assert revision(store) == head
    store.close()


def test_two_steps_down_drop_only_the_claims(database_url: str) -> None:
    store = Store(database_url)
    store.upgrade()
    store.record(Verdict("ml/a", "exhausted", "wait"), cluster="prod", asked_by="cli",
                 source="cli", at=datetime(2026, 11, 23, tzinfo=UTC))
    assert store.claim_event("Ev01") is True
    assert store.claim_request("k1") is True
    with store.engine.begin() as connection:
        alembic.command.downgrade(alembic_config(connection), "0003")
    assert tables(store) == TABLES - {"slack_requests"}
    with store.engine.begin() as connection:
        alembic.command.downgrade(alembic_config(connection), "0001")
    assert revision(store) == "0001"
    assert tables(store) == TABLES - {"slack_events", "slack_requests", *ALERT_TABLES}
    store.upgrade()
    assert tables(store) == TABLES
    assert store.claim_event("Ev01") is True  # the claims went with their tables
    assert store.claim_request("k1") is True
    assert store.claim_request("k1") is False
    assert len(store.incidents_between(datetime(2026, 1, 1, tzinfo=UTC),
                                       datetime(2027, 1, 1, tzinfo=UTC))) == 1
    store.close()


def test_two_steps_down_drop_only_the_alert_and_request_tables(database_url: str) -> None:
    store = Store(database_url)
    store.upgrade()
    store.record(Verdict("ml/a", "exhausted", "wait"), cluster="prod", asked_by="gpuwhy-watch",
                 source="watch", channel="C0ALERTS", message_ts="1.1",
                 at=datetime(2026, 11, 23, tzinfo=UTC))
    with store.engine.begin() as connection:
        alembic.command.downgrade(alembic_config(connection), "0002")
    assert tables(store) == TABLES - ALERT_TABLES - {"slack_requests"}
    store.upgrade()
    assert tables(store) == TABLES
    assert store.incident_for_thread("C0ALERTS", "1.1") is not None
    store.close()


def test_db_upgrade_twice_keeps_the_data(database_url: str,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["db", "upgrade", "--db", database_url]) == 0
    store = Store(database_url)
    store.record(Verdict("ml/a", "exhausted", "wait"), cluster="prod", asked_by="cli",
                 source="cli", at=datetime(2026, 11, 23, tzinfo=UTC))
    assert main(["db", "upgrade", "--db", database_url]) == 0
    assert revision(store) == ScriptDirectory(str(MIGRATIONS_DIR)).get_current_head()
    assert [i.verdict.ref for i in store.incidents_between(
        datetime(2026, 1, 1, tzinfo=UTC), datetime(2027, 1, 1, tzinfo=UTC))] == ["ml/a"]
    store.close()
    assert capsys.readouterr().out.count("is up to date\n") == 2


# Each replica imports gpuwhy, says it is ready, and migrates when the test says go.
REPLICA = """
import sys
from bot.store import Store
store = Store(sys.argv[1])
print("ready", flush=True)
sys.stdin.readline()
store.upgrade()
print("migrated", flush=True)
"""


def test_replicas_starting_together_migrate_once(database_url: str) -> None:
    """Several gpuwhy processes (serve replicas, a digest CronJob) upgrading one empty store
    at the same moment: every one of them starts."""
    replicas = [subprocess.Popen([sys.executable, "-c", REPLICA, database_url],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, cwd=REPO)
                for _ in range(3)]
    try:
        for replica in replicas:
            assert replica.stdout is not None and replica.stdout.readline() == "ready\n"
        for replica in replicas:
            assert replica.stdin is not None
            replica.stdin.write("go\n")
            replica.stdin.flush()
        results = [(*replica.communicate(timeout=60), replica.returncode)
                   for replica in replicas]
    finally:
        for replica in replicas:
            replica.kill()
    assert results == [("migrated\n", "", 0)] * 3
    store = Store(database_url)
    assert tables(store) == TABLES
    store.close()


def test_models_match_the_head_migration(database_url: str) -> None:
    store = Store(database_url)
    store.upgrade()
    with store.engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        assert compare_metadata(context, Base.metadata) == []
    store.close()


def test_alembic_ini_runs_by_hand(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`alembic -c migrations/alembic.ini upgrade head` with GPUWHY_DATABASE_URL."""
    path = tmp_path / "by-hand.db"
    monkeypatch.setenv("GPUWHY_DATABASE_URL", f"sqlite:///{path}")
    alembic.command.upgrade(alembic.config.Config(str(MIGRATIONS_DIR / "alembic.ini")), "head")
    store = Store(f"sqlite:///{path}")
    assert tables(store) == TABLES
    store.close()


def test_new_revision_template_renders_valid_python(tmp_path: Path) -> None:
    """script.py.mako: an empty autogenerated revision on top of head compiles."""
    scripts = tmp_path / "migrations"
    shutil.copytree(MIGRATIONS_DIR, scripts, ignore=shutil.ignore_patterns("__pycache__"))
    store = Store(f"sqlite:///{tmp_path / 'gpuwhy.db'}")
    store.upgrade()
    with store.engine.begin() as connection:
        config = alembic_config(connection)
        config.set_main_option("script_location", str(scripts))
        script = alembic.command.revision(config, "nothing new", autogenerate=True)
    assert script is not None and not isinstance(script, list)
    source = Path(script.path).read_text()
    compile(source, script.path, "exec")
    assert "pass" in source and f"down_revision: str | None = {revision(store)!r}" in source
    with store.engine.connect() as connection:
        assert connection.execute(text("SELECT count(*) FROM incidents")).scalar() == 0
    store.close()
