"""The ``alerts`` and ``routes`` settings: durations like 10m / 90s / 1h, known cause words,
a destination for every route. Checked by pydantic like every other section of the config.

A webhook header may hold ``${NAME}``: it is read from the environment when the header is
sent (tokens never sit in the config file); ``missing_environment`` tells at start-up which
of those variables are unset.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Annotated

from pydantic import AfterValidator, BeforeValidator, ConfigDict, Field, Strict

from triage.vocabulary import Cause

STRICT_SECTION = ConfigDict(extra="forbid", frozen=True)
_DURATION = re.compile(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?")
_ENV_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # an HTTP token (RFC 9110)
_URL = re.compile(r"https?://[^/\s?#]+(?:[/?#]\S*)?")


def parse_duration(value: object) -> timedelta:
    """``90s``, ``10m``, ``1h``, ``1h30m``, or a whole number of seconds; more than zero."""
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, int) and not isinstance(value, bool):
        seconds = value
    elif isinstance(value, str) and (match := _DURATION.fullmatch(value.strip())) \
            and any(match.groups()):
        hours, minutes, secs = (int(part or 0) for part in match.groups())
        seconds = hours * 3600 + minutes * 60 + secs
    else:
        raise ValueError("not a duration (e.g. 90s, 10m, 1h)")
    if seconds <= 0:
        raise ValueError("a duration must be more than 0")
    return timedelta(seconds=seconds)


def _header_line(header: str) -> str:
    name, colon, value = header.partition(":")
    if not colon or not _HEADER_NAME.fullmatch(name.strip()) or not value.strip():
        raise ValueError('not a header line ("Name: value")')
    return header


def _url(url: str) -> str:
    if not _URL.fullmatch(url):
        raise ValueError("not an http(s) URL")
    return url


Duration = Annotated[timedelta, BeforeValidator(parse_duration)]
Count = Annotated[int, Strict()]
HeaderLine = Annotated[str, AfterValidator(_header_line)]
URL = Annotated[str, AfterValidator(_url)]
Text = Annotated[str, Field(min_length=1)]


def env_references(text: str) -> list[str]:
    return _ENV_REFERENCE.findall(text)


def expand_env(text: str, environ: Mapping[str, str]) -> str:
    """``${NAME}`` replaced by the variable's value (an unset one by nothing)."""
    return _ENV_REFERENCE.sub(lambda match: environ.get(match.group(1), ""), text)


@dataclass(frozen=True)
class AlertsSettings:
    __pydantic_config__ = STRICT_SECTION
    pending_after: Duration = timedelta(minutes=10)
    channel: Text | None = None  # where answers no route takes go
    max_posts_per_hour: Annotated[Count, Field(ge=1)] = 20
    check_every: Duration = timedelta(seconds=30)  # how often the watch cache is looked at
    recheck_every: Duration = timedelta(minutes=5)  # how often a stuck workload is triaged
    webhook_retries: Annotated[Count, Field(ge=0, le=10)] = 3
    webhook_backoff: Duration = timedelta(seconds=1)  # doubled after each failed try
    webhook_timeout: Duration = timedelta(seconds=10)


@dataclass(frozen=True)
class RouteSettings:
    """Where the answers for some cause words (all of them when ``causes`` is empty) go."""

    __pydantic_config__ = STRICT_SECTION
    causes: tuple[Cause, ...] = ()
    namespaces: tuple[Text, ...] = ()  # empty: every namespace
    channel: Text | None = None
    mention: Text | None = None  # "<!subteam^ID>" or "<@U1> <@U2>"
    webhook: URL | None = None
    webhook_header: HeaderLine | None = None  # "Name: value", ${ENV} expanded when sent

    def __post_init__(self) -> None:
        if self.channel is None and self.webhook is None and self.mention is None:
            raise ValueError("a route needs a channel, a mention or a webhook")
        if self.webhook_header is not None and self.webhook is None:
            raise ValueError("webhook_header without a webhook")

    def takes(self, cause: str, namespace: str) -> bool:
        return ((not self.causes or cause in self.causes)
                and (not self.namespaces or namespace in self.namespaces))


@dataclass(frozen=True)
class AlertSettings:
    """The two top-level keys of the config file this package reads."""

    __pydantic_config__ = STRICT_SECTION
    alerts: AlertsSettings = field(default_factory=AlertsSettings)
    routes: tuple[RouteSettings, ...] = ()

    @property
    def enabled(self) -> bool:
        """Anything to post to: a default channel or a route."""
        return self.alerts.channel is not None or bool(self.routes)

    def missing_environment(self, environ: Mapping[str, str]) -> list[str]:
        """Variables the webhook headers name that are not set (a token that silently became
        empty would only show up as 401s at the receiver)."""
        return [name for route in self.routes if route.webhook_header
                for name in env_references(route.webhook_header) if not environ.get(name)]
