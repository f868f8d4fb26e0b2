"""The config schema's value types, made with pydantic: imported only when a config is checked,
so a run with the defaults (no config file, no variable) never loads pydantic.

The sections in bot.config.schema name these types in their annotations, which stay strings
there until pydantic resolves them in that module's namespace: importing this module puts the
types (and pydantic's ``Field`` and ``Strict``, which the sections' own annotations use) there.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Annotated, get_origin
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import AfterValidator, BeforeValidator, Discriminator, Field, Strict, Tag

from bot.config import schema
from bot.config.schema import ChannelAccess, ClusterSource, parse_duration


def _matching(pattern: str, what: str) -> AfterValidator:
    compiled = re.compile(pattern)

    def check(value: str) -> str:
        if not compiled.fullmatch(value):
            raise ValueError(f"not {what}")
        return value

    return AfterValidator(check)


def _timezone(name: str) -> str:
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError("not an IANA timezone name (e.g. Europe/Berlin, UTC)") from None
    return name


Text = Annotated[str, Field(min_length=1)]
Integer = Annotated[int, Strict()]
# Slack ids: C… public, G… private (older), D… direct messages. Names ("#support") never match
# the channel id Slack sends, so they would silently refuse every command.
ChannelId = Annotated[str, _matching(r"[CGD][A-Z0-9]+", "a Slack channel id (C0123ABCD)")]
# The digest and unasked answers are posted with chat.postMessage, which also takes a name.
PostChannel = Annotated[str, _matching(r"[CGD][A-Z0-9]+|#[a-z0-9][-_a-z0-9]{0,79}",
                                         "a Slack channel id (C0123ABCD) or #name")]
Namespace = Annotated[str, _matching(r"\*|[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?",
                                     'a namespace name or "*"')]
# An extended resource name (domain/name), glob patterns allowed: nvidia.com/mig-*.
ResourceName = Annotated[str, _matching(r"[A-Za-z0-9*]([-A-Za-z0-9.*]*[A-Za-z0-9*])?"
                                        r"/[A-Za-z0-9*]([-A-Za-z0-9_.*]*[A-Za-z0-9*])?",
                                        "a resource name such as nvidia.com/gpu")]
# A label key: an optional DNS-subdomain prefix and a name (karpenter.sh/nodepool, pool).
LabelKey = Annotated[str, _matching(r"([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/)?"
                                    r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?",
                                    "a label key such as pool or karpenter.sh/nodepool")]
# A DRA driver name: a DNS subdomain, lower case (gpu.nvidia.com).
DriverName = Annotated[str, _matching(r"[a-z0-9]([-a-z0-9.]{0,61}[a-z0-9])?",
                                      "a DRA driver name such as gpu.nvidia.com")]
Timezone = Annotated[str, AfterValidator(_timezone)]
HttpUrl = Annotated[str, _matching(r"https?://[^\s/?#]+(/[^\s?#]*)?",
                                   "an http:// or https:// URL without query")]
LabelName = Annotated[str, _matching(r"[A-Za-z_][A-Za-z0-9_]*", "a Prometheus label name")]
Seconds = Annotated[float, Strict(), Field(gt=0, le=60)]


Duration = Annotated[timedelta, BeforeValidator(parse_duration)]
# "Name: value"; the value may hold ${ENV} references, read when the header is sent.
HeaderLine = Annotated[str, _matching(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+:[ \t]*\S.*",
                                      'a header line ("Name: value")')]
WebhookURL = Annotated[str, _matching(r"https?://[^/\s?#]+([/?#]\S*)?", "an http(s) URL")]
EnvName = Annotated[str, _matching(r"[A-Za-z_][A-Za-z0-9_]*", "an environment variable name")]


def _one_source(source: ClusterSource) -> ClusterSource:
    kinds = [kind for kind, given in (
        ("kubeconfig/context", source.kubeconfig is not None or source.context is not None),
        ("in_cluster", source.in_cluster), ("snapshot", source.snapshot is not None)) if given]
    if len(kinds) != 1:
        raise ValueError("give exactly one of kubeconfig (with context), in_cluster: true, "
                         f"snapshot (found {', '.join(kinds) or 'none'})")
    return source


ClusterName = Annotated[str, _matching(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?",
                                       "a cluster name (lower case letters, digits, -)")]
ClusterOrAll = Annotated[str, _matching(r"\*|[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?",
                                        'a cluster name or "*"')]
CheckedClusterSource = Annotated[ClusterSource, AfterValidator(_one_source)]


def _channel_shape(value: object) -> str:
    return "access" if isinstance(value, dict | ChannelAccess) else "namespaces"


# A channel's value: its namespaces as a list (any cluster), or a ChannelAccess mapping.
ChannelValue = Annotated[
    Annotated[tuple[Namespace, ...], Tag("namespaces")] | Annotated[ChannelAccess, Tag("access")],
    Discriminator(_channel_shape)]


# What the sections' string annotations name beside the schema's own classes: every value
# type above, and the pydantic markers the annotations use themselves.
vars(schema).update({name: value for name, value in list(globals().items())
                     if get_origin(value) is Annotated}, Field=Field, Strict=Strict)
