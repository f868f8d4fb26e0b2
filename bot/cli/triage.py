"""`gpuwhy triage`, `gpuwhy devices` and `gpuwhy demo`."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bot.answer.render import render_text
from bot.cli.commands import command_help
from bot.cli.options import add_cluster_options, add_db_option, fail
from bot.cli.program import finish
from bot.clusters.sources import LiveSource, SnapshotSource, TriageSource, configured_name
from bot.clusters.telemetry import add_prometheus_option, prometheus_settings, with_prometheus
from bot.config import BotConfig, ConfigError, load_config
from scoring.verdict import Verdict
from triage.errors import ClusterError
from triage.refs import RefError, parse_ref
from triage.snapshot import SnapshotError

if TYPE_CHECKING:
    from bot.store import Store

EXIT_OK, EXIT_USAGE, EXIT_UNREADABLE = 0, 2, 3
CLI_SOURCE = "cli"


def register(subparsers: Any) -> None:
    triage_parser = subparsers.add_parser(
        "triage", help=command_help("triage"),
        description="Answer with one cause word, the next action and the evidence.")
    _add_answer_options(triage_parser)
    _add_store_options(triage_parser)
    triage_parser.set_defaults(func=run_triage)

    devices_parser = subparsers.add_parser(
        "devices", help=command_help("devices"),
        description="The per-device table of the nodes that matter for the answer: the node "
                    "a bound pod runs on, else the nodes it could use, worst first. With "
                    "Prometheus (--prometheus or GPUWHY_PROMETHEUS_URL) it adds DCGM "
                    "exporter's utilisation, memory, temperature, XID errors and holders.")
    _add_answer_options(devices_parser)
    devices_parser.set_defaults(func=run_devices)

    demo_parser = subparsers.add_parser(
        "demo", help=command_help("demo"),
        description="Answer for every pod of the bundled demo cluster and record the answers "
                    "in a new demo store (a temporary SQLite file; --db URL to choose one), "
                    "never the default store.")
    demo_parser.add_argument("--blocks", action="store_true",
                             help="also print the Slack Block Kit JSON of one answer")
    _add_store_options(demo_parser)
    demo_parser.set_defaults(func=run_demo)


def _add_answer_options(parser: argparse.ArgumentParser) -> None:
    """The ref and where the answer comes from: the options `triage` and `devices` share."""
    parser.add_argument("ref", metavar="NS/NAME", help="pod or workload: ns/name, or 'ns name'")
    parser.add_argument("name", nargs="?", help=argparse.SUPPRESS)
    add_prometheus_option(parser)
    add_source_options(parser)


def add_source_options(parser: argparse.ArgumentParser) -> None:
    """Where an answer reads the cluster from, and how it is printed."""
    parser.add_argument("--snapshot", metavar="DIR",
                        help="read a dump directory instead of the live cluster")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument("--cluster", metavar="NAME",
                        help="one of the clusters in the GPUWHY_CONFIG file")
    add_cluster_options(parser)


def _add_store_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--no-record", action="store_true",
                        help="do not store the answer as an incident")
    add_db_option(parser)


def _answer(args: argparse.Namespace, command: str) -> tuple[TriageSource, Verdict] | int:
    """The source and the answer for the ref on the command line, or the exit code."""
    text = args.ref if args.name is None else f"{args.ref} {args.name}"
    try:
        ref = parse_ref(text)
    except RefError as exc:
        return fail(str(exc).replace("/gpuwhy", f"gpuwhy {command}"), EXIT_USAGE)
    try:
        config = load_config()
    except ConfigError as exc:
        return fail(str(exc), EXIT_USAGE)
    try:
        cluster = configured_cluster(args, config)
        source = with_prometheus(source_from(args, config, cluster, ref.namespace),
                                 prometheus_settings(config, args.prometheus, cluster=cluster))
    except UsageError as exc:
        return fail(str(exc), EXIT_USAGE)
    except (SnapshotError, ClusterError) as exc:
        return fail(str(exc), EXIT_UNREADABLE)
    try:
        return source, source.triage(ref)
    except (SnapshotError, ClusterError) as exc:
        return fail(str(exc), EXIT_UNREADABLE)


def run_triage(args: argparse.Namespace) -> int:
    answered = _answer(args, "triage")
    if isinstance(answered, int):
        return answered
    source, verdict = answered
    if args.format == "json":
        print(json.dumps(verdict.to_dict(), indent=2, ensure_ascii=False))
    else:
        print(render_text(verdict), end="")
    if not args.no_record:
        store = _record(args.db, [verdict], source.cluster)
        if store is not None:
            store.close()
    return finish(args, EXIT_OK)


def run_devices(args: argparse.Namespace) -> int:
    from bot.answer.devices import devices_json, devices_terminal  # `gpuwhy triage` does without

    answered = _answer(args, "devices")
    if isinstance(answered, int):
        return answered
    _, verdict = answered
    if args.format == "json":
        print(json.dumps(devices_json(verdict), indent=2, ensure_ascii=False))
    else:
        print(devices_terminal(verdict, datetime.now(UTC)))
    return finish(args, EXIT_OK)


class UsageError(ValueError):
    """Options that do not go together; the message says which."""


def configured_cluster(args: argparse.Namespace, config: BotConfig) -> str | None:
    """The entry of ``clusters`` to read: --cluster, else (like kubectl's current context)
    ``default_cluster`` unless --snapshot, --kubeconfig or --context say where to read."""
    if args.cluster:
        if args.snapshot or args.kubeconfig or args.context:
            raise UsageError("--cluster names where to read from: drop --snapshot, "
                             "--kubeconfig and --context")
        if not config.clusters:
            raise UsageError(f"--cluster {args.cluster}: no clusters are configured "
                             "(clusters in the GPUWHY_CONFIG file)")
        return str(args.cluster)
    if not config.clusters or args.snapshot or args.kubeconfig or args.context:
        return None
    return config.default_cluster or next(iter(config.clusters))


def source_from(args: argparse.Namespace, config: BotConfig, cluster: str | None,
                namespace: str | None = None) -> TriageSource:
    """The source the options name (``cluster``: a configured one, see
    ``configured_cluster``); a dump read for one ``namespace`` keeps the other namespaces'
    pods slim."""
    if cluster is not None:
        from bot.clusters.fleet import (  # only a configured cluster needs a fleet
            UnknownClusterError,
            build_fleet,
        )

        try:
            return build_fleet(config, watch=False, only=cluster, page_size=args.page_size,
                               timeout=args.request_timeout, one_shot=True).source()
        except UnknownClusterError as exc:
            raise UsageError(str(exc)) from exc
    if args.snapshot:
        return SnapshotSource(args.snapshot, config.triage, namespace=namespace)
    return LiveSource(kubeconfig=args.kubeconfig, context=args.context, config=config.triage,
                      cluster=configured_name(config), page_size=args.page_size,
                      timeout=args.request_timeout, one_shot=True)


def demo_directory() -> Path:
    return Path(str(resources.files("examples") / "seven-states"))


def run_demo(args: argparse.Namespace) -> int:
    # the store, the digest and Slack's blocks only for the commands that use them
    from bot.answer.blocks import verdict_blocks
    from bot.digest import digest_text, load_digest, load_timezone, week_start

    try:
        tz = load_timezone(load_config().digest.timezone)
    except ConfigError as exc:
        return fail(str(exc), EXIT_USAGE)
    directory = demo_directory()
    source = SnapshotSource(directory)
    expected = json.loads((directory / "expected.json").read_text(encoding="utf-8"))
    print(f"gpuwhy demo: the recorded cluster '{source.cluster}' ({directory})\n")
    verdicts = []
    for text in expected:
        verdict = source.triage(parse_ref(text))
        verdicts.append(verdict)
        print(render_text(verdict))
    if args.blocks:
        print(json.dumps(verdict_blocks(verdicts[0]), indent=2, ensure_ascii=False))
    if not args.no_record:
        # Never the user's own store: the demo's answers would mix into the real digest.
        store = _record(args.db or demo_store_url(), verdicts, source.cluster)
        if store is not None:
            now = datetime.now(UTC)
            where = store.url if args.db else f"a new demo store, {store.url}"
            print(f"Recorded {len(verdicts)} answers in {where}; this week so far:\n")
            print(digest_text(load_digest(store, week_start(now, tz), tz)).rstrip("\n"))
            store.close()
    return EXIT_OK


def demo_store_url() -> str:
    """A fresh SQLite file in a new temporary directory, left for a look afterwards."""
    return f"sqlite:///{Path(tempfile.mkdtemp(prefix='gpuwhy-demo-')) / 'demo.db'}"


def _record(db: str | None, verdicts: list[Verdict], cluster: str) -> Store | None:
    """Store the answers; a store failure costs the record, never the answer."""
    from bot.store import RecordingStore, Store, StoreError, database_url

    try:
        store = Store(database_url(db))
        store.upgrade()
    except StoreError as exc:
        print(f"gpuwhy: not recorded: {exc}", file=sys.stderr)
        return None
    recorder = RecordingStore(store)
    for verdict in verdicts:
        recorder.record(verdict, cluster=cluster, asked_by="cli", source=CLI_SOURCE)
    if not recorder.flush():
        print("gpuwhy: not recorded: the incident store refused the write", file=sys.stderr)
        return None
    return store


