"""The App Home tab: published when a user opens it (bolt's ``app_home_opened``), at most once
a minute per user, from the default cluster's whole-cluster snapshot (the watch cache under
``gpuwhy serve``: no API request), and its Triage buttons (a full triage, events included,
answered in the app's DM)."""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from datetime import datetime, timedelta
from typing import Any

from slack_bolt import Ack, App, BoltContext
from slack_sdk import WebClient

from bot.alerts.stuck import StuckGroup, stuck_groups
from bot.answer.blocks import escape_mrkdwn, one_line, verdict_blocks, verdict_text
from bot.answer.byline import byline
from bot.answer.home import HOME_TRIAGE_ACTION, MAX_STUCK_ROWS, StuckRow, home_view
from bot.answer.visibility import visible_answer
from bot.digest import DigestError, Scope, digest_text, load_digest, load_timezone, week_start
from bot.slack.listeners.replies import post_message
from bot.slack.listeners.state import BotState
from bot.store import StoreError
from triage.classify import triage
from triage.classify.capacity import CapacityView, capacity_view
from triage.errors import ClusterError
from triage.refs import PodRef, RefError, parse_ref
from triage.snapshot import Snapshot

log = logging.getLogger(__name__)

REFRESH_EVERY = timedelta(minutes=1)
MAX_USERS_REMEMBERED = 10_000


class HomeRefreshes:
    """When each user's Home was last published: at most once per REFRESH_EVERY each."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last: OrderedDict[str, datetime] = OrderedDict()

    def due(self, user: str, now: datetime) -> bool:
        with self._lock:
            last = self._last.get(user)
            if last is not None and now - last < REFRESH_EVERY:
                return False
            self._last[user] = now
            self._last.move_to_end(user)
            while len(self._last) > MAX_USERS_REMEMBERED:
                self._last.popitem(last=False)
            return True


def stuck_rows(state: BotState, snapshot: Snapshot, groups: list[StuckGroup],
               now: datetime) -> tuple[list[StuckRow], int, int]:
    """The newest stuck workloads the Home may name, each with the word its first stuck pod
    gets from the objects the cluster snapshot holds (no API request; events aside, which
    the Triage button reads); how many more it may name; how many it may not."""
    shown = sorted((g for g in groups if state.home_visible(g.workload.namespace)),
                   key=lambda g: (g.since, g.workload.key), reverse=True)
    rows = [StuckRow(str(g.workload.ref), str(g.workload), len(g.pods),
                     (now - g.since).total_seconds(),
                     triage(snapshot, PodRef(g.pods[0].namespace, g.pods[0].name),
                            state.config.triage).cause)
            for g in shown[:MAX_STUCK_ROWS]]
    return rows, len(shown) - len(rows), len(groups) - len(shown)


def _digest_so_far(state: BotState, now: datetime) -> str | None:
    store = state.store
    if store is None:
        return None
    try:
        tz = load_timezone(state.config.digest.timezone)
        scope = Scope(namespaces=state.home_visible) if state.config.channels else Scope()
        return digest_text(load_digest(store, week_start(now, tz), tz, scope=scope))
    except (StoreError, DigestError) as exc:
        return f"digest not read: {one_line(exc)}"


def build_home(state: BotState, now: datetime) -> dict[str, Any]:
    cluster = state.fleet.default
    source = state.fleet.source(cluster)
    capacity: CapacityView | None = None
    error = None
    rows: list[StuckRow] = []
    more = hidden = 0
    try:
        snapshot = source.cluster_snapshot()
    except ClusterError as exc:
        error = one_line(exc)
    else:
        capacity = capacity_view(snapshot.rows, state.config.triage)
        groups = stuck_groups(snapshot.pods, now, state.config.alerts.pending_after,
                              state.config.triage)
        rows, more, hidden = stuck_rows(state, snapshot, groups, now)
    return home_view(cluster=cluster, capacity=capacity, capacity_error=error, stuck=rows,
                     stuck_more=more, stuck_hidden=hidden, digest=_digest_so_far(state, now),
                     visible=state.home_visible, now=now)


def register(app: App, state: BotState) -> None:
    refreshes = HomeRefreshes()

    @app.event("app_home_opened")
    def home_opened(event: dict[str, Any], client: WebClient, context: BoltContext) -> None:
        if event.get("tab", "home") != "home":
            return  # the Messages tab
        user, now = str(event.get("user", "")), state.clock()
        if not refreshes.due(user, now):
            log.info("App Home of %s published less than a minute ago", user)
            return
        state.later(f"publishing the App Home for {user}",
                    lambda: client.views_publish(user_id=user, view=build_home(state, now)),
                    context=context)

    @app.action(HOME_TRIAGE_ACTION)
    def triage_from_home(ack: Ack, body: dict[str, Any], action: dict[str, Any],
                         client: WebClient, context: BoltContext) -> None:
        ack()
        user = str((body.get("user") or {}).get("id", ""))
        cluster, _, ref_text = str(action.get("value") or "").partition(" ")

        def reply() -> None:
            try:
                ref = parse_ref(ref_text)
                verdict = state.fleet.source(cluster).triage(ref)
            except (RefError, ClusterError) as exc:
                client.chat_postMessage(channel=user, text=escape_mrkdwn(one_line(exc), 2000))
                return
            shown = visible_answer(verdict, state.home_visible)
            line = byline(user, cluster=cluster if state.fleet.several else None,
                          as_of=state.fleet.source(cluster).as_of(), now=state.clock())
            posted = post_message(client, f"the answer for {ref} from the App Home",
                                  channel=user, text=verdict_text(shown, line),
                                  blocks=verdict_blocks(shown, line))
            state.remember(verdict, cluster=cluster, asked_by=user,
                           channel=str(posted["channel"]), message_ts=str(posted["ts"]))

        state.later(f"triaging {ref_text} from the App Home for {user}", reply,
                    context=context)
