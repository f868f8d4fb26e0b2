"""Triage settings that change answers: which resources are GPUs, which score policy."""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase

from scoring.whole import Policy

# nvidia.com/gpu.shared: the NVIDIA device plugin's time-sliced GPUs (renameByDefault)
DEFAULT_GPU_RESOURCES = ("nvidia.com/gpu", "nvidia.com/gpu.shared", "nvidia.com/mig-*",
                         "amd.com/gpu")
# HAMi's sharing resources: kube-scheduler ignores them, only HAMi's filter checks them.
HAMI_RESOURCES = ("nvidia.com/gpumem", "nvidia.com/gpucores", "nvidia.com/gpumem-percentage")
# DRA drivers whose devices are GPUs: NVIDIA's, AMD's, and HAMi's (Project-HAMi/k8s-dra-driver).
DEFAULT_GPU_DRIVERS = ("gpu.nvidia.com", "gpu.amd.com", "hami-core-gpu.project-hami.io")
# The node labels people name a pool by, first present wins: a plain "pool", GKE's node pool,
# EKS's node group, Karpenter's NodePool, AKS's agent pool.
DEFAULT_POOL_LABELS = ("pool", "cloud.google.com/gke-nodepool", "eks.amazonaws.com/nodegroup",
                       "karpenter.sh/nodepool", "kubernetes.azure.com/agentpool")


@dataclass(frozen=True)
class TriageConfig:
    gpu_resources: tuple[str, ...] = DEFAULT_GPU_RESOURCES
    node_policy: Policy = "binpack"
    # A DeviceClass is a GPU class when it names one of these drivers or selects their devices.
    gpu_drivers: tuple[str, ...] = DEFAULT_GPU_DRIVERS
    # The capacity view groups GPU nodes by the first of these labels a node carries.
    pool_labels: tuple[str, ...] = DEFAULT_POOL_LABELS

    def is_gpu_resource(self, name: str) -> bool:
        """A schedulable GPU resource (counted by kube-scheduler), glob patterns allowed."""
        return any(fnmatchcase(name, pattern) for pattern in self.gpu_resources)

    def is_gpu_related(self, name: str) -> bool:
        return self.is_gpu_resource(name) or name in HAMI_RESOURCES


DEFAULT_CONFIG = TriageConfig()
