"""Bot settings: from the environment, optionally a JSON/YAML file named by GPUWHY_CONFIG.

Tokens and secrets are read from the environment only, never from a file in the repo.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import platformdirs
import yaml

from triage.config import DEFAULT_GPU_RESOURCES, POLICIES, TriageConfig


class ConfigError(ValueError):
    pass


def default_database_url() -> str:
    data_dir = Path(platformdirs.user_data_dir("gpuwhy"))
    return f"sqlite:///{data_dir / 'gpuwhy.db'}"


@dataclass(frozen=True)
class DigestSchedule:
    channel: str | None = None
    weekday: int = 0  # Monday
    hour: int = 9
    timezone: str = "UTC"


@dataclass(frozen=True)
class BotConfig:
    cluster: str = "default"
    database_url: str = field(default_factory=default_database_url)
    triage: TriageConfig = field(default_factory=TriageConfig)
    # channel id -> namespaces it may describe ("*" = all). Empty mapping: every channel, all.
    channels: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    digest: DigestSchedule = field(default_factory=DigestSchedule)

    def channel_allowed(self, channel: str) -> bool:
        return not self.channels or channel in self.channels

    def namespace_allowed(self, channel: str, namespace: str) -> bool:
        if not self.channels:
            return True
        allowed = self.channels.get(channel, ())
        return "*" in allowed or namespace in allowed


def load_config(environ: Mapping[str, str] | None = None) -> BotConfig:
    env = os.environ if environ is None else environ
    data: dict[str, Any] = {}
    if path := env.get("GPUWHY_CONFIG"):
        data = _read_file(Path(path))
    try:
        triage_data = data.get("triage", {})
        policy = str(triage_data.get("node_policy", "binpack"))
        if policy not in POLICIES:
            raise ConfigError(f"triage.node_policy must be one of {', '.join(POLICIES)}")
        digest_data = data.get("digest", {})
        return BotConfig(
            cluster=env.get("GPUWHY_CLUSTER") or str(data.get("cluster", "default")),
            database_url=env.get("GPUWHY_DATABASE_URL")
            or str(data.get("database_url") or default_database_url()),
            triage=TriageConfig(
                gpu_resources=tuple(triage_data.get("gpu_resources", DEFAULT_GPU_RESOURCES)),
                node_policy=policy,
            ),
            channels={str(c): tuple(str(n) for n in ns)
                      for c, ns in (data.get("channels") or {}).items()},
            digest=DigestSchedule(
                channel=env.get("GPUWHY_DIGEST_CHANNEL") or digest_data.get("channel"),
                weekday=int(digest_data.get("weekday", 0)),
                hour=int(digest_data.get("hour", 9)),
                timezone=str(digest_data.get("timezone", "UTC")),
            ),
        )
    except (TypeError, ValueError, AttributeError) as exc:
        raise ConfigError(f"config {env.get('GPUWHY_CONFIG', '(environment)')}: {exc}") from exc


def _read_file(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (OSError, ValueError, yaml.YAMLError) as exc:
        raise ConfigError(f"config {path}: cannot read: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"config {path}: expected a mapping at the top level")
    return data
