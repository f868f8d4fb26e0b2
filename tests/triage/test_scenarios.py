"""Each recorded cluster is a test suite: every expected cause, and the decisive evidence."""

from __future__ import annotations

import json

import pytest

from tests.conftest import SCENARIO_NAMES, SCENARIOS
from triage.classify import triage
from triage.refs import parse_ref
from triage.snapshot import Snapshot

CASES = [
    (scenario, ref, expected["cause"])
    for scenario in SCENARIO_NAMES
    for ref, expected in json.loads((SCENARIOS / scenario / "expected.json").read_text()).items()
]


@pytest.mark.parametrize(("scenario", "ref", "cause"), CASES,
                         ids=[f"{s}:{r}" for s, r, _ in CASES])
def test_expected_cause(scenario: str, ref: str, cause: str) -> None:
    verdict = triage(Snapshot.from_dir(SCENARIOS / scenario), parse_ref(ref))
    assert verdict.cause == cause


# The object and field each answer must name (decisive evidence).
DECISIVE = {
    "ml/finetune": ("ResourceQuota ml/gpu-quota", "requests.nvidia.com/gpu", "hard 1, used 1"),
    "infer/vllm": ("Deployment infer/vllm", "runtimeClassName", "nvidia"),
    "research/no-request": ("Pod research/no-request", "resources.limits", "no GPU"),
    "research/wrong-pool": ("Pod research/wrong-pool", "nodeSelector", "pool=h200"),
    "research/tainted": ("Node/gpu-h100-reserved", "spec.taints", "dedicated=llm-team:NoSchedule"),
    "research/no-plugin": ("Node/gpu-t4-noplugin", "status.capacity[nvidia.com/gpu]", "absent"),
    "research/broken-node": ("Node/gpu-v100-broken", "status.allocatable[nvidia.com/gpu]",
                             "allocatable 0"),
    "research/full": ("Node/gpu-a10-full", "status.allocatable[nvidia.com/gpu]",
                      "ml/train-a, team-b/train-b"),
    "research/big": ("Pod research/big", "request nvidia.com/gpu", "8"),
    "research/ok": ("Pod research/ok", "spec.nodeName", "gpu-a100-1"),
    "research/typo": ("namespace research", "pods", "typo"),
}


@pytest.mark.parametrize("ref", sorted(DECISIVE))
def test_evidence_names_the_decisive_object_and_field(ref: str) -> None:
    verdict = triage(Snapshot.from_dir(SCENARIOS / "seven-states"), parse_ref(ref))
    obj, field, value = DECISIVE[ref]
    assert any(obj == e.object and field in e.field and value in e.value
               for e in verdict.evidence), verdict.evidence


def test_actions_name_objects_and_numbers() -> None:
    snapshot = Snapshot.from_dir(SCENARIOS / "seven-states")
    full = triage(snapshot, parse_ref("research/full"))
    assert "2/2" in full.action and "ml/train-a" in full.action
    assert "team-b/done" in full.action and "hold nothing" in full.action
    assert "gpu-a100-1 has 2 free" in full.action
    big = triage(snapshot, parse_ref("research/big"))
    assert "gpu-h100-reserved" in big.action and "gpu-a100-1 with 4" in big.action
    quota = triage(snapshot, parse_ref("ml/finetune"))
    assert "ml/gpu-quota" in quota.action and "1/1" in quota.action
    assert "ml/train-a" in quota.action and quota.kind == "Job"
    tainted = triage(snapshot, parse_ref("research/tainted"))
    assert "toleration" in tainted.action and "llm-team" in tainted.action


def test_node_summary_counts_every_node_by_the_step_it_failed() -> None:
    verdict = triage(Snapshot.from_dir(SCENARIOS / "seven-states"), parse_ref("research/big"))
    assert verdict.node_summary == (
        "6 nodes: 6 not fit (1 taint-untolerated, 2 no-gpu-node, 1 allocatable-zero, "
        "2 too-large), 0 fit")
    outcomes = {n.name: n.outcome for n in verdict.nodes}
    assert outcomes == {"gpu-h100-reserved": "taint-untolerated", "cpu-1": "no-gpu-node",
                        "gpu-t4-noplugin": "no-gpu-node", "gpu-v100-broken": "allocatable-zero",
                        "gpu-a100-1": "too-large", "gpu-a10-full": "too-large"}
    assert verdict.request == 8 and verdict.resource == "nvidia.com/gpu"


def test_scheduler_message_is_kept_verbatim() -> None:
    verdict = triage(Snapshot.from_dir(SCENARIOS / "seven-states"), parse_ref("research/full"))
    assert verdict.scheduler_message == (
        "0/6 nodes are available: 1 Insufficient nvidia.com/gpu, 1 node(s) had untolerated "
        "taint(s), 4 node(s) didn't match Pod's node affinity/selector. no new claims to "
        "deallocate, preemption: 0/6 nodes are available: 1 No preemption victims found for "
        "incoming pod, 5 Preemption is not helpful for scheduling.")


def test_hami_codes_per_node() -> None:
    expected = json.loads((SCENARIOS / "hami-sharing" / "expected.json").read_text())
    snapshot = Snapshot.from_dir(SCENARIOS / "hami-sharing")
    for ref, answer in expected.items():
        if "codes" not in answer:
            continue
        verdict = triage(snapshot, parse_ref(ref))
        assert {n.name: n.outcome for n in verdict.nodes} == answer["codes"], ref


def test_scheduler_scores_are_shown_as_the_schedulers() -> None:
    verdict = triage(Snapshot.from_dir(SCENARIOS / "hami-sharing"), parse_ref("hami/placed"))
    assert verdict.score_source == "scheduler"
    assert verdict.nodes[0].name == "hami-t4-1" and verdict.nodes[0].score == 0.0


def test_verdict_round_trips_through_json() -> None:
    from scoring.verdict import Verdict

    verdict = triage(Snapshot.from_dir(SCENARIOS / "hami-sharing"), parse_ref("hami/needs-40g"))
    again = Verdict.from_dict(json.loads(json.dumps(verdict.to_dict())))
    assert again == verdict
    assert any(d.code == "CardNotHealth" for n in again.nodes for d in n.devices)


def test_preemption_text_corroborates_exhausted() -> None:
    verdict = triage(Snapshot.from_dir(SCENARIOS / "seven-states"), parse_ref("research/full"))
    assert any(e.field == "scheduler message (preemption)"
               and e.value == "1 No preemption victims found for incoming pod"
               for e in verdict.evidence)
