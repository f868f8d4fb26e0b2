"""`gpuwhy digest`, `gpuwhy stats` and `gpuwhy db upgrade|current|prune`.

Exit codes: 0 ok, 1 the schema is not at the newest migration (`db current`), 2 usage (bad
--weeks, --older-than, --db, config or missing token), 4 the store or Slack failed. Every
failure is one line on stderr.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bot.cli.commands import command_help
from bot.cli.numbers import whole_number
from bot.cli.options import add_db_option
from bot.config import ConfigError, load_config
from bot.digest import (
    DEFAULT_STATS_WEEKS,
    EVERYTHING,
    DigestError,
    PostError,
    Scope,
    add_weeks,
    digest_client,
    digest_text,
    last_full_week,
    load_digest,
    load_timezone,
    parse_weeks,
    post_once,
    slack_post,
    stats_text,
)
from bot.digest.chart import EXTRA_MISSING, charts_installed, digest_chart, slack_chart
from bot.store import Store, StoreError, StoreURLError, database_url

EXIT_OK, EXIT_BEHIND, EXIT_USAGE, EXIT_FAILED = 0, 1, 2, 4
CONFIGURED_CHANNEL = ""  # `--post` given without a channel
MAX_PRUNE_DAYS = 36_500


def register(subparsers: Any) -> None:
    digest = subparsers.add_parser(
        "digest", help=command_help("digest"),
        description="Digest of the last full week(s), Monday 00:00 in the configured timezone.")
    digest.add_argument("--weeks", default="1", metavar="N",
                        help="cover the last N full weeks (default 1), against the N before")
    digest.add_argument("--chart", metavar="PNG",
                        help="also write the cause counts of the last 8 weeks as a PNG chart "
                             "(needs the extra: pip install 'gpuwhy[charts]')")
    digest.add_argument("--post", metavar="CHANNEL", nargs="?", const=CONFIGURED_CHANNEL,
                        help="post to this Slack channel (SLACK_BOT_TOKEN), once per week; "
                             "without CHANNEL, to the config's digest.channel")
    add_scope_option(digest)
    add_db_option(digest)
    digest.set_defaults(func=run_digest)

    stats = subparsers.add_parser(
        "stats", help=command_help("stats"))
    stats.add_argument("--weeks", default=str(DEFAULT_STATS_WEEKS), metavar="N",
                       help=f"the last N weeks, this one included (default {DEFAULT_STATS_WEEKS})")
    add_scope_option(stats)
    add_db_option(stats)
    stats.set_defaults(func=run_stats)

    db = subparsers.add_parser(
        "db", help=command_help("db"))
    db_commands = db.add_subparsers(dest="db_command", required=True, metavar="COMMAND")
    upgrade = db_commands.add_parser("upgrade", help="migrate the schema to the newest version")
    add_db_option(upgrade)
    upgrade.set_defaults(func=run_upgrade)
    current = db_commands.add_parser(
        "current", help="the schema's migration and the newest one (exit 1 when they differ)")
    add_db_option(current)
    current.set_defaults(func=run_current)
    prune = db_commands.add_parser(
        "prune", help="delete incidents and claims older than DAYS",
        description="Delete incidents, Slack event claims and digest claims older than DAYS "
                    "days. Digest claims of the last two weeks are kept whatever DAYS says, "
                    "so no digest is posted twice. Pruned incidents leave the digest and stats: "
                    "prune with more days than the digest looks back.")
    prune.add_argument("--older-than", required=True, metavar="DAYS",
                       help=f"age in whole days, 1 to {MAX_PRUNE_DAYS}")
    prune.add_argument("--dry-run", action="store_true",
                       help="only count what would be deleted")
    add_db_option(prune)
    prune.set_defaults(func=run_prune)


def add_scope_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cluster", metavar="NAME",
                        help="only the answers about this cluster (as incidents record it: "
                             "the name in clusters, else the cluster option or API URL)")


def scope_of(args: argparse.Namespace) -> Scope:
    if not args.cluster:
        return EVERYTHING
    return Scope(cluster=str(args.cluster), label=f"cluster {args.cluster}")


def _fail(command: str, message: object, code: int) -> int:
    print(f"gpuwhy {command}: {message}", file=sys.stderr)
    return code


def _with_store(command: str, db: str | None, work: Callable[[Store], int], *,
                upgrade: bool = True) -> int:
    """Run ``work`` on the store, migrated to the newest schema first unless ``upgrade`` is
    false."""
    try:
        store = Store(database_url(db))
    except StoreError as exc:
        return _fail(command, exc, EXIT_USAGE if isinstance(exc, StoreURLError) else EXIT_FAILED)
    try:
        if upgrade:
            store.upgrade()
        return work(store)
    except StoreError as exc:
        return _fail(command, exc, EXIT_FAILED)
    finally:
        store.close()


def run_upgrade(args: argparse.Namespace) -> int:
    def report(store: Store) -> int:
        print(f"database {store.url} is up to date")
        return EXIT_OK

    return _with_store("db upgrade", args.db, report)


def run_current(args: argparse.Namespace) -> int:
    def show(store: Store) -> int:
        revisions = store.revisions()
        if revisions.at_head:
            print(f"database {store.url} is at {revisions.current} (the newest)")
            return EXIT_OK
        print(f"database {store.url} is at {revisions.current or 'no schema yet'}, the newest "
              f"is {revisions.head}: run gpuwhy db upgrade")
        return EXIT_BEHIND

    return _with_store("db current", args.db, show, upgrade=False)


def run_prune(args: argparse.Namespace) -> int:
    try:
        days = whole_number(args.older_than, "--older-than", 1, MAX_PRUNE_DAYS, " days")
    except ValueError as exc:
        return _fail("db prune", exc, EXIT_USAGE)
    before = datetime.now(UTC) - timedelta(days=days)

    def prune(store: Store) -> int:
        if args.dry_run and not store.revisions().at_head:  # a dry run changes nothing
            return _fail("db prune", f"database {store.url} is not at the newest schema; run "
                         "gpuwhy db upgrade first", EXIT_FAILED)
        pruned = store.prune(before, dry_run=args.dry_run)
        verb = "would delete" if args.dry_run else "deleted"
        print(f"{verb} {pruned.incidents} incidents, {pruned.event_claims} Slack event claims "
              f"and {pruned.digest_claims} digest claims older than "
              f"{before.isoformat(timespec='seconds')} from {store.url}")
        return EXIT_OK

    return _with_store("db prune", args.db, prune, upgrade=not args.dry_run)


def run_stats(args: argparse.Namespace) -> int:
    try:
        weeks = parse_weeks(args.weeks)
        timezone = load_timezone(load_config().digest.timezone).key
    except (DigestError, ConfigError) as exc:
        return _fail("stats", exc, EXIT_USAGE)

    def show(store: Store) -> int:
        print(stats_text(store, weeks, datetime.now(UTC), timezone, scope_of(args)))
        return EXIT_OK

    return _with_store("stats", args.db, show)


def run_digest(args: argparse.Namespace) -> int:
    try:
        weeks = parse_weeks(args.weeks)
        schedule = load_config().digest
        tz = load_timezone(schedule.timezone)
        channel = schedule.channel if args.post == CONFIGURED_CHANNEL else args.post
        if args.post == CONFIGURED_CHANNEL and not channel:
            raise DigestError("--post without a channel posts to the config's digest.channel "
                              "(or GPUWHY_DIGEST_CHANNEL), which is not set")
        client = digest_client() if channel else None
        if args.chart and not charts_installed():
            raise DigestError(EXTRA_MISSING)
    except (DigestError, ConfigError) as exc:
        return _fail("digest", exc, EXIT_USAGE)

    def send(store: Store) -> int:
        start = add_weeks(last_full_week(datetime.now(UTC), tz), 1 - weeks)
        scope = scope_of(args)
        digest = load_digest(store, start, tz, weeks, scope)
        if args.chart:
            try:
                Path(args.chart).write_bytes(digest_chart(store, digest, scope))
            except OSError as exc:
                return _fail("digest", f"cannot write {args.chart}: {exc.strerror or exc}",
                             EXIT_USAGE)
        if client is None or channel is None:
            print(digest_text(digest))
            return EXIT_OK
        try:
            posted = post_once(store, digest, channel, slack_post(client),
                               slack_chart(store, client, scope))
        except PostError as exc:
            return _fail("digest", exc, EXIT_FAILED)
        if posted:
            print(f"posted the digest {digest.key} to {channel}")
        elif digest.total == 0:
            print(f"the digest {digest.key} has no answers: nothing posted to {channel}")
        else:
            print(f"the digest {digest.key} was already posted to {channel}")
        return EXIT_OK

    return _with_store("digest", args.db, send)
