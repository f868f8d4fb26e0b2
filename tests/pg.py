"""Databases for the store tests: a SQLite file, and a real PostgreSQL server.

PostgreSQL comes from GPUWHY_TEST_POSTGRES_URL (a superuser URL; .ci/run sets it), else from
a throwaway server that .ci/pg-start starts for this test session. Each test gets its own
fresh database on it. Without initdb the PostgreSQL cases are skipped, saying why; under CI
(CI=true) they fail instead, so a broken server setup cannot pass as green.
"""

from __future__ import annotations

import atexit
import functools
import os
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from bot.store import Store

REPO = Path(__file__).resolve().parents[1]
PG_START = REPO / ".ci" / "pg-start"
PG_STOP = REPO / ".ci" / "pg-stop"
BACKENDS = ("sqlite", "postgresql")


def without_server(reason: str) -> NoReturn:
    if os.environ.get("CI", "").lower() in ("true", "1", "yes"):
        pytest.fail(f"{reason} (CI is set: the PostgreSQL cases must run)", pytrace=False)
    pytest.skip(reason)


def _run(command: list[str | Path]) -> subprocess.CompletedProcess[str] | str:
    """The finished script, or why it could not run."""
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"cannot run {command[0]}: {exc}"


def _start() -> tuple[str, str] | str:
    """(superuser URL, server directory) of a new server, or why there is none."""
    started = _run([PG_START, "--no-install"])
    if isinstance(started, str):
        return started
    if started.returncode != 0:
        lines = started.stderr.strip().splitlines() or ["no output"]
        return f"no PostgreSQL server: .ci/pg-start: {lines[-1]}"
    values = dict(line.split("=", 1) for line in started.stdout.splitlines() if "=" in line)
    return values["GPUWHY_TEST_POSTGRES_URL"], values["GPUWHY_TEST_POSTGRES_DIR"]


@functools.cache
def _server() -> tuple[str, str]:
    """(the session's superuser URL, "") or ("", why there is no server)."""
    if url := os.environ.get("GPUWHY_TEST_POSTGRES_URL"):
        return url, ""
    started = _start()
    if isinstance(started, str):
        return "", started
    url, directory = started
    atexit.register(_remove, directory)
    return url, ""


def _remove(directory: str) -> None:
    subprocess.run([PG_STOP, directory], capture_output=True, check=False)


def server_url() -> str:
    """The shared test server's superuser URL (skips, or fails under CI, without one)."""
    url, reason = _server()
    if not url:
        without_server(reason)
    return url


def postgres_database() -> Iterator[str]:
    """A new, empty database on the test server; dropped afterwards."""
    admin = create_engine(server_url(), isolation_level="AUTOCOMMIT")
    name = f"gpuwhy_{uuid.uuid4().hex[:16]}"
    try:
        with admin.connect() as connection:
            connection.execute(text(f'CREATE DATABASE "{name}"'))
        yield make_url(server_url()).set(database=name).render_as_string(hide_password=False)
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


@dataclass(frozen=True)
class OwnServer:
    """A PostgreSQL server for one test alone, so the test may stop it and start it again."""

    url: str
    directory: str

    def stop(self) -> None:
        self._script(PG_STOP, "--keep", self.directory)

    def start(self) -> None:
        self._script(PG_START, "--again", self.directory)

    @staticmethod
    def _script(*command: str | Path) -> None:
        done = _run(list(command))
        assert not isinstance(done, str), done
        assert done.returncode == 0, done.stderr


@pytest.fixture(name="own_postgres")
def own_postgres_fixture() -> Iterator[OwnServer]:
    started = _start()
    if isinstance(started, str):
        without_server(started)
    url, directory = started
    yield OwnServer(url, directory)
    _remove(directory)


@pytest.fixture(name="store")
def store_fixture(database_url: str) -> Iterator[Store]:
    """A migrated store on each database backend."""
    opened = Store(database_url)
    opened.upgrade()
    yield opened
    opened.close()
