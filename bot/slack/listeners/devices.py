"""The "show devices" reply, shared by the thread message and the button."""

from __future__ import annotations

import logging
import re

from slack_sdk import WebClient

from bot.answer.devices import devices_blocks, devices_text
from bot.slack.listeners.replies import (
    CHANNEL_REFUSAL,
    cluster_refusal,
    namespace_refusal,
    post_message,
)
from bot.slack.listeners.state import BotState

log = logging.getLogger(__name__)

SHOW_DEVICES = re.compile(r"^\s*show devices\s*$", re.IGNORECASE)


def reply_with_devices(state: BotState, client: WebClient, *, channel: str, thread_ts: str,
                       user: str) -> bool:
    """Post the device tables in the answer's thread; False when the thread is not an answer.

    Access is checked again: the configuration may have changed since the answer was posted.
    """
    posted = state.answer_for_thread(channel, thread_ts)
    if posted is None:
        return False
    namespace = posted.verdict.ref.partition("/")[0]
    refusal = devices_refusal(state, channel, namespace, posted.cluster)
    if refusal is not None:
        log.info("refused devices of %s for %s in %s (cluster %s)", posted.verdict.ref, user,
                 channel, posted.cluster)
        client.chat_postEphemeral(channel=channel, user=user, thread_ts=thread_ts, text=refusal)
        return True
    post_message(
        client, f"the devices of {posted.verdict.ref}", channel=channel, thread_ts=thread_ts,
        text=devices_text(posted.verdict, posted.created_at),
        blocks=devices_blocks(posted.verdict, posted.created_at),
    )
    return True


def devices_refusal(state: BotState, channel: str, namespace: str, cluster: str) -> str | None:
    """Why the channel may no longer see the devices of an answer about ``namespace`` in
    ``cluster``; None when it may."""
    if not state.config.channel_allowed(channel):
        return CHANNEL_REFUSAL
    if not state.config.cluster_allowed(channel, cluster):
        return cluster_refusal(cluster)
    if not state.config.namespace_allowed(channel, namespace):
        return namespace_refusal(namespace)
    return None
