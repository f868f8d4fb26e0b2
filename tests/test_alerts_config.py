"""The alerts and routes settings: the documented shape as written, bad values as one line,
and which route an answer takes."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
import yaml
from pydantic import TypeAdapter, ValidationError

from bot.alerts.config import AlertSettings, expand_env, parse_duration
from bot.alerts.routes import Destination, destination

DOCUMENTED = """
alerts:
  pending_after: 10m          # also 90s, 1h
  channel: C0ALERTS           # where unrouted answers go
  max_posts_per_hour: 20
routes:
  - causes: [allocatable-zero, no-gpu-node, node-runtime-error]
    channel: C0NODES
    mention: "<!subteam^S0NODES>"
  - causes: [quota-exceeded]
    namespaces: [research]
    webhook: http://127.0.0.1:9999/hook
    webhook_header: "Authorization: Bearer ${QUOTA_HOOK_TOKEN}"
"""
SCHEMA: TypeAdapter[AlertSettings] = TypeAdapter(AlertSettings)


def load(data: dict[str, Any]) -> AlertSettings:
    return SCHEMA.validate_python(data)


def problem(data: dict[str, Any]) -> str:
    with pytest.raises(ValidationError) as caught:
        load(data)
    [error] = caught.value.errors()
    return f"{'.'.join(str(p) for p in error['loc'])}: {error['msg']}"


def test_the_documented_shape_is_accepted_as_written() -> None:
    parsed = load(yaml.safe_load(DOCUMENTED))
    assert parsed.alerts.pending_after == timedelta(minutes=10)
    assert parsed.alerts.channel == "C0ALERTS" and parsed.alerts.max_posts_per_hour == 20
    nodes, quota = parsed.routes
    assert nodes.causes == ("allocatable-zero", "no-gpu-node", "node-runtime-error")
    assert nodes.mention == "<!subteam^S0NODES>"
    assert quota.namespaces == ("research",) and quota.webhook == "http://127.0.0.1:9999/hook"
    assert parsed.missing_environment({}) == ["QUOTA_HOOK_TOKEN"]
    assert parsed.missing_environment({"QUOTA_HOOK_TOKEN": "t"}) == []


@pytest.mark.parametrize(("text", "seconds"), [
    ("90s", 90), ("10m", 600), ("1h", 3600), ("1h30m", 5400), (" 2m ", 120), (45, 45)])
def test_durations(text: object, seconds: int) -> None:
    assert parse_duration(text) == timedelta(seconds=seconds)
    assert load({"alerts": {"pending_after": text}}).alerts.pending_after.total_seconds() \
        == seconds


@pytest.mark.parametrize("bad", ["10", "ten minutes", "1d", "", "0s", "-5m", 0, True, 1.5, None])
def test_bad_durations_are_named(bad: object) -> None:
    assert problem({"alerts": {"pending_after": bad}}).startswith("alerts.pending_after: ")


@pytest.mark.parametrize(("data", "expected"), [
    ({"alerts": {"pending_afer": "10m"}}, "alerts.pending_afer: Unexpected keyword argument"),
    ({"alerts": {"max_posts_per_hour": "20"}}, "alerts.max_posts_per_hour: Input should be a "
                                               "valid integer"),
    ({"alerts": {"max_posts_per_hour": 0}}, "alerts.max_posts_per_hour: Input should be "
                                            "greater than or equal to 1"),
    ({"routes": [{"causes": ["broken"], "channel": "C1"}]}, "routes.0.causes.0: Input should be"),
    ({"routes": [{"causes": "exhausted", "channel": "C1"}]}, "routes.0.causes: Input should be "
                                                             "a valid tuple"),
    ({"routes": [{"causes": ["exhausted"]}]}, "routes.0: Value error, a route needs a channel"),
    ({"routes": [{"webhook": "ftp://x/hook"}]}, "routes.0.webhook: Value error, not an http"),
    ({"routes": [{"webhook": "http://127.0.0.1:1/h", "webhook_header": "Bearer x"}]},
     "routes.0.webhook_header: Value error, not a header line"),
    ({"routes": [{"channel": "C1", "webhook_header": "A: b"}]},
     "routes.0: Value error, webhook_header without a webhook"),
    ({"routes": {"channel": "C1"}}, "routes: Input should be a valid tuple"),
])
def test_bad_settings_name_the_key(data: dict[str, Any], expected: str) -> None:
    assert problem(data).startswith(expected)


def test_env_references_expand_when_sent() -> None:
    assert expand_env("Authorization: Bearer ${T}", {"T": "abc"}) == "Authorization: Bearer abc"
    assert expand_env("X: ${A}-${B}", {"A": "1", "B": "2"}) == "X: 1-2"


ROUTED = load(yaml.safe_load(DOCUMENTED))


@pytest.mark.parametrize(("cause", "namespace", "expected"), [
    ("allocatable-zero", "research", Destination("C0NODES", "<!subteam^S0NODES>")),
    ("node-runtime-error", "ml", Destination("C0NODES", "<!subteam^S0NODES>")),
    ("quota-exceeded", "research", Destination(
        None, None, "http://127.0.0.1:9999/hook", "Authorization: Bearer ${QUOTA_HOOK_TOKEN}")),
    ("quota-exceeded", "ml", Destination("C0ALERTS")),  # the namespace filter excludes
    ("exhausted", "research", Destination("C0ALERTS")),  # no route: the default channel
])
def test_routes_by_cause_word_and_namespace(cause: str, namespace: str,
                                            expected: Destination) -> None:
    assert destination(ROUTED, cause, namespace) == expected


def test_first_matching_route_wins_and_a_route_without_causes_is_a_default() -> None:
    routes = load({"routes": [{"causes": ["exhausted"], "channel": "C0CAP"},
                              {"channel": "C0ALL", "mention": "<@U1>"}]})
    assert destination(routes, "exhausted", "x") == Destination("C0CAP")
    assert destination(routes, "too-large", "x") == Destination("C0ALL", "<@U1>")


def test_nowhere_to_go() -> None:
    assert destination(load({}), "exhausted", "x") is None
    assert not load({}).enabled
    # a mention without a channel pings in the default channel, and there is none
    assert destination(load({"routes": [{"mention": "<@U1>"}]}), "exhausted", "x") is None
