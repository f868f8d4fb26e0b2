"""`gpuwhy doctor`: can this installation work? One line per check, then the verdict.

Checks, in order: the config is valid; Slack accepts the bot token (auth.test), which has the
scopes the app needs, and the mode's credential (the app token opens a Socket Mode connection,
or the signing secret is set); the cluster answers; every verb on every resource gpuwhy reads
is allowed (a SelfSubjectAccessReview each, naming what is missing); the store answers and
is at the newest migration. Exit 0 only when every check passes, else 1.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError

from bot.cli.commands import command_help
from bot.cli.options import add_cluster_options, add_db_option
from bot.config import ConfigError, load_config
from bot.slack.app import slack_client
from bot.store import Store, StoreError, database_url, one_line
from triage.cluster.kubeconfig import load_api_client
from triage.cluster.reader import (
    CLAIM_TEMPLATES,
    DEVICE_CLASSES,
    EVENTS,
    NODES,
    PODS,
    QUOTAS,
    RESOURCE_CLAIMS,
    RESOURCE_SLICES,
    RUNTIME_CLASSES,
    WORKLOADS,
    ClusterReader,
)
from triage.errors import ClusterError

EXIT_OK, EXIT_FAILED = 0, 1
# The bot token's scopes, as deploy/slack-app-manifest.yaml asks for them.
BOT_SCOPES = ("commands", "chat:write", "channels:history", "groups:history")
SLACK_TIMEOUT_S = 10
# Everything gpuwhy reads, with every verb the bot uses on it (the watch cache watches nodes
# and pods; the ClusterRole in deploy/base grants the three verbs on each).
READ_RESOURCES = (NODES, PODS, EVENTS, QUOTAS, RUNTIME_CLASSES, *WORKLOADS.values(),
                  DEVICE_CLASSES, RESOURCE_CLAIMS, CLAIM_TEMPLATES, RESOURCE_SLICES)
READ_VERBS = ("get", "list", "watch")


@dataclass(frozen=True)
class Result:
    check: str
    ok: bool
    detail: str

    def line(self) -> str:
        return f"{'ok  ' if self.ok else 'FAIL'}  {self.check:<8} {self.detail}"


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "doctor", help=command_help("doctor"),
        description="One line per check (config, Slack token and scopes, cluster, RBAC "
                    "access per verb and resource, store and its migration), then the verdict. "
                    "Exit 0 only when every check passes. Run it where the bot runs (in its "
                    "pod: kubectl -n gpuwhy exec deploy/gpuwhy -- gpuwhy doctor).")
    add_cluster_options(parser)
    add_db_option(parser)
    parser.set_defaults(func=run_doctor)


def run_doctor(args: argparse.Namespace) -> int:
    env = os.environ
    results = [check_config(env), check_slack(env)]
    reader = _reader(args, results)
    results.append(check_access(reader) if reader is not None else Result(
        "access", False, "not checked: the cluster did not answer"))
    results.append(check_store(args.db, env))
    for result in results:
        print(result.line())
    failed = [result.check for result in results if not result.ok]
    if failed:
        print(f"gpuwhy doctor: {len(failed)} of {len(results)} checks failed "
              f"({', '.join(failed)})")
        return EXIT_FAILED
    print(f"gpuwhy doctor: all {len(results)} checks passed")
    return EXIT_OK


def check_config(env: Mapping[str, str]) -> Result:
    source = env.get("GPUWHY_CONFIG") or "no GPUWHY_CONFIG file, the environment only"
    try:
        config = load_config(env)
    except ConfigError as exc:
        return Result("config", False, str(exc))
    return Result("config", True, f"{source}: valid (cluster {config.cluster})")


def check_slack(env: Mapping[str, str]) -> Result:
    if not env.get("SLACK_BOT_TOKEN"):
        return Result("slack", False, "SLACK_BOT_TOKEN is not set")
    bot = _quiet(slack_client(env))
    try:
        identity = bot.auth_test()
    except (SlackApiError, SlackClientError, OSError) as exc:
        return Result("slack", False, f"the bot token: {_slack_failure(bot, exc)}")
    granted = {s.strip() for s in (_header(identity.headers, "x-oauth-scopes") or "").split(",")}
    missing = [scope for scope in BOT_SCOPES if scope not in granted]
    if missing:
        return Result("slack", False, f"the bot token lacks the scopes {', '.join(missing)}: "
                      "add them under OAuth & Permissions and reinstall the app")
    mode = _mode(env, bot)
    who = f"{identity.get('user')} in {identity.get('team')}"
    if mode is None:
        return Result("slack", False, f"{who}; neither SLACK_APP_TOKEN (Socket Mode) nor "
                      "SLACK_SIGNING_SECRET (HTTP mode) is set")
    ok, detail = mode
    return Result("slack", ok, f"{who}, scopes {', '.join(BOT_SCOPES)}; {detail}")


def _mode(env: Mapping[str, str], bot: WebClient) -> tuple[bool, str] | None:
    """The serving mode's credential: the app token is tried, the signing secret only set."""
    app_token = env.get("SLACK_APP_TOKEN")
    if app_token:
        app = WebClient(token=app_token, base_url=bot.base_url, timeout=SLACK_TIMEOUT_S,
                        logger=bot.logger, retry_handlers=[])
        try:
            app.apps_connections_open(app_token=app_token)
        except (SlackApiError, SlackClientError, OSError) as exc:
            return False, (f"Socket Mode: the app token: {_slack_failure(app, exc)} (it needs "
                           "the connections:write scope)")
        return True, "Socket Mode: the app token opens a connection"
    if env.get("SLACK_SIGNING_SECRET"):
        return True, "HTTP mode: SLACK_SIGNING_SECRET is set"
    return None


def _quiet(client: WebClient) -> WebClient:
    """The same client without retries and with a short timeout: doctor reports, it waits not."""
    client.retry_handlers.clear()
    client.timeout = SLACK_TIMEOUT_S
    return client


def _slack_failure(client: WebClient, exc: BaseException) -> str:
    if isinstance(exc, SlackApiError):
        return f"Slack answered {exc.response.get('error')}"
    reason = getattr(exc, "reason", exc)
    text = (reason.strerror or "").lower() if isinstance(reason, OSError) else ""
    return f"cannot reach the Slack Web API at {client.base_url}: {text or one_line(exc)}"


def _header(headers: Mapping[str, Any], name: str) -> str | None:
    for key, value in headers.items():
        if key.lower() == name:
            return str(value[0] if isinstance(value, list) else value)
    return None


def _reader(args: argparse.Namespace, results: list[Result]) -> ClusterReader | None:
    """Append the cluster check; the reader for the access check when the cluster answers."""
    try:
        reader = ClusterReader(load_api_client(args.kubeconfig, args.context),
                               args.request_timeout)
        version = reader.server_version()
    except ClusterError as exc:
        results.append(Result("cluster", False, str(exc)))
        return None
    results.append(Result("cluster", True, f"{reader.server}: Kubernetes {version}"))
    return reader


def check_access(reader: ClusterReader) -> Result:
    try:
        missing = [f"{verb} {resource.display}" for resource in READ_RESOURCES
                   for verb in READ_VERBS if not reader.access_allowed(verb, resource)]
    except ClusterError as exc:
        return Result("access", False, f"cannot review gpuwhy's access: {exc}")
    total = len(READ_RESOURCES) * len(READ_VERBS)
    if missing:
        return Result("access", False, f"{len(missing)} of {total} reads are not allowed: "
                      f"{', '.join(missing)} (deploy/base/rbac.yaml grants them all)")
    return Result("access", True, f"all {total} reads allowed ({', '.join(READ_VERBS)} on "
                  f"{len(READ_RESOURCES)} resources)")


def check_store(db: str | None, env: Mapping[str, str]) -> Result:
    try:
        store = Store(database_url(db, env))
    except StoreError as exc:
        return Result("store", False, str(exc))
    try:
        revisions = store.revisions()
    except StoreError as exc:
        return Result("store", False, str(exc))
    finally:
        store.close()
    if not revisions.at_head:
        return Result("store", False, f"{store.url} is at "
                      f"{revisions.current or 'no schema yet'}, the newest is {revisions.head}: "
                      "run gpuwhy db upgrade (gpuwhy serve does at start-up)")
    return Result("store", True, f"{store.url} at {revisions.current} (the newest)")
