"""The config file's schema: one frozen dataclass per section, checked by pydantic (types,
ranges, unknown keys). A new section is a frozen dataclass with
``__pydantic_config__ = STRICT_SECTION`` and one field on BotConfig. A value that may take two
shapes (a list, or a mapping) is a union with a callable ``Discriminator`` picking the shape, so
a mistake is described against the shape that was written, not against both.

Tokens and secrets are read from the environment only, never from a config file.
"""


from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import platformdirs

from triage.config import (
    DEFAULT_GPU_DRIVERS,
    DEFAULT_GPU_RESOURCES,
    DEFAULT_POOL_LABELS,
    TriageConfig,
)
from triage.dcgm import DcgmLabels
from triage.vocabulary import Cause

if TYPE_CHECKING:  # at run time the annotations are strings, resolved when a config is checked
    from pydantic import ConfigDict, Field, Strict

    from bot.config.checks import (
        ChannelId,
        ChannelValue,
        CheckedClusterSource,
        ClusterName,
        ClusterOrAll,
        DriverName,
        Duration,
        EnvName,
        HeaderLine,
        HttpUrl,
        Integer,
        LabelKey,
        LabelName,
        Namespace,
        PostChannel,
        ResourceName,
        Seconds,
        Text,
        Timezone,
        WebhookURL,
    )

# Unknown keys are errors; numbers must be numbers (YAML's "9" is a string, not an hour).
STRICT_SECTION: ConfigDict = {"extra": "forbid", "frozen": True}


class ConfigError(ValueError):
    """The configuration is unusable; str() is one line for the terminal."""


def default_database_url() -> str:
    data_dir = Path(platformdirs.user_data_dir("gpuwhy"))
    return f"sqlite:///{data_dir / 'gpuwhy.db'}"


# Value types: made with pydantic in bot.config.checks, only when a config is checked -------


_DURATION = re.compile(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?")


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
        raise ValueError("must be more than 0")
    return timedelta(seconds=seconds)



# Sections -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class TriageSettings(TriageConfig):
    """TriageConfig with its values checked."""

    __pydantic_config__ = STRICT_SECTION
    gpu_resources: Annotated[tuple[ResourceName, ...], Field(min_length=1)] = (
        DEFAULT_GPU_RESOURCES)
    # DRA: a DeviceClass is a GPU class when it selects devices of one of these drivers.
    gpu_drivers: tuple[DriverName, ...] = DEFAULT_GPU_DRIVERS
    # The capacity view's pools: the first of these node labels a node carries.
    pool_labels: tuple[LabelKey, ...] = DEFAULT_POOL_LABELS


@dataclass(frozen=True)
class DigestSchedule:
    __pydantic_config__ = STRICT_SECTION
    channel: PostChannel | None = None
    weekday: Annotated[Integer, Field(ge=0, le=6)] = 0  # Monday
    hour: Annotated[Integer, Field(ge=0, le=23)] = 9
    timezone: Timezone = "UTC"


@dataclass(frozen=True)
class DcgmLabelSettings(DcgmLabels):
    """DcgmLabels with its values checked."""

    __pydantic_config__ = STRICT_SECTION
    # the same fields, typed for checking; the defaults are DcgmLabels' own
    node: LabelName = DcgmLabels.node
    gpu: LabelName = DcgmLabels.gpu
    uuid: LabelName = DcgmLabels.uuid
    model: LabelName = DcgmLabels.model
    pod: LabelName = DcgmLabels.pod
    namespace: LabelName = DcgmLabels.namespace


@dataclass(frozen=True)
class PrometheusConfig:
    """Where DCGM exporter's series are read; no url: answers carry no telemetry. The bearer
    token and a CA bundle come from the environment (the variables token_env / ca_env name)."""

    __pydantic_config__ = STRICT_SECTION
    url: HttpUrl | None = None
    timeout: Seconds = 2.0  # for the whole round of queries
    labels: DcgmLabelSettings = field(default_factory=DcgmLabelSettings)
    # The environment variables holding the bearer token and the CA bundle's path, so that
    # each cluster's Prometheus can have its own.
    token_env: EnvName = "GPUWHY_PROMETHEUS_TOKEN"
    ca_env: EnvName = "GPUWHY_PROMETHEUS_CA"


@dataclass(frozen=True)
class ClusterSource:
    """Where one cluster of ``clusters`` is read from: exactly one of a kubeconfig (and
    context), the pod's own service account (``in_cluster``), or a dump directory."""

    __pydantic_config__ = STRICT_SECTION
    kubeconfig: Text | None = None
    context: Text | None = None
    in_cluster: Annotated[bool, Strict()] = False
    snapshot: Text | None = None  # a directory `gpuwhy snapshot` wrote
    # The cluster's own Prometheus (its DCGM exporters); without it the top-level one.
    prometheus: PrometheusConfig | None = None

    @property
    def kind(self) -> str:
        return ("snapshot" if self.snapshot else "in-cluster" if self.in_cluster
                else "kubeconfig")


@dataclass(frozen=True)
class ChannelAccess:
    """What one channel may ask about: ``cluster`` is its default (and, unless ``clusters``
    lists more, the only one it may describe); ``namespaces`` apply in each of them."""

    __pydantic_config__ = STRICT_SECTION
    namespaces: tuple[Namespace, ...] = ("*",)
    cluster: ClusterName | None = None
    clusters: tuple[ClusterOrAll, ...] | None = None

    def allows_cluster(self, name: str) -> bool:
        if self.clusters is not None:
            return "*" in self.clusters or name in self.clusters
        return self.cluster is None or name == self.cluster


EVERY_CHANNEL = ChannelAccess()


@dataclass(frozen=True)
class WatchSettings:
    """The watch cache of `gpuwhy serve`: not heard from the API server for longer than this,
    it is not ready (/readyz 503) and answers say how old their nodes and pods are."""

    __pydantic_config__ = STRICT_SECTION
    stale_after_seconds: Annotated[Integer, Field(ge=10, le=3600)] = 120


@dataclass(frozen=True)
class AlertsSettings:
    """The stuck-pod watch and the limits of every unasked post (bot/alerts)."""

    __pydantic_config__ = STRICT_SECTION
    pending_after: Duration = timedelta(minutes=10)
    channel: PostChannel | None = None  # where answers no route takes go
    max_posts_per_hour: Annotated[Integer, Field(ge=1)] = 20
    check_every: Duration = timedelta(seconds=30)  # how often the watch cache is looked at
    recheck_every: Duration = timedelta(minutes=5)  # how often a stuck workload is triaged
    webhook_retries: Annotated[Integer, Field(ge=0, le=10)] = 3
    webhook_backoff: Duration = timedelta(seconds=1)  # doubled after each failed try
    webhook_timeout: Duration = timedelta(seconds=10)
    # A workload Kueue has not admitted (`queued`) waits normally: posted unasked only by a
    # route that names `queued`, or, once it has waited this long, like any other answer.
    queued_after: Duration | None = None


@dataclass(frozen=True)
class RouteSettings:
    """Where the answers for some cause words (all of them when ``causes`` is empty) go."""

    __pydantic_config__ = STRICT_SECTION
    causes: tuple[Cause, ...] = ()
    namespaces: tuple[Namespace, ...] = ()  # empty: every namespace
    channel: PostChannel | None = None
    mention: Text | None = None  # "<!subteam^ID>" or "<@U1> <@U2>"
    webhook: WebhookURL | None = None
    webhook_header: HeaderLine | None = None

    def __post_init__(self) -> None:
        if self.channel is None and self.webhook is None and self.mention is None:
            raise ValueError("a route needs a channel, a mention or a webhook")
        if self.webhook_header is not None and self.webhook is None:
            raise ValueError("webhook_header without a webhook")

    def takes(self, cause: str, namespace: str) -> bool:
        return ((not self.causes or cause in self.causes)
                and (not self.namespaces or "*" in self.namespaces
                     or namespace in self.namespaces))


@dataclass(frozen=True)
class BotConfig:
    __pydantic_config__ = STRICT_SECTION
    cluster: Text = "default"
    database_url: Text = field(default_factory=default_database_url)
    # Where answers wait for the store (fsync'd JSON lines); default: next to the SQLite file,
    # else in the user data directory. One per gpuwhy serve process.
    journal_path: Text | None = None
    triage: TriageSettings = field(default_factory=TriageSettings)
    # channel id -> namespaces it may describe ("*" = all), or a ChannelAccess. Empty
    # mapping: every channel, every namespace, every cluster.
    channels: Mapping[ChannelId, ChannelValue] = field(default_factory=dict)
    digest: DigestSchedule = field(default_factory=DigestSchedule)
    prometheus: PrometheusConfig = field(default_factory=PrometheusConfig)
    watch: WatchSettings = field(default_factory=WatchSettings)
    # name -> where it is read from; empty: the one cluster of --kubeconfig / --snapshot.
    clusters: Mapping[ClusterName, CheckedClusterSource] = field(default_factory=dict)
    default_cluster: ClusterName | None = None
    alerts: AlertsSettings = field(default_factory=AlertsSettings)
    # first match wins; no match: alerts.channel
    routes: tuple[RouteSettings, ...] = ()

    def access(self, channel: str) -> ChannelAccess | None:
        """What the channel may ask about; None when it is not a channel gpuwhy answers in."""
        if not self.channels:
            return EVERY_CHANNEL
        value = self.channels.get(channel)
        if value is None or isinstance(value, ChannelAccess):
            return value
        return ChannelAccess(namespaces=tuple(value))

    @property
    def alerts_enabled(self) -> bool:
        """Anything to post unasked answers to: a default channel or a route."""
        return self.alerts.channel is not None or bool(self.routes)

    def channel_allowed(self, channel: str) -> bool:
        return self.access(channel) is not None

    def namespace_allowed(self, channel: str, namespace: str) -> bool:
        allowed = self.access(channel)
        return allowed is not None and ("*" in allowed.namespaces
                                        or namespace in allowed.namespaces)

    def cluster_allowed(self, channel: str, cluster: str) -> bool:
        allowed = self.access(channel)
        return allowed is not None and allowed.allows_cluster(cluster)

    def channel_cluster(self, channel: str) -> str | None:
        """The cluster a channel's questions go to when they name none (None: the only one)."""
        allowed = self.access(channel)
        if allowed is not None and allowed.cluster is not None:
            return allowed.cluster
        return self.default_cluster or next(iter(self.clusters), None)


