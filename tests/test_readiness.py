"""Readiness that means something: the watch cache is ready only while it hears from the API
server; an outage makes it stale (and says since when), and it recovers by itself."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TypeVar

import pytest

from bot.clusters.sources import WatchSource
from bot.web.serve import Check, cluster_check
from tests.kubeapi import FakeKubeAPI
from triage.cluster import load_api_client

SEVEN = Path(__file__).parent / "fixtures" / "scenarios" / "seven-states"
T = TypeVar("T")


def wait_until(condition: Callable[[], T], timeout: float = 15) -> T:
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.05)
    return value


@pytest.fixture
def api() -> Iterator[FakeKubeAPI]:
    with FakeKubeAPI(SEVEN, bookmark_interval=0.2) as server:
        yield server


@pytest.fixture
def source(api: FakeKubeAPI, tmp_path: Path) -> Iterator[WatchSource]:
    client = load_api_client(str(api.kubeconfig(tmp_path / "kubeconfig")))
    watching = WatchSource(api_client=client, stale_after=1.5, timeout=0.5, retry_delay=0.1)
    watching.start()
    assert watching.wait_ready(15)
    yield watching
    watching.stop()


def test_ready_while_the_api_server_answers(source: WatchSource) -> None:
    assert source.staleness() is None
    assert cluster_check(source)() == Check(True, "ready")
    time.sleep(2)  # longer than stale_after: bookmarks keep it fresh on a quiet cluster
    assert source.ready() and source.as_of() is None
    reading = source.cache_reading()
    assert reading.age_seconds is not None and reading.age_seconds < 1.5
    assert reading.objects["nodes"] == 6 and reading.objects["pods"] > 0


def test_an_outage_makes_it_unready_and_it_comes_back(api: FakeKubeAPI,
                                                      source: WatchSource) -> None:
    started = datetime.now(UTC)
    api.inject("reset", times=10**6)  # every new request: connection reset
    api.drop_watches()  # and the open streams are cut
    def unready() -> Check | None:
        check = cluster_check(source)()
        return None if check.ready else check

    check = wait_until(unready)
    assert check.detail.startswith("stale: the API server last answered the watch cache ")
    assert check.detail.endswith("s ago (more than 1.5 s)")
    as_of = source.as_of()
    assert as_of is not None and started - timedelta(seconds=1) <= as_of <= started + \
        timedelta(seconds=1)
    age = source.cache_reading().age_seconds
    assert age is not None and age > 1.5
    api.faults.clear()  # the API server answers again
    wait_until(source.ready)
    assert source.as_of() is None and source.staleness() is None
    assert cluster_check(source)() == Check(True, "ready")
