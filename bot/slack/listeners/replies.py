"""The sentences the bot says when it does not answer with a verdict."""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt import Respond
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.web import SlackResponse

from bot.answer.blocks import escape_mrkdwn, one_line, plain_fallback

log = logging.getLogger(__name__)
# Slack's answers to a message it will not show as built; the text alone still goes.
BLOCK_REFUSALS = frozenset({"invalid_blocks", "invalid_blocks_format", "msg_too_long",
                            "too_many_attachments"})

APOLOGY = "Sorry, something went wrong while answering that. It has been logged; please try again."
CHANNEL_REFUSAL = "Sorry, I don't answer in this channel. Please ask in your support channel."
CLUSTER_UNREADABLE = "Sorry, the cluster could not be read. Please try again in a minute."


def namespace_refusal(namespace: str) -> str:
    return (f"Sorry, namespace `{escape_mrkdwn(namespace, 63)}` can't be described in this "
            "channel. Please ask in the channel for that team.")


def cluster_refusal(cluster: str) -> str:
    return (f"Sorry, cluster `{escape_mrkdwn(cluster, 63)}` can't be described in this "
            "channel. Please ask in the channel for that cluster.")


def cluster_failure(error: Exception) -> str:
    """A ClusterError as the one plain sentence it carries, safe for mrkdwn."""
    return escape_mrkdwn(one_line(error), 2000) or CLUSTER_UNREADABLE


def post_message(client: WebClient, what: str, *, channel: str, text: str,
                 blocks: list[dict[str, Any]], **extra: Any) -> SlackResponse:
    """chat.postMessage; when Slack refuses the blocks, logged and posted as plain text."""
    try:
        return client.chat_postMessage(channel=channel, text=text, blocks=blocks, **extra)
    except SlackApiError as exc:
        error = exc.response.get("error")
        if error not in BLOCK_REFUSALS:
            raise
        log.warning("Slack refused %s (%s: %s); posting it as plain text", what, error,
                    one_line(exc.response.get("errors") or ""))
        return client.chat_postMessage(channel=channel, text=plain_fallback(text), **extra)


def respond_with(respond: Respond, what: str, *, text: str,
                 blocks: list[dict[str, Any]] | None = None, **extra: Any) -> None:
    """A reply through response_url; when Slack refuses the blocks, logged and sent as plain
    text (response_url answers with a status, it raises nothing)."""
    reply = respond(text=text, blocks=blocks, **extra)
    if reply.status_code == 200 or not blocks:
        if reply.status_code != 200:
            log.warning("Slack refused %s (HTTP %d: %s)", what, reply.status_code,
                        one_line(reply.body))
        return
    log.warning("Slack refused %s (HTTP %d: %s); sending it as plain text", what,
                reply.status_code, one_line(reply.body))
    respond(text=plain_fallback(text), **extra)


def post_or_respond(client: WebClient, respond: Respond, what: str, *, channel: str,
                    text: str, blocks: list[dict[str, Any]]) -> SlackResponse | None:
    """Posted in the channel; when the bot may not post there (typically not_in_channel), the
    asker still gets it privately, with a line saying why. None then."""
    try:
        return post_message(client, what, channel=channel, text=text, blocks=blocks)
    except SlackApiError as exc:
        log.warning("cannot post in %s (%s); answering privately", channel,
                    exc.response.get("error"))
        respond_with(respond, what, blocks=blocks,
                     text=f"{text}\n(I can't post in this channel; invite me to get a thread.)")
        return None
