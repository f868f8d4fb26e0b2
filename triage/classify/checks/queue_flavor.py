"""Admitted by Kueue, judged by the funnel: the nodeSelector and tolerations that decided the
answer were put on the pod by the flavor Kueue admitted it in (its ResourceFlavor's node
labels and tolerations), not by the Job's own template."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scoring.verdict import Evidence
from triage.classify.subject import Finding, Subject, primary
from triage.vocabulary import Cause

# The funnel's answers where the nodes a pod may use decide: a flavor's nodeLabels and
# tolerations, which Kueue put on the pod at admission, are among what decides them.
_NODE_CAUSES = frozenset({Cause.SELECTOR_MISMATCH, Cause.TAINT_UNTOLERATED, Cause.NO_GPU_NODE,
                          Cause.ALLOCATABLE_ZERO, Cause.TOO_LARGE, Cause.EXHAUSTED,
                          Cause.DEVICE_UNFIT, Cause.OTHER_CONSTRAINT})


def flavor_note(subject: Subject, finding: Finding) -> Finding:
    """Kueue admitted the pod's workload: say which flavor set the nodeSelector and
    tolerations the funnel judged (the Job's own template does not hold them)."""
    pod = subject.queue_owner
    if (pod is None or pod.kind != "Pod" or finding.cause not in _NODE_CAUSES
            or not pod.involved):
        return finding
    index = subject.queue_index
    workload = index.workload_for(pod)
    if workload is None or not workload.admitted_in:
        return finding
    selector = subject.facts.node_selector
    tolerations = subject.facts.tolerations
    injected: list[tuple[str, str]] = []
    pools: list[Mapping[str, str]] = []  # the node labels each flavor sends it to
    for name in workload.admitted_flavors:
        flavor = index.flavors.get(name)
        if flavor is None:
            continue
        labels = {k: v for k, v in flavor.node_labels.items() if selector.get(k) == v}
        tolerated = [t for t in flavor.tolerations if t in tolerations]
        if not labels and not tolerated:
            continue
        pools.append(labels)
        sets = [f"nodeSelector {', '.join(f'{k}={v}' for k, v in sorted(labels.items()))}"
                if labels else "",
                "toleration " + ", ".join(_toleration(t) for t in tolerated) if tolerated else ""]
        injected.append((name, " and ".join(s for s in sets if s)))
    if not injected:
        return finding
    cluster_queue = workload.admitted_in
    said = "; ".join(f"flavor {name} set {sets}" for name, sets in injected)
    action = (f"{finding.action} Kueue admitted it in ClusterQueue {cluster_queue} and {said}: "
              "to use other nodes, change the flavors of the ClusterQueue, not the pod's "
              "template." + _outside_kueue(subject, finding, pools))
    evidence = [*finding.evidence,
                Evidence(f"Workload {workload.key}",
                         "status.admission.podSetAssignments[*].flavors",
                         f"{cluster_queue}: {', '.join(name for name, _ in injected)}")]
    return Finding(finding.cause, action, evidence)


def _outside_kueue(subject: Subject, finding: Finding, pools: list[Mapping[str, str]]) -> str:
    """Kueue's quota had room, the flavor's nodes have none: name the GPUs held there by
    pods Kueue did not admit (its quota does not count them)."""
    if finding.cause != Cause.EXHAUSTED or not subject.gpu:
        return ""
    resource = primary(subject)
    outside = [f"{holder.namespace}/{holder.name} {amount}" for node in subject.node_table
               if any(pool and all(node.labels.get(k) == v for k, v in pool.items())
                      for pool in pools)
               for holder, amount in subject.holders_on(node.name, resource)
               if not holder.involved]
    if not outside:
        return ""
    return (f" Outside Kueue, {', '.join(outside)} {'holds' if len(outside) == 1 else 'hold'} "
            f"{resource} on the flavor's nodes: Kueue's quota does not count "
            f"{'it' if len(outside) == 1 else 'them'}.")


def _toleration(toleration: Mapping[str, Any]) -> str:
    value = f"={toleration['value']}" if toleration.get("value") else ""
    effect = f":{toleration['effect']}" if toleration.get("effect") else ""
    return f"{toleration.get('key', '*')}{value}{effect}"
