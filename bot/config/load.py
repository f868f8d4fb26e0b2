"""Loading the settings: the config file named by GPUWHY_CONFIG (YAML or JSON, each key once)
and the environment variables that override it, checked against the schema; every problem
becomes one line naming the key and the value. A new environment variable is one line in
ENVIRONMENT."""


from __future__ import annotations

import json
import os
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bot.config.schema import BotConfig, ChannelAccess, ConfigError

if TYPE_CHECKING:  # pydantic and YAML are loaded only for a config to read and check
    from pydantic import TypeAdapter
    from pydantic_core import ErrorDetails

ENVIRONMENT = {  # variable -> the config key it sets (the variable wins over the file)
    "GPUWHY_CLUSTER": "cluster",
    "GPUWHY_DATABASE_URL": "database_url",
    "GPUWHY_JOURNAL": "journal_path",
    "GPUWHY_DIGEST_CHANNEL": "digest.channel",
    "GPUWHY_PROMETHEUS_URL": "prometheus.url",
}
# Keys whose value may hold a password: errors name them without the value.
SECRET_KEYS = frozenset({"database_url"})
MISSING = frozenset({"missing", "missing_keyword_argument", "missing_argument"})
MAX_SHOWN_VALUE = 60


@cache
def config_schema() -> TypeAdapter[BotConfig]:
    """Built when there is something to check: building it takes longer than the rest of a
    cold `gpuwhy triage` of a small cluster, and importing pydantic with the value types of
    bot.config.checks costs 0.11 s of CPU, a fifth of that triage's start-up."""
    from pydantic import TypeAdapter

    import bot.config.checks  # noqa: F401  (the types the schema's annotations name)

    return TypeAdapter(BotConfig)


# Loading ------------------------------------------------------------------------------------


def load_config(environ: Mapping[str, str] | None = None) -> BotConfig:
    """The checked configuration; ConfigError (one line) names every key that is wrong."""
    env = os.environ if environ is None else environ
    path = env.get("GPUWHY_CONFIG")
    data = _read_file(Path(path)) if path else {}
    from_env = _apply_environment(data, env)
    if not data:  # no file and no variable: the defaults, valid by construction (tests pin it)
        return BotConfig()
    schema = config_schema()
    from pydantic import ValidationError

    try:
        config = schema.validate_python(data)
    except ValidationError as exc:
        problems = dict.fromkeys(_describe(error, data, from_env) for error in exc.errors())
        raise ConfigError(f"config {path or '(environment)'}: {'; '.join(problems)}") from None
    if unknown := _unknown_clusters(config):
        raise ConfigError(f"config {path or '(environment)'}: {'; '.join(unknown)}")
    return config


def _unknown_clusters(config: BotConfig) -> list[str]:
    """Cluster names that name no entry of ``clusters``, one line each."""
    known = sorted(config.clusters)
    described = (f"not one of clusters ({', '.join(known)})" if known
                 else "no clusters are configured")
    named = [("default_cluster", config.default_cluster)]
    for channel, value in config.channels.items():
        if isinstance(value, ChannelAccess):
            named.append((f"channels.{channel}.cluster", value.cluster))
            named += [(f"channels.{channel}.clusters", name) for name in value.clusters or ()
                      if name != "*"]
    return [f"{key} = {name!r}: {described}" for key, name in named
            if name is not None and name not in config.clusters]


def _apply_environment(data: dict[str, Any], env: Mapping[str, str]) -> dict[str, str]:
    """Set the keys the environment overrides; returns key -> variable for the error lines."""
    used = {}
    for variable, key in ENVIRONMENT.items():
        value = env.get(variable)
        if not value:
            continue
        *sections, last = key.split(".")
        target = data
        for section in sections:
            nested = target.setdefault(section, {})
            if not isinstance(nested, dict):  # the file's own error is reported instead
                break
            target = nested
        else:
            target[last] = value
            used[key] = variable
    return used


def _describe(error: ErrorDetails, data: object, from_env: Mapping[str, str]) -> str:
    loc = _key_path(error["loc"], data, missing=error["type"] in MISSING)
    if error["loc"][-1:] == ("[key]",):  # a mapping's key is wrong, not its value
        return f"{'.'.join(loc[:-1])}: key {_shown(error['input'])}: {_reason(error)}"
    key = ".".join(loc) or "(top level)"
    if error["type"] in ("extra_forbidden", "unexpected_keyword_argument"):
        from bot.config.keys import did_you_mean

        return f"{key}: unknown key{did_you_mean(BotConfig, loc)}"
    if error["type"] in MISSING:
        return f"{key}: missing (required)"
    name = f"{from_env[key]} ({key})" if key in from_env else key
    if key.split(".")[0] in SECRET_KEYS:
        return f"{name}: {_reason(error)}"
    return f"{name} = {_shown(error['input'])}: {_reason(error)}"


def _key_path(loc: tuple[str | int, ...], data: object, *, missing: bool) -> list[str]:
    """The keys of ``loc`` as written in the file: pydantic also names the tried member of a
    union (and "[key]"), which are not keys of the data. A missing key is the last one."""
    path = []
    for index, part in enumerate(loc):
        within = (part in data if isinstance(data, dict) else
                  isinstance(data, list) and isinstance(part, int) and 0 <= part < len(data))
        if within:
            data = data[part]  # type: ignore[index]
        elif not (missing and index == len(loc) - 1):
            continue
        path.append(str(part))
    return path


def _reason(error: ErrorDetails) -> str:
    kind, value = error["type"], error["input"]
    if kind in ("tuple_type", "list_type") and isinstance(value, str):
        return f"must be a list, not a string (write [{value}])"
    if kind == "dict_type":
        return "must be a mapping (key: value)"
    if kind in ("tuple_type", "list_type"):
        return "must be a list"
    if kind == "int_type":
        return "must be a whole number"
    if kind == "float_type":
        return "must be a number"
    if kind == "bool_type":
        return "must be true or false"
    if kind == "string_type":
        return "must be a string"
    if kind == "literal_error":
        return f"must be one of {error.get('ctx', {}).get('expected', '')}".replace("'", "")
    if kind in ("greater_than_equal", "less_than_equal", "greater_than"):
        return _range(error)
    if kind == "too_short":
        return "must not be empty"
    if kind == "string_too_short":
        return "must not be empty"
    if kind == "value_error":
        return str(error.get("ctx", {}).get("error", error["msg"]))
    if kind in ("dataclass_type", "dataclass_args_type", "model_type"):
        return "must be a section (a mapping of keys)"
    return str(error["msg"]).lower()


def _range(error: ErrorDetails) -> str:
    ctx = error.get("ctx", {})
    if "ge" in ctx:
        return f"must be at least {ctx['ge']}"
    if "gt" in ctx:
        return f"must be more than {ctx['gt']:g}"
    return f"must be at most {ctx['le']}"


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= MAX_SHOWN_VALUE else text[:MAX_SHOWN_VALUE - 1] + "…"


def _read_file(path: Path) -> dict[str, Any]:
    import yaml

    from bot.config.keys import DuplicateKeyError, UniqueKeyLoader, unique_keys

    try:
        text = path.read_text(encoding="utf-8")
        data = json.loads(text, object_pairs_hook=unique_keys) if path.suffix == ".json" \
            else yaml.load(text, Loader=UniqueKeyLoader)
    except DuplicateKeyError as exc:
        raise ConfigError(f"config {path}: {exc}") from None
    except (OSError, ValueError, yaml.YAMLError) as exc:
        raise ConfigError(f"config {path}: cannot read: {' '.join(str(exc).split())}") from None
    if data is None:  # an empty file: every default
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"config {path}: expected a mapping of keys at the top level")
    return data

