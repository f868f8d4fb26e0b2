"""Slack listeners, grouped by kind: slash commands, messages, interactive actions, the App
Home tab."""

from __future__ import annotations

from slack_bolt import App

from bot.slack.listeners import actions, commands, home, messages
from bot.slack.listeners.state import BotState


def register_listeners(app: App, state: BotState) -> None:
    commands.register(app, state)
    messages.register(app, state)
    actions.register(app, state)
    home.register(app, state)
