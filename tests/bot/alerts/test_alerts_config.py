"""The alerts and routes settings: the documented shape as written, bad values as one line,
and which route an answer takes."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.alerts.routes import (
    Destination,
    destination,
    expand_env,
    missing_environment,
    never_posting,
    nowhere,
)
from bot.config import BotConfig, ConfigError, load_config, parse_duration
from tests.alertkit import settings
from tests.paths import REPO

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


def from_file(tmp_path: Path, text: str) -> BotConfig:
    path = tmp_path / "gpuwhy.yaml"
    path.write_text(text)
    return load_config({"GPUWHY_CONFIG": str(path)})


def load(data: dict[str, Any]) -> BotConfig:
    return settings(data)


def problem(tmp_path: Path, data: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as caught:
        from_file(tmp_path, yaml.safe_dump(data))
    message = str(caught.value)
    assert "\n" not in message
    return message.partition(": ")[2]


def test_the_documented_shape_is_accepted_as_written(tmp_path: Path) -> None:
    parsed = from_file(tmp_path, DOCUMENTED)
    assert parsed.alerts.pending_after == timedelta(minutes=10)
    assert parsed.alerts.channel == "C0ALERTS" and parsed.alerts.max_posts_per_hour == 20
    nodes, quota = parsed.routes
    assert nodes.causes == ("allocatable-zero", "no-gpu-node", "node-runtime-error")
    assert nodes.mention == "<!subteam^S0NODES>"
    assert quota.namespaces == ("research",) and quota.webhook == "http://127.0.0.1:9999/hook"
    assert parsed.alerts_enabled
    assert missing_environment(parsed, {}) == ["QUOTA_HOOK_TOKEN"]
    assert missing_environment(parsed, {"QUOTA_HOOK_TOKEN": "t"}) == []


@pytest.mark.parametrize(("text", "seconds"), [
    ("90s", 90), ("10m", 600), ("1h", 3600), ("1h30m", 5400), (" 2m ", 120), (45, 45)])
def test_durations(text: object, seconds: int) -> None:
    assert parse_duration(text) == timedelta(seconds=seconds)
    assert load({"alerts": {"pending_after": text}}).alerts.pending_after.total_seconds() \
        == seconds


@pytest.mark.parametrize("bad", ["10", "ten minutes", "1d", "", "0s", 0, True, 1.5, None])
def test_bad_durations_are_named(tmp_path: Path, bad: object) -> None:
    assert problem(tmp_path, {"alerts": {"pending_after": bad}}).startswith(
        f"alerts.pending_after = {bad!r}: ")


@pytest.mark.parametrize(("data", "expected"), [
    ({"alerts": {"pending_afer": "10m"}},
     "alerts.pending_afer: unknown key "
     "(did you mean pending_after?)"),
    ({"alerts": {"max_posts_per_hour": "20"}},
     "alerts.max_posts_per_hour = '20': must be a whole number"),
    ({"alerts": {"max_posts_per_hour": 0}}, "alerts.max_posts_per_hour = 0: must be at least 1"),
    ({"alerts": {"channel": "alerts"}}, "alerts.channel = 'alerts': not a Slack channel id"),
    ({"routes": [{"causes": ["broken"], "channel": "C1"}]}, "routes.0.causes.0 = 'broken': "),
    ({"routes": [{"causes": "exhausted", "channel": "C1"}]},
     "routes.0.causes = 'exhausted': must be a list, not a string (write [exhausted])"),
    ({"routes": [{"causes": ["exhausted"]}]},
     "routes.0 = {'causes': ['exhausted']}: a route needs a channel, a mention or a webhook"),
    ({"routes": [{"webhook": "ftp://x/hook"}]},
     "routes.0.webhook = 'ftp://x/hook': not an http(s) URL"),
    ({"routes": [{"webhook": "http://127.0.0.1:1/h", "webhook_header": "Bearer x"}]},
     "routes.0.webhook_header = 'Bearer x': not a header line"),
    ({"routes": [{"channel": "C1", "webhook_header": "A: b"}]},
     "routes.0 = {'channel': 'C1', 'webhook_header': 'A: b'}: webhook_header without a webhook"),
    ({"routes": [{"channel": "C1", "namespaces": ["Research"]}]},
     "routes.0.namespaces.0 = 'Research': not a namespace name"),
    ({"routes": {"channel": "C1"}}, "routes = {'channel': 'C1'}: must be a list"),
])
def test_bad_settings_name_the_key(tmp_path: Path, data: dict[str, Any], expected: str) -> None:
    assert problem(tmp_path, data).startswith(expected)


def test_env_references_expand_when_sent() -> None:
    assert expand_env("Authorization: Bearer ${T}", {"T": "abc"}) == "Authorization: Bearer abc"
    assert expand_env("X: ${A}-${B}", {"A": "1", "B": "2"}) == "X: 1-2"


ROUTED = settings(yaml.safe_load(DOCUMENTED))


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
    assert not load({}).alerts_enabled
    # a mention without a channel pings in the default channel, and there is none
    assert destination(load({"routes": [{"mention": "<@U1>"}]}), "exhausted", "x") is None


def test_the_readme_example_is_accepted(tmp_path: Path) -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Answers nobody had to ask for", 1)[1]
    example = section.split("```yaml\n", 1)[1].split("```", 1)[0]
    parsed = from_file(tmp_path, example)
    assert parsed.alerts.check_every == timedelta(seconds=30)
    assert [route.channel for route in parsed.routes] == ["C0NODES", None]


def test_channel_access_rules_hold_for_unasked_answers() -> None:
    config = load({"channels": {"C0NODES": ["ml"], "C0ALERTS": ["*"]},
                   "alerts": {"channel": "C0ALERTS"},
                   "routes": [{"causes": ["allocatable-zero"], "channel": "C0NODES"}]})
    assert destination(config, "allocatable-zero", "ml") == Destination("C0NODES")
    # C0NODES may not describe research: the route is passed over
    assert destination(config, "allocatable-zero", "research") == Destination("C0ALERTS")
    # C0ALERTS is not listed: the operator's own channel sees every namespace
    unlisted = load({"channels": {"C0SUPPORT": ["team-b"]}, "alerts": {"channel": "C0ALERTS"}})
    assert destination(unlisted, "exhausted", "research") == Destination("C0ALERTS")
    closed = load({"channels": {"C0ALERTS": ["team-b"]}, "alerts": {"channel": "C0ALERTS"}})
    assert destination(closed, "exhausted", "research") is None
    assert nowhere(closed, "exhausted", "research") == (
        "namespace research may not be posted to alerts.channel C0ALERTS (channels: limits it "
        "to team-b)")
    assert nowhere(load({"routes": [{"causes": ["too-large"], "channel": "C0X"}]}),
                   "exhausted", "research") == "no route takes it and alerts.channel is not set"


def test_routes_and_an_alerts_channel_that_could_never_post() -> None:
    config = load({"channels": {"C0NODES": ["ml"], "C0ALERTS": [], "C0OK": ["*"]},
                   "alerts": {"channel": "C0ALERTS"},
                   "routes": [{"namespaces": ["research"], "channel": "C0NODES"},
                              {"namespaces": ["ml"], "channel": "C0NODES"},
                              {"channel": "C0OK"}, {"channel": "C0UNLISTED"}]})
    assert never_posting(config) == [
        "routes[0] (C0NODES) can never post: channels: limits C0NODES to ml, the route takes "
        "only research",
        "alerts.channel (C0ALERTS) can never post: channels: limits C0ALERTS to no namespace"]
    assert never_posting(ROUTED) == []


def test_a_queued_answer_goes_only_where_a_route_names_queued() -> None:
    catch_all = load({"alerts": {"channel": "C0ALERTS"},
                      "routes": [{"channel": "C0ALL"}]})
    assert destination(catch_all, "queued", "team-a") is None  # waiting in a queue is normal
    assert destination(catch_all, "exhausted", "team-a") == Destination("C0ALL")
    named = load({"alerts": {"channel": "C0ALERTS"},
                  "routes": [{"channel": "C0ALL"},
                             {"causes": ["queued"], "channel": "C0QUEUES"}]})
    assert destination(named, "queued", "team-a") == Destination("C0QUEUES")


def test_a_queued_answer_waiting_past_queued_after_is_routed_like_any_other() -> None:
    config = load({"alerts": {"channel": "C0ALERTS", "queued_after": "2h"}})
    assert config.alerts.queued_after == timedelta(hours=2)
    assert destination(config, "queued", "team-a", timedelta(minutes=119)) is None
    assert destination(config, "queued", "team-a", timedelta(hours=2)) == Destination("C0ALERTS")
    assert load({}).alerts.queued_after is None  # default: never
