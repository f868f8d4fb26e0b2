"""The order is data: the pipeline follows the vocabulary, and a check slots in beside others."""

from __future__ import annotations

from scoring.nodetable import NodeInfo
from tests.conftest import SCENARIOS
from triage.classify.pipeline import CHECKS, PIPELINE, build_pipeline, run_pipeline
from triage.classify.report import assemble
from triage.classify.resolve import pod_subject
from triage.classify.subject import Dropped, Finding, NodeFilter, Subject, When
from triage.config import DEFAULT_CONFIG
from triage.refs import PodRef
from triage.snapshot import Snapshot
from triage.vocabulary import CAUSE_ORDER, CAUSES, Cause


def test_every_cause_has_a_check_and_the_pipeline_runs_in_vocabulary_order() -> None:
    assert set(CHECKS) == {info.cause for info in CAUSES}
    causes = [check.cause for check in PIPELINE]
    assert causes == sorted(causes, key=CAUSE_ORDER.__getitem__)
    assert list(dict.fromkeys(causes)) == [info.cause for info in CAUSES]


NO_DEVICE = "no device of class gpu.example.com"


def _drop_every_node(subject: Subject, node: NodeInfo) -> str | None:
    return NO_DEVICE


def _explain(subject: Subject, dropped: Dropped) -> Finding:
    return Finding(Cause.NO_GPU_NODE, f"no node offers the claim's device: {len(dropped)} nodes")


def test_a_second_filter_for_a_cause_answers_when_it_leaves_no_node() -> None:
    # research/full ends at `exhausted` with the stock pipeline; a filter added beside the
    # extended-resource no-gpu-node check that drops every node answers no-gpu-node instead.
    snapshot = Snapshot.from_dir(SCENARIOS / "seven-states")
    ref = PodRef("research", "full")
    pod = snapshot.rows.pod(ref.namespace, ref.name)
    assert pod is not None
    stock = run_pipeline(pod_subject(snapshot.rows, DEFAULT_CONFIG, ref, pod))
    assert stock.cause == Cause.EXHAUSTED

    extra = NodeFilter(Cause.NO_GPU_NODE, When.UNBOUND, _drop_every_node, _explain)
    pipeline = build_pipeline({**CHECKS, Cause.NO_GPU_NODE: (*CHECKS[Cause.NO_GPU_NODE], extra)})
    subject = pod_subject(snapshot.rows, DEFAULT_CONFIG, ref, pod)
    finding = run_pipeline(subject, pipeline)
    dropped_here = [r for r in subject.reports.values() if r.detail == NO_DEVICE]
    assert finding.cause == Cause.NO_GPU_NODE
    assert finding.action.startswith("no node offers the claim's device")
    # the nodes the new filter dropped carry its reason and the step's cause word
    assert dropped_here and {r.outcome for r in dropped_here} == {"no-gpu-node"}
    verdict = assemble(subject, finding, "Pod")
    assert verdict.cause == "no-gpu-node" and "no-gpu-node" in verdict.node_summary
