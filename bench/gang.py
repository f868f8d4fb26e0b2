"""The gang row of `python -m bench`: a gang of 1,000 pods (one scheduling.k8s.io PodGroup,
minCount 1,000, 8 GPUs each, six A100 pools by node affinity) added to a generated cluster,
and the triage of one of its pods (the gang judged as a whole) against the bare loop over the
nodes, both measured on that snapshot in this run."""

from __future__ import annotations

import copy
import statistics
from collections.abc import Callable
from typing import Any

GANG_SIZE = 1000
GANG_NAMESPACE = "bench-gang"
GANG_GPUS = "8"
GROUP = "trainer-workers"
TIMED_PODS = 21
# Five full A100 pools and one with room (bench/generate.py): the gang fits them when empty,
# but the holders leave room for a third of it, so it is judged exhausted, holders named.
POOLS = ("a100-0", "a100-1", "a100-2", "a100-3", "a100-4", "a100-5")


def gang_objects(template: dict[str, Any], size: int = GANG_SIZE
                 ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(the gang's pending pods, its Workload and PodGroup), from a pending pod's shape."""
    pods = []
    for index in range(size):
        pod = copy.deepcopy(template)
        pod["metadata"].update(name=f"trainer-{index:04d}", namespace=GANG_NAMESPACE,
                               uid=f"gang-{index}")
        pod["spec"].pop("nodeSelector", None)
        pod["spec"]["affinity"] = {"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "pool", "operator": "In",
                                       "values": list(POOLS)}]}]}}}
        pod["spec"]["schedulingGroup"] = {"podGroupName": GROUP}
        for container in pod["spec"]["containers"]:
            for section in ("limits", "requests"):
                container["resources"][section]["nvidia.com/gpu"] = GANG_GPUS
        pods.append(pod)
    policy = {"gang": {"minCount": size}}
    gangs = [{"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "Workload",
              "metadata": {"name": "trainer", "namespace": GANG_NAMESPACE},
              "spec": {"podGroupTemplates": [{"name": "workers", "schedulingPolicy": policy}]}},
             {"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup",
              "metadata": {"name": GROUP, "namespace": GANG_NAMESPACE},
              "spec": {"podGroupTemplateRef": {"workload": {"workloadName": "trainer",
                                                            "podGroupTemplateName": "workers"}},
                       "schedulingPolicy": policy}}]
    return pods, gangs


def measure_gang(snapshot: Any, template_ref: str, floor: Callable[[Any], float],
                 seconds: Callable[[Callable[[], object]], float],
                 row: Callable[..., None]) -> None:
    """``snapshot``: a loaded generated cluster; ``template_ref``: a pending pod to copy."""
    from triage.classify import triage
    from triage.refs import PodRef
    from triage.snapshot import Snapshot

    template = snapshot.pod(*template_ref.split("/"))
    pods, gangs = gang_objects(template)
    with_gang = Snapshot(nodes=snapshot.nodes, pods=[*snapshot.pods, *pods],
                         events=snapshot.events, resourcequotas=snapshot.resourcequotas,
                         runtimeclasses=snapshot.runtimeclasses, workloads=snapshot.workloads,
                         dra=snapshot.dra, gangs=gangs, read_at=snapshot.read_at)
    with_gang.index_nodes()
    floor_loop = floor(with_gang)
    row("bare loop over the nodes (floor, with the gang's pods)", floor_loop, None, "")
    refs = [PodRef(GANG_NAMESPACE, f"trainer-{i * (GANG_SIZE // TIMED_PODS):04d}")
            for i in range(TIMED_PODS)]
    first = triage(with_gang, refs[0])
    row(f"gang of {GANG_SIZE:,} pods: first triage of a gang pod ({first.cause})",
        seconds(lambda: triage(with_gang, refs[1])), floor_loop, "× bare loop")
    timings = [seconds(lambda ref=ref: triage(with_gang, ref)) for ref in refs[2:]]
    row(f"  warm triage of a gang pod, median of {len(timings)}", statistics.median(timings),
        floor_loop, "× bare loop")
