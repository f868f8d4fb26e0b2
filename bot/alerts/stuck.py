"""Which pods are stuck: pure functions of the pods (as the watch cache or a dump holds them),
the time now and the threshold. No I/O, no clock.

A pod is stuck when it asks for GPUs (an extended resource, or a DRA claim) and either has
had no node for longer than ``pending_after``, or is bound but still Pending after that long
(the node may be failing to start it: the triage tells whether it is `node-runtime-error`).
Stuck pods are grouped by the workload that made them, so a Deployment with 10 stuck
replicas is one group of 10.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from scoring.objects import K8sObject, is_terminated, is_terminating, object_key
from triage.config import TriageConfig
from triage.pods import gpu_related_resources, resource_claims
from triage.refs import PodRef


class Progress(StrEnum):
    STUCK = "stuck"
    RUNNING = "running"
    GONE = "gone"  # deleted, or finished (the cache keeps non-terminated pods only)


@dataclass(frozen=True)
class StuckPod:
    namespace: str
    name: str
    uid: str
    created: datetime
    bound: bool  # bound to a node but not running


@dataclass(frozen=True)
class Workload:
    namespace: str
    kind: str  # Deployment, ReplicaSet, Job, StatefulSet, DaemonSet, or Pod for a bare pod
    name: str

    @property
    def ref(self) -> PodRef:
        return PodRef(self.namespace, self.name)

    @property
    def key(self) -> str:
        return f"{self.kind}/{self.namespace}/{self.name}"

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}" if self.kind == "Pod" else \
            f"{self.kind} {self.namespace}/{self.name}"


@dataclass(frozen=True)
class StuckGroup:
    workload: Workload
    pods: tuple[StuckPod, ...]  # by name

    @property
    def since(self) -> datetime:
        return min(pod.created for pod in self.pods)


def parse_timestamp(text: object) -> datetime | None:
    """An RFC 3339 time as the API server writes it ("2026-11-30T12:50:45Z"), or None."""
    if not isinstance(text, str) or not text:
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else None


def asks_for_gpu(spec: Mapping[str, Any], config: TriageConfig) -> bool:
    return bool(gpu_related_resources(spec, config) or resource_claims(spec))


def owning_workload(pod: Mapping[str, Any]) -> Workload:
    """The workload a person created: a ReplicaSet named ``<deployment>-<pod-template-hash>``
    stands for its Deployment (the cache keeps no ReplicaSets, the name and label say it)."""
    namespace, name = object_key(pod)
    meta = pod.get("metadata", {})
    owners = meta.get("ownerReferences") or []
    owner = next((o for o in owners if o.get("controller")), owners[0] if owners else None)
    if owner is None or not owner.get("name") or not owner.get("kind"):
        return Workload(namespace, "Pod", name)
    kind, owner_name = str(owner["kind"]), str(owner["name"])
    template_hash = (meta.get("labels") or {}).get("pod-template-hash")
    if kind == "ReplicaSet" and template_hash and owner_name.endswith(f"-{template_hash}"):
        return Workload(namespace, "Deployment", owner_name[:-len(template_hash) - 1])
    return Workload(namespace, kind, owner_name)


def _stuck_pod(pod: K8sObject, now: datetime, pending_after: timedelta,
               config: TriageConfig) -> StuckPod | None:
    meta, spec = pod.get("metadata", {}), pod.get("spec", {})
    if is_terminated(pod) or is_terminating(pod) or not asks_for_gpu(spec, config):
        return None
    created = parse_timestamp(meta.get("creationTimestamp"))
    if created is None or now - created < pending_after:
        return None
    bound = bool(spec.get("nodeName"))
    if bound and pod.get("status", {}).get("phase") != "Pending":
        return None
    namespace, name = object_key(pod)
    return StuckPod(namespace, name, str(meta.get("uid") or f"{namespace}/{name}"), created,
                    bound)


def stuck_groups(pods: Iterable[K8sObject], now: datetime, pending_after: timedelta,
                 config: TriageConfig) -> list[StuckGroup]:
    """The stuck pods among ``pods``, one group per workload, by workload key."""
    groups: dict[Workload, list[StuckPod]] = {}
    for pod in pods:
        stuck = _stuck_pod(pod, now, pending_after, config)
        if stuck is not None:
            groups.setdefault(owning_workload(pod), []).append(stuck)
    return [StuckGroup(workload, tuple(sorted(members, key=lambda p: p.name)))
            for workload, members in sorted(groups.items(), key=lambda item: item[0].key)]


def progress(pods: Iterable[K8sObject], uids: Iterable[str]) -> dict[str, Progress]:
    """What became of the pods with these uids: still stuck, running, or gone."""
    by_uid = {str(pod.get("metadata", {}).get("uid")): pod for pod in pods}
    states = {}
    for uid in uids:
        pod = by_uid.get(uid)
        if pod is None or is_terminated(pod):
            states[uid] = Progress.GONE
        elif pod.get("status", {}).get("phase") == "Running":
            states[uid] = Progress.RUNNING
        else:
            states[uid] = Progress.STUCK
    return states
