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
from pathlib import Path
from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError

from bot.alerts.routes import never_posting
from bot.cli.commands import command_help
from bot.cli.options import add_cluster_options, add_db_option
from bot.config import BotConfig, ClusterSource, ConfigError, load_config
from bot.slack.app import slack_client
from bot.slack.quiet import quiet_client, slack_failure
from bot.store import Store, StoreError, database_url
from triage import queues
from triage.cluster.kubeconfig import load_api_client
from triage.cluster.reader import ClusterReader, UnknownVersion
from triage.cluster.resources import (
    CLAIM_TEMPLATES,
    DEVICE_CLASSES,
    DEVICE_TAINT_RULES,
    EVENTS,
    JOB_RESOURCES,
    NODES,
    PODS,
    QUOTAS,
    RESOURCE_CLAIMS,
    RESOURCE_SLICES,
    RUNTIME_CLASSES,
    WORKLOADS,
    Resource,
    gang_resources,
    kueue_resource,
)
from triage.errors import ClusterError

EXIT_OK, EXIT_FAILED = 0, 1
# The bot token's scopes, as deploy/slack-app-manifest.yaml asks for them.
BOT_SCOPES = ("commands", "chat:write", "channels:history", "groups:history")
# Everything gpuwhy reads, with every verb the bot uses on it (the watch cache watches nodes
# and pods; the ClusterRole in deploy/base grants the three verbs on each).
READ_RESOURCES = (NODES, PODS, EVENTS, QUOTAS, RUNTIME_CLASSES, *WORKLOADS.values(),
                  DEVICE_CLASSES, RESOURCE_CLAIMS, CLAIM_TEMPLATES, RESOURCE_SLICES,
                  DEVICE_TAINT_RULES, *gang_resources("v1alpha2"))
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
    config = _config(env)
    results = [check_config(env), check_slack(env)]
    if config is not None and config.alerts_enabled:
        results.append(check_alerts(config))
    for name, where in _clusters(args, config):
        results += _check_cluster(args, name, where)
    results.append(check_store(args.db, env))
    for result in results:
        print(result.line())
    failed = [result.check for result in results if not result.ok]
    if failed:
        print(f"gpuwhy doctor: {len(failed)} of {len(results)} checks failed "
              f"({', '.join(dict.fromkeys(failed))})")
        return EXIT_FAILED
    print(f"gpuwhy doctor: all {len(results)} checks passed")
    return EXIT_OK


def _config(env: Mapping[str, str]) -> BotConfig | None:
    try:
        return load_config(env)
    except ConfigError:
        return None  # check_config says why


def check_config(env: Mapping[str, str]) -> Result:
    source = env.get("GPUWHY_CONFIG") or "no GPUWHY_CONFIG file, the environment only"
    try:
        config = load_config(env)
    except ConfigError as exc:
        return Result("config", False, str(exc))
    if config.clusters:
        default = config.default_cluster or next(iter(config.clusters))
        return Result("config", True, f"{source}: valid (clusters "
                      f"{', '.join(config.clusters)}; default {default})")
    return Result("config", True, f"{source}: valid (cluster {config.cluster})")


def check_alerts(config: BotConfig) -> Result:
    """Every route and the alerts channel can post something: ``channels`` does not limit
    their channel to namespaces they never take."""
    if problems := never_posting(config):
        return Result("alerts", False, "; ".join(problems))
    where = [f"alerts.channel {config.alerts.channel}"] if config.alerts.channel else []
    where += [f"{len(config.routes)} route{'s' if len(config.routes) != 1 else ''}"] \
        if config.routes else []
    return Result("alerts", True, f"{' and '.join(where)} can post")


def check_slack(env: Mapping[str, str]) -> Result:
    if not env.get("SLACK_BOT_TOKEN"):
        return Result("slack", False, "SLACK_BOT_TOKEN is not set")
    bot = quiet_client(env.get("SLACK_BOT_TOKEN"), slack_client(env).base_url)
    try:
        identity = bot.auth_test()
    except (SlackApiError, SlackClientError, OSError) as exc:
        return Result("slack", False, f"the bot token: {slack_failure(bot.base_url, exc)}")
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
        app = quiet_client(app_token, bot.base_url)
        try:
            app.apps_connections_open(app_token=app_token)
        except (SlackApiError, SlackClientError, OSError) as exc:
            return False, (f"Socket Mode: the app token: {slack_failure(app.base_url, exc)} "
                           "(it needs the connections:write scope)")
        return True, "Socket Mode: the app token opens a connection"
    if env.get("SLACK_SIGNING_SECRET"):
        return True, "HTTP mode: SLACK_SIGNING_SECRET is set"
    return None


def _header(headers: Mapping[str, Any], name: str) -> str | None:
    for key, value in headers.items():
        if key.lower() == name:
            return str(value[0] if isinstance(value, list) else value)
    return None


def _clusters(args: argparse.Namespace,
              config: BotConfig | None) -> list[tuple[str | None, ClusterSource | None]]:
    """What to check: every configured cluster, or (--kubeconfig / --context, or none
    configured) the one kubectl would read."""
    if config is None or not config.clusters or args.kubeconfig or args.context:
        return [(None, None)]
    return list(config.clusters.items())


def _check_cluster(args: argparse.Namespace, name: str | None,
                   where: ClusterSource | None) -> list[Result]:
    """The cluster line and the access line of one cluster (each naming it, when named)."""
    named = "" if name is None else f"{name}: "
    if where is not None and where.snapshot is not None:
        readable = Path(where.snapshot).is_dir()
        return [Result("cluster", readable, f"{named}dump directory {where.snapshot}"
                       f"{'' if readable else ': not a directory'}")]
    try:
        api_client = load_api_client(args.kubeconfig, args.context) if where is None else \
            load_api_client(where.kubeconfig, where.context, in_cluster=where.in_cluster)
        reader = ClusterReader(api_client, args.request_timeout)
        version = reader.server_version()
    except ClusterError as exc:
        return [Result("cluster", False, f"{named}{exc}"),
                Result("access", False, f"{named}not checked: the cluster did not answer")]
    access = check_access(reader)
    return [Result("cluster", True, f"{named}{reader.server}: Kubernetes {version}"),
            Result("access", access.ok, f"{named}{access.detail}")]


def kueue_reads(version: str) -> tuple[Resource, ...]:
    """Kueue's kinds gpuwhy reads (a bundle reads all six), in the version it reads."""
    return tuple(kueue_resource(kind, version) for kind in queues.QUEUE_KINDS)


def job_reads(reader: ClusterReader) -> tuple[Resource, ...]:
    """The JobSets and RayJobs gpuwhy reads, where the cluster serves them (in the version
    gpuwhy reads: a cluster serving another one is never asked about them)."""
    served = []
    for resource in JOB_RESOURCES.values():
        try:
            if reader.served_version(resource.group, (resource.api_version.partition("/")[2],)):
                served.append(resource)
        except UnknownVersion:
            continue
    return tuple(served)


def check_access(reader: ClusterReader) -> Result:
    try:
        # Kueue's objects only where the cluster serves the group: elsewhere nothing reads them
        version = reader.served_version(queues.GROUP, queues.KNOWN_VERSIONS)
        resources = (*READ_RESOURCES, *(kueue_reads(version) if version else ()),
                     *job_reads(reader))
        missing = [f"{verb} {resource.display}" for resource in resources
                   for verb in READ_VERBS if not reader.access_allowed(verb, resource)]
    except ClusterError as exc:
        return Result("access", False, f"cannot review gpuwhy's access: {exc}")
    total = len(resources) * len(READ_VERBS)
    if missing:
        return Result("access", False, f"{len(missing)} of {total} reads are not allowed: "
                      f"{', '.join(missing)} (deploy/base/rbac.yaml grants them all)")
    return Result("access", True, f"all {total} reads allowed ({', '.join(READ_VERBS)} on "
                  f"{len(resources)} resources)")


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
