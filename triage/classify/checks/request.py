"""The pod exists but asks for no GPU at all."""

from __future__ import annotations

from scoring.verdict import Evidence
from triage.classify.subject import Finding, Subject
from triage.vocabulary import Cause


def check_no_gpu_request(subject: Subject) -> Finding | None:
    # A pod asking for GPUs through Dynamic Resource Allocation asks for GPUs.
    facts = subject.facts
    # the GPU resources the containers name; past this check, each only at 0 (asking none)
    zero = sorted(name for name in facts.resources if subject.config.is_gpu_related(name))
    if any(facts.request(name) > 0 for name in zero) or (
            subject.dra is not None and subject.dra.asks_gpu):
        return None
    where = f" It is bound to {facts.node}." if facts.node else ""
    reason = (f"its containers name {', '.join(zero)} only with 0, which asks for none" if zero
              else "no container (init containers included) has a GPU in resources.limits")
    claims = facts.claims
    if claims:
        assert subject.dra is not None
        classes = sorted({a.device_class for c in subject.dra.all_claims for r in c.requests
                          for a in r.alternatives})
        where += (f" Its claims ({', '.join(claims)}) ask for {', '.join(classes) or 'no device'}"
                  f", not a GPU class (drivers {', '.join(subject.config.gpu_drivers)}).")
    return Finding(Cause.NO_GPU_REQUEST,
                   f"{subject.label} asks for no GPU: {reason}.{where} Add "
                   "`limits: nvidia.com/gpu: N` to the container that needs it.",
                   [Evidence(f"Pod {subject.label}", "spec.containers[*].resources.limits",
                             ", ".join(f"{name}: 0" for name in zero) if zero else
                             "no GPU resource (" + ", ".join(subject.config.gpu_resources) + ")")])
