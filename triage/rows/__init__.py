"""The rows of a Snapshot: its raw objects read once, into what the checks see.

The one place that reads a pod's, an event's, a workload's, a quota's or a pod group's JSON
shape for the funnel (the Snapshot's own indexes and the DRA and Kueue objects aside).
"""

from triage.rows.build import event_row, pod_requests, pod_row, spec_facts
from triage.rows.claims import claim_set, pod_spec
from triage.rows.hami import hami_placed_on, hami_request
from triage.rows.objects import template_spec, wanted_pods, workload_label
from triage.rows.table import Rows

__all__ = ["Rows", "claim_set", "event_row", "hami_placed_on", "hami_request", "pod_requests",
           "pod_row", "pod_spec", "spec_facts", "template_spec", "wanted_pods", "workload_label"]
