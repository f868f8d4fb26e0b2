"""The pod exists but asks for no GPU at all."""

from __future__ import annotations

from triage.classify.subject import Finding, Subject
from triage.pods import gpu_related_resources, resource_claims
from triage.verdict import Evidence
from triage.vocabulary import Cause


def check_no_gpu_request(subject: Subject) -> Finding | None:
    # A pod asking for GPUs through Dynamic Resource Allocation asks for GPUs.
    if gpu_related_resources(subject.spec, subject.config) or (
            subject.dra is not None and subject.dra.asks_gpu):
        return None
    where = f" It is bound to {subject.spec['nodeName']}." if subject.spec.get("nodeName") else ""
    claims = resource_claims(subject.spec)
    if claims:
        assert subject.dra is not None
        classes = sorted({a.device_class for c in subject.dra.all_claims for r in c.requests
                          for a in r.alternatives})
        where += (f" Its claims ({', '.join(claims)}) ask for {', '.join(classes) or 'no device'}"
                  f", not a GPU class (drivers {', '.join(subject.config.gpu_drivers)}).")
    return Finding(Cause.NO_GPU_REQUEST,
                   f"{subject.label} asks for no GPU: no container (init containers included) "
                   f"has a GPU in resources.limits.{where} Add `limits: nvidia.com/gpu: N` to "
                   "the container that needs it.",
                   [Evidence(f"Pod {subject.label}", "spec.containers[*].resources.limits",
                             "no GPU resource (" + ", ".join(subject.config.gpu_resources) + ")")])
