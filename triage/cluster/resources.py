"""The resources gpuwhy reads: each one's plural, kind and API version, and the paths to it."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

from triage import integrations, queues

NON_TERMINATED = "status.phase!=Succeeded,status.phase!=Failed"


@dataclass(frozen=True)
class Resource:
    plural: str
    kind: str
    api_version: str

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]

    @property
    def display(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def path(self, namespace: str = "", name: str = "") -> str:
        path = "/api/v1" if self.api_version == "v1" else f"/apis/{self.api_version}"
        if namespace:
            path += f"/namespaces/{quote(namespace, safe='')}"
        path += f"/{self.plural}"
        return path + f"/{quote(name, safe='')}" if name else path


NODES = Resource("nodes", "Node", "v1")
PODS = Resource("pods", "Pod", "v1")
EVENTS = Resource("events", "Event", "v1")
QUOTAS = Resource("resourcequotas", "ResourceQuota", "v1")
RUNTIME_CLASSES = Resource("runtimeclasses", "RuntimeClass", "node.k8s.io/v1")
VOLUME_CLAIMS = Resource("persistentvolumeclaims", "PersistentVolumeClaim", "v1")
# Dynamic Resource Allocation (GA in Kubernetes 1.34); a cluster may not serve the group.
DEVICE_CLASSES = Resource("deviceclasses", "DeviceClass", "resource.k8s.io/v1")
RESOURCE_CLAIMS = Resource("resourceclaims", "ResourceClaim", "resource.k8s.io/v1")
CLAIM_TEMPLATES = Resource("resourceclaimtemplates", "ResourceClaimTemplate",
                           "resource.k8s.io/v1")
RESOURCE_SLICES = Resource("resourceslices", "ResourceSlice", "resource.k8s.io/v1")
# DRADeviceTaintRules: beta in 1.36 and off by default, so often not served at all.
DEVICE_TAINT_RULES = Resource("devicetaintrules", "DeviceTaintRule", "resource.k8s.io/v1beta2")
# Gangs (GenericWorkload, alpha in 1.35+): served only where enabled, in the version the API
# server prefers (v1alpha2 in 1.36), which discovery names.
SCHEDULING_GROUP = "scheduling.k8s.io"


def gang_resources(version: str) -> tuple[Resource, Resource]:
    """Workloads and PodGroups of scheduling.k8s.io in that version."""
    group_version = f"{SCHEDULING_GROUP}/{version}"
    return (Resource("workloads", "Workload", group_version),
            Resource("podgroups", "PodGroup", group_version))


ACCESS_REVIEWS = Resource("selfsubjectaccessreviews", "SelfSubjectAccessReview",
                          "authorization.k8s.io/v1")
_VERSION = Resource("version", "Info", "v1")  # only names GET /version in error sentences
# Kueue (kueue.x-k8s.io): a CRD group; which version is read is the server's to say.
KUEUE_PLURALS = {"ResourceFlavor": "resourceflavors", "ClusterQueue": "clusterqueues",
                 "LocalQueue": "localqueues", "Workload": "workloads", "Cohort": "cohorts",
                 "WorkloadPriorityClass": "workloadpriorityclasses"}


# Kueue's visibility API (an aggregated API Kueue may serve): pending workloads in order.
VISIBILITY_GROUP = "visibility.kueue.x-k8s.io"


def kueue_resource(kind: str, version: str) -> Resource:
    return Resource(KUEUE_PLURALS[kind], kind, f"{queues.GROUP}/{version}")


# Jobs of other kinds Kueue admits (JobSet, RayJob): CRDs, read where served.
JOB_RESOURCES = {job.kind: Resource(job.plural, job.kind, job.api_version)
                 for job in integrations.JOB_KINDS}

WORKLOADS: dict[str, Resource] = {
    "Deployment": Resource("deployments", "Deployment", "apps/v1"),
    "ReplicaSet": Resource("replicasets", "ReplicaSet", "apps/v1"),
    "StatefulSet": Resource("statefulsets", "StatefulSet", "apps/v1"),
    "DaemonSet": Resource("daemonsets", "DaemonSet", "apps/v1"),
    "Job": Resource("jobs", "Job", "batch/v1"),
}

