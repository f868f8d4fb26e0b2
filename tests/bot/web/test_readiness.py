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
from bot.web.serve import Check, cluster_check, cluster_state
from tests.kubeapi import FakeKubeAPI, forbidden_status
from tests.paths import FIXTURES
from triage.cluster import load_api_client

SEVEN = FIXTURES / "scenarios" / "seven-states"
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


def test_rbac_revoked_under_a_running_cache_says_forbidden_at_once(
        api: FakeKubeAPI, tmp_path: Path) -> None:
    """Long before stale_after (120 s here), the first refusal is the /readyz line."""
    client = load_api_client(str(api.kubeconfig(tmp_path / "kubeconfig")))
    watching = WatchSource(api_client=client, timeout=0.5, retry_delay=0.1, cluster="prod")
    watching.start()
    try:
        assert watching.wait_ready(15)
        for verb, query in (("list", "limit="), ("watch", "watch=1")):
            api.inject("status", "^/api/v1/pods$", query=query, times=10**6,
                       status=forbidden_status(verb, "pods"))
        started = time.monotonic()
        api.drop_watches()
        check = wait_until(lambda: (c := cluster_check(watching)()).ready is False and c)
        assert time.monotonic() - started < 5
        assert check.detail.startswith("forbidden: watch pods (Forbidden: User "
                                       '"system:serviceaccount:gpuwhy:gpuwhy" cannot watch pods')
        assert not watching.ready()
        api.faults.clear()  # the binding is back
        wait_until(watching.ready)
        assert cluster_check(watching)() == Check(True, "ready")
    finally:
        watching.stop()


def test_a_dead_cluster_says_why_names_itself_and_backs_off(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("WARNING", "triage.cluster.watch")
    with FakeKubeAPI() as gone:
        kubeconfig = gone.kubeconfig(tmp_path / "kubeconfig")
    watching = WatchSource(api_client=load_api_client(str(kubeconfig)), timeout=0.5,
                           retry_delay=0.05, cluster="lab")
    watching.start()
    try:
        check = wait_until(lambda: (c := cluster_check(watching)()).detail != "loading (the "
                           "watch cache has not listed nodes and pods yet)" and c)
        assert check == Check(False, f"unavailable: Cannot reach the Kubernetes API server at "
                                     f"{gone.url}: connection refused.")
        assert cluster_state(watching) == check.detail
        time.sleep(2)  # some 30 tries at a fixed 0.05 s for each of its six lists
    finally:
        watching.stop()
    warnings = [record.getMessage() for record in caplog.records
                if record.name == "triage.cluster.watch"]
    assert warnings[0] == (f"watch cache of cluster lab: Cannot reach the Kubernetes API "
                           f"server at {gone.url}: connection refused. (trying again in 1 s, "
                           "then less often)")
    assert len(warnings) <= 2
