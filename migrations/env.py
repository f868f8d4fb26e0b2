"""Alembic environment. gpuwhy passes its own connection (Store.upgrade); by hand, the URL
comes from GPUWHY_DATABASE_URL or the default SQLite file."""

from __future__ import annotations

import os

from alembic import context
from sqlalchemy.engine import Connection

from bot.config import default_database_url
from bot.models import Base
from bot.store import make_engine


def run_migrations(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=Base.metadata,
        # SQLite cannot ALTER most things: migrations copy the table instead.
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


given: Connection | None = context.config.attributes.get("connection")
if given is not None:
    run_migrations(given)
else:
    engine = make_engine(os.environ.get("GPUWHY_DATABASE_URL") or default_database_url())
    try:
        with engine.connect() as connection:
            run_migrations(connection)
    finally:
        engine.dispose()
