"""Jobs of other kinds that Kueue admits (its JobSet and RayJob integrations): what a ref to
one reads, its pods and its pod templates.

A JobSet (jobset.x-k8s.io) makes one Job per replica of each replicated job, and labels them
and their pods ``jobset.sigs.k8s.io/jobset-name``; a RayJob (ray.io) makes a RayCluster whose
pods KubeRay labels ``ray.io/originated-from-cr-name`` and ``ray.io/originated-from-crd``.
Both are created suspended when they carry Kueue's queue label, and Kueue makes one Workload
for each (owned by it, one pod set per replicated job / Ray group). Pure functions: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from scoring.objects import K8sObject, object_key
from triage.queues import entries, part


@dataclass(frozen=True)
class JobKind:
    """A kind a ref may name that Kueue admits as a whole: its API, and how its pods and pod
    templates are found."""

    kind: str
    api_version: str
    plural: str
    pod_labels: Callable[[str], dict[str, str]]  # the labels its pods carry, by its name
    templates: Callable[[Mapping[str, Any]], list[Mapping[str, Any]]]  # its pod templates' specs


def _jobset_templates(jobset: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [part(part(part(part(job, "template"), "spec"), "template"), "spec")
            for job in entries(part(jobset, "spec"), "replicatedJobs")]


def _rayjob_templates(rayjob: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    cluster = part(part(rayjob, "spec"), "rayClusterSpec")
    groups = [part(cluster, "headGroupSpec"), *entries(cluster, "workerGroupSpecs")]
    return [part(part(group, "template"), "spec") for group in groups]


JOB_KINDS = (
    JobKind("JobSet", "jobset.x-k8s.io/v1alpha2", "jobsets",
            lambda name: {"jobset.sigs.k8s.io/jobset-name": name}, _jobset_templates),
    JobKind("RayJob", "ray.io/v1", "rayjobs",
            lambda name: {"ray.io/originated-from-cr-name": name,
                          "ray.io/originated-from-crd": "RayJob"}, _rayjob_templates),
)
BY_KIND = {job.kind: job for job in JOB_KINDS}


def job_kind(obj: Mapping[str, Any]) -> JobKind | None:
    return BY_KIND.get(str(obj.get("kind", "")))


def pod_selector(job: Mapping[str, Any]) -> str:
    """The labelSelector of the job's pods ("" for a kind that is not one of these)."""
    kind = job_kind(job)
    if kind is None:
        return ""
    return ",".join(f"{k}={v}" for k, v in sorted(kind.pod_labels(object_key(job)[1]).items()))


def is_pod_of(job: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    kind = job_kind(job)
    if kind is None or object_key(pod)[0] != object_key(job)[0]:
        return False
    labels = part(part(pod, "metadata"), "labels")
    return all(labels.get(k) == v for k, v in kind.pod_labels(object_key(job)[1]).items())


def pod_templates(job: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    kind = job_kind(job)
    return [] if kind is None else kind.templates(job)


def pods_of(job: Mapping[str, Any], pods: list[K8sObject]) -> list[K8sObject]:
    """The job's pods among ``pods`` (its namespace's), by the labels its controller sets."""
    return [pod for pod in pods if is_pod_of(job, pod)]
