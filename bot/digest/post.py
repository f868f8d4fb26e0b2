"""Posting the digest to Slack: once per week and channel across replicas and restarts, on the
configured schedule, in a thread of its own."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError

from bot.config import DigestSchedule
from bot.digest.digest import Blocks, Digest, digest_blocks, digest_text, load_digest
from bot.digest.weeks import (
    DigestError,
    add_weeks,
    load_timezone,
    local_midnight,
    week_key,
    week_start,
)
from bot.slack.quiet import quiet_client, slack_failure
from bot.store import Store, one_line
from bot.web.metrics import DIGEST_POSTS

log = logging.getLogger(__name__)

Post = Callable[[str, str, Blocks], None]  # (channel, fallback text, Block Kit blocks)
Attach = Callable[[str, Digest], None]  # (channel, the digest just posted there)


class PostError(Exception):
    """Slack did not take the digest; str() is one line."""


def digest_client(environ: Mapping[str, str] | None = None) -> WebClient:
    """A quiet Web API client with SLACK_BOT_TOKEN (and SLACK_API_URL, if set): its failures'
    one line is the only trace, the client itself logs nothing; DigestError without a token."""
    env = os.environ if environ is None else environ
    token = env.get("SLACK_BOT_TOKEN")
    if not token:
        raise DigestError("SLACK_BOT_TOKEN is not set; it is needed to post")
    return quiet_client(token, env.get("SLACK_API_URL") or WebClient.BASE_URL)


def slack_post(client: WebClient) -> Post:
    """chat.postMessage through ``client``; raises PostError."""

    def post(channel: str, text: str, blocks: Blocks) -> None:
        try:
            client.chat_postMessage(channel=channel, text=text, blocks=blocks)
        except (SlackClientError, OSError) as exc:
            raise PostError(f"posting to {channel}: {slack_failure(client.base_url, exc)}") \
                from None

    return post


def post_once(store: Store, digest: Digest, channel: str, post: Post,
              attach: Attach | None = None) -> bool:
    """Post ``digest`` to ``channel`` unless someone already has, or it has no answers (a
    fresh store's first week, a quiet week: "No answers" is nothing to read); False then.

    The claim comes first, so racing replicas post once; a failed post gives it back. Then
    ``attach`` (the chart) follows it; when that fails the digest is out all the same: the
    failure is logged and counted (gpuwhy_digest_posts_total{result="chart-failed"}).
    """
    if digest.total == 0:
        DIGEST_POSTS.labels("empty").inc()
        return False
    if not store.claim_digest(digest.key, channel):
        DIGEST_POSTS.labels("already-posted").inc()
        return False
    try:
        post(channel, digest_text(digest), digest_blocks(digest))
    except Exception:
        DIGEST_POSTS.labels("failed").inc()
        store.release_digest(digest.key, channel)
        raise
    DIGEST_POSTS.labels("posted").inc()
    if attach is not None:
        try:
            attach(channel, digest)
        except Exception as exc:  # the text is posted: a chart must not take it back
            DIGEST_POSTS.labels("chart-failed").inc()
            log.warning("weekly digest %s in %s: posted without its chart: %s", digest.key,
                        channel, one_line(exc))
    return True


class DigestScheduler:
    """Posts last week's digest once the configured weekday and hour have come.

    Run it from a thread: ``run_forever(stop_event)``; or call ``run_pending(now)`` on a timer.
    """

    def __init__(self, store: Store, post: Post, schedule: DigestSchedule,
                 attach: Attach | None = None) -> None:
        if not 0 <= schedule.weekday <= 6:
            raise DigestError(f"digest weekday must be 0 (Monday) to 6, not {schedule.weekday}")
        if not 0 <= schedule.hour <= 23:
            raise DigestError(f"digest hour must be 0 to 23, not {schedule.hour}")
        self.store = store
        self.post = post
        self.attach = attach
        self.schedule = schedule
        self.tz = load_timezone(schedule.timezone)
        self._done: str | None = None  # week key already posted (by us or another replica)

    def run_pending(self, now: datetime) -> bool:
        """True when this call posted a digest."""
        channel = self.schedule.channel
        if not channel:
            return False
        this_week = week_start(now, self.tz)
        due = local_midnight(this_week.date() + timedelta(days=self.schedule.weekday),
                              self.tz).replace(hour=self.schedule.hour)
        start = add_weeks(this_week, -1)
        key = week_key(start)
        if now < due or self._done == key:
            return False
        posted = post_once(self.store, load_digest(self.store, start, self.tz), channel,
                           self.post, self.attach)
        self._done = key
        return posted

    def run_forever(self, stop: threading.Event, interval_s: float = 60.0) -> None:
        """Check every ``interval_s`` until ``stop`` is set; failures are logged and retried."""
        while not stop.is_set():
            try:
                self.run_pending(datetime.now(UTC))
            except Exception as exc:  # a store or Slack outage must not end the thread
                log.warning("weekly digest: %s", slack_failure("", exc)
                            if isinstance(exc, SlackApiError) else one_line(exc))
            stop.wait(interval_s)
