"""Kueue's raw shapes are read in one place: triage/queues/ builds rows of them once (and
triage/cluster/ picks what to read by them); the queue checks read only those rows."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.paths import REPO

QUEUE_CHECKS = sorted((REPO / "triage" / "classify" / "checks").glob("queue*.py"))
# Field names of Kueue's API a check would only write to read an object's dict.
KUEUE_FIELDS = ("resourceGroups", "coveredResources", "nominalQuota", "borrowingLimit",
                "lendingLimit", "flavorsReservation", "flavorsUsage", "podSets",
                "podSetAssignments", "resourceUsage", "admission", "clusterQueue", "queueName",
                "cohortName", "cohort", "parentName", "stopPolicy", "nodeLabels", "nodeTaints",
                "priorityClassRef", "priorityClassName", "conditions", "lastTransitionTime",
                "schedulingStats")
# What the checks may take from triage.queues: the rows, the index, and the helpers that
# read a Job's or a pod's own fields (its queue label, Kueue's gates), not Kueue's objects.
ALLOWED_NAMES = frozenset({
    "QueueIndex", "ClusterQueueRow", "LocalQueueRow", "FlavorRow", "WorkloadRow", "CohortRow",
    "Condition", "FlavorQuota", "PodSet", "Assignment", "QueueOwner", "QUEUE_LABEL", "queue_name",
    "valid_name", "kueue_gates", "kueue_involved"})
RAW_READS = (
    (re.compile(r"""(["'])(?:""" + "|".join(KUEUE_FIELDS) + r")\1"), "a Kueue field by name"),
    (re.compile(r"(?<![\w.])(?:part|entries|text)\("), "a raw accessor of triage.queues"),
    (re.compile(r"\.by_kind\b|\bindex\.get\("), "QueueIndex's raw objects"),
    # the Subject's raw pod, spec, workload and Snapshot: its rows say what the checks need
    (re.compile(r"\bsubject\.(?:pod|spec|workload|snapshot)\b"), "the Subject's raw objects"),
    (re.compile(r"\bK8sObject\b"), "a raw object"),
)
_FROM_QUEUES = re.compile(r"from triage\.queues import (?:\(([^)]*)\)|([\w, ]+))")
_QUEUES_ATTRIBUTE = re.compile(r"\bqueues\.(\w+)")


def raw_reads(source: str) -> list[str]:
    """Each raw read of a Kueue object in the source, said as "line N: what"."""
    found = []
    for number, line in enumerate(source.splitlines(), 1):
        code = line.split("#", 1)[0]
        found += [f"line {number}: {what}" for pattern, what in RAW_READS
                  if pattern.search(code)]
        found += [f"line {number}: queues.{name}" for name in _QUEUES_ATTRIBUTE.findall(code)
                  if name not in ALLOWED_NAMES]
    for names in _FROM_QUEUES.findall(source):
        found += [f"imports {name}" for name in re.findall(r"\w+", "".join(names))
                  if name not in ALLOWED_NAMES]
    return found


def test_the_queue_checks_are_split_one_job_each_and_small() -> None:
    assert [path.name for path in QUEUE_CHECKS] == [
        "queue.py", "queue_blockers.py", "queue_flavor.py", "queue_quota.py"]
    assert all(len(path.read_text().splitlines()) < 450 for path in QUEUE_CHECKS)


@pytest.mark.parametrize("path", QUEUE_CHECKS, ids=lambda path: path.name)
def test_the_queue_checks_read_only_rows(path: Path) -> None:
    assert raw_reads(path.read_text(encoding="utf-8")) == []


def test_the_rows_are_where_the_raw_shapes_are_read() -> None:
    assert raw_reads((REPO / "triage" / "queues" / "rows.py").read_text(encoding="utf-8"))


@pytest.mark.parametrize("raw", [
    'stopped = cluster_queue["spec"]["stopPolicy"]',
    'flavors = entries(spec, "flavors")',
    'active = queues.condition(raw, "Active")',
    'local = index.get("LocalQueue", namespace, queue)',
    'from triage.queues import QueueIndex, part',
    "gates = queues.kueue_gates(subject.spec)",
    "if subject.pod is None:",
    "workload = subject.workload",
    "index = subject.snapshot.queue_index",
    "def _queued(owner: K8sObject) -> None:",
], ids=["field", "accessor", "helper", "index-get", "import", "subject-spec", "subject-pod",
        "subject-workload", "subject-snapshot", "raw-object"])
def test_a_raw_read_put_back_is_caught(raw: str) -> None:
    source = (REPO / "triage" / "classify" / "checks" / "queue.py").read_text(encoding="utf-8")
    assert raw_reads(f"{source}\n{raw}\n")
