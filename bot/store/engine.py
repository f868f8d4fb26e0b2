"""The store's database: the engine for any SQLAlchemy URL (SQLite a file in WAL mode, or
PostgreSQL for several replicas), its migrations, and the one-line errors every failure becomes.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import alembic.command
import alembic.config
import alembic.util
from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.engine import URL, Connection, make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError

import migrations
from bot.config import ConfigError, load_config

log = logging.getLogger(__name__)

MIGRATIONS_DIR = Path(migrations.__file__).parent
SQLITE_BUSY_TIMEOUT_MS = 30_000
CONNECT_TIMEOUT_S = 10
# Any constant works; it only has to be the same for every gpuwhy replica.
UPGRADE_LOCK_ID = 0x67707577


class StoreError(Exception):
    """The store could not do its job; str() is one line for the user."""


class StoreURLError(StoreError):
    """The database URL itself is wrong (a usage error, not an outage)."""


def database_url(explicit: str | None = None, environ: Mapping[str, str] | None = None) -> str:
    """--db, else what `gpuwhy serve` uses: GPUWHY_DATABASE_URL, else the config file's
    database_url, else the SQLite file in the user's data directory."""
    if explicit:
        return explicit
    try:
        return load_config(environ).database_url
    except ConfigError as exc:
        raise StoreURLError(str(exc)) from None


def _masked(url: str) -> str:
    """An unparsable URL as it may be shown: whatever precedes the last "@" (user, password)
    hidden."""
    credentials, at, host = url.rpartition("@")
    if not at:
        return url
    scheme, separator, _ = credentials.partition("://")
    return f"{scheme}{separator}***@{host}" if separator else f"***@{host}"


def make_engine(url: str) -> Engine:
    """An Engine for ``url``; SQLite gets its directory, WAL, a busy timeout and foreign keys."""
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError):  # ValueError: a port that is not a number
        raise StoreURLError(
            f"{_masked(url)!r} is not a database URL (e.g. sqlite:////var/lib/gpuwhy/gpuwhy.db "
            "or postgresql+psycopg://user@host/gpuwhy)"
        ) from None
    try:
        if parsed.get_backend_name() == "sqlite":
            return _sqlite_engine(parsed)
        connect_args = (
            {"connect_timeout": CONNECT_TIMEOUT_S}
            if parsed.get_backend_name() == "postgresql"
            else {}
        )
        return create_engine(parsed, pool_pre_ping=True, connect_args=connect_args)
    except (NoSuchModuleError, ImportError) as exc:
        raise StoreURLError(f"database {safe_url(parsed)}: unsupported driver ({exc})") from None


def _sqlite_engine(url: URL) -> Engine:
    path = url.database or ""
    if path and path != ":memory:" and not path.startswith("file:"):
        try:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(
                f"database {safe_url(url)}: cannot create its directory: {exc}") from None
    engine = create_engine(url, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000})

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        cursor = dbapi_connection.cursor()
        # WAL lets readers and one writer work at once; the busy timeout makes writers queue
        # instead of failing with "database is locked".
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        _enable_wal(cursor)
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    return engine


def _enable_wal(cursor: Any) -> None:
    """WAL is kept in the file, so only the first connections to a new file switch it; that
    switch needs the file to themselves and SQLite answers "locked" at once, without waiting
    for the busy timeout, when several processes open a new store together."""
    deadline = time.monotonic() + SQLITE_BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def alembic_config(connection: Connection) -> alembic.config.Config:
    """Alembic settings built in code: the installed migrations/ directory, this connection."""
    config = alembic.config.Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["connection"] = connection
    return config


def lock_schema(connection: Connection) -> None:
    """Hold a database-wide lock until the migration commits, so replicas starting together
    migrate one after another instead of each creating the same tables."""
    if connection.dialect.name == "postgresql":
        connection.execute(text("SELECT pg_advisory_xact_lock(:id)"), {"id": UPGRADE_LOCK_ID})
    elif connection.dialect.name == "sqlite":
        # The sqlite3 module runs DDL outside any transaction; an explicit IMMEDIATE one takes
        # the write lock now (waiting out the busy timeout) and makes the migration atomic.
        connection.exec_driver_sql("BEGIN IMMEDIATE")


def safe_url(url: URL) -> str:
    return url.render_as_string(hide_password=True)


def one_line(exc: BaseException) -> str:
    """The first line of an error (driver and Slack errors span several)."""
    cause = getattr(exc, "orig", None) or exc
    lines = str(cause).strip().splitlines()
    return lines[0] if lines else type(cause).__name__


