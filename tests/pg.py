"""Databases for the store tests: a SQLite file, and a real PostgreSQL server.

PostgreSQL comes from GPUWHY_TEST_POSTGRES_URL (a superuser URL; .ci/run sets it), else from
a throwaway server that .ci/pg-start starts for this test session. Each test gets its own
fresh database on it. Without initdb the PostgreSQL cases are skipped, saying why.
"""

from __future__ import annotations

import atexit
import functools
import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

REPO = Path(__file__).resolve().parents[1]
BACKENDS = ("sqlite", "postgresql")


@functools.cache
def _server() -> tuple[str | None, str]:
    """(superuser URL, "") or (None, why there is no server)."""
    if url := os.environ.get("GPUWHY_TEST_POSTGRES_URL"):
        return url, ""
    try:
        started = subprocess.run([REPO / ".ci" / "pg-start", "--no-install"],
                                 capture_output=True, text=True, timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"cannot run .ci/pg-start: {exc}"
    if started.returncode != 0:
        lines = started.stderr.strip().splitlines() or ["no output"]
        return None, f"no PostgreSQL server: .ci/pg-start: {lines[-1]}"
    values = dict(line.split("=", 1) for line in started.stdout.splitlines() if "=" in line)
    atexit.register(_stop, values["GPUWHY_TEST_POSTGRES_DIR"])
    return values["GPUWHY_TEST_POSTGRES_URL"], ""


def _stop(directory: str) -> None:
    subprocess.run([REPO / ".ci" / "pg-stop", directory], capture_output=True, check=False)


def postgres_database() -> Iterator[str]:
    """A new, empty database on the test server; dropped afterwards."""
    server_url, reason = _server()
    if server_url is None:
        pytest.skip(reason)
    admin = create_engine(server_url, isolation_level="AUTOCOMMIT")
    name = f"gpuwhy_{uuid.uuid4().hex[:16]}"
    try:
        with admin.connect() as connection:
            connection.execute(text(f'CREATE DATABASE "{name}"'))
        yield make_url(server_url).set(database=name).render_as_string(hide_password=False)
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE "{name}" WITH (FORCE)'))
    finally:
        admin.dispose()


@pytest.fixture(name="database_url", params=BACKENDS)
def database_url_fixture(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The same test on a SQLite file and on PostgreSQL."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'data' / 'gpuwhy.db'}"
    else:
        yield from postgres_database()
