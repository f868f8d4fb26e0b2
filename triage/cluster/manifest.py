"""Pre-flight (``gpuwhy check``): the pods a manifest would create, dry-run created so
admission runs in full, then triaged like any pod."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from kubernetes.client import ApiClient

from scoring.objects import K8sObject
from triage import queues
from triage.cluster.kueue import TRIAGE_QUEUE_KINDS, list_queues
from triage.cluster.limits import DEFAULT_PAGE_SIZE, DEFAULT_TIMEOUT
from triage.cluster.reader import ClusterReader
from triage.cluster.refs import namespace_policy
from triage.cluster.resources import NODES, NON_TERMINATED, PODS, VOLUME_CLAIMS
from triage.errors import ClusterError
from triage.pods import merge_pods
from triage.snapshot import Snapshot


class ManifestError(ValueError):
    """A manifest gpuwhy cannot check; the message names the file."""


# kind -> where the pod template sits
POD_TEMPLATE_PATHS: dict[str, tuple[str, ...]] = {
    "Deployment": ("spec", "template"),
    "ReplicaSet": ("spec", "template"),
    "StatefulSet": ("spec", "template"),
    "DaemonSet": ("spec", "template"),
    "Job": ("spec", "template"),
    "CronJob": ("spec", "jobTemplate", "spec", "template"),
}


@dataclass(frozen=True)
class ManifestPod:
    source: str  # "Job/finetune"
    namespace: str  # "" when the manifest names none
    pod: K8sObject  # a Pod body ready to create
    queue: str | None = None  # the LocalQueue its label kueue.x-k8s.io/queue-name names
    count: int = 1  # pods that run at once (a Job's parallelism): what Kueue admits together


def read_manifest(path: str | Path) -> list[ManifestPod]:
    """The pods a manifest would create: Pods as they are, workloads' pod templates."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ManifestError(f"{file}: no such file") from None
    except UnicodeDecodeError:
        raise ManifestError(f"{file}: not UTF-8 text") from None
    except OSError as exc:
        raise ManifestError(f"{file}: cannot read: {exc.strerror or exc}") from exc
    try:
        documents = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise ManifestError(f"{file}: not valid YAML{where}") from exc
    pods: list[ManifestPod] = []
    for document in _expand_lists(documents):
        if not isinstance(document, dict):
            raise ManifestError(f"{file}: a document is not a Kubernetes object")
        if (pod := _pod_of(document)) is not None:
            pods.append(pod)
    if not pods:
        raise ManifestError(f"{file}: no Pod and no pod template (Deployment, ReplicaSet, "
                            "StatefulSet, DaemonSet, Job, CronJob) in it")
    return pods


def _expand_lists(documents: Iterable[Any]) -> Iterator[Any]:
    for document in documents:
        if isinstance(document, dict) and document.get("kind") == "List":
            yield from document.get("items") or []
        else:
            yield document


def _pod_of(document: K8sObject) -> ManifestPod | None:
    kind = document.get("kind")
    metadata = document.get("metadata") or {}
    name = str(metadata.get("name") or metadata.get("generateName") or "")
    namespace = str(metadata.get("namespace") or "")
    if kind == "Pod":
        template: Any = document
    elif kind in POD_TEMPLATE_PATHS:
        template = document
        for step in POD_TEMPLATE_PATHS[kind]:
            template = template.get(step) if isinstance(template, dict) else None
    else:
        return None
    where = ".".join(POD_TEMPLATE_PATHS.get(str(kind), ("spec",)))
    if not isinstance(template, dict) or not isinstance(template.get("spec"), dict):
        raise ManifestError(f"{kind}/{name}: no pod {'spec' if kind == 'Pod' else 'template'} "
                            f"at {where}")
    # Always a generated name: a dry-run create of an existing pod's name would be refused
    # (409), and the would-be pod must not replace the running one in the snapshot.
    pod_meta = {k: v for k, v in (template.get("metadata") or {}).items()
                if k not in ("name", "namespace", "resourceVersion", "uid")}
    pod_meta["generateName"] = f"{name.rstrip('-')}-" if name else "check-"
    parallelism = (document.get("spec") or {}).get("parallelism", 1) if kind == "Job" else 1
    return ManifestPod(f"{kind}/{name}", namespace, {
        "apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": template["spec"]},
        queues.queue_name(document),
        parallelism if isinstance(parallelism, int) and parallelism > 0 else 1)


def dry_run_pod(api_client: ApiClient, pod: K8sObject, namespace: str,
                timeout: float = DEFAULT_TIMEOUT) -> K8sObject:
    """The pod as admission would store it (quota, RuntimeClass, webhooks, defaults).

    Raises AdmissionRejected when admission refuses it, ClusterError when the API can't be used.
    """
    reader = ClusterReader(api_client, timeout)
    body = {**pod, "metadata": {**pod.get("metadata", {}), "namespace": namespace}}
    created = reader.create_dry_run(PODS, namespace, body)
    return {"apiVersion": "v1", "kind": "Pod", **created}


def preflight_snapshot(api_client: ApiClient, pod: K8sObject,
                       page_size: int = DEFAULT_PAGE_SIZE,
                       timeout: float = DEFAULT_TIMEOUT, queued: bool = False) -> Snapshot:
    """A Snapshot built like ``read_snapshot``, with the would-be pod in it; with ``queued``
    (the manifest names a LocalQueue), Kueue's objects too."""
    reader = ClusterReader(api_client, timeout)
    namespace = pod["metadata"].get("namespace", "")
    nodes, _ = reader.list_all(NODES, page_size=page_size)
    pods, _ = reader.list_all(PODS, field_selector=NON_TERMINATED, page_size=page_size)
    quotas, runtime_classes = namespace_policy(reader, namespace, page_size)
    kueue = list_queues(reader, TRIAGE_QUEUE_KINDS, page_size) if queued else []
    return Snapshot(nodes=nodes, pods=merge_pods(pods, [pod]), resourcequotas=quotas,
                    runtimeclasses=runtime_classes, queues=kueue, cluster=reader.server)


def with_flavor(pod: K8sObject, flavor: K8sObject | None) -> K8sObject:
    """The pod as Kueue starts it in a flavor: its nodeLabels merged into the nodeSelector,
    its tolerations added."""
    spec = queues.part(flavor, "spec")
    pod_spec = dict(pod.get("spec") or {})
    if labels := queues.part(spec, "nodeLabels"):
        pod_spec["nodeSelector"] = {**(pod_spec.get("nodeSelector") or {}), **labels}
    if tolerations := queues.entries(spec, "tolerations"):
        pod_spec["tolerations"] = [*(pod_spec.get("tolerations") or []), *tolerations]
    return {**pod, "spec": pod_spec}


def missing_claims(api_client: ApiClient, pod: K8sObject,
                   timeout: float = DEFAULT_TIMEOUT) -> list[str]:
    """The PersistentVolumeClaims the pod mounts that do not exist (the scheduler waits on them,
    "persistentvolumeclaim \"x\" not found"). One GET per claim; a claim gpuwhy may not read
    is not reported missing."""
    reader = ClusterReader(api_client, timeout)
    namespace = pod["metadata"].get("namespace", "")
    names = [str(claim["claimName"]) for volume in pod.get("spec", {}).get("volumes") or []
             if (claim := volume.get("persistentVolumeClaim") or {}).get("claimName")]
    missing = []
    for name in dict.fromkeys(names):
        try:
            if reader.get(VOLUME_CLAIMS, namespace, name) is None:
                missing.append(name)
        except ClusterError:
            continue
    return missing
