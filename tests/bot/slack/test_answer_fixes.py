"""Answers as the asker sees them: who asked, the data's age, private replies, hidden names."""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.answer.byline import age_text, byline
from bot.answer.visibility import hide_text
from bot.clusters.sources import LiveSource, SnapshotSource, TriageSource, WatchSource
from bot.config import BotConfig
from bot.store import Store
from tests.bot.slack.test_slack_app import (
    CHANNEL,
    TRIAGED_AT,
    ask,
    dispatch,
    event_body,
    make_app,
    wait_until,
)
from tests.kubeapi import FakeKubeAPI, status_body
from tests.paths import FIXTURES
from tests.slackfake import FakeSlack
from triage.refs import parse_ref
from triage.snapshot import Snapshot
from triage.suggest import closest_names

HOUR = timedelta(hours=1)
SEVEN_STATES = FIXTURES / "scenarios" / "seven-states"


def dump_written(tmp_path: Path, age: timedelta) -> Path:
    """A copy of seven-states whose files were written ``age`` before the bot's clock."""
    dump = shutil.copytree(SEVEN_STATES, tmp_path / "dump", copy_function=shutil.copy)
    stamp = (TRIAGED_AT - age).timestamp()
    for path in dump.iterdir():
        os.utime(path, (stamp, stamp))
    return dump


def test_posted_answer_says_who_asked(tmp_path: Path, slack: FakeSlack) -> None:
    app = make_app(slack, SnapshotSource(dump_written(tmp_path, timedelta(seconds=30))))
    ask(app, slack, "research/full", user="U0BOB")
    [post] = slack.wait_for("chat.postMessage")
    assert post.params["blocks"][1] == {
        "type": "context", "elements": [{"type": "mrkdwn", "text": "asked by <@U0BOB>"}]}
    assert post.params["text"].endswith(" · asked by <@U0BOB>")
    assert post.params["channel"] == CHANNEL


def test_answer_from_an_old_dump_says_how_old(tmp_path: Path, slack: FakeSlack) -> None:
    app = make_app(slack, SnapshotSource(dump_written(tmp_path, timedelta(days=3, hours=2))))
    ask(app, slack, "research/full", user="U0BOB")
    [post] = slack.wait_for("chat.postMessage")
    assert post.params["blocks"][1]["elements"][0]["text"] == (
        "asked by <@U0BOB> · :hourglass: data 3 days old (2026-11-27 12:05 UTC)")


@pytest.mark.parametrize(("age", "text"), [
    (timedelta(seconds=6), "6 s"), (timedelta(seconds=59), "59 s"),
    (timedelta(minutes=12, seconds=50), "12 min"), (timedelta(hours=5, minutes=59), "5 h"),
    (timedelta(days=1, hours=3), "1 day"), (timedelta(days=40), "40 days"),
])
def test_ages_are_said_in_their_largest_unit(age: timedelta, text: str) -> None:
    assert age_text(age) == text


def test_byline_names_the_cluster_and_keeps_a_strange_user_inert() -> None:
    line = byline("<!channel>", cluster="prod <x>", as_of=None, now=TRIAGED_AT)
    assert line == "asked by &lt;!channel&gt; · cluster *prod &lt;x&gt;*"


def test_pod_not_found_is_answered_privately(tmp_path: Path, slack: FakeSlack) -> None:
    store = Store(f"sqlite:///{tmp_path / 'gpuwhy.db'}")
    store.upgrade()
    app = make_app(slack, SnapshotSource(dump_written(tmp_path, timedelta(0))), store=store)
    ask(app, slack, "research/typo", user="U0BOB")
    [reply] = slack.wait_for("response_url")
    assert reply.params["text"].startswith("🔍 pod-not-found — research/typo: no pod, ")
    assert [b["type"] for b in reply.params["blocks"]] == ["section", "section", "section"]
    slack.settle()
    assert slack.calls_to("chat.postMessage") == []
    [incident] = wait_until(lambda: store.incidents_between(TRIAGED_AT, TRIAGED_AT + HOUR)
                            or None)
    assert (incident.verdict.cause, incident.channel, incident.message_ts) == (
        "pod-not-found", CHANNEL, None)


@pytest.mark.parametrize(("typed", "suggested"), [
    ("research/ful", ["research/full"]),
    ("research/fulll", ["research/full"]),
    ("ml/finetun", ["ml/finetune"]),
    ("infer/vlm", ["infer/vllm"]),
    ("team-b/train", ["team-b/train-b"]),
    ("research/train-a", []),  # ml/train-a is in another namespace
    ("research/zzzzzzzz", []),
])
def test_closest_names_in_the_namespace(typed: str, suggested: list[str]) -> None:
    assert closest_names(Snapshot.from_dir(SEVEN_STATES).rows, parse_ref(typed)) == suggested


def test_closest_names_nearest_first_at_most_three() -> None:
    snapshot = Snapshot.from_dir(SEVEN_STATES)
    assert closest_names(snapshot.rows, parse_ref("research/bog")) == ["research/big"]
    pods = [{"kind": "Pod", "metadata": {"namespace": "lab", "name": name}}
            for name in ("job-1", "job-2", "job-3", "job-10", "jobs")]
    crowded = Snapshot(pods=pods)
    assert closest_names(crowded.rows, parse_ref("lab/job")) == ["lab/job-1", "lab/job-10",
                                                            "lab/job-2"]


# --- pods of other namespaces are counted, not named -------------------------------------------

RESEARCH_ONLY = BotConfig(database_url="sqlite://",
                          channels={CHANNEL: ("research",), "C0ALL": ("*",)})


def test_holders_in_other_namespaces_are_not_named(slack: FakeSlack,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="bot.slack.listeners.state")
    app = make_app(slack, SnapshotSource(SEVEN_STATES), config=RESEARCH_ONLY)
    ask(app, slack, "research/full")
    [post] = slack.wait_for("chat.postMessage")
    ts = post.answer["ts"]
    wait_until(lambda: f"ts {ts}" in caplog.text or None)  # remembered for its thread
    said = json.dumps(post.params, ensure_ascii=False)
    assert "train-a" not in said and "team-b" not in said
    assert post.params["blocks"][2]["text"]["text"] == (
        "*Next:* gpu-a10-full has 2/2 nvidia.com/gpu held by 2 pods in other namespaces "
        "(2 pods in other namespaces are finished and hold nothing). Wait for them to finish, "
        "or relax nodeSelector pool=a10-full: gpu-a100-1 has 2 free; or add capacity.")
    assert post.params["blocks"][3]["text"]["text"].startswith(
        "*Evidence*\n• Node/gpu-a10-full · status.allocatable[nvidia.com/gpu] − requests: "
        "2/2 nvidia.com/gpu held by 2 pods in other namespaces\n")
    dispatch(app, event_body("show devices", thread_ts=ts, event_id="Ev-hidden"),
             content_type="application/json")
    devices = slack.wait_for("chat.postMessage", 2)[1]
    table = devices.params["blocks"][2]["text"]["text"]
    assert "train-a" not in table and "team-b" not in table
    # No source says which pod holds which A10: the node line counts them, no device names one.
    assert re.split(r"\s{2,}", table.splitlines()[1]) == [
        "#0", "NVIDIA-A10", "?/23028", "exhausted"]
    assert devices.params["blocks"][1]["text"]["text"] == (
        "*gpu-a10-full* · exhausted · 2 × NVIDIA-A10 · 2/2 held by 2 pods in other namespaces (2)"
        "\n2/2 nvidia.com/gpu held")


def test_a_channel_for_every_namespace_sees_the_names(slack: FakeSlack) -> None:
    app = make_app(slack, SnapshotSource(SEVEN_STATES), config=RESEARCH_ONLY)
    ask(app, slack, "research/full", channel="C0ALL")
    [post] = slack.wait_for("chat.postMessage")
    assert "held by ml/train-a, team-b/train-b (team-b/crashed and team-b/done are finished" \
        in post.params["blocks"][2]["text"]["text"]


@pytest.mark.parametrize(("text", "shown"), [
    ("held by ml/train-a, team-b/train-b.", "held by 2 pods in other namespaces."),
    ("held by research/a, ml/b and team-b/c", "held by research/a and 2 pods in other namespaces"),
    ("held by research/a, ml/b, research/c", "held by research/a, research/c and 1 pod in "
                                             "another namespace"),
    ("(ml/x is finished)", "(1 pod in another namespace is finished)"),
    ("requests.nvidia.com/gpu 1/1 used (research/a)", "requests.nvidia.com/gpu 1/1 used "
                                                      "(research/a)"),
    ("2/2 amd.com/gpu, hami.io/vgpu-node, 0/6 nodes", "2/2 amd.com/gpu, hami.io/vgpu-node, "
                                                      "0/6 nodes"),
    ("Node/gpu-1 and ResourceQuota research/q", "Node/gpu-1 and ResourceQuota research/q"),
    ("https://ml/x and ml/x/y", "https://ml/x and ml/x/y"),
])
def test_hide_text(text: str, shown: str) -> None:
    assert hide_text(text, lambda namespace: namespace == "research") == shown


def test_stats_in_a_restricted_channel_count_only_its_namespaces(tmp_path: Path,
                                                                  slack: FakeSlack) -> None:
    store = Store(f"sqlite:///{tmp_path / 'gpuwhy.db'}")
    store.upgrade()
    source = SnapshotSource(SEVEN_STATES)
    for ref, channel in (("research/full", "C0ALL"), ("ml/finetune", "C0ALL"),
                         ("infer/vllm", "C0ALL"), ("research/big", CHANNEL)):
        store.record(source.triage(parse_ref(ref)), cluster="seven-states", asked_by="U0BOB",
                     source="slack", channel=channel, message_ts=f"1.{len(ref)}", at=TRIAGED_AT)
    app = make_app(slack, source, store=store, config=RESEARCH_ONLY)
    ask(app, slack, "stats 1")
    ask(app, slack, "stats 1", channel="C0ALL")
    # The two answers come back in either order; the restricted one says its namespaces.
    everything, restricted = sorted(reply.params["text"]
                                    for reply in slack.wait_for("response_url", 2))
    assert restricted.splitlines()[:5] == [
        "gpuwhy answers per week (UTC) · namespaces research",
        "cause     2026-W49*",
        "too-large         1",
        "exhausted         1",
        "total             2",
    ]
    assert everything.splitlines()[0] == "gpuwhy answers per week (UTC)"
    assert everything.splitlines()[-2].split() == ["total", "4"]


# --- pod-not-found: the names it was meant to be, and the events left behind -----------------

@contextmanager
def read_three_ways(dump: Path, tmp_path: Path) -> Iterator[dict[str, TriageSource]]:
    """The same cluster as a dump directory, a live API (cold reads) and a watch cache."""
    with FakeKubeAPI(dump) as api:
        kubeconfig = str(api.kubeconfig(tmp_path / "kubeconfig"))
        watch = WatchSource(kubeconfig, retry_delay=0.05).start()
        try:
            assert watch.wait_ready(10)
            yield {"dump": SnapshotSource(dump), "live": LiveSource(kubeconfig), "watch": watch}
        finally:
            watch.stop()


@pytest.mark.parametrize(("typed", "meant"), [
    ("research/ful", "research/full"),
    ("ml/finetun", "ml/finetune"),
    ("infer/vlm", "infer/vllm"),
])
def test_pod_not_found_says_what_was_probably_meant(typed: str, meant: str,
                                                    tmp_path: Path) -> None:
    with read_three_ways(SEVEN_STATES, tmp_path) as sources:
        actions = {how: source.triage(parse_ref(typed)).action
                   for how, source in sources.items()}
    namespace = typed.partition("/")[0]
    assert actions == dict.fromkeys(sources, (
        f"no pod, workload or event named {typed} exists. Did you mean {meant}? Check the "
        f"name and namespace (kubectl -n {namespace} get pods,jobs,deployments); events "
        "expire after an hour, so an old rejection leaves no trace."))


def test_pod_not_found_answer_in_slack_reads_did_you_mean(slack: FakeSlack) -> None:
    app = make_app(slack, SnapshotSource(SEVEN_STATES))
    ask(app, slack, "research/ful")
    [reply] = slack.wait_for("response_url")
    assert reply.params["blocks"][1]["text"]["text"].startswith(
        "*Next:* no pod, workload or event named research/ful exists. Did you mean "
        "research/full? Check the name")


def test_a_deleted_pod_is_not_said_to_have_no_events(tmp_path: Path) -> None:
    dump = shutil.copytree(SEVEN_STATES, tmp_path / "deleted", copy_function=shutil.copy)
    pods = json.loads((dump / "pods.json").read_text())
    pods["items"] = [p for p in pods["items"] if p["metadata"]["name"] != "ok"]
    (dump / "pods.json").write_text(json.dumps(pods))
    with read_three_ways(dump, tmp_path) as sources:
        verdicts = {how: source.triage(parse_ref("research/ok")) for how, source in sources.items()}
    for verdict in verdicts.values():
        assert verdict.cause == "pod-not-found"
        assert verdict.action == (
            "no pod or workload named research/ok exists now, but 1 event about it remains "
            "(latest: Scheduled at 2026-11-30T12:50:44): it was deleted, or finished and "
            "cleaned up. Check who deletes it (kubectl -n research get events --field-selector "
            "involvedObject.name=ok).")
        assert "no event" not in verdict.action
        assert verdict.evidence[1].value.startswith("Successfully assigned research/ok to ")


# --- scheduler-unavailable for a pod created moments ago ------------------------------------

HAMI_SHARING = SEVEN_STATES.parent / "hami-sharing"


def test_a_pod_created_moments_ago_is_said_to_be_new(tmp_path: Path) -> None:
    dump = shutil.copytree(HAMI_SHARING, tmp_path / "hami", copy_function=shutil.copy)
    written = datetime(2026, 11, 30, 12, 53, 6, tzinfo=UTC).timestamp()  # 6 s after creation
    for path in dump.iterdir():
        os.utime(path, (written, written))
    verdict = SnapshotSource(dump).triage(parse_ref("hami/fits-small"))
    assert verdict.cause == "scheduler-unavailable"
    assert verdict.action.startswith(
        "hami/fits-small was created 6 s ago: the scheduler may not have looked yet; ask again "
        "in a minute. GPU-wise ")
    assert verdict.action.endswith(
        " fit; if it still waits then, check that hami-scheduler (spec.schedulerName) is running.")


def test_an_old_pod_no_scheduler_spoke_about_is_not_called_new(tmp_path: Path) -> None:
    verdict = SnapshotSource(HAMI_SHARING).triage(parse_ref("hami/fits-small"))
    assert verdict.cause == "scheduler-unavailable"
    assert "created" not in verdict.action
    assert "no scheduler has said anything about hami/fits-small" in verdict.action


def test_live_and_watched_reads_know_when_they_read(tmp_path: Path) -> None:
    with FakeKubeAPI(HAMI_SHARING) as api:
        pods = json.loads((HAMI_SHARING / "pods.json").read_text())["items"]
        [fresh] = [p for p in pods if p["metadata"]["name"] == "fits-small"]
        just_now = datetime.now(UTC) - timedelta(seconds=3)
        fresh["metadata"]["creationTimestamp"] = just_now.strftime("%Y-%m-%dT%H:%M:%SZ")
        api.apply(fresh)
        kubeconfig = str(api.kubeconfig(tmp_path / "kubeconfig"))
        watch = WatchSource(kubeconfig, retry_delay=0.05).start()
        try:
            assert watch.wait_ready(10)
            for source in (LiveSource(kubeconfig), watch):
                action = source.triage(parse_ref("hami/fits-small")).action
                assert re.match(r"hami/fits-small was created [0-9]+ s ago: the scheduler may "
                                "not have looked yet", action), action
        finally:
            watch.stop()


def test_a_watch_that_lost_its_server_dates_its_answers(tmp_path: Path) -> None:
    with FakeKubeAPI(SEVEN_STATES) as api:
        watch = WatchSource(str(api.kubeconfig(tmp_path / "kubeconfig")), retry_delay=0.05,
                            stale_after=1.0).start()
        try:
            assert watch.wait_ready(10)
            time.sleep(1.5)
            assert watch.as_of() is None  # bookmarks every 0.2 s: current
            before = datetime.now(UTC)
            api.inject("status", "/api/v1/nodes", times=10_000, status=status_body(
                500, "InternalError", "etcd is gone"))
            api.drop_watches()
            as_of = wait_until(watch.as_of, timeout=20)
        finally:
            watch.stop()
    assert as_of <= before + timedelta(seconds=1)
    line = byline("U0BOB", cluster=None, as_of=as_of, now=as_of + timedelta(minutes=7))
    assert line == (f"asked by <@U0BOB> · :hourglass: data 7 min old "
                    f"({as_of.strftime('%Y-%m-%d %H:%M')} UTC)")
