"""The weekly digest, per-week stats and the scheduler, over a generated year of incidents."""

from __future__ import annotations

import json
import threading
import time
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from bot.clusters.sources import SnapshotSource
from bot.config import DigestSchedule
from bot.digest import (
    DigestError,
    DigestScheduler,
    add_weeks,
    compute_digest,
    compute_stats,
    digest_blocks,
    digest_text,
    implicated_nodes,
    last_full_week,
    load_digest,
    parse_weeks,
    post_once,
    stats_blocks,
    stats_text,
    week_key,
    week_start,
)
from bot.store import Store, StoredIncident
from scoring.verdict import NodeReport, Verdict
from tests.paths import FIXTURES
from triage.refs import parse_ref

BERLIN = ZoneInfo("Europe/Berlin")
NEW_YORK = ZoneInfo("America/New_York")
SCENARIOS = FIXTURES / "scenarios"
# ISO week 2026-W01 starts on Monday 29 December 2025.
YEAR_START = datetime(2025, 12, 29, tzinfo=BERLIN)
# The weeks (0 = 2026-W01) holding a daylight-saving change: 167 and 169 hours long.
DST_WEEKS = {"Europe/Berlin": (12, 42), "America/New_York": (9, 43)}
EMPTY_WEEKS = {10, 11, 30}
DEVICE_UNFIT_FROM = 40


def expected_counts(week: int) -> dict[str, int]:
    """How many incidents of each cause the generated year has in week ``week`` (0 = W01)."""
    if week in EMPTY_WEEKS or week < 0:
        return {}
    counts = {"exhausted": week % 3 + 1,
              "allocatable-zero": 2 if week % 4 == 0 else 0,
              "no-gpu-node": 1 if week % 5 == 1 else 0,
              "device-unfit": 1 if week >= DEVICE_UNFIT_FROM else 0}
    return {cause: n for cause, n in counts.items() if n}


def generated_year(tz: ZoneInfo = BERLIN) -> list[StoredIncident]:
    """The incidents of 2026 in ``tz``: the first of each week at Monday 00:00 local, the last
    at Sunday 23:59:59 local, so every week boundary (and both DST changes) is exercised."""
    incidents: list[StoredIncident] = []
    for week in range(53):
        monday = date(2025, 12, 29) + timedelta(weeks=week)
        causes = [cause for cause, n in expected_counts(week).items() for _ in range(n)]
        for position, cause in enumerate(causes):
            if position == 0:
                local = datetime(monday.year, monday.month, monday.day, tzinfo=tz)
            elif position == len(causes) - 1:
                sunday = monday + timedelta(days=6)
                local = datetime(sunday.year, sunday.month, sunday.day, 23, 59, 59, tzinfo=tz)
            else:
                wednesday = monday + timedelta(days=2)
                local = datetime(wednesday.year, wednesday.month, wednesday.day, 12, tzinfo=tz)
            incidents.append(StoredIncident(
                id=len(incidents) + 1, created_at=local.astimezone(UTC),
                verdict=Verdict(ref=f"team-{week % 2}/job-{position}", cause=cause, action="act"),
                cluster="prod", channel=None, message_ts=None))
    return incidents


def test_weeks_start_monday_midnight_local_across_dst() -> None:
    # DST starts Sunday 29 March 2026: that week is 167 hours long.
    start = week_start(datetime(2026, 3, 29, 12, tzinfo=UTC), BERLIN)
    assert start.astimezone(UTC) == datetime(2026, 3, 22, 23, tzinfo=UTC)
    assert add_weeks(start, 1).astimezone(UTC) == datetime(2026, 3, 29, 22, tzinfo=UTC)
    assert week_key(start) == "2026-W13"
    # DST ends Sunday 25 October 2026: 169 hours.
    start = week_start(datetime(2026, 10, 25, 12, tzinfo=UTC), BERLIN)
    assert start.astimezone(UTC) == datetime(2026, 10, 18, 22, tzinfo=UTC)
    assert add_weeks(start, 1).astimezone(UTC) == datetime(2026, 10, 25, 23, tzinfo=UTC)
    # Sunday 22:30 UTC after the spring change is already Monday 00:30 in Berlin.
    monday = week_start(datetime(2026, 3, 29, 22, 30, tzinfo=UTC), BERLIN)
    assert week_key(monday) == "2026-W14"
    assert week_key(week_start(datetime(2026, 3, 29, 22, 30, tzinfo=UTC), ZoneInfo("UTC"))) \
        == "2026-W13"
    assert week_key(last_full_week(datetime(2026, 1, 1, tzinfo=UTC), BERLIN)) == "2025-W52"


def test_new_york_weeks_across_dst() -> None:
    # DST starts Sunday 8 March 2026 at 02:00: Monday 2 March 00:00 EST to Monday 9 March EDT.
    start = week_start(datetime(2026, 3, 8, 12, tzinfo=UTC), NEW_YORK)
    assert start.astimezone(UTC) == datetime(2026, 3, 2, 5, tzinfo=UTC)
    assert add_weeks(start, 1).astimezone(UTC) == datetime(2026, 3, 9, 4, tzinfo=UTC)
    assert week_key(start) == "2026-W10"
    # DST ends Sunday 1 November 2026: Monday 26 October EDT to Monday 2 November EST.
    start = week_start(datetime(2026, 11, 1, 12, tzinfo=UTC), NEW_YORK)
    assert start.astimezone(UTC) == datetime(2026, 10, 26, 4, tzinfo=UTC)
    assert add_weeks(start, 1).astimezone(UTC) == datetime(2026, 11, 2, 5, tzinfo=UTC)
    # Monday 03:00 UTC is still Sunday evening in New York: the week before.
    assert week_key(week_start(datetime(2026, 11, 2, 3, tzinfo=UTC), NEW_YORK)) == "2026-W44"
    assert week_key(week_start(datetime(2026, 11, 2, 5, tzinfo=UTC), NEW_YORK)) == "2026-W45"


@pytest.mark.parametrize("tz", [BERLIN, NEW_YORK], ids=str)
def test_digest_of_every_week_of_a_generated_year(tz: ZoneInfo) -> None:
    year = generated_year(tz)
    for week in range(53):
        start = datetime(2025, 12, 29, tzinfo=tz) + timedelta(weeks=week)  # local wall clock
        digest = compute_digest(year, start, tz)
        now, before = expected_counts(week), expected_counts(week - 1)
        assert {t.cause: t.count for t in digest.causes if t.count} == now, week_key(start)
        assert {t.cause: t.previous for t in digest.causes if t.previous} == before
        assert digest.total == sum(now.values())
        assert digest.previous_total == sum(before.values())
        earlier = {cause for w in range(week) for cause in expected_counts(w)}
        assert set(digest.first_time) == set(now) - earlier, week_key(start)
        assert digest.key == f"2026-W{week + 1:02d}" if week < 52 else "2026-W53"


def test_empty_week_and_a_cause_appearing_for_the_first_time() -> None:
    year = generated_year()
    empty = compute_digest(year, add_weeks(YEAR_START, 10), BERLIN)  # 2026-W11
    assert (empty.total, empty.top_namespaces, empty.first_time) == (0, (), ())
    assert {t.cause: (t.count, t.arrow) for t in empty.causes} == {
        cause: (0, "↓") for cause in expected_counts(9)}
    assert "No answers, 1 the week before" in digest_text(empty)
    second_empty = compute_digest(year, add_weeks(YEAR_START, 11), BERLIN)  # 2026-W12
    assert (second_empty.total, second_empty.previous_total, second_empty.causes) == (0, 0, ())
    assert digest_text(second_empty).endswith("No answers, 0 the week before")
    after_empty = compute_digest(year, add_weeks(YEAR_START, 12), BERLIN)
    assert after_empty.previous_total == 0 and after_empty.first_time == ()
    assert all(trend.arrow == "↑" for trend in after_empty.causes)

    first = compute_digest(year, add_weeks(YEAR_START, DEVICE_UNFIT_FROM), BERLIN)
    assert first.first_time == ("device-unfit",)
    assert "First time: device-unfit" in digest_text(first)
    again = compute_digest(year, add_weeks(YEAR_START, DEVICE_UNFIT_FROM + 1), BERLIN)
    assert again.first_time == ()
    # Only the report's own weeks given: what the store knew earlier still counts.
    only_week = [i for i in year if i.created_at >= add_weeks(YEAR_START, DEVICE_UNFIT_FROM + 1)]
    told = compute_digest(only_week, add_weeks(YEAR_START, DEVICE_UNFIT_FROM + 1), BERLIN,
                          seen_before={"device-unfit"})
    assert "device-unfit" not in told.first_time


@pytest.mark.parametrize("tz", [BERLIN, NEW_YORK], ids=str)
def test_dst_weeks_keep_their_monday_midnight_incidents(tz: ZoneInfo) -> None:
    year = generated_year(tz)
    for dst_week in DST_WEEKS[tz.key]:
        for week in (dst_week, dst_week + 1):  # the short or long week, and the one after
            start = week_start(datetime(2025, 12, 29, 12, tzinfo=tz) + timedelta(weeks=week), tz)
            # Through UTC: Python subtracts two times of one zone by their wall clocks.
            end = add_weeks(start, 1)
            hours = (end.astimezone(UTC) - start.astimezone(UTC)).total_seconds() / 3600
            assert hours == (168 if week != dst_week else 167 if dst_week < 26 else 169)
            digest = compute_digest(year, start, tz)
            assert digest.total == sum(expected_counts(week).values()), week


def incident(number: int, at: datetime, verdict: Verdict) -> StoredIncident:
    return StoredIncident(number, at, verdict, "prod", None, None)


def test_digest_ranks_namespaces_nodes_repeat_offenders_and_the_split() -> None:
    monday = datetime(2026, 11, 23, 8, tzinfo=UTC)
    full = Verdict("ml/train", "exhausted", "wait",
                   nodes=[NodeReport("gpu-a10-full", "exhausted"),
                          NodeReport("cpu-1", "selector-mismatch")])
    broken = Verdict("research/big", "allocatable-zero", "repair",
                     nodes=[NodeReport("gpu-v100-broken", "allocatable-zero")])
    no_plugin = Verdict("infer/vllm", "no-gpu-node", "restore",
                        nodes=[NodeReport("gpu-t4", "no-gpu-node")])
    typo = Verdict("ml/typo", "pod-not-found", "check")
    week = [full, full, full, broken, broken, no_plugin, typo, typo]
    incidents = [incident(n, monday + timedelta(hours=n), v) for n, v in enumerate(week)]
    digest = compute_digest(incidents, monday, ZoneInfo("UTC"))
    assert digest.top_namespaces == (("ml", 5), ("research", 2), ("infer", 1))
    assert digest.top_nodes == (("gpu-a10-full", 3), ("gpu-v100-broken", 2), ("gpu-t4", 1))
    assert digest.repeat_offenders == (("ml/train", 3), ("ml/typo", 2), ("research/big", 2))
    assert (digest.capacity, digest.repair, digest.total) == (3, 3, 8)
    text = digest_text(digest)
    assert "Wait or add capacity (exhausted): 3 of 8 (38%)" in text
    assert "Repair the node (no-gpu-node, allocatable-zero): 3 of 8 (38%)" in text
    assert "Asked more than once: ml/train ×3, ml/typo ×2, research/big ×2" in text
    assert "Top nodes: gpu-a10-full 3, gpu-v100-broken 2, gpu-t4 1" in text


def test_arrows_compare_with_the_week_before() -> None:
    utc = ZoneInfo("UTC")
    monday = datetime(2026, 11, 23, tzinfo=UTC)
    before = monday - timedelta(days=3)
    rows = [(before, "exhausted"), (before, "exhausted"), (before, "too-large"),
            (monday, "exhausted"), (monday, "too-large"), (monday, "quota-exceeded"),
            (before, "no-gpu-node")]
    incidents = [incident(n, at, Verdict(f"ml/p{n}", cause, "act"))
                 for n, (at, cause) in enumerate(rows)]
    arrows = {t.cause: t.arrow for t in compute_digest(incidents, monday, utc).causes}
    assert arrows == {"exhausted": "↓", "too-large": "→", "quota-exceeded": "↑",
                      "no-gpu-node": "↓"}


def test_blocks_are_valid_and_escape_stored_names() -> None:
    monday = datetime(2026, 11, 23, tzinfo=UTC)
    hostile = Verdict("<!channel>/x&y", "exhausted", "act",
                      nodes=[NodeReport("<http://evil|node>", "exhausted")])
    digest = compute_digest([incident(1, monday, hostile), incident(2, monday, hostile)],
                            monday, ZoneInfo("UTC"))
    blocks = digest_blocks(digest)
    assert blocks[0] == {"type": "header",
                         "text": {"type": "plain_text", "text": "gpuwhy digest 2026-W48"}}
    shown = json.dumps(blocks, ensure_ascii=False)
    assert "<!channel>" not in shown and "<http" not in shown
    assert "&lt;!channel&gt;/x&amp;y ×2" in shown
    assert "&lt;http://evil|node&gt; 2" in shown
    assert len(blocks) <= 50


@pytest.mark.parametrize("text", ["0", "-1", "53", "x", "", "1.5"])
def test_bad_weeks(text: str) -> None:
    with pytest.raises(DigestError) as caught:
        parse_weeks(text)
    assert "weeks must be" in str(caught.value)


def test_good_weeks() -> None:
    assert [parse_weeks(t) for t in ("1", " 4 ", "52")] == [1, 4, 52]


def test_nodes_named_by_real_verdicts() -> None:
    """Which nodes the digest counts, for answers from the recorded clusters."""
    seven = SnapshotSource(SCENARIOS / "seven-states")
    named = {ref: implicated_nodes(seven.triage(parse_ref(ref))) for ref in
             ("research/full", "research/broken-node", "research/no-plugin", "research/big",
              "research/wrong-pool", "research/ok", "ml/finetune")}
    assert named == {
        "research/full": ["gpu-a10-full"],
        "research/broken-node": ["gpu-v100-broken"],
        "research/no-plugin": ["gpu-t4-noplugin"],
        "research/big": ["gpu-a10-full", "gpu-a100-1"],
        "research/wrong-pool": [],
        "research/ok": [],
        "ml/finetune": [],
    }
    hami = SnapshotSource(SCENARIOS / "hami-sharing").triage(parse_ref("hami/needs-40g"))
    assert hami.cause == "device-unfit"
    assert sorted(implicated_nodes(hami)) == ["hami-a100-1", "hami-t4-1"]
    runtime_error = Verdict("ml/x", "node-runtime-error", "repair",
                            nodes=[NodeReport("gpu-a100-1", "fit", "bound here")])
    assert implicated_nodes(runtime_error) == ["gpu-a100-1"]


def record_year(store: Store) -> None:
    for item in generated_year():
        store.record(item.verdict, cluster="prod", asked_by="cli", source="cli",
                     at=item.created_at)


def test_store_backed_digest_and_stats(database_url: str) -> None:
    store = Store(database_url)
    store.upgrade()
    record_year(store)
    for week in range(53):
        digest = load_digest(store, add_weeks(YEAR_START, week), BERLIN)
        assert {t.cause: t.count for t in digest.causes if t.count} == expected_counts(week)
        assert {t.cause: t.previous for t in digest.causes if t.previous} == \
            expected_counts(week - 1)
        first = {"exhausted", "allocatable-zero"} if week == 0 else {"no-gpu-node"} \
            if week == 1 else {"device-unfit"} if week == DEVICE_UNFIT_FROM else set()
        assert set(digest.first_time) == first, week

    two = load_digest(store, add_weeks(YEAR_START, 12), BERLIN, weeks=2)
    assert two.key == "2026-W13..2026-W14"
    assert two.total == sum(expected_counts(12).values()) + sum(expected_counts(13).values())
    assert two.previous_total == sum(expected_counts(10).values()) + sum(
        expected_counts(11).values())

    # Wednesday of 2026-W14, 13:00 Berlin: W14 is the week in progress.
    now = datetime(2026, 4, 1, 11, tzinfo=UTC)
    stats = compute_stats(store.incidents_between(YEAR_START, now), now, BERLIN, 3)
    assert [w.key for w in stats.weeks] == ["2026-W12", "2026-W13", "2026-W14"]
    assert [w.in_progress for w in stats.weeks] == [False, False, True]
    exhausted = next(row for row in stats.rows if row.cause == "exhausted")
    so_far = 1  # W14 has two: Monday 00:00 and Sunday 23:59:59, still to come
    assert expected_counts(13) == {"exhausted": 2}
    assert exhausted.counts == (0, expected_counts(12)["exhausted"], so_far)
    text = stats_text(store, 3, now, "Europe/Berlin")
    assert "2026-W14*" in text and "exhausted" in text
    blocks = stats_blocks(store, 3, now, "Europe/Berlin")
    assert blocks[0]["text"]["text"] == f"```{text}```"
    store.close()


class Posts:
    def __init__(self, failures: int = 0, delay_s: float = 0) -> None:
        self.sent: list[tuple[str, str, list[dict[str, Any]]]] = []
        self.failures = failures
        self.delay_s = delay_s
        self.lock = threading.Lock()

    def __call__(self, channel: str, text: str, blocks: list[dict[str, Any]]) -> None:
        time.sleep(self.delay_s)
        with self.lock:
            if self.failures:
                self.failures -= 1
                raise ConnectionError("slack is down")
            self.sent.append((channel, text, blocks))


def test_racing_senders_post_once(database_url: str) -> None:
    """Two replicas (two Store objects, two connection pools), three sending threads each."""
    replicas = [Store(database_url), Store(database_url)]
    replicas[0].upgrade()
    one_answer(replicas[0], datetime(2026, 11, 25, 12, tzinfo=BERLIN))
    digest = load_digest(replicas[0], datetime(2026, 11, 23, tzinfo=BERLIN), BERLIN)
    posts = Posts(delay_s=0.05)  # a slow Slack: the others arrive while the first one posts
    start = threading.Barrier(6)
    results: list[bool] = []

    def send(replica: Store) -> None:
        start.wait()
        results.append(post_once(replica, digest, "C1", posts))

    threads = [threading.Thread(target=send, args=(replicas[n % 2],)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(results) == [False] * 5 + [True]
    assert [channel for channel, _, _ in posts.sent] == ["C1"]
    for replica in replicas:
        replica.close()


SCHEDULE = DigestSchedule(channel="C-digest", weekday=0, hour=9, timezone="Europe/Berlin")


def at_berlin(day: int, hour: int, minute: int = 0) -> datetime:
    return datetime(2026, 11, day, hour, minute, tzinfo=BERLIN).astimezone(UTC)


def test_scheduler_posts_last_week_once_when_due(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'gpuwhy.db'}"
    store = Store(url)
    store.upgrade()
    store.record(Verdict("ml/a", "exhausted", "wait"), cluster="prod", asked_by="U1",
                 source="slack", channel="C1", message_ts="1.1", at=at_berlin(25, 12))
    posts = Posts()
    scheduler = DigestScheduler(store, posts, SCHEDULE)
    assert scheduler.run_pending(at_berlin(30, 8, 59)) is False  # Monday 30 Nov, before 09:00
    assert scheduler.run_pending(at_berlin(30, 9)) is True
    assert scheduler.run_pending(at_berlin(30, 9, 1)) is False
    assert scheduler.run_pending(at_berlin(30, 15)) is False
    ((channel, text, blocks),) = posts.sent
    assert channel == "C-digest"
    assert text.startswith("gpuwhy digest 2026-W48")
    assert "1 answer, 0 the week before" in text
    assert blocks[0]["text"]["text"] == "gpuwhy digest 2026-W48"

    restarted = DigestScheduler(Store(url), posts, SCHEDULE)  # a restart, or a second replica
    assert restarted.run_pending(at_berlin(30, 10)) is False
    assert len(posts.sent) == 1
    # Down all Monday: the digest still goes out when the bot is back mid-week.
    late = DigestScheduler(Store(url), posts,
                           DigestSchedule(channel="C-other", weekday=0, hour=9,
                                          timezone="Europe/Berlin"))
    assert late.run_pending(datetime(2026, 12, 2, 12, tzinfo=UTC)) is True
    assert [channel for channel, _, _ in posts.sent] == ["C-digest", "C-other"]
    store.close()


def one_answer(store: Store, at: datetime) -> None:
    """A store with one answer at ``at``: a week without any posts no digest."""
    store.record(Verdict("ml/a", "exhausted", "wait"), cluster="prod", asked_by="U1",
                 source="slack", channel="C1", message_ts="1.1", at=at)


def test_scheduler_retries_after_a_failed_post(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'gpuwhy.db'}")
    store.upgrade()
    one_answer(store, at_berlin(25, 12))
    posts = Posts(failures=1)
    scheduler = DigestScheduler(store, posts, SCHEDULE)
    with pytest.raises(ConnectionError):
        scheduler.run_pending(at_berlin(30, 9))
    assert scheduler.run_pending(at_berlin(30, 9, 1)) is True
    assert len(posts.sent) == 1
    store.close()


def test_scheduler_thread_stops_and_survives_failures(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'gpuwhy.db'}")
    store.upgrade()
    one_answer(store, datetime.now(UTC) - timedelta(days=7))
    posts = Posts(failures=1000)
    scheduler = DigestScheduler(store, posts, DigestSchedule(channel="C1", weekday=0, hour=0))
    stop = threading.Event()
    thread = threading.Thread(target=scheduler.run_forever, args=(stop, 0.01))
    thread.start()
    while posts.failures > 995:
        stop.wait(0.01)
    stop.set()
    thread.join(timeout=5)
    assert not thread.is_alive()
    assert posts.sent == []
    store.close()


def test_scheduler_without_channel_or_with_bad_settings(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'gpuwhy.db'}")
    store.upgrade()
    assert DigestScheduler(store, Posts(), DigestSchedule()).run_pending(at_berlin(30, 12)) is False
    for bad, message in ((DigestSchedule("C1", weekday=7), "weekday"),
                         (DigestSchedule("C1", hour=24), "hour"),
                         (DigestSchedule("C1", timezone="Mars/Olympus"), "timezone")):
        with pytest.raises(DigestError, match=message):
            DigestScheduler(store, Posts(), bad)
    store.close()


def test_queues_section_names_the_flavors_people_waited_on_and_the_demand() -> None:
    source = SnapshotSource(SCENARIOS / "kueue-basics")
    monday = datetime(2026, 11, 23, 8, tzinfo=UTC)
    refs = ["team-a/eval-nightly", "team-a/resnet-sweep", "team-a/big-pretrain",
            "team-b/notebook-gpu", "team-b/render-batch", "team-c/sim-h200",
            "team-a/eval-nightly", "team-b/sd-train"]
    incidents = [incident(n, monday + timedelta(hours=n), source.triage(parse_ref(ref)))
                 for n, ref in enumerate(refs)]
    digest = compute_digest(incidents, monday, ZoneInfo("UTC"))
    assert [(q.cluster_queue, q.flavor, q.answers, q.asked, q.largest, q.nominal)
            for q in digest.queues] == [("team-a-cq", "a100", 4, 24, 16, 8),
                                        ("team-b-cq", "h100", 1, 1, 1, 16)]
    assert digest.queue_problems == 2  # the missing LocalQueue, the inactive ClusterQueue
    text = digest_text(digest)
    assert ("  team-a-cq / a100: 4 answers, asked 24 nvidia.com/gpu in all (largest 16) "
            "against a quota of 8") in text.splitlines()
    assert "  2 answers waited on a queue problem (a missing LocalQueue, an inactive " \
        "ClusterQueue, ...)" in text.splitlines()
    shown = json.dumps(digest_blocks(digest), ensure_ascii=False)
    assert "*Queues*" in shown and "team-b-cq / h100: 1 answer, asked 1" in shown


def test_no_queues_section_without_queued_answers() -> None:
    monday = datetime(2026, 11, 23, 8, tzinfo=UTC)
    digest = compute_digest([incident(1, monday, Verdict("ml/x", "exhausted", "wait"))],
                            monday, ZoneInfo("UTC"))
    assert digest.queues == () and digest.queue_problems == 0
    assert "Queues" not in digest_text(digest)
    assert "Queues" not in json.dumps(digest_blocks(digest))
