"""What the listeners share: settings, the triage source, the store and recent answers."""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Executor, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from slack_bolt import Respond

from bot.answer.kept import kept_verdict
from bot.answer.visibility import visible_answer, visible_verdict
from bot.clusters.fleet import Fleet
from bot.clusters.sources import TriageSource
from bot.config import EVERY_CHANNEL, BotConfig
from bot.digest import EVERYTHING, Scope
from bot.slack.listeners.replies import APOLOGY
from bot.store import Store, StoreError
from bot.store.journal import IncidentJournal, JournalEntry
from bot.web.metrics import ANSWERS
from scoring.verdict import Verdict

log = logging.getLogger(__name__)

SLACK_SOURCE = "slack"
ANSWER_WORKERS = 8
# Bolt context key: a function the HTTP endpoint adds to each signed request, False when a
# replica sharing the store already took that request (a replay); checked after the ack.
ONCE = "gpuwhy_once"


# An answer starts once no Slack request has been in flight for QUIET_S, or after it has
# waited LONGEST_WAIT_S. The quiet spell is longer than the gaps in a burst as it arrives:
# 200 commands sent at once from 200 threads reached serve over ~0.2 s, with gaps of up to
# 158 ms between two of them (2 cores); a 25 ms spell let answers start mid-burst.
QUIET_S = 0.15
LONGEST_WAIT_S = 1.0


def utc_now() -> datetime:
    return datetime.now(UTC)


def answer_workers() -> Executor:
    return ThreadPoolExecutor(ANSWER_WORKERS, thread_name_prefix="gpuwhy-answer")


class AcksFirst:
    """Answers wait while Slack requests are being acked.

    Slack wants each ack within 3 seconds. On a machine of few cores the answer workers'
    triage, posts and store commits take the interpreter from the threads acking a burst of
    commands: 200 at once took up to 1.4 s to ack with eight answers running beside them.
    An answer is held off until the requests stop for a moment, never longer than
    ``longest_wait_s``, so a steady stream of requests delays answers and cannot stop them.
    """

    def __init__(self, quiet_s: float = QUIET_S, longest_wait_s: float = LONGEST_WAIT_S,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.quiet_s = quiet_s
        self.longest_wait_s = longest_wait_s
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._in_flight = 0
        self._last_ack = float("-inf")

    @contextmanager
    def acking(self) -> Iterator[None]:
        """Around the handling of one request that Slack waits on."""
        with self._lock:
            self._in_flight += 1
        try:
            yield
        finally:
            with self._lock:
                self._in_flight -= 1
                self._last_ack = self._clock()

    def wait_for_quiet(self) -> None:
        """Return once no request has been in flight for ``quiet_s``, or after
        ``longest_wait_s``. A waiter looks again every ``quiet_s`` at most: acks wake
        nobody, so a burst of them costs the waiting answers nothing."""
        deadline = self._clock() + self.longest_wait_s
        while (now := self._clock()) < deadline:
            with self._lock:
                busy = self._in_flight > 0
                quiet_at = self._last_ack + self.quiet_s
            if not busy and now >= quiet_at:
                return
            self._sleep(min(deadline, now + self.quiet_s if busy else quiet_at) - now)


@dataclass(frozen=True)
class PostedAnswer:
    verdict: Verdict
    created_at: datetime
    cluster: str  # the cluster the answer describes, for the access checks in its thread


class RecentAnswers:
    """The answers this process posted, by (channel, message ts); the oldest are forgotten.

    It lets "show devices" work without a store, and while a store write is still pending.
    """

    def __init__(self, capacity: int = 1000) -> None:
        self._capacity = capacity
        self._answers: OrderedDict[tuple[str, str], PostedAnswer] = OrderedDict()
        self._lock = threading.Lock()

    def remember(self, channel: str, message_ts: str, answer: PostedAnswer) -> None:
        with self._lock:
            self._answers[(channel, message_ts)] = answer
            while len(self._answers) > self._capacity:
                self._answers.popitem(last=False)

    def get(self, channel: str, message_ts: str) -> PostedAnswer | None:
        with self._lock:
            return self._answers.get((channel, message_ts))


class SeenEvents:
    """Event ids already handled, so a Slack retry of the same event does nothing."""

    def __init__(self, capacity: int = 10000) -> None:
        self._capacity = capacity
        self._seen: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()

    def first_time(self, event_id: str) -> bool:
        with self._lock:
            if event_id in self._seen:
                return False
            self._seen[event_id] = None
            while len(self._seen) > self._capacity:
                self._seen.popitem(last=False)
            return True


@dataclass
class BotState:
    config: BotConfig
    source: TriageSource | Fleet  # one cluster, or the configured ones
    store: Store | None = None
    clock: Callable[[], datetime] = utc_now
    recent: RecentAnswers = field(default_factory=RecentAnswers)
    seen: SeenEvents = field(default_factory=SeenEvents)
    workers: Executor = field(default_factory=answer_workers)
    acks: AcksFirst = field(default_factory=AcksFirst)  # the HTTP endpoint marks its requests
    # Where answers wait for the store; by default a journal in memory on ``store``.
    journal: IncidentJournal | None = None

    def __post_init__(self) -> None:
        if self.journal is None and self.store is not None:
            self.journal = IncidentJournal(self.store)
        self.fleet = self.source if isinstance(self.source, Fleet) else Fleet.single(self.source)

    def remember(self, verdict: Verdict, *, cluster: str, asked_by: str, channel: str,
                 message_ts: str | None, source: str = SLACK_SOURCE) -> None:
        """Keep a posted answer for its thread (``message_ts`` None: a private reply, which has
        none) and journal it for the store (never waits), both as gpuwhy keeps answers
        (``bot.answer.kept``)."""
        verdict = kept_verdict(verdict)
        now = self.clock()
        if message_ts is not None:
            self.recent.remember(channel, message_ts, PostedAnswer(verdict, now, cluster))
        ANSWERS.labels(verdict.cause, source).inc()  # before the log line tests wait for
        log.info("answered %s (%s) for %s in %s, ts %s", verdict.ref, verdict.cause, asked_by,
                 channel, message_ts or "(private)")
        if self.journal is not None:
            self.journal.append(JournalEntry(
                verdict, cluster=cluster, asked_by=asked_by, source=source,
                channel=channel, message_ts=message_ts, at=now))

    def later(self, what: str, work: Callable[[], object], respond: Respond | None = None,
              context: Mapping[str, Any] | None = None) -> None:
        """Run ``work`` on the answer workers, after the listener has acked and returned, and
        once the Slack requests in flight are acked (:class:`AcksFirst`).

        Bolt acks commands and actions in the request's thread; a slow triage, a
        rate-limited post or a slow store held there would delay the acks of the requests
        queued behind it past Slack's 3 seconds. The request's claim (``context[ONCE]``)
        runs here first: a request another replica took is not acted on. A failure is
        logged with its traceback and ``what`` was being done; the asker gets a one-line
        apology through ``respond`` when there is one.
        """
        once = (context or {}).get(ONCE)

        def run() -> None:
            self.acks.wait_for_quiet()
            try:
                if callable(once) and not once():
                    return
                work()
            except Exception:
                log.exception("%s failed", what)
                if respond is None:
                    return
                try:
                    respond(text=APOLOGY, replace_original=False)
                except Exception:
                    log.exception("apologizing for %s failed", what)

        self.workers.submit(run)

    def first_delivery(self, event_id: str) -> bool:
        """False when a replica sharing the store (this one too) already claimed the event.

        Without a store, or when it fails, True: only ``seen`` (this process) stops retries
        then; a store outage may let another replica answer a retry again, but never leaves
        an event unanswered.
        """
        if self.store is None:
            return True
        try:
            store = self.store
            return store.quickly(lambda: store.claim_event(event_id), "claim a Slack event")
        except StoreError as exc:
            log.warning("incident store: cannot claim event %s, answering anyway: %s",
                        event_id, exc)
            return True

    def close(self, store_timeout: float = 10.0) -> bool:
        """Finish the answers in flight, then give the journal ``store_timeout`` seconds to
        store what waits (what is left stays in its file); True when nothing waits."""
        self.workers.shutdown(wait=True)
        return self.journal is None or self.journal.close(store_timeout)

    def answer_for_thread(self, channel: str, thread_ts: str) -> PostedAnswer | None:
        """The gpuwhy answer that opened this thread, as this channel may see it, or None when
        it is not one of ours."""
        posted = self.recent.get(channel, thread_ts)
        if posted is None and self.store is not None:
            store = self.store
            try:
                incident = store.quickly(lambda: store.incident_for_thread(channel, thread_ts),
                                         "read an incident")
            except StoreError as exc:
                log.warning("incident store: cannot look up thread %s/%s: %s", channel,
                            thread_ts, exc)
                return None
            if incident is not None:
                posted = PostedAnswer(incident.verdict, incident.created_at, incident.cluster)
        if posted is None:
            return None
        return PostedAnswer(self.shown_in(channel, posted.verdict), posted.created_at,
                            posted.cluster)

    def shown_in(self, channel: str, verdict: Verdict) -> Verdict:
        """The Verdict without the names of pods in namespaces the channel may not describe."""
        return visible_verdict(verdict, self._visible_in(channel))

    def answer_shown_in(self, channel: str, verdict: Verdict) -> Verdict:
        """``shown_in`` for the answer's text and blocks (``visible_answer``)."""
        return visible_answer(verdict, self._visible_in(channel))

    def _visible_in(self, channel: str) -> Callable[[str], bool]:
        return lambda namespace: self.config.namespace_allowed(channel, namespace)

    def home_visible(self, namespace: str) -> bool:
        """The App Home is no channel: it names a namespace only where every configured
        channel may (no channels configured: every namespace), and counts the rest."""
        return all(self.config.namespace_allowed(channel, namespace)
                   for channel in self.config.channels)

    def stats_scope(self, channel: str, cluster: str | None = None) -> Scope:
        """Stats in a channel count only the clusters and namespaces it may describe; with
        ``cluster``, only that cluster's."""
        access = self.config.access(channel) or EVERY_CHANNEL
        namespaces = access.namespaces
        labels = [] if cluster is None else [f"cluster {cluster}"]
        if "*" not in namespaces:
            labels.append("namespaces " + ", ".join(namespaces))
        clusters = (access.allows_cluster if cluster is None and (
            access.cluster is not None or access.clusters is not None) else None)
        if cluster is None and clusters is None and "*" in namespaces:
            return EVERYTHING
        return Scope(namespaces=None if "*" in namespaces else frozenset(namespaces).__contains__,
                     clusters=clusters, cluster=cluster, label=" · ".join(labels))

    def may_describe(self, channel: str, namespace: str, cluster: str | None = None) -> bool:
        """May the channel hear about ``namespace`` (in ``cluster``, when one is named)?"""
        return self.config.namespace_allowed(channel, namespace) and (
            cluster is None or self.config.cluster_allowed(channel, cluster))

    def cluster_for(self, channel: str, named: str | None) -> str:
        """The cluster a question goes to: the one it names, else the channel's default."""
        if named is not None:
            return named
        default = self.config.channel_cluster(channel)
        return default if default is not None and default in self.fleet.sources \
            else self.fleet.default
