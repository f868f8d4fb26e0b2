"""Which route an answer takes: the first route whose cause words and namespaces match, else
the default channel (pure: settings in, a destination out); and the ${ENV} references of the
routes' webhook headers."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from bot.config import BotConfig

_ENV_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass(frozen=True)
class Destination:
    channel: str | None  # None: the route only calls its webhook
    mention: str | None = None
    webhook: str | None = None
    header: str | None = None  # "Name: value" with ${ENV} references


def destination(config: BotConfig, cause: str, namespace: str) -> Destination | None:
    """Where the answer ``cause`` about a pod in ``namespace`` goes; None: nowhere.

    The ``channels`` access rules hold for unasked answers too: a route whose channel may
    not describe the namespace is passed over, like one whose filters do not match.
    """

    def may_post(channel: str | None) -> bool:
        return channel is None or config.namespace_allowed(channel, namespace)

    default = config.alerts.channel if may_post(config.alerts.channel) else None
    for route in config.routes:
        if route.takes(cause, namespace) and may_post(route.channel):
            # A route that only names a webhook keeps the answer out of Slack; one that
            # names a mention without a channel pings in the default channel.
            webhook_only = route.webhook is not None and route.mention is None
            channel = route.channel or (None if webhook_only else default)
            if channel is None and route.webhook is None:
                return None
            return Destination(channel, route.mention, route.webhook, route.webhook_header)
    return None if default is None else Destination(default)


def expand_env(text: str, environ: Mapping[str, str]) -> str:
    """``${NAME}`` replaced by the variable's value (an unset one by nothing)."""
    return _ENV_REFERENCE.sub(lambda match: environ.get(match.group(1), ""), text)


def missing_environment(config: BotConfig, environ: Mapping[str, str]) -> list[str]:
    """Variables the webhook headers name that are not set: a token that silently became
    empty would only show up as 401s at the receiver, so `gpuwhy serve` refuses to start."""
    return [name for route in config.routes if route.webhook_header
            for name in _ENV_REFERENCE.findall(route.webhook_header) if not environ.get(name)]
