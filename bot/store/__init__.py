"""Incidents: every answer gpuwhy gives, which weekly digests went out, and the journal that
keeps an answer from ever waiting on the database."""

from bot.store.engine import (
    MIGRATIONS_DIR,
    StoreError,
    StoreURLError,
    alembic_config,
    database_url,
    make_engine,
    one_line,
)
from bot.store.incidents import DuplicateThreadError, Store, StoredIncident
from bot.store.recording import PendingIncident, RecordingStore

__all__ = [
    "MIGRATIONS_DIR",
    "DuplicateThreadError",
    "PendingIncident",
    "RecordingStore",
    "Store",
    "StoreError",
    "StoreURLError",
    "StoredIncident",
    "alembic_config",
    "database_url",
    "make_engine",
    "one_line",
]
