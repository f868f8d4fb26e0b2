"""The incident store on a SQLite file and on a real PostgreSQL server (same tests)."""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import func, inspect, select, text
from sqlalchemy.engine import make_url

from bot.store import (
    DuplicateThreadError,
    RecordingStore,
    Store,
    StoreError,
    StoreURLError,
)
from bot.store import (
    database_url as resolve_database_url,
)
from bot.store.models import Incident
from scoring.verdict import Device, Evidence, NodeReport, Verdict
from tests.pg import OwnServer, without_server

T0 = datetime(2026, 11, 23, 9, 30, tzinfo=UTC)


def verdict(ref: str = "research/full", cause: str = "exhausted") -> Verdict:
    return Verdict(
        ref=ref, cause=cause, action="wait, or add capacity",
        evidence=[Evidence("Node/gpu-a10-full", "status.allocatable[nvidia.com/gpu]", "2")],
        nodes=[NodeReport("gpu-a10-full", "exhausted", "2/2 held", devices=[
            Device(uuid="GPU-1", index=0, type="NVIDIA A10", holders=["ml/train-a"])])],
        node_summary="1 node: 1 not fit (1 exhausted), 0 fit",
    )


def count_rows(store: Store) -> int:
    with store.engine.connect() as connection:
        return int(connection.execute(select(func.count()).select_from(Incident)).scalar_one())


def test_record_then_find_by_thread(store: Store) -> None:
    berlin = datetime(2026, 11, 23, 10, 30, tzinfo=ZoneInfo("Europe/Berlin"))
    incident_id = store.record(verdict(), cluster="prod", asked_by="U123", source="slack",
                               channel="C1", message_ts="1700000000.000100", at=berlin)
    found = store.incident_for_thread("C1", "1700000000.000100")
    assert found is not None
    assert found.id == incident_id
    assert found.created_at == datetime(2026, 11, 23, 9, 30, tzinfo=UTC)
    assert found.created_at.utcoffset() == timedelta(0)
    assert found.verdict == verdict()
    assert (found.cluster, found.channel, found.message_ts) == ("prod", "C1", "1700000000.000100")
    assert store.incident_for_thread("C1", "1700000000.000200") is None
    assert store.incident_for_thread("C2", "1700000000.000100") is None


def test_columns_hold_the_answer(store: Store) -> None:
    store.record(verdict("ml/train-a"), cluster="prod", asked_by="cli", source="cli", at=T0)
    with store.engine.connect() as connection:
        row = connection.execute(text(
            "SELECT namespace, name, cause, action, node_summary, asked_by, source, channel, "
            "message_ts FROM incidents")).one()
    assert tuple(row) == ("ml", "train-a", "exhausted", "wait, or add capacity",
                          "1 node: 1 not fit (1 exhausted), 0 fit", "cli", "cli", None, None)


def test_one_incident_per_thread_but_cli_rows_repeat(store: Store) -> None:
    store.record(verdict(), cluster="prod", asked_by="U1", source="slack",
                 channel="C1", message_ts="1.1")
    with pytest.raises(DuplicateThreadError, match=r"C1/1\.1"):
        store.record(verdict(), cluster="prod", asked_by="U2", source="slack",
                     channel="C1", message_ts="1.1")
    store.record(verdict(), cluster="prod", asked_by="U1", source="slack",
                 channel="C2", message_ts="1.1")
    store.record(verdict(), cluster="prod", asked_by="cli", source="cli")
    store.record(verdict(), cluster="prod", asked_by="cli", source="cli")
    assert count_rows(store) == 4


def test_incidents_between_is_half_open_and_ordered(store: Store) -> None:
    for minutes in (10, 0, 5, 15):
        store.record(verdict(f"ml/p{minutes}"), cluster="prod", asked_by="cli", source="cli",
                     at=T0 + timedelta(minutes=minutes))
    found = store.incidents_between(T0, T0 + timedelta(minutes=15))
    assert [i.verdict.ref for i in found] == ["ml/p0", "ml/p5", "ml/p10"]
    assert store.incidents_between(T0 + timedelta(minutes=16), T0 + timedelta(hours=1)) == []


def test_causes_before(store: Store) -> None:
    store.record(verdict(cause="exhausted"), cluster="c", asked_by="cli", source="cli", at=T0)
    store.record(verdict(cause="too-large"), cluster="c", asked_by="cli", source="cli",
                 at=T0 + timedelta(days=1))
    assert store.causes_before(T0 + timedelta(hours=1)) == {"exhausted"}
    assert store.causes_before(T0 + timedelta(days=2)) == {"exhausted", "too-large"}


def test_causes_before_in_one_cluster(store: Store) -> None:
    store.record(verdict(cause="exhausted"), cluster="prod", asked_by="cli", source="cli", at=T0)
    store.record(verdict(cause="too-large"), cluster="lab", asked_by="cli", source="cli", at=T0)
    later = T0 + timedelta(hours=1)
    assert store.causes_before(later, "prod") == {"exhausted"}
    assert store.causes_before(later, "lab") == {"too-large"}
    assert store.causes_before(later, "staging") == set()
    assert store.causes_before(later) == {"exhausted", "too-large"}


def test_naive_time_and_unknown_source_are_refused(store: Store) -> None:
    with pytest.raises(ValueError, match="naive"):
        store.record(verdict(), cluster="c", asked_by="cli", source="cli",
                     at=datetime(2026, 1, 1))
    with pytest.raises(ValueError, match="source"):
        store.record(verdict(), cluster="c", asked_by="cli", source="email")


def test_schema_has_the_lookup_indexes(store: Store) -> None:
    inspector = inspect(store.engine)
    indexed = {tuple(index["column_names"]) for index in inspector.get_indexes("incidents")}
    assert {("created_at",), ("cause",)} <= indexed
    unique = {tuple(c["column_names"]) for c in inspector.get_unique_constraints("incidents")}
    assert ("channel", "message_ts") in unique
    runs = {tuple(c["column_names"]) for c in inspector.get_unique_constraints("digest_runs")}
    assert ("week_key", "channel") in runs


def test_claim_digest_once_per_week_and_channel(store: Store) -> None:
    assert store.claim_digest("2026-W48", "C1") is True
    assert store.claim_digest("2026-W48", "C1") is False
    assert store.claim_digest("2026-W48", "C2") is True
    assert store.claim_digest("2026-W49", "C1") is True
    store.release_digest("2026-W48", "C1")
    assert store.claim_digest("2026-W48", "C1") is True


CLAIMS: dict[str, Callable[[Store], bool]] = {
    "digest": lambda store: store.claim_digest("2026-W48", "C1"),
    "slack event": lambda store: store.claim_event("Ev0GPU1"),
}


@pytest.mark.parametrize("claimed", CLAIMS)
def test_racing_claims_one_winner(claimed: str, database_url: str) -> None:
    """Two replicas (two engines) and several threads each: one claim wins."""
    replicas = [Store(database_url), Store(database_url)]
    replicas[0].upgrade()
    start = threading.Barrier(8)
    results: list[bool] = []

    def claim(replica: Store) -> None:
        start.wait()
        results.append(CLAIMS[claimed](replica))

    threads = [threading.Thread(target=claim, args=(replicas[i % 2],)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for replica in replicas:
        replica.close()
    assert sorted(results) == [False] * 7 + [True]


def test_fifty_concurrent_writers_lose_nothing(store: Store) -> None:
    start = threading.Barrier(50)
    errors: list[BaseException] = []

    def write(number: int) -> None:
        start.wait()
        try:
            store.record(verdict(f"ml/p{number}"), cluster="prod", asked_by=f"U{number}",
                         source="slack", channel="C1", message_ts=f"1.{number}")
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(50)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert count_rows(store) == 50
    everything = store.incidents_between(T0 - timedelta(days=3650), T0 + timedelta(days=3650))
    assert sorted(i.verdict.ref for i in everything) == sorted(f"ml/p{n}" for n in range(50))


def set_table_name(store: Store, old: str, new: str) -> None:
    with store.engine.begin() as connection:
        connection.execute(text(f"ALTER TABLE {old} RENAME TO {new}"))


def stored_in_id_order(store: Store) -> list[tuple[str, datetime]]:
    query = select(Incident.namespace, Incident.name, Incident.created_at).order_by(Incident.id)
    with store.engine.connect() as connection:
        return [(f"{namespace}/{name}", at) for namespace, name, at in connection.execute(query)]


def outage_then_recovery(recorder: RecordingStore, stop: Callable[[], None],
                         start: Callable[[], None], caplog: pytest.LogCaptureFixture) -> None:
    """One answer stored, three asked during the outage, one after: all five land, in order,
    with the time each was asked; every failure is one log line."""
    assert isinstance(recorder.record(verdict("ml/before"), cluster="prod", asked_by="U0",
                                      source="slack", channel="C1", message_ts="1.0", at=T0),
                      int)
    stop()
    with caplog.at_level(logging.WARNING, logger="bot.store"):
        for number in (1, 2, 3):
            assert recorder.record(verdict(f"ml/during-{number}"), cluster="prod",
                                   asked_by="U1", source="slack", channel="C1",
                                   message_ts=f"1.{number}",
                                   at=T0 + timedelta(minutes=number)) is None
            assert recorder.pending == number
        assert recorder.flush() is False
    assert recorder.pending == 3
    warnings = [record.getMessage() for record in caplog.records]
    assert len(warnings) == 4  # three writes and the failed flush
    assert all("\n" not in message for message in warnings)
    assert "ml/during-3 not stored yet (3 waiting)" in warnings[2]

    start()
    after = recorder.record(verdict("ml/after"), cluster="prod", asked_by="U2",
                            source="slack", channel="C1", message_ts="1.4",
                            at=T0 + timedelta(minutes=10))
    assert isinstance(after, int)
    assert recorder.pending == 0
    assert stored_in_id_order(recorder.store) == [
        ("ml/before", T0),
        ("ml/during-1", T0 + timedelta(minutes=1)),
        ("ml/during-2", T0 + timedelta(minutes=2)),
        ("ml/during-3", T0 + timedelta(minutes=3)),
        ("ml/after", T0 + timedelta(minutes=10)),
    ]


def test_recording_store_survives_a_missing_table(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    outage_then_recovery(RecordingStore(store),
                         lambda: set_table_name(store, "incidents", "incidents_away"),
                         lambda: set_table_name(store, "incidents_away", "incidents"), caplog)


def test_recording_store_survives_a_stopped_postgres(
    own_postgres: OwnServer, caplog: pytest.LogCaptureFixture
) -> None:
    # The server trusts every login: the password only has to stay out of every message.
    url = make_url(own_postgres.url).set(password="s3cret-pw")
    store = Store(url.render_as_string(hide_password=False))
    store.upgrade()
    outage_then_recovery(RecordingStore(store), own_postgres.stop, own_postgres.start, caplog)
    assert "s3cret-pw" not in caplog.text
    assert "Connection refused" in caplog.text
    store.close()


def test_store_answers_again_after_postgres_restarts(own_postgres: OwnServer) -> None:
    store = Store(own_postgres.url)
    store.upgrade()
    own_postgres.stop()
    with pytest.raises(StoreError, match="cannot record an incident"):
        store.record(verdict(), cluster="c", asked_by="cli", source="cli", at=T0)
    own_postgres.start()
    store.record(verdict(), cluster="c", asked_by="cli", source="cli", at=T0)
    assert count_rows(store) == 1
    store.close()


def test_recording_store_flush_drops_what_already_arrived(store: Store) -> None:
    recorder = RecordingStore(store)
    set_table_name(store, "incidents", "incidents_away")
    recorder.record(verdict(), cluster="prod", asked_by="U1", source="slack",
                    channel="C1", message_ts="1.1", at=T0)
    set_table_name(store, "incidents_away", "incidents")
    store.record(verdict(), cluster="prod", asked_by="U1", source="slack",
                 channel="C1", message_ts="1.1", at=T0)
    assert recorder.flush() is True
    assert recorder.pending == 0
    assert count_rows(store) == 1


def test_recording_store_is_bounded(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    recorder = RecordingStore(Store("postgresql+psycopg://gpuwhy@127.0.0.1:1/gpuwhy"),
                              max_pending=2)
    with caplog.at_level(logging.WARNING, logger="bot.store"):
        for number in range(3):
            assert recorder.record(verdict(f"ml/p{number}"), cluster="c", asked_by="cli",
                                   source="cli") is None
    assert recorder.pending == 2
    assert any("dropped ml/p0" in record.getMessage() for record in caplog.records)


def test_sqlite_file_settings(tmp_path: Path) -> None:
    path = tmp_path / "new" / "dir" / "gpuwhy.db"
    store = Store(f"sqlite:///{path}")
    store.upgrade()
    with store.engine.connect() as connection:
        assert connection.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert connection.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
        assert connection.exec_driver_sql("PRAGMA busy_timeout").scalar() == 30000
    store.close()
    with sqlite3.connect(path) as raw:
        tables = {name for (name,) in raw.execute("SELECT name FROM sqlite_master")}
    assert {"incidents", "digest_runs", "alembic_version"} <= tables


def test_database_url_precedence(tmp_path: Path) -> None:
    """--db, then GPUWHY_DATABASE_URL, then the config file, then the user data directory."""
    config = tmp_path / "gpuwhy.yaml"
    config.write_text("database_url: sqlite:////config.db\n")
    env = {"GPUWHY_DATABASE_URL": "sqlite:////env.db", "GPUWHY_CONFIG": str(config),
           "XDG_DATA_HOME": str(tmp_path / "data")}
    assert resolve_database_url("sqlite:////flag.db", env) == "sqlite:////flag.db"
    assert resolve_database_url(None, env) == "sqlite:////env.db"
    del env["GPUWHY_DATABASE_URL"]
    assert resolve_database_url(None, env) == "sqlite:////config.db"
    del env["GPUWHY_CONFIG"]
    with pytest.MonkeyPatch.context() as patch:  # platformdirs reads the process environment
        patch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
        assert resolve_database_url(None, env) == \
            f"sqlite:///{tmp_path / 'data' / 'gpuwhy' / 'gpuwhy.db'}"


def test_unreadable_config_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(StoreURLError, match="cannot read"):
        resolve_database_url(None, {"GPUWHY_CONFIG": str(tmp_path / "missing.yaml")})


@pytest.mark.parametrize("url", [
    "not a url", "nosuchdb://host/x", "postgresql+nodriver://h/x",
    "postgresql://gpuwhy:s3cret-pw@db:port/gpuwhy", "gpuwhy:s3cret-pw@db/gpuwhy",
    "postgresql://gpuwhy:s3cret/pw@db:x/gpuwhy", "mysql://gpuwhy:s3cret-pw@db/gpuwhy",
])
def test_bad_urls_are_usage_errors(url: str) -> None:
    with pytest.raises(StoreURLError) as caught:
        Store(url)
    message = str(caught.value)
    assert "\n" not in message and "s3cret" not in message
    assert "is not a database URL" in message or "unsupported driver" in message


@pytest.mark.parametrize("ci", ["true", ""])
def test_postgres_cases_fail_under_ci_when_the_server_is_missing(
    ci: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", ci)
    outcome = pytest.fail.Exception if ci else pytest.skip.Exception
    with pytest.raises(outcome, match="initdb not found"):
        without_server("no PostgreSQL server: .ci/pg-start: initdb not found")


def test_unreachable_postgres_is_one_line() -> None:
    store = Store("postgresql+psycopg://gpuwhy:secret@127.0.0.1:1/gpuwhy")
    with pytest.raises(StoreError) as caught:
        store.upgrade()
    message = str(caught.value)
    assert "\n" not in message
    assert "127.0.0.1" in message
    assert "secret" not in message
