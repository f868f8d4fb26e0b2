"""`/gpuwhy capacity [CLUSTER] [RESOURCE|POOL]` and `/gpuwhy where N [RESOURCE] [--ns NS]`:
the cluster's GPUs, and where a pod asking N could run; posted in the channel as its view."""

from __future__ import annotations

import logging
from collections.abc import Callable

from slack_bolt import Ack, BoltContext, Respond
from slack_sdk import WebClient

from bot.answer.blocks import escape_mrkdwn, one_line, plain_fallback
from bot.answer.byline import byline
from bot.answer.capacity import (
    capacity_blocks,
    capacity_fallback,
    where_blocks,
    where_text,
)
from bot.clusters.fleet import UnknownClusterError
from bot.clusters.telemetry import prometheus_settings, with_idle
from bot.slack.listeners.replies import (
    CHANNEL_REFUSAL,
    cluster_failure,
    cluster_refusal,
    namespace_refusal,
    post_or_respond,
)
from bot.slack.listeners.state import BotState
from triage.classify.capacity import capacity_view
from triage.classify.where import WhereAsk, WhereError, gpu_resource_names, where
from triage.errors import ClusterError
from triage.snapshot import Snapshot

log = logging.getLogger(__name__)

CAPACITY_WORD, WHERE_WORD = "capacity", "where"
CAPACITY_USAGE = "usage: /gpuwhy capacity [CLUSTER] [RESOURCE|POOL]"
WHERE_USAGE = "usage: /gpuwhy where [CLUSTER] N [RESOURCE] [--ns NAMESPACE]  (N: 1 to 1024)"
DEFAULT_NAMESPACE = "default"


def _take_cluster(state: BotState, words: list[str]) -> tuple[str | None, list[str]]:
    """A first word naming a configured cluster (with several) names where to look."""
    if words and state.fleet.several and words[0] in state.fleet.sources:
        return words[0], words[1:]
    return None, words


def _allowed(state: BotState, ack: Ack, channel: str, cluster: str) -> bool:
    if not state.config.channel_allowed(channel):
        ack(text=CHANNEL_REFUSAL)
        return False
    if not state.config.cluster_allowed(channel, cluster):
        ack(text=cluster_refusal(cluster))
        return False
    return True


def answer_capacity(state: BotState, ack: Ack, respond: Respond, client: WebClient,
                    channel: str, user: str, words: list[str], context: BoltContext) -> None:
    named, rest = _take_cluster(state, words)
    if len(rest) > 1:
        ack(text=CAPACITY_USAGE)
        return
    cluster = state.cluster_for(channel, named)
    if not _allowed(state, ack, channel, cluster):
        return
    ack()
    only = rest[0] if rest else None

    def post() -> None:
        snapshot = _snapshot(state, respond, cluster, user)
        if snapshot is None:
            return
        view = capacity_view(snapshot.rows, state.config.triage)
        if only is not None:
            chosen = view.only(only)
            if not chosen.groups:
                respond(text=escape_mrkdwn(f"No GPU group is named {only}; known: "
                                           f"{', '.join(view.names()) or 'none'}. "
                                           f"{CAPACITY_USAGE}", 2900))
                return
            view = chosen
        view = with_idle(view, snapshot, prometheus_settings(
            state.config, cluster=cluster if state.fleet.several else None))
        blocks = capacity_blocks(view, _visible(state, channel), _byline(state, user, cluster))
        post_or_respond(client, respond, f"capacity for {user}", channel=channel,
                        text=plain_fallback(capacity_fallback(view)), blocks=blocks)

    state.later(f"capacity in {cluster} for {user} in {channel}", post, respond, context)


def parse_where(words: list[str]) -> tuple[int, str | None, str]:
    """N [RESOURCE] [--ns NS] → (N, resource or None, namespace); WhereError when not."""
    namespace = DEFAULT_NAMESPACE
    rest: list[str] = []
    position = 0
    while position < len(words):
        word = words[position]
        if word in ("--ns", "-n", "--namespace"):
            if position + 1 >= len(words):
                raise WhereError(f"{word} needs a namespace. {WHERE_USAGE}")
            namespace = words[position + 1]
            position += 2
            continue
        rest.append(word)
        position += 1
    if not rest or len(rest) > 2 or not rest[0].isdigit() or not 1 <= int(rest[0]) <= 1024:
        raise WhereError(WHERE_USAGE)
    return int(rest[0]), rest[1] if len(rest) == 2 else None, namespace


def answer_where(state: BotState, ack: Ack, respond: Respond, client: WebClient,
                 channel: str, user: str, words: list[str], context: BoltContext) -> None:
    named, rest = _take_cluster(state, words)
    try:
        count, resource, namespace = parse_where(rest)
    except WhereError as exc:
        ack(text=escape_mrkdwn(exc, 500))
        return
    cluster = state.cluster_for(channel, named)
    if not _allowed(state, ack, channel, cluster):
        return
    if not state.may_describe(channel, namespace, cluster):
        ack(text=namespace_refusal(namespace))
        return
    ack()

    def post() -> None:
        snapshot = _snapshot(state, respond, cluster, user)
        if snapshot is None:
            return
        known = gpu_resource_names(snapshot.rows, state.config.triage)
        try:
            if resource is None and not known:
                raise WhereError("no node here offers a GPU resource or DRA GPU device")
            answer = where(snapshot.rows, WhereAsk(count, resource or known[0], namespace),
                           state.config.triage)
        except WhereError as exc:
            respond(text=escape_mrkdwn(f"{exc}. {WHERE_USAGE}", 2900))
            return
        visible = _visible(state, channel)
        post_or_respond(client, respond, f"where {count} for {user}", channel=channel,
                        text=plain_fallback(where_text(answer)),
                        blocks=where_blocks(answer, visible, _byline(state, user, cluster)))

    state.later(f"where {count} in {cluster} for {user} in {channel}", post, respond, context)


def _snapshot(state: BotState, respond: Respond, cluster: str, user: str) -> Snapshot | None:
    try:
        return state.fleet.source(cluster).cluster_snapshot()
    except (ClusterError, UnknownClusterError) as exc:
        log.warning("cannot read %s for %s: %s", cluster, user, one_line(exc))
        respond(text=cluster_failure(exc))
        return None


def _visible(state: BotState, channel: str) -> Callable[[str], bool]:
    return lambda namespace: state.config.namespace_allowed(channel, namespace)


def _byline(state: BotState, user: str, cluster: str) -> str | None:
    source = state.fleet.source(cluster)
    return byline(user, cluster=cluster if state.fleet.several else None,
                  as_of=source.as_of(), now=state.clock())
