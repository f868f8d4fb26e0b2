"""Triage: an ordered chain of small named checks over a Snapshot's rows (pure: no I/O, no clock).

Modelled on kube-scheduler's filter chain:
- ``subject``: what a check looks at (the pod or workload, its spec, GPU request, events)
  and returns (a Finding), and the two shapes of check (PodCheck, NodeFilter);
- ``checks``: one module per family of checks, each with its checks, explanations, reasons;
- ``pipeline``: the order, as data, following ``triage.vocabulary.CAUSES``, and its run;
- ``resolve``: a ref to the subjects it names, and a workload's worst pod;
- ``report``: the Verdict, with node reports, scores and summary.

``triage(snapshot, ref, config)`` is the public entry point.
"""

from triage.classify.resolve import triage

__all__ = ["triage"]
