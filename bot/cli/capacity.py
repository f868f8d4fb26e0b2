"""`gpuwhy capacity` (the cluster's GPUs by pool and product) and `gpuwhy where` (could a pod
asking N GPUs run now, and where)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import Any

from bot.answer.capacity import capacity_text, where_text
from bot.cli.commands import command_help
from bot.cli.options import fail
from bot.cli.program import finish
from bot.cli.triage import (
    EXIT_OK,
    EXIT_UNREADABLE,
    EXIT_USAGE,
    UsageError,
    add_source_options,
    configured_cluster,
    source_from,
)
from bot.clusters.telemetry import add_prometheus_option, prometheus_settings, with_idle
from bot.config import BotConfig, ConfigError, load_config
from scoring.verdict import Verdict
from triage.classify.capacity import CapacityView, capacity_view
from triage.classify.where import (
    WhereAnswer,
    WhereAsk,
    WhereError,
    gpu_resource_names,
    parse_selector,
    parse_toleration,
    where,
)
from triage.errors import ClusterError
from triage.snapshot import Snapshot, SnapshotError

EXIT_NO = 1  # where: nothing fits now
_NO_VERDICT = Verdict(ref="", cause="", action="")


def register(subparsers: Any) -> None:
    capacity = subparsers.add_parser(
        "capacity", help=command_help("capacity"),
        description="The cluster's GPUs grouped by resource, pool label (triage.pool_labels) "
                    "and GPU product label; HAMi nodes by card, DRA devices by DeviceClass: "
                    "capacity, allocatable, held and free, the largest free block on one "
                    "node, broken nodes and the GPUs they take out, the top holders, taints.")
    capacity.add_argument("only", nargs="?", metavar="RESOURCE|POOL",
                          help="only the groups of this resource, pool or product")
    add_prometheus_option(capacity)  # then: the held GPUs idle all of the last hour
    add_source_options(capacity)
    capacity.set_defaults(func=run_capacity)

    where_parser = subparsers.add_parser(
        "where", help=command_help("where"),
        description="Could a pod asking N GPUs on one node run now, where, and if not what "
                    "would have to happen. The would-be pod runs through the same checks as "
                    "a triage; selector, tolerations and scheduler are what you give, never "
                    "guessed. Exit 0: it fits now; 1: it does not.")
    where_parser.add_argument("count", metavar="N", type=_count, help="GPUs on one node")
    where_parser.add_argument("resource", nargs="?", metavar="RESOURCE",
                              help="an extended GPU resource or a DeviceClass (default: the "
                                   "one with the most GPUs here)")
    where_parser.add_argument("-n", "--ns", "--namespace", dest="namespace", default="default",
                              help="the pod's namespace (default: default)")
    where_parser.add_argument("--selector", default="", metavar="K=V[,K=V]",
                              help="the pod's nodeSelector")
    where_parser.add_argument("--toleration", action="append", default=[],
                              metavar="KEY[=VALUE][:EFFECT]", help="a toleration (repeatable)")
    where_parser.add_argument("--scheduler", default="default-scheduler", metavar="NAME",
                              help="spec.schedulerName (hami-scheduler for HAMi's fit)")
    add_source_options(where_parser)
    where_parser.set_defaults(func=run_where)


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of GPUs") from None
    if not 1 <= value <= 1024:
        raise argparse.ArgumentTypeError(f"{text!r} must be from 1 to 1024")
    return value


@dataclass(frozen=True)
class _Read:
    config: BotConfig
    cluster: str | None  # the configured cluster read, if one was
    snapshot: Snapshot


def _cluster_snapshot(args: argparse.Namespace) -> _Read | int:
    try:
        config = load_config()
    except ConfigError as exc:
        return fail(str(exc), EXIT_USAGE)
    try:
        cluster = configured_cluster(args, config)
        return _Read(config, cluster, source_from(args, config, cluster).cluster_snapshot())
    except UsageError as exc:
        return fail(str(exc), EXIT_USAGE)
    except (SnapshotError, ClusterError) as exc:
        return fail(str(exc), EXIT_UNREADABLE)


def selected_view(snapshot: Snapshot, config: BotConfig, only: str | None) -> CapacityView:
    """The view, or the groups of one resource / pool / product; UsageError naming the
    known ones when none matches."""
    view = capacity_view(snapshot.rows, config.triage)
    if only is None:
        return view
    chosen = view.only(only)
    if not chosen.groups:
        raise UsageError(f"no GPU group is named {only}; known: "
                         f"{', '.join(view.names()) or 'none'}")
    return chosen


def run_capacity(args: argparse.Namespace) -> int:
    read = _cluster_snapshot(args)
    if isinstance(read, int):
        return read
    try:
        view = selected_view(read.snapshot, read.config, args.only)
    except UsageError as exc:
        return fail(str(exc), EXIT_USAGE)
    view = with_idle(view, read.snapshot, prometheus_settings(
        read.config, args.prometheus, cluster=read.cluster))
    _print(args, view.to_dict, lambda: capacity_text(view))
    return finish(args, EXIT_OK)


def ask_from(args: argparse.Namespace, snapshot: Snapshot, config: BotConfig) -> WhereAsk:
    resource = args.resource
    if resource is None:
        known = gpu_resource_names(snapshot.rows, config.triage)
        if not known:
            raise WhereError("no node here offers a GPU resource or DRA GPU device")
        resource = known[0]
    return WhereAsk(args.count, resource, args.namespace, parse_selector(args.selector),
                    tuple(parse_toleration(t) for t in args.toleration), args.scheduler)


def run_where(args: argparse.Namespace) -> int:
    read = _cluster_snapshot(args)
    if isinstance(read, int):
        return read
    try:
        answer = where(read.snapshot.rows, ask_from(args, read.snapshot, read.config),
                       read.config.triage)
    except WhereError as exc:
        return fail(str(exc), EXIT_USAGE)
    _print(args, lambda: where_json(answer), lambda: where_text(answer))
    return finish(args, EXIT_OK if answer.fits else EXIT_NO)


def where_json(answer: WhereAnswer) -> dict[str, Any]:
    # the verdict by its own to_dict: asdict would deep-copy every node report first
    data = asdict(replace(answer, verdict=_NO_VERDICT))
    data["verdict"] = answer.verdict.to_dict()
    data["cause"] = answer.cause
    return data


def _print(args: argparse.Namespace, as_json: Callable[[], object],
           as_text: Callable[[], str]) -> None:
    if args.format == "json":
        print(json.dumps(as_json(), indent=2, ensure_ascii=False))
    else:
        print(as_text(), end="")

