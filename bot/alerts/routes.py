"""Which route an answer takes: the first route whose cause words and namespaces match, else
the default channel (pure: settings in, a destination out); and the ${ENV} references of the
routes' webhook headers."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import timedelta

from bot.config import BotConfig, RouteSettings
from triage.vocabulary import Cause

_ENV_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass(frozen=True)
class Destination:
    channel: str | None  # None: the route only calls its webhook
    mention: str | None = None
    webhook: str | None = None
    header: str | None = None  # "Name: value" with ${ENV} references


def post_namespaces(config: BotConfig, channel: str) -> tuple[str, ...]:
    """The namespaces unasked answers posted to ``channel`` may describe: a channel that
    ``channels`` lists keeps its namespaces; any other (the alerts channel or a route's, named
    by the operator for these posts) sees every namespace."""
    access = config.access(channel) if channel in config.channels else None
    return ("*",) if access is None else access.namespaces


def may_post(config: BotConfig, channel: str | None, namespace: str) -> bool:
    allowed = ("*",) if channel is None else post_namespaces(config, channel)
    return "*" in allowed or namespace in allowed


def destination(config: BotConfig, cause: str, namespace: str,
                waited: timedelta | None = None) -> Destination | None:
    """Where the answer ``cause`` about a pod in ``namespace`` goes; None: nowhere.

    The ``channels`` access rules hold for unasked answers to the channels it lists: a route
    whose channel may not describe the namespace is passed over, like one whose filters do
    not match. Waiting in a queue is normal: a `queued` answer goes only where a route names
    `queued`, unless it has ``waited`` at least ``alerts.queued_after``.
    """
    if cause == Cause.QUEUED and not (config.alerts.queued_after is not None
                                      and waited is not None
                                      and waited >= config.alerts.queued_after):
        config = replace(config, alerts=replace(config.alerts, channel=None),
                         routes=tuple(r for r in config.routes if Cause.QUEUED in r.causes))
    default = config.alerts.channel if may_post(config, config.alerts.channel, namespace) \
        else None
    for route in config.routes:
        if route.takes(cause, namespace) and may_post(config, route.channel, namespace):
            # A route that only names a webhook keeps the answer out of Slack; one that
            # names a mention without a channel pings in the default channel.
            webhook_only = route.webhook is not None and route.mention is None
            channel = route.channel or (None if webhook_only else default)
            if channel is None and route.webhook is None:
                return None
            return Destination(channel, route.mention, route.webhook, route.webhook_header)
    return None if default is None else Destination(default)


def nowhere(config: BotConfig, cause: str, namespace: str) -> str:
    """Why ``destination`` found no place for the answer, for the log line."""
    closed = [f"{where} {channel} (channels: limits it to "
              f"{', '.join(post_namespaces(config, channel)) or 'no namespace'})"
              for where, channel, route in _slack_channels(config)
              if (route is None or route.takes(cause, namespace))
              and not may_post(config, channel, namespace)]
    if closed:
        return f"namespace {namespace} may not be posted to {' or '.join(closed)}"
    if config.alerts.channel is None:
        return "no route takes it and alerts.channel is not set"
    return "no route takes it"


def never_posting(config: BotConfig) -> list[str]:
    """Routes and the alerts channel that no answer could ever reach: ``channels`` limits the
    channel to namespaces the route does not take (or to none). One sentence each."""
    problems = []
    for where, channel, route in _slack_channels(config):
        allowed = post_namespaces(config, channel)
        taken = () if route is None or "*" in route.namespaces else route.namespaces
        if "*" in allowed or (allowed and (not taken or set(taken) & set(allowed))):
            continue
        wanted = f", the route takes only {', '.join(taken)}" if taken else ""
        problems.append(f"{where} ({channel}) can never post: channels: limits {channel} "
                        f"to {', '.join(allowed) or 'no namespace'}{wanted}")
    return problems


def _slack_channels(config: BotConfig) -> list[tuple[str, str, RouteSettings | None]]:
    """(the setting, its Slack channel, its route; None for alerts.channel)."""
    named: list[tuple[str, str, RouteSettings | None]] = [
        (f"routes[{index}]", route.channel, route)
        for index, route in enumerate(config.routes) if route.channel is not None]
    if config.alerts.channel is not None:
        named.append(("alerts.channel", config.alerts.channel, None))
    return named


def expand_env(text: str, environ: Mapping[str, str]) -> str:
    """``${NAME}`` replaced by the variable's value (an unset one by nothing)."""
    return _ENV_REFERENCE.sub(lambda match: environ.get(match.group(1), ""), text)


def missing_environment(config: BotConfig, environ: Mapping[str, str]) -> list[str]:
    """Variables the webhook headers name that are not set: a token that silently became
    empty would only show up as 401s at the receiver, so `gpuwhy serve` refuses to start."""
    return [name for route in config.routes if route.webhook_header
            for name in _ENV_REFERENCE.findall(route.webhook_header) if not environ.get(name)]
