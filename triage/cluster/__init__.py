"""Reading a live cluster: the only package of triage that talks to the Kubernetes API.

- ``kubeconfig``: which cluster and credentials (kubectl's rules, else the service account);
- ``resources``: the resources gpuwhy reads;
- ``reader``: raw requests with a timeout, failures as one sentence;
- ``errors``: what reading can raise besides ClusterError;
- ``read``: what one triage needs, read cold, and support bundles;
- ``watch``: the watch cache of ``gpuwhy serve`` (its lists and watches; the stores and the
  snapshot it keeps are ``triage.cache``);
- ``manifest``: pre-flight of a manifest (``gpuwhy check``).

The names below are re-exported so ``from triage.cluster import ...`` keeps working; they
are imported on first use, so importing ``triage.cluster.limits`` (the CLI's options) does
not load the kubernetes client.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from triage.cluster.errors import AdmissionRejected
    from triage.cluster.kubeconfig import (
        Kubeconfig,
        find_kubeconfig,
        kubeconfig_namespace,
        load_api_client,
        server_url,
    )
    from triage.cluster.limits import DEFAULT_PAGE_SIZE, DEFAULT_TIMEOUT
    from triage.cluster.manifest import (
        ManifestError,
        ManifestPod,
        dry_run_pod,
        missing_claims,
        preflight_snapshot,
        read_manifest,
    )
    from triage.cluster.read import answer_cold, read_bundle, read_cluster, read_snapshot
    from triage.cluster.reader import ClusterReader
    from triage.cluster.refs import read_ref_objects
    from triage.cluster.resources import (
        EVENTS,
        NODES,
        PODS,
        QUOTAS,
        RUNTIME_CLASSES,
        WORKLOADS,
        Resource,
    )
    from triage.cluster.watch import WatchCache

__all__ = [
    "DEFAULT_PAGE_SIZE", "DEFAULT_TIMEOUT", "EVENTS", "NODES", "PODS", "QUOTAS",
    "RUNTIME_CLASSES", "WORKLOADS", "AdmissionRejected", "ClusterReader",
    "Kubeconfig", "ManifestError", "ManifestPod", "Resource", "WatchCache", "answer_cold",
    "dry_run_pod",
    "find_kubeconfig", "kubeconfig_namespace", "load_api_client", "missing_claims",
    "preflight_snapshot",
    "read_bundle", "read_cluster", "read_manifest", "read_ref_objects", "read_snapshot",
    "server_url",
]

_HOMES = {
    "AdmissionRejected": "errors", "DEFAULT_PAGE_SIZE": "limits", "DEFAULT_TIMEOUT": "limits",
    "Kubeconfig": "kubeconfig", "find_kubeconfig": "kubeconfig",
    "kubeconfig_namespace": "kubeconfig", "load_api_client": "kubeconfig",
    "server_url": "kubeconfig", "ManifestError": "manifest", "ManifestPod": "manifest",
    "dry_run_pod": "manifest", "missing_claims": "manifest", "preflight_snapshot": "manifest",
    "read_manifest": "manifest",
    "answer_cold": "read", "read_bundle": "read", "read_cluster": "read",
    "read_ref_objects": "read",
    "read_snapshot": "read",
    "EVENTS": "resources", "NODES": "resources", "PODS": "resources", "QUOTAS": "resources",
    "RUNTIME_CLASSES": "resources", "WORKLOADS": "resources", "ClusterReader": "reader",
    "Resource": "resources", "WatchCache": "watch",
}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)
