"""The "Show devices" button under an answer."""

from __future__ import annotations

from typing import Any

from slack_bolt import Ack, App, BoltContext, Respond
from slack_sdk import WebClient

from bot.answer.blocks import escape_mrkdwn
from bot.slack.listeners.devices import reply_with_devices
from bot.slack.listeners.state import BotState

SHOW_DEVICES_ACTION = "show_devices"
FORGOTTEN = ("I no longer have that answer, so I can't show its devices. "
             "Ask again with /gpuwhy {ref}.")


def register(app: App, state: BotState) -> None:
    @app.action(SHOW_DEVICES_ACTION)
    def show_devices(ack: Ack, body: dict[str, Any], action: dict[str, Any], respond: Respond,
                     client: WebClient, context: BoltContext) -> None:
        ack()
        container = body.get("container") or {}
        channel = str(container.get("channel_id") or (body.get("channel") or {}).get("id", ""))
        message_ts = str(container.get("message_ts") or (body.get("message") or {}).get("ts", ""))
        user = str((body.get("user") or {}).get("id", ""))
        ref = escape_mrkdwn(action.get("value") or "NAMESPACE/POD", 320)

        def reply() -> None:
            if not reply_with_devices(state, client, channel=channel, thread_ts=message_ts,
                                      user=user):
                respond(text=FORGOTTEN.format(ref=ref), replace_original=False)

        state.later(f"showing devices of {channel}/{message_ts} for {user}", reply, respond,
                    context)
