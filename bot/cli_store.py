"""`gpuwhy digest`, `gpuwhy stats` and `gpuwhy db upgrade`.

Exit codes: 0 ok, 2 usage (bad --weeks, --db, config or missing token), 4 the store or Slack
failed. Every failure is one line on stderr.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from bot.config import ConfigError, load_config
from bot.digest import (
    DEFAULT_STATS_WEEKS,
    DigestError,
    PostError,
    add_weeks,
    digest_text,
    last_full_week,
    load_digest,
    load_timezone,
    parse_weeks,
    post_once,
    slack_post,
    stats_text,
)
from bot.store import Store, StoreError, StoreURLError, database_url

EXIT_OK, EXIT_USAGE, EXIT_FAILED = 0, 2, 4


def register(subparsers: Any) -> None:
    digest = subparsers.add_parser(
        "digest", help="the weekly digest: causes this week vs the week before",
        description="Digest of the last full week(s), Monday 00:00 in the configured timezone.")
    digest.add_argument("--weeks", default="1", metavar="N",
                        help="cover the last N full weeks (default 1), against the N before")
    digest.add_argument("--post", metavar="CHANNEL",
                        help="post to this Slack channel (SLACK_BOT_TOKEN), once per week")
    add_db_option(digest)
    digest.set_defaults(func=run_digest)

    stats = subparsers.add_parser("stats", help="answers per cause for each recent week")
    stats.add_argument("--weeks", default=str(DEFAULT_STATS_WEEKS), metavar="N",
                       help=f"the last N weeks, this one included (default {DEFAULT_STATS_WEEKS})")
    add_db_option(stats)
    stats.set_defaults(func=run_stats)

    db = subparsers.add_parser("db", help="incident store maintenance")
    db_commands = db.add_subparsers(dest="db_command", required=True, metavar="COMMAND")
    upgrade = db_commands.add_parser("upgrade", help="migrate the schema to the newest version")
    add_db_option(upgrade)
    upgrade.set_defaults(func=run_upgrade)


def add_db_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", metavar="URL",
                        help="SQLAlchemy URL (default: GPUWHY_DATABASE_URL, else database_url "
                             "in the GPUWHY_CONFIG file, else a SQLite file in the user data "
                             "directory)")


def _fail(command: str, message: object, code: int) -> int:
    print(f"gpuwhy {command}: {message}", file=sys.stderr)
    return code


def _with_store(command: str, db: str | None, work: Callable[[Store], int]) -> int:
    try:
        store = Store(database_url(db))
    except StoreError as exc:
        return _fail(command, exc, EXIT_USAGE if isinstance(exc, StoreURLError) else EXIT_FAILED)
    try:
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


def run_stats(args: argparse.Namespace) -> int:
    try:
        weeks = parse_weeks(args.weeks)
        timezone = load_timezone(load_config().digest.timezone).key
    except (DigestError, ConfigError) as exc:
        return _fail("stats", exc, EXIT_USAGE)

    def show(store: Store) -> int:
        print(stats_text(store, weeks, datetime.now(UTC), timezone))
        return EXIT_OK

    return _with_store("stats", args.db, show)


def run_digest(args: argparse.Namespace) -> int:
    try:
        weeks = parse_weeks(args.weeks)
        tz = load_timezone(load_config().digest.timezone)
        post = slack_post() if args.post else None
    except (DigestError, ConfigError) as exc:
        return _fail("digest", exc, EXIT_USAGE)

    def send(store: Store) -> int:
        start = add_weeks(last_full_week(datetime.now(UTC), tz), 1 - weeks)
        digest = load_digest(store, start, tz, weeks)
        if post is None:
            print(digest_text(digest))
            return EXIT_OK
        try:
            posted = post_once(store, digest, args.post, post)
        except PostError as exc:
            return _fail("digest", exc, EXIT_FAILED)
        if posted:
            print(f"posted the digest {digest.key} to {args.post}")
        else:
            print(f"the digest {digest.key} was already posted to {args.post}")
        return EXIT_OK

    return _with_store("digest", args.db, send)
