"""`/gpuwhy`: parse and check at once (the ack), then triage and post the answer in the channel."""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt import Ack, App, BoltContext, Respond
from slack_sdk import WebClient

from bot.answer.blocks import escape_mrkdwn, one_line, verdict_blocks, verdict_text
from bot.answer.byline import byline
from bot.clusters.fleet import USAGE as FLEET_USAGE
from bot.clusters.fleet import UnknownClusterError, split_cluster
from bot.digest import (
    DEFAULT_STATS_WEEKS,
    MAX_WEEKS,
    DigestError,
    Scope,
    parse_weeks,
    stats_blocks,
    stats_text,
)
from bot.slack.listeners.capacity import (
    CAPACITY_USAGE,
    CAPACITY_WORD,
    WHERE_USAGE,
    WHERE_WORD,
    answer_capacity,
    answer_where,
)
from bot.slack.listeners.devices import SHOW_DEVICES
from bot.slack.listeners.replies import (
    CHANNEL_REFUSAL,
    cluster_failure,
    cluster_refusal,
    namespace_refusal,
    post_or_respond,
    respond_with,
)
from bot.slack.listeners.state import BotState
from bot.store import Store, StoreError
from triage.errors import ClusterError
from triage.refs import USAGE, PodRef, RefError, parse_ref
from triage.vocabulary import CAUSES, Cause

log = logging.getLogger(__name__)

COMMAND = "/gpuwhy"
HELP_WORDS = ("help", "-h", "--help")
STATS_WORD = "stats"
STATS_USAGE = f"usage: {COMMAND} stats [WEEKS]  (WEEKS: 1 to {MAX_WEEKS})"
FLEET_STATS_USAGE = f"usage: {COMMAND} stats [CLUSTER] [WEEKS]  (WEEKS: 1 to {MAX_WEEKS})"
SHOW_DEVICES_HINT = ("Reply `show devices` in the thread of a gpuwhy answer, or press its "
                     f"Show devices button. {USAGE}")
NO_STORE = "Stats need the incident store, and this gpuwhy runs without one."


def help_text() -> str:
    causes = "\n".join(f"{info.emoji} `{info.cause}` — {info.summary}" for info in CAUSES)
    return (f"{USAGE}\n{STATS_USAGE}\n{CAPACITY_USAGE}\n{WHERE_USAGE}\n"
            f"I answer with one cause word; they are checked in this order:\n{causes}")


def register(app: App, state: BotState) -> None:
    @app.command(COMMAND)
    def gpuwhy(ack: Ack, command: dict[str, Any], respond: Respond, client: WebClient,
               context: BoltContext) -> None:
        text = str(command.get("text") or "").strip()
        channel = str(command.get("channel_id", ""))
        user = str(command.get("user_id", ""))
        words = text.split()
        if not words:
            ack(text=USAGE)
        elif words[0].lower() in HELP_WORDS:
            ack(text=help_text() if len(words) == 1 else USAGE)
        elif SHOW_DEVICES.match(text):
            ack(text=SHOW_DEVICES_HINT)
        elif words[0].lower() == STATS_WORD:
            answer_stats(state, ack, respond, channel, user, words[1:], context)
        elif words[0].lower() == CAPACITY_WORD:
            answer_capacity(state, ack, respond, client, channel, user, words[1:], context)
        elif words[0].lower() == WHERE_WORD:
            answer_where(state, ack, respond, client, channel, user, words[1:], context)
        else:
            answer_ref(state, ack, respond, client, channel, user, text, context)


def answer_ref(state: BotState, ack: Ack, respond: Respond, client: WebClient,
               channel: str, user: str, text: str, context: BoltContext) -> None:
    try:
        named, ref_text = split_cluster(text, state.fleet.names)
        ref = parse_ref(ref_text)
    except UnknownClusterError as exc:
        ack(text=f"{escape_mrkdwn(str(exc), 1500)} {FLEET_USAGE}")
        return
    except RefError as exc:
        ack(text=escape_mrkdwn(str(exc), 2000))
        return
    if not state.config.channel_allowed(channel):
        log.info("refused %s for %s: channel %s is not configured", ref, user, channel)
        ack(text=CHANNEL_REFUSAL)
        return
    cluster = state.cluster_for(channel, named)
    if not state.config.cluster_allowed(channel, cluster):
        log.info("refused %s for %s: cluster %s not allowed in channel %s", ref, user, cluster,
                 channel)
        ack(text=cluster_refusal(cluster))
        return
    if not state.may_describe(channel, ref.namespace):
        log.info("refused %s for %s: namespace not allowed in channel %s", ref, user, channel)
        ack(text=namespace_refusal(ref.namespace))
        return
    ack()
    state.later(f"answering {ref} in {cluster} for {user} in {channel}",
                lambda: post_answer(state, respond, client, channel, user, cluster, ref),
                respond, context)


def post_answer(state: BotState, respond: Respond, client: WebClient,
                channel: str, user: str, cluster: str, ref: PodRef) -> None:
    source = state.fleet.source(cluster)
    try:
        verdict = source.triage(ref)
    except ClusterError as exc:
        log.warning("cannot answer %s for %s: %s", ref, user, one_line(exc))
        respond(text=cluster_failure(exc))
        return
    # pod-not-found is mostly a typo: only the asker sees it, with the names it may have meant.
    private = verdict.cause == Cause.POD_NOT_FOUND
    shown = state.answer_shown_in(channel, verdict)
    line = byline(None if private else user,
                  cluster=cluster if state.fleet.several else None, as_of=source.as_of(),
                  now=state.clock())
    blocks, text = verdict_blocks(shown, line), verdict_text(shown, line)
    what = f"the answer for {ref}"
    if private:
        respond_with(respond, what, text=text, blocks=blocks)
        state.remember(verdict, cluster=cluster, asked_by=user, channel=channel,
                       message_ts=None)
        return
    posted = post_or_respond(client, respond, what, channel=channel, text=text, blocks=blocks)
    if posted is None:
        return
    state.remember(verdict, cluster=cluster, asked_by=user, channel=str(posted["channel"]),
                   message_ts=str(posted["ts"]))


def answer_stats(state: BotState, ack: Ack, respond: Respond, channel: str, user: str,
                 args: list[str], context: BoltContext) -> None:
    cluster = None
    if args and not args[0].isdigit() and state.fleet.several:
        if args[0] not in state.fleet.sources:
            ack(text=f"{escape_mrkdwn(UnknownClusterError(args[0], state.fleet.names), 1500)} "
                     f"{FLEET_STATS_USAGE}")
            return
        cluster, args = args[0], args[1:]
    if len(args) > 1:
        ack(text=STATS_USAGE)
        return
    try:
        weeks = parse_weeks(args[0]) if args else DEFAULT_STATS_WEEKS
    except DigestError as exc:
        ack(text=f"{escape_mrkdwn(exc, 300)}. {STATS_USAGE}")
        return
    if not state.config.channel_allowed(channel):
        log.info("refused stats for %s: channel %s is not configured", user, channel)
        ack(text=CHANNEL_REFUSAL)
        return
    store = state.store
    if store is None:
        ack(text=NO_STORE)
        return
    if cluster is not None and not state.config.cluster_allowed(channel, cluster):
        ack(text=cluster_refusal(cluster))
        return
    ack()
    scope = state.stats_scope(channel, cluster)
    state.later(f"stats for {user} in {channel}",
                lambda: post_stats(state, store, respond, weeks, scope),
                respond, context)


def post_stats(state: BotState, store: Store, respond: Respond, weeks: int,
               scope: Scope) -> None:
    now, timezone = state.clock(), state.config.digest.timezone
    try:
        text = stats_text(store, weeks, now, timezone, scope)
        blocks = stats_blocks(store, weeks, now, timezone, scope)
    except (StoreError, DigestError) as exc:
        respond(text=escape_mrkdwn(one_line(exc), 2000))
        return
    respond_with(respond, f"stats for {weeks} weeks", text=text, blocks=blocks)
