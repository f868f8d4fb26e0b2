"""Clusters built from the recorded objects to probe each rule and trap of the design.

Every answer in ``scenarios-extra/*/expected.json`` was worked out by hand from the design and
the format references (see each folder's README.md), never from gpuwhy's output.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.paths import FIXTURES, REPO
from triage.classify import triage
from triage.refs import PodRef, parse_ref
from triage.snapshot import DUMP_FILES, Snapshot
from triage.vocabulary import Cause

EXTRA = FIXTURES / "scenarios-extra"
EXTRA_NAMES = sorted(p.name for p in EXTRA.iterdir() if (p / "expected.json").exists())

# Answers gpuwhy gets wrong today: (scenario, ref) -> the rule the expectation follows.


def _cases() -> list[Any]:
    cases = []
    for scenario in EXTRA_NAMES:
        expected = json.loads((EXTRA / scenario / "expected.json").read_text())
        for ref, answer in expected.items():
            cases.append(pytest.param(scenario, ref, answer, id=f"{scenario}:{ref}"))
    return cases


_SNAPSHOTS: dict[str, Snapshot] = {}


def _snapshot(scenario: str) -> Snapshot:
    if scenario not in _SNAPSHOTS:
        _SNAPSHOTS[scenario] = Snapshot.from_dir(EXTRA / scenario)
    return _SNAPSHOTS[scenario]


@pytest.mark.parametrize(("scenario", "ref", "answer"), _cases())
def test_expected_answer(scenario: str, ref: str, answer: dict[str, Any]) -> None:
    verdict = triage(_snapshot(scenario), parse_ref(ref))
    got: dict[str, Any] = {"cause": verdict.cause}
    want: dict[str, Any] = {"cause": answer["cause"]}
    if "codes" in answer:
        outcomes = {n.name: n.outcome for n in verdict.nodes}
        got["codes"] = {name: outcomes.get(name) for name in answer["codes"]}
        want["codes"] = answer["codes"]
    assert got == want, answer["why"]


def test_workload_answer_names_the_pods_that_share_it() -> None:
    snapshot = _snapshot("funnel-edges")
    web = triage(snapshot, parse_ref("lab/web"))
    assert (web.kind, web.pods, web.pods_total) == ("Deployment", ["lab/web-6f7c9d8b5-tb8mv"], 3)
    db = triage(snapshot, parse_ref("lab/db"))
    assert (db.kind, db.pods, db.pods_total) == ("StatefulSet", ["lab/db-1"], 2)
    job = triage(snapshot, parse_ref("lab/train-job"))
    assert job.pods == ["lab/train-job-4kq9d", "lab/train-job-m2x7c"] and job.pods_total == 2


def test_dra_answer_names_the_claim() -> None:
    verdict = triage(_snapshot("funnel-edges"), parse_ref("lab/dra-pod"))
    assert "single-gpu" in verdict.action


def test_namespace_named_like_a_kind_prefix() -> None:
    assert parse_ref("ds/train") == PodRef("ds", "train")
    assert parse_ref("sts/db-0") == PodRef("sts", "db-0")


def test_cli_prints_only_the_verdict_json(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-c", "from bot.cli.main import main; raise SystemExit(main())", "triage",
         "lab/cordon-tolerated", "--snapshot", str(EXTRA / "funnel-edges"), "--format", "json",
         "--db", f"sqlite:///{tmp_path / 'incidents.db'}"],
        capture_output=True, text=True, timeout=60, cwd=REPO, check=False)
    assert result.returncode == 0, result.stderr
    verdict = json.loads(result.stdout)
    assert verdict["cause"] == "exhausted" and verdict["ref"] == "lab/cordon-tolerated"


# -- inputs the API allows that are thin or null: triage answers, never raises ------------------

Mutation = Callable[[dict[str, list[dict[str, Any]]]], None]


def _each(kind: str, change: Callable[[dict[str, Any]], None]) -> Mutation:
    def apply(lists: dict[str, list[dict[str, Any]]]) -> None:
        for item in lists[kind]:
            change(item)
    return apply


def _null_spec_fields(pod: dict[str, Any]) -> None:
    spec = pod["spec"]
    for key in ("nodeSelector", "tolerations", "affinity", "initContainers", "resourceClaims",
                "runtimeClassName", "overhead", "resources"):
        spec[key] = None
    for container in spec.get("containers") or []:
        container["resources"] = {"limits": None, "requests": None}


def _bare_node(node: dict[str, Any]) -> None:
    node.pop("status", None)
    node["spec"] = {"taints": None, "unschedulable": None}
    node["metadata"]["labels"] = None
    node["metadata"]["annotations"] = None


def _thin_event(event: dict[str, Any]) -> None:
    for key in ("message", "eventTime", "lastTimestamp", "firstTimestamp", "source", "reason"):
        event[key] = None


def _only_pods(lists: dict[str, list[dict[str, Any]]]) -> None:
    for attribute, items in lists.items():
        if attribute != "pods":
            items.clear()


def _thin_workload(workload: dict[str, Any]) -> None:
    workload.pop("status", None)
    workload["spec"] = {"template": None}


MUTATIONS: dict[str, Mutation] = {
    "pods without status": _each("pods", lambda p: p.pop("status", None)),
    "pods with null spec fields": _each("pods", _null_spec_fields),
    "nodes without status, spec or labels": _each("nodes", _bare_node),
    "events with null fields": _each("events", _thin_event),
    "workloads without status or template": _each("workloads", _thin_workload),
    "quotas without status": _each("resourcequotas", lambda q: q.pop("status", None)),
    "no nodes": lambda lists: lists["nodes"].clear(),
    "nothing but pods": _only_pods,
}


@pytest.mark.parametrize("scenario", EXTRA_NAMES)
@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
def test_thin_inputs_never_raise(scenario: str, mutation: str) -> None:
    lists = {attribute: copy.deepcopy(getattr(_snapshot(scenario), attribute))
             for attribute in DUMP_FILES.values()}
    refs = [parse_ref(ref) for ref in json.loads((EXTRA / scenario / "expected.json").read_text())]
    MUTATIONS[mutation](lists)
    snapshot = Snapshot(**lists)
    for ref in refs:
        assert triage(snapshot, ref).cause in {c.value for c in Cause}
