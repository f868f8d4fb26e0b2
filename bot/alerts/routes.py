"""Which route an answer takes: the first route whose cause words and namespaces match, else
the default channel. Pure: settings in, a destination out."""

from __future__ import annotations

from dataclasses import dataclass

from bot.alerts.config import AlertSettings


@dataclass(frozen=True)
class Destination:
    channel: str | None  # None: the route only calls its webhook
    mention: str | None = None
    webhook: str | None = None
    header: str | None = None  # "Name: value" with ${ENV} references


def destination(settings: AlertSettings, cause: str, namespace: str) -> Destination | None:
    """Where the answer ``cause`` about a pod in ``namespace`` goes; None: nowhere."""
    default = settings.alerts.channel
    for route in settings.routes:
        if route.takes(cause, namespace):
            # A route that only names a webhook keeps the answer out of Slack; one that
            # names a mention without a channel pings in the default channel.
            webhook_only = route.webhook is not None and route.mention is None
            channel = route.channel or (None if webhook_only else default)
            if channel is None and route.webhook is None:
                return None
            return Destination(channel, route.mention, route.webhook, route.webhook_header)
    return None if default is None else Destination(default)
