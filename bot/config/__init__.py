"""Bot settings: one checked schema for the config file (YAML/JSON named by GPUWHY_CONFIG) and
the environment variables that override it (``load``); the sections (``schema``); the file's
keys read once each, with "did you mean" for a misspelt one (``keys``)."""

from bot.config.load import (
    ENVIRONMENT,
    load_config,
)
from bot.config.schema import (
    EVERY_CHANNEL,
    AlertsSettings,
    BotConfig,
    ChannelAccess,
    ClusterSource,
    ConfigError,
    DigestSchedule,
    PrometheusConfig,
    RouteSettings,
    parse_duration,
)

__all__ = [
    "ENVIRONMENT",
    "EVERY_CHANNEL",
    "AlertsSettings",
    "BotConfig",
    "ChannelAccess",
    "ClusterSource",
    "ConfigError",
    "DigestSchedule",
    "PrometheusConfig",
    "RouteSettings",
    "load_config",
    "parse_duration",
]
