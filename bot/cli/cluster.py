"""`gpuwhy snapshot` (support bundle) and `gpuwhy check` (pre-flight a manifest), plus the
``--kubeconfig`` / ``--context`` options every live-cluster command shares."""

from __future__ import annotations

import argparse
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import Any

from kubernetes.client import ApiClient

from bot.answer.render import render_text
from bot.cli.bundle import write_bundle
from bot.cli.commands import command_help
from bot.cli.options import add_cluster_options, fail
from bot.config import ConfigError, load_config
from scoring.objects import K8sObject
from triage.classify import triage
from triage.classify.checks.queue_quota import preview_admission
from triage.classify.checks.scheduler import DEFAULT_SCHEDULER, scheduler_serves
from triage.cluster import (
    AdmissionRejected,
    ManifestError,
    ManifestPod,
    dry_run_pod,
    kubeconfig_namespace,
    load_api_client,
    missing_claims,
    preflight_snapshot,
    read_bundle,
    read_manifest,
)
from triage.cluster.manifest import with_flavor
from triage.config import TriageConfig
from triage.errors import ClusterError
from triage.pods import gpu_requests, merge_pods
from triage.refs import PodRef
from triage.snapshot import DUMP_FILES, Snapshot
from triage.vocabulary import CAUSE_INFO, Cause

EXIT_OK, EXIT_NO, EXIT_USAGE, EXIT_UNREADABLE = 0, 1, 2, 3
# In a pre-flight nobody has scheduled the pod yet: "no scheduler spoke" means "fits".
_WOULD_SCHEDULE = frozenset({Cause.SCHEDULED, Cause.SCHEDULER_UNAVAILABLE})


def api_client_from(args: argparse.Namespace) -> ApiClient:
    return load_api_client(args.kubeconfig, args.context)


def register(subparsers: Any) -> None:
    snapshot = subparsers.add_parser(
        "snapshot", help=command_help("snapshot"),
        description="Write nodes, pods, events, quotas, RuntimeClasses and workloads as "
        f"{', '.join(DUMP_FILES)} (the format `gpuwhy triage --snapshot DIR` reads). Pods: "
        "every non-terminated pod, plus the finished ones of --namespace, or without it the "
        "finished ones that events or workloads in the bundle name. Read only.")
    snapshot.add_argument("directory", metavar="DIR")
    snapshot.add_argument("-n", "--namespace", default="",
                          help="events, quotas, workloads of this namespace only "
                          "(default: every namespace)")
    add_cluster_options(snapshot)
    snapshot.set_defaults(func=run_snapshot)

    check = subparsers.add_parser(
        "check", help=command_help("check"),
        description="Create the manifest's Pod (or its workload's pod template) with a "
        "server-side dry run, so admission runs exactly (quota, RuntimeClass, webhooks) and "
        "nothing is stored; then check it against the nodes as a triage would. Exit 0: "
        "would schedule; 1: would not; 2: bad manifest; 3: cluster unreadable.")
    check.add_argument("-f", "--filename", required=True, metavar="FILE",
                       help="manifest (YAML or JSON; several documents allowed)")
    check.add_argument("-n", "--namespace", default="",
                       help="namespace (default: the manifest's, else the context's)")
    add_cluster_options(check)
    check.set_defaults(func=run_check)


def run_snapshot(args: argparse.Namespace) -> int:
    directory = Path(args.directory)
    if directory.exists() and not directory.is_dir():
        return fail(f"{directory} exists and is not a directory", EXIT_USAGE)
    try:
        snapshot = read_bundle(api_client_from(args), args.namespace, args.page_size,
                               args.request_timeout)
        write_bundle(snapshot, directory)
    except ClusterError as exc:
        return fail(str(exc), EXIT_UNREADABLE)
    except OSError as exc:
        return fail(f"cannot write {directory}: {exc.strerror or exc}", EXIT_USAGE)
    counts = ", ".join(f"{len(getattr(snapshot, attribute))} {attribute}"
                       for attribute in DUMP_FILES.values())
    print(f"gpuwhy snapshot: wrote {directory} ({counts}); env values and config annotations "
          "redacted, readable by you only (see its README.txt)")
    return EXIT_OK


def run_check(args: argparse.Namespace) -> int:
    try:
        manifest_pods = read_manifest(args.filename)
        namespaces = {p.namespace for p in manifest_pods if p.namespace}
        if args.namespace and namespaces - {args.namespace}:
            raise ManifestError(
                f"{args.filename}: names namespace {', '.join(sorted(namespaces))}, "
                f"not {args.namespace}; drop -n or make them agree")
        config = load_config()
    except (ManifestError, ConfigError) as exc:
        return fail(str(exc), EXIT_USAGE)
    try:
        api_client = api_client_from(args)
        fallback = args.namespace or kubeconfig_namespace(args.kubeconfig, args.context)
        results = [_check_one(args, api_client, p, p.namespace or fallback, config.triage)
                   for p in manifest_pods]
    except ClusterError as exc:
        return fail(str(exc), EXIT_UNREADABLE)
    return EXIT_OK if all(results) else EXIT_NO


def _check_one(args: argparse.Namespace, api_client: ApiClient, manifest_pod: ManifestPod,
               namespace: str, config: TriageConfig) -> bool:
    """Print the answer for one pod; True when it would schedule."""
    print(f"{manifest_pod.source} in namespace {namespace} (server dry-run; nothing created)")
    try:
        pod = dry_run_pod(api_client, manifest_pod.pod, namespace, args.request_timeout)
    except AdmissionRejected as exc:
        if exc.cause is None:
            print(f"⛔ rejected at admission — {exc.message}\n")
        else:
            info = CAUSE_INFO[exc.cause]
            print(f"{info.emoji} {exc.cause.value} — admission would reject it: {exc.message}\n"
                  f"Next: {info.next_action}\n")
        return False
    snapshot = preflight_snapshot(api_client, pod, args.page_size, args.request_timeout,
                                  queued=manifest_pod.queue is not None)
    # The dry run names the pod from generateName; the answer speaks of the manifest's name.
    created, wanted = (f"{namespace}/{pod['metadata']['name']}",
                       f"{namespace}/{manifest_pod.source.partition('/')[2]}")
    if manifest_pod.queue is not None:
        # Kueue admits it first: it is queued, or starts in a flavor that may set its nodes
        admitted = _admission(snapshot, manifest_pod, namespace, pod, config)
        if admitted is None:
            return False
        pod = with_flavor(pod, admitted)
        snapshot = replace(snapshot, pods=merge_pods(snapshot.pods, [pod]))
    verdict = triage(snapshot, PodRef(namespace, pod["metadata"]["name"]), config)
    cause = Cause(verdict.cause)
    if cause == Cause.NO_GPU_REQUEST:
        print("✅ would schedule (asks for no GPU)\n")
        return True
    if cause not in _WOULD_SCHEDULE:
        print(f"would not schedule:\n{render_text(verdict).replace(created, wanted)}")
        return False
    if missing := missing_claims(api_client, pod, args.request_timeout):
        claims = ", ".join(f"{namespace}/{name}" for name in missing)
        _would_not(Cause.OTHER_CONSTRAINT, wanted,
                   f"PersistentVolumeClaim {claims} does not exist, and the scheduler does not "
                   "place a pod before its claims do (it says persistentvolumeclaim not "
                   "found). Create the claim or fix claimName.")
        return False
    scheduler = str(pod.get("spec", {}).get("schedulerName") or DEFAULT_SCHEDULER)
    if not scheduler_serves(snapshot.rows, scheduler):
        _would_not(Cause.SCHEDULER_UNAVAILABLE, wanted,
                   f"spec.schedulerName {scheduler}: no pod in the cluster was bound by a "
                   "scheduler of that name, so nothing would schedule this one. Start that "
                   f"scheduler, or fix schedulerName (GPU-wise: {verdict.node_summary}).")
        return False
    print(f"✅ would schedule — {verdict.node_summary or 'admitted'}\n")
    return True


def _admission(snapshot: Snapshot, manifest_pod: ManifestPod, namespace: str,
               pod: K8sObject, config: TriageConfig) -> K8sObject | None:
    """Print whether Kueue would admit the manifest's workload now; the flavor it would start
    in (an empty one when it asks for no GPU), or None when it would be queued."""
    index = snapshot.queue_index
    gpus = {r: n for r, n in gpu_requests(pod.get("spec") or {}, config).items() if n > 0}
    queue = manifest_pod.queue or ""
    if not gpus:
        return {}
    resource, per_pod = next(iter(gpus.items()))
    flavor, why = preview_admission(index, manifest_pod.source.replace("/", " ", 1),
                                    namespace, queue, resource,
                                    Decimal(per_pod * manifest_pod.count))
    if flavor is None:
        info = CAUSE_INFO[Cause.QUEUED]
        print(f"{info.emoji} would be queued in LocalQueue {namespace}/{queue}: {why}\n")
        return None
    print(f"would be admitted (flavor {flavor}): {why}")
    return index.get("ResourceFlavor", "", flavor) or {}


def _would_not(cause: Cause, ref: str, action: str) -> None:
    print(f"would not schedule:\n{CAUSE_INFO[cause].emoji} {cause.value} — {ref}\n"
          f"Next: {action}\n")

