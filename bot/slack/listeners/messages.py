"""Thread replies: "show devices" under a gpuwhy answer; every other message is ignored."""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt import App, BoltContext
from slack_sdk import WebClient

from bot.slack.listeners.devices import SHOW_DEVICES, reply_with_devices
from bot.slack.listeners.state import BotState

log = logging.getLogger(__name__)


def register(app: App, state: BotState) -> None:
    @app.message(SHOW_DEVICES)
    def show_devices(message: dict[str, Any], body: dict[str, Any], client: WebClient,
                     context: BoltContext) -> None:
        thread_ts = message.get("thread_ts")
        if not thread_ts or thread_ts == message.get("ts"):
            return
        event_id = str(body.get("event_id", ""))
        # Memory first: a retry reaching this replica again costs no database round trip.
        if event_id and not state.seen.first_time(event_id):
            log.info("event %s already handled (Slack retry)", event_id)
            return
        channel, user = str(message["channel"]), str(message.get("user", ""))

        def reply() -> None:
            # The store claim runs on the answer workers: a slow database must not hold
            # bolt's threads, which ack the requests queued behind this one.
            if event_id and not state.first_delivery(event_id):
                log.info("event %s already claimed in the store (Slack retry)", event_id)
                return
            reply_with_devices(state, client, channel=channel, thread_ts=str(thread_ts),
                               user=user)

        # Nobody to apologize to: a message event has no response_url; the failure is logged.
        state.later(f"showing devices of {channel}/{thread_ts} for {user}", reply,
                    context=context)

    # Any other message: acknowledged so Slack does not retry it, and otherwise ignored.
    @app.event("message")
    def ignore_other_messages() -> None:
        return
