"""Helpers of the DRA answer tests: the answer on a recording's lists as changed by a test,
its evidence as (object, field, value), and one DRA object of the lists by kind and name."""

from __future__ import annotations

import copy
from typing import Any

from scoring.verdict import Verdict
from triage.classify import triage
from triage.refs import parse_ref
from triage.snapshot import Snapshot

Lists = dict[str, list[dict[str, Any]]]


def answer(lists: Lists, ref: str) -> Verdict:
    return triage(Snapshot(**copy.deepcopy(lists)), parse_ref(ref))


def evidence_of(verdict: Verdict) -> list[tuple[str, str, str]]:
    return [(e.object, e.field, e.value) for e in verdict.evidence]


def dra_object(lists: Lists, kind: str, name: str) -> dict[str, Any]:
    return next(o for o in lists["dra"] if o["kind"] == kind and o["metadata"]["name"] == name)
