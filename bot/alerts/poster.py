"""Posting answers nobody asked for: one post per stuck workload or firing alert, at most once
per pod and cause (claims in the store, shared by restarts and replicas), a reply in the first
post's thread when the cause word changes, one line there when the pods run or go away (or
the alert resolves), and a per-channel rate limit that ends in one summary.

Every post is recorded as an incident with its channel and ts, so "show devices" and the
button work in these threads like under a /gpuwhy answer. Webhooks get the Verdict JSON on
the worker pool, so a slow receiver never holds the watch.
"""

from __future__ import annotations

import logging
import threading
from collections import defaultdict
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackClientError

from bot.alerts.alertmanager import Alert
from bot.alerts.routes import Destination, destination, nowhere
from bot.alerts.store import AlertStore, Thread
from bot.alerts.stuck import Progress, StuckGroup, progress
from bot.alerts.webhook import WebhookSender
from bot.answer.blocks import escape_mrkdwn, one_line, verdict_blocks, verdict_text
from bot.config import BotConfig
from bot.store import StoreError
from bot.web.metrics import (
    ALERT_POSTS,
    ALERT_POSTS_RATE_LIMITED,
    ALERT_REPEATS_SUPPRESSED,
    ALERTMANAGER_ALERTS,
)
from scoring.objects import K8sObject
from scoring.verdict import Verdict
from triage.vocabulary import Cause

log = logging.getLogger(__name__)

WATCH_SOURCE, ALERT_SOURCE = "watch", "alert"
WATCH_ASKER, ALERT_ASKER = "gpuwhy-watch", "alertmanager"
ASKERS = {WATCH_SOURCE: WATCH_ASKER, ALERT_SOURCE: ALERT_ASKER}  # incidents' asked_by
WORKLOAD_SUBJECT, ALERT_SUBJECT = "workload/", "alert/"
RATE_WINDOW = timedelta(hours=1)
# Answers that mean "not stuck after all" for a pod with no node: it was just bound, or
# deleted in between, or does not ask for a GPU the way the triage counts it.
NOT_STUCK = frozenset({Cause.SCHEDULED, Cause.POD_NOT_FOUND, Cause.NO_GPU_REQUEST})

Blocks = list[dict[str, Any]]
Remember = Callable[..., None]  # BotState.remember


def _section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


def _minutes(delta: timedelta) -> str:
    minutes = int(delta.total_seconds() // 60)
    if minutes < 120:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60} min"


def is_stuck_answer(group: StuckGroup, verdict: Verdict) -> bool:
    """Pods bound to a node count only when the node failed them; unbound ones unless the
    triage found them scheduled (or gone) meanwhile."""
    if all(pod.bound for pod in group.pods):
        return verdict.cause == Cause.NODE_RUNTIME_ERROR
    return verdict.cause not in NOT_STUCK


class AlertPoster:
    def __init__(self, config: BotConfig, store: AlertStore, client: WebClient,
                 remember: Remember, webhooks: WebhookSender, webhook_workers: int = 2,
                 name_cluster: bool = False) -> None:
        """``name_cluster``: posts say which cluster they are about (the bot serves several)."""
        self.config = config
        self.name_cluster = name_cluster
        self.store = store
        self.client = client
        self.remember = remember
        self.webhooks = webhooks
        self._workers = ThreadPoolExecutor(webhook_workers, thread_name_prefix="gpuwhy-webhook")
        self._held: dict[str, list[str]] = defaultdict(list)
        self._lock = threading.Lock()  # one report at a time: claims, then posts, in order

    def close(self) -> None:
        """Wait for webhook deliveries in flight (their back-off ends when ``stop`` is set)."""
        self._workers.shutdown(wait=True)
        self.webhooks.close()

    # stuck workloads ----------------------------------------------------------------------

    def report_stuck(self, group: StuckGroup, verdict: Verdict, now: datetime) -> None:
        """Post (or reply about) one stuck workload, if anything about it is new."""
        if not is_stuck_answer(group, verdict):
            return
        cause, namespace = verdict.cause, group.workload.namespace
        target = destination(self.config, cause, namespace, now - group.since)
        if target is None:
            log.info("stuck %s (%s): not posted: %s", group.workload, cause,
                     nowhere(self.config, cause, namespace))
            return
        keys = {pod.uid: self.store.claim_key("pod", pod.uid, cause) for pod in group.pods}
        with self._lock:
            try:
                self._report_stuck(group, verdict, target, keys, now)
            except StoreError as exc:
                # Without the claims a post could repeat every round: skip until it is back.
                log.warning("stuck %s: not posted, the store failed: %s", group.workload, exc)

    def _report_stuck(self, group: StuckGroup, verdict: Verdict, target: Destination,
                      keys: dict[str, str], now: datetime) -> None:
        done = self.store.claimed(keys.values())
        fresh = [uid for uid, key in keys.items() if key not in done]
        subject = WORKLOAD_SUBJECT + group.workload.key
        thread = self.store.open_thread(subject)
        channel = thread.channel if thread is not None else target.channel
        if not fresh:
            ALERT_REPEATS_SUPPRESSED.inc()
            return
        if self._limited(channel, f"{group.workload} ({verdict.cause})", now):
            return
        won = [uid for uid in fresh if self.store.claim(keys[uid], now)]
        if not won:  # another replica claimed them first and posts
            ALERT_REPEATS_SUPPRESSED.inc()
            return
        try:
            if thread is None:
                self._open_workload(subject, group, verdict, target, won, now)
            elif thread.cause != verdict.cause:
                self._cause_changed(thread, group, verdict, target, won, now)
            else:  # more pods with the same answer: the thread follows them too
                self.store.add_pods(thread, won)
        except (SlackClientError, OSError) as exc:
            self.store.release(keys[uid] for uid in won)
            log.warning("stuck %s: posting failed, tried again next round: %s",
                        group.workload, exc)

    def _open_workload(self, subject: str, group: StuckGroup, verdict: Verdict,
                       target: Destination, won: list[str], now: datetime) -> None:
        if self._open(subject, [pod.uid for pod in group.pods], self._stuck_headline(group, now),
                      verdict, target, WATCH_SOURCE, now):
            log.info("stuck %s: posted %s to %s", group.workload, verdict.cause,
                     target.channel or target.webhook)

    def _open(self, subject: str, pod_uids: list[str], headline: str, verdict: Verdict,
              target: Destination, source: str, now: datetime) -> bool:
        """The first post about ``subject``, its thread recorded; False when another replica
        opened that thread a moment ago. A failed post leaves no thread behind."""
        thread_id = self.store.start_thread(subject, verdict.cause, target.channel, pod_uids,
                                            now)
        if thread_id is None:
            return False
        try:
            if target.channel is not None:
                ts = self._post(target.channel, None, target.mention, headline, verdict, now)
                self.store.set_message(thread_id, target.channel, ts)
                self.remember(verdict, cluster=self.store.cluster, asked_by=ASKERS[source],
                              channel=target.channel, message_ts=ts, source=source)
        except (SlackClientError, OSError):
            self.store.drop(thread_id)
            raise
        self._call_webhook(target, verdict)
        return True

    def _cause_changed(self, thread: Thread, group: StuckGroup, verdict: Verdict,
                       target: Destination, won: list[str], now: datetime) -> None:
        if not self.store.switch_cause(thread, verdict.cause):
            return  # another replica saw the change first and replies
        self.store.add_pods(thread, [pod.uid for pod in group.pods])
        if thread.channel is not None and thread.message_ts is not None:
            headline = f"The cause changed: `{thread.cause}` → `{verdict.cause}`."
            ts = self._post(thread.channel, thread.message_ts, target.mention, headline,
                            verdict, now)
            self.remember(verdict, cluster=self.store.cluster, asked_by=WATCH_ASKER,
                          channel=thread.channel, message_ts=ts, source=WATCH_SOURCE)
        self._call_webhook(target, verdict)
        log.info("stuck %s: cause %s -> %s", group.workload, thread.cause, verdict.cause)

    @staticmethod
    def _stuck_headline(group: StuckGroup, now: datetime) -> str:
        waited = _minutes(now - group.since)
        count = len(group.pods)
        what = escape_mrkdwn(group.workload, 600)
        if group.workload.kind == "Pod":
            state = "bound but not started" if group.pods[0].bound else "not scheduled"
            return f"*{what}* asks for GPUs and is {state} after {waited}."
        pods = f"{count} pod{'s' if count != 1 else ''}"
        return f"*{pods} of {what}* ask for GPUs and are stuck, the oldest for {waited}."

    def follow_threads(self, pods: Iterable[K8sObject], now: datetime) -> None:
        """One last line in each workload thread whose pods all run now or are gone."""
        current = list(pods)
        with self._lock:
            try:
                threads = self.store.open_threads(WORKLOAD_SUBJECT)
            except StoreError as exc:
                log.warning("alert threads: cannot read them: %s", exc)
                return
            for thread in threads:
                states = progress(current, thread.pod_uids)
                if Progress.STUCK in states.values():
                    continue
                try:
                    if self.store.close(thread, now):
                        self._closing_line(thread, list(states.values()))
                except StoreError as exc:
                    log.warning("alert thread %s: cannot close it: %s", thread.subject, exc)
                except (SlackClientError, OSError) as exc:
                    log.warning("alert thread %s: closing line not posted: %s",
                                thread.subject, exc)

    def _closing_line(self, thread: Thread, states: list[Progress]) -> None:
        if thread.channel is None or thread.message_ts is None:
            return
        running, gone = states.count(Progress.RUNNING), states.count(Progress.GONE)
        parts = [f"{running} running" if running else "", f"{gone} gone" if gone else ""]
        total = len(states)
        if total == 1:
            text = ("▶️ The pod is running now." if running
                    else "👋 The pod is gone (deleted, or it finished).")
        else:
            text = f"▶️ All {total} pods are running or gone: {', '.join(p for p in parts if p)}."
        self._line(thread.channel, thread.message_ts, text)

    # Alertmanager -------------------------------------------------------------------------

    def report_alert(self, alert: Alert, verdict: Verdict, now: datetime) -> None:
        """The alert's summary with gpuwhy's answer under it, once per firing."""
        assert alert.ref is not None, "unmapped alerts are only counted"
        target = destination(self.config, verdict.cause, alert.ref.namespace)
        if target is None:
            log.info("alert %s on %s (%s): not posted: %s", alert.name, alert.ref,
                     verdict.cause, nowhere(self.config, verdict.cause, alert.ref.namespace))
            return
        key = self.store.claim_key("alert", alert.key)
        with self._lock:
            try:
                # The same fingerprint still open is the same firing, whatever its startsAt.
                if key in self.store.claimed([key]) or self._alert_threads(alert):
                    ALERTMANAGER_ALERTS.labels("repeated").inc()
                    return
                if self._limited(target.channel, f"{alert.name} on {alert.ref}", now):
                    return
                if not self.store.claim(key, now):
                    ALERTMANAGER_ALERTS.labels("repeated").inc()
                    return
                try:
                    self._open_alert(alert, verdict, target, now)
                except (SlackClientError, OSError) as exc:
                    self.store.release([key])
                    log.warning("alert %s on %s: posting failed: %s", alert.name, alert.ref, exc)
            except StoreError as exc:
                log.warning("alert %s on %s: not posted, the store failed: %s", alert.name,
                            alert.ref, exc)

    def _open_alert(self, alert: Alert, verdict: Verdict, target: Destination,
                    now: datetime) -> None:
        headline = (f"🔔 *{escape_mrkdwn(one_line(alert.name), 200)}*: "
                    f"{escape_mrkdwn(alert.summary, 600)}\n_gpuwhy's answer:_")
        if self._open(ALERT_SUBJECT + alert.key, [], headline, verdict, target, ALERT_SOURCE,
                      now):
            log.info("alert %s on %s: posted %s to %s", alert.name, alert.ref, verdict.cause,
                     target.channel or target.webhook)

    def resolve_alert(self, alert: Alert, now: datetime) -> None:
        """One line in the alert's thread; nothing when its firing was never posted. The
        thread is found by the alert's fingerprint: Alertmanager may send the resolve with
        an earlier ``startsAt`` than the firing had (merged from another instance)."""
        with self._lock:
            try:
                threads = [thread for thread in self._alert_threads(alert)
                           if self.store.close(thread, now)]
                if not threads:
                    ALERTMANAGER_ALERTS.labels("repeated").inc()
                    return
                for thread in threads:
                    if thread.channel is not None and thread.message_ts is not None:
                        self._line(thread.channel, thread.message_ts,
                                   f"✅ Resolved: {escape_mrkdwn(one_line(alert.name), 200)}.")
            except StoreError as exc:
                log.warning("alert %s resolved: the store failed: %s", alert.name, exc)
            except (SlackClientError, OSError) as exc:
                log.warning("alert %s resolved: line not posted: %s", alert.name, exc)

    def _alert_threads(self, alert: Alert) -> list[Thread]:
        """The open threads of the alert's firings (one, unless a resolve was lost)."""
        return self.store.open_threads(f"{ALERT_SUBJECT}{alert.fingerprint}/")

    # rate limit ---------------------------------------------------------------------------

    def _limited(self, channel: str | None, what: str, now: datetime) -> bool:
        """True when ``channel`` had its posts this hour; the answer waits for a later round
        (no claim is taken, so it is posted once the hour's count drops)."""
        if channel is None:
            return False
        posted = self.store.posts_since(channel, now - RATE_WINDOW)
        if posted < self.config.alerts.max_posts_per_hour:
            return False
        ALERT_POSTS_RATE_LIMITED.labels(channel).inc()
        self._held[channel].append(what)
        return True

    def flush_held(self, now: datetime) -> None:
        """One summary per channel and hour naming what the rate limit held back."""
        with self._lock:
            held, self._held = self._held, defaultdict(list)
            for channel, what in held.items():
                key = self.store.claim_key("summary", channel, now.strftime("%Y-%m-%dT%H"))
                try:
                    if not self.store.claim(key, now):
                        continue
                    limit = self.config.alerts.max_posts_per_hour
                    shown = ", ".join(escape_mrkdwn(one_line(w), 200) for w in what[:10])
                    more = f" and {len(what) - 10} more" if len(what) > 10 else ""
                    text = (f"⏸️ gpuwhy posted {limit} answers here in the last hour, its limit; "
                            f"held back for now: {shown}{more}. They follow when the hour's "
                            "count drops; `/gpuwhy NAMESPACE/POD` answers at once.")
                    self.client.chat_postMessage(channel=channel, text=text,
                                                 blocks=[_section(text)])
                    ALERT_POSTS.labels("summary").inc()
                except StoreError as exc:
                    log.warning("rate-limit summary for %s: the store failed: %s", channel, exc)
                except (SlackClientError, OSError) as exc:
                    log.warning("rate-limit summary for %s not posted: %s", channel, exc)

    # Slack and webhooks -------------------------------------------------------------------

    def _post(self, channel: str, thread_ts: str | None, mention: str | None, headline: str,
              verdict: Verdict, now: datetime) -> str:
        """Post headline + answer; returns the message ts. The mention comes from the config
        (a user group or users) and is the one string not escaped."""
        lead = f"{mention} {headline}" if mention else headline
        if self.name_cluster:
            lead = f"{lead} · cluster *{escape_mrkdwn(self.store.cluster, 63)}*"
        blocks: Blocks = [_section(lead), *verdict_blocks(verdict)]
        posted = self.client.chat_postMessage(
            channel=channel, thread_ts=thread_ts, blocks=blocks,
            text=f"{lead}\n{verdict_text(verdict)}")
        self.store.log_post(channel, now)
        ALERT_POSTS.labels("reply" if thread_ts else "root").inc()
        return str(posted["ts"])

    def _line(self, channel: str, thread_ts: str, text: str) -> None:
        self.client.chat_postMessage(channel=channel, thread_ts=thread_ts, text=text,
                                     blocks=[_section(text)])
        ALERT_POSTS.labels("line").inc()

    def _call_webhook(self, target: Destination, verdict: Verdict) -> None:
        if target.webhook is not None:
            self._workers.submit(self.webhooks.send, target.webhook, target.header,
                                 verdict.to_dict())
