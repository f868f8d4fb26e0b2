"""GPU-wise a node fits, but no scheduler has said anything about the pod."""

from __future__ import annotations

from itertools import islice

from scoring.times import parse_rfc3339
from scoring.verdict import Evidence
from triage.classify.checks.dra_alternatives import fitting_alternatives
from triage.classify.subject import Finding, Subject
from triage.rows import Rows
from triage.vocabulary import FIT, Cause

# A scheduler usually looks at a new pod within a second or two; under a burst, longer.
JUST_CREATED_S = 60


def check_scheduler_unavailable(subject: Subject) -> Finding | None:
    scheduler = subject.facts.scheduler or "default-scheduler"
    fitting = [r.name for r in islice(subject.reports.where(FIT.__eq__), 3)]
    age = _age_seconds(subject)
    if age is not None and age < JUST_CREATED_S:
        return Finding(Cause.SCHEDULER_UNAVAILABLE,
                       f"{subject.label} was created {age} s ago: the scheduler may not have "
                       "looked yet; ask again in a minute. GPU-wise "
                       f"{', '.join(fitting[:3]) or 'a node'} fit; if it still waits then, "
                       f"check that {scheduler} (spec.schedulerName) is running.",
                       [Evidence(f"Pod {subject.label}", "metadata.creationTimestamp",
                                 f"{age} s before the cluster was read"),
                        Evidence(f"Pod {subject.label}", "spec.schedulerName", scheduler)])
    return Finding(Cause.SCHEDULER_UNAVAILABLE,
                   f"GPU-wise {', '.join(fitting[:3]) or 'a node'} fit"
                   f"{fitting_alternatives(subject)}, but no scheduler has said "
                   f"anything about {subject.label}: spec.schedulerName {scheduler} is not "
                   "running or does not see the pod. Start or fix that scheduler, or correct "
                   "schedulerName.",
                   [Evidence(f"Pod {subject.label}", "spec.schedulerName", scheduler),
                    Evidence(f"Pod {subject.label}", "events / PodScheduled condition",
                             "none from any scheduler")])


def _age_seconds(subject: Subject) -> int | None:
    """Seconds from the pod's creation to when the Snapshot was read; None when unknown."""
    created = subject.row.created if subject.row is not None else ""
    read_at = subject.rows.read_at
    if not created or not read_at:
        return None
    try:
        seconds = (parse_rfc3339(read_at) - parse_rfc3339(created)).total_seconds()
    except ValueError:
        return None
    return max(0, int(seconds))


DEFAULT_SCHEDULER = "default-scheduler"


def scheduler_serves(rows: Rows, scheduler: str) -> bool:
    """Does a scheduler of that name run? The default one is taken to; another one shows by
    the pods it bound: a non-terminated pod naming it with spec.nodeName set. (A pre-flight has
    no events to go by: nobody has scheduled the would-be pod yet.)"""
    if scheduler in ("", DEFAULT_SCHEDULER):
        return True
    return rows.has_bound_pods(scheduler)
