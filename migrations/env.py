"""Alembic environment. gpuwhy passes its own connection (Store.upgrade); by hand, the URL
is the one every gpuwhy command uses (GPUWHY_DATABASE_URL, the config file, the default)."""

from __future__ import annotations

from alembic import context
from sqlalchemy.engine import Connection

from bot.store import database_url, make_engine
from bot.store.models import Base


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
    engine = make_engine(database_url())
    try:
        with engine.connect() as connection:
            run_migrations(connection)
    finally:
        engine.dispose()
