"""`gpuwhy serve`: the Slack bot. Socket Mode when SLACK_APP_TOKEN is set, else HTTP."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any

from slack_bolt.adapter.socket_mode import SocketModeHandler
from slack_bolt.error import BoltError
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError

from bot.alerts.receiver import PATH as ALERTMANAGER_PATH
from bot.alerts.service import AlertService
from bot.cli.commands import command_help
from bot.cli.options import add_cluster_options, add_db_option, port
from bot.clusters.fleet import Fleet, build_fleet
from bot.clusters.sources import SnapshotSource, WatchSource, configured_name
from bot.clusters.telemetry import add_prometheus_option, prometheus_settings, with_prometheus
from bot.config import BotConfig, ConfigError, load_config
from bot.digest import DigestError
from bot.slack.app import bolt_app, slack_client
from bot.slack.listeners.state import BotState
from bot.slack.quiet import quiet_client, unreachable
from bot.store import Store, StoreError, database_url
from bot.store.journal import IncidentJournal, JournalError, default_journal_path
from bot.web.metrics import READINGS
from bot.web.serve import (
    EVENTS_PATH,
    HEALTH_PATH,
    METRICS_PATH,
    READY_PATH,
    Readiness,
    ReplayGuard,
    SlackEndpoint,
    clusters_up,
    digest_thread,
    http_routes,
    readiness_checks,
    store_check,
    watch_caches,
)
from bot.web.server import HTTPServer
from triage.errors import ClusterError
from triage.snapshot import SnapshotError

EXIT_OK, EXIT_SETUP = 0, 1
STORE_GRACE_S = 5.0  # at SIGTERM, for the store to take what waits (Kubernetes allows 30 s)
DEFAULT_PORT = 3000
log = logging.getLogger("gpuwhy")


class ServeError(Exception):
    """A setup problem; the message is one line for the terminal."""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "serve", help=command_help("serve"),
        description="Answer /gpuwhy in Slack. Socket Mode when SLACK_APP_TOKEN is set, "
                    f"otherwise HTTP on --port ({EVENTS_PATH}, needs SLACK_SIGNING_SECRET). "
                    "SLACK_BOT_TOKEN is always needed; SLACK_API_URL overrides the Web API URL.")
    parser.add_argument("--host", default="0.0.0.0", help="address to listen on (default: all)")
    parser.add_argument("--port", type=port, default=DEFAULT_PORT,
                        help=f"HTTP port for Slack, {HEALTH_PATH}, {READY_PATH} and {METRICS_PATH} "
                             f"(default {DEFAULT_PORT}; 0 picks a free one)")
    parser.add_argument("--snapshot", metavar="DIR",
                        help="answer from a dump directory instead of the live cluster")
    add_prometheus_option(parser)
    add_cluster_options(parser)
    add_db_option(parser)
    parser.set_defaults(func=run_serve)


def run_serve(args: argparse.Namespace) -> int:
    env = os.environ
    stop = threading.Event()
    fleet: Fleet | None = None
    alerts: AlertService | None = None
    try:
        config = load_config(env)
        app_token, secret = _tokens(env)
        store = Store(database_url(args.db, env))
        upgraded = _upgrade(store)
        client = slack_client(env)
        _check_bot_token(client)
        fleet = _fleet(args, config)
        journal_path = Path(config.journal_path) if config.journal_path \
            else default_journal_path(store)
        journal = IncidentJournal(store, journal_path, upgraded=upgraded)
        READINGS.incidents_waiting(lambda: journal.waiting)
        # Answers carry telemetry when Prometheus is configured; readiness and shutdown
        # look at the clusters' own sources.
        state = BotState(config=config, store=store, journal=journal,
                         source=fleet.wrapped(lambda name, source: with_prometheus(
                             source, prometheus_settings(config, args.prometheus,
                                                         cluster=name))))
        app = bolt_app(state, client, signing_secret=secret)
        endpoint = SlackEndpoint(app, secret, ReplayGuard(store), acks=state.acks) \
            if secret and not app_token else None
        readiness = Readiness({**readiness_checks(fleet), "store": store_check(journal)})
        serving = fleet
        READINGS.clusters(lambda: clusters_up(serving))
        READINGS.watch_caches(lambda: watch_caches(serving))
        alerts = AlertService(config, store, client, state, fleet, env, stop) \
            if config.alerts_enabled else None
        server = HTTPServer(args.host, args.port, http_routes(
            slack=endpoint, readiness=readiness,
            alertmanager=None if alerts is None else alerts.receiver))
        handler = SocketModeHandler(app, app_token) if app_token else None
        digest = digest_thread(store, client, config.digest, stop) if config.digest.channel \
            else None
        if handler is not None:
            _connect(handler)
    except (ConfigError, ServeError, SnapshotError, ClusterError, StoreError, JournalError,
            DigestError, BoltError, SlackApiError, SlackClientError, OSError) as exc:
        if fleet is not None:
            fleet.stop()
        print(f"gpuwhy serve: {_one_line(exc)}", file=sys.stderr)
        return EXIT_SETUP
    if digest is not None:
        digest.start()
    if alerts is not None:
        alerts.start()
    signal.signal(signal.SIGTERM, lambda _signum, _frame: stop.set())
    threading.Thread(target=server.serve_forever, name="gpuwhy-http", daemon=True).start()
    mode = "Socket Mode" if handler is not None else f"HTTP, POST {EVENTS_PATH}"
    watching = "" if alerts is None else (
        f"; stuck GPU pods posted after {_duration(config.alerts.pending_after)}, "
        f"POST {ALERTMANAGER_PATH}")
    print(f"gpuwhy serve: {mode}; listening on http://{args.host}:{server.port} "
          f"(GET {HEALTH_PATH}, {READY_PATH}, {METRICS_PATH}); "
          f"cluster{'s' if fleet.several else ''} {', '.join(fleet.names)}{watching}",
          file=sys.stderr, flush=True)
    try:
        stop.wait()
    finally:
        stop.set()  # also after Ctrl-C, so the background threads end
        server.shutdown()
        if handler is not None:
            handler.close()  # type: ignore[no-untyped-call]
        if alerts is not None:
            alerts.close()  # before the journal's last chance: its posts are journaled too
        if digest is not None:
            # A digest being posted (its chart drawn, uploaded) ends before the store closes
            # and the interpreter exits under it.
            digest.join(STORE_GRACE_S)
        # Answers already acked still go out; the journal gets a last chance to store what
        # waits, and keeps on disk what it could not.
        state.close(STORE_GRACE_S)
        fleet.stop()
        store.close()
    return EXIT_OK


def _upgrade(store: Store) -> bool:
    """Migrate the store; a store that is down does not stop serve (answers wait in the
    journal, which migrates it once it is back). A wrong URL failed earlier, in Store()."""
    try:
        store.upgrade()
    except StoreError as exc:
        log.warning("incident store: unavailable at start, answering anyway; incidents wait "
                    "in the journal: %s", exc)
        return False
    return True


def _tokens(env: Mapping[str, str]) -> tuple[str | None, str | None]:
    """SLACK_APP_TOKEN and SLACK_SIGNING_SECRET, after checking the ones the mode needs."""
    if not env.get("SLACK_BOT_TOKEN"):
        raise ServeError("SLACK_BOT_TOKEN is not set; export the bot token (xoxb-...)")
    app_token = env.get("SLACK_APP_TOKEN") or None
    secret = env.get("SLACK_SIGNING_SECRET") or None
    if app_token is None and secret is None:
        raise ServeError("SLACK_SIGNING_SECRET is not set; HTTP mode needs it to verify "
                         "requests (or set SLACK_APP_TOKEN for Socket Mode)")
    return app_token, secret


def _check_bot_token(client: WebClient) -> None:
    """auth.test once, quietly, so a rejected token or an unreachable API is one clear line."""
    try:
        quiet_client(client.token, client.base_url, client.timeout).auth_test()
    except SlackApiError as exc:
        raise ServeError(f"Slack rejected SLACK_BOT_TOKEN ({exc.response.get('error')})") from exc
    except (SlackClientError, OSError) as exc:
        raise ServeError(unreachable(client.base_url, exc)) from exc


def _connect(handler: SocketModeHandler) -> None:
    """Open the Socket Mode connection; a refusal is serve's one line, not a log record too."""
    logger = handler.client.logger
    logger.addFilter(_mute)
    try:
        handler.connect()  # type: ignore[no-untyped-call]
    except SlackApiError as exc:
        raise ServeError(f"Slack rejected SLACK_APP_TOKEN ({exc.response.get('error')}); Socket "
                         "Mode needs an app-level token with connections:write") from exc
    finally:
        logger.removeFilter(_mute)


def _mute(record: logging.LogRecord) -> bool:
    return False


def _fleet(args: argparse.Namespace, config: BotConfig) -> Fleet:
    """The configured clusters, one watch cache each; or the one of --snapshot / --kubeconfig."""
    if args.snapshot:
        return Fleet.single(SnapshotSource(args.snapshot, config.triage))
    if config.clusters and not (args.kubeconfig or args.context):
        return build_fleet(config, watch=True, page_size=args.page_size,
                           timeout=args.request_timeout)
    return Fleet.single(WatchSource(args.kubeconfig, args.context, config.triage,
                                    cluster=configured_name(config), page_size=args.page_size,
                                    timeout=args.request_timeout,
                                    stale_after=config.watch.stale_after_seconds).start())


def _duration(delta: timedelta) -> str:
    seconds = int(delta.total_seconds())
    for unit, size in (("h", 3600), ("m", 60)):
        if seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text or type(exc).__name__
