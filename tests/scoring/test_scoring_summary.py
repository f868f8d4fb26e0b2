"""scoring.summary: the proposal's summary line and its two log levels."""

from __future__ import annotations

import logging

from scoring.hami import HamiRequest
from scoring.summary import log_lines, proposal_summary
from scoring.verdict import Device, NodeReport
from tests.paths import FIXTURES
from triage.rows import hami_request
from triage.snapshot import Snapshot

FIXTURE = FIXTURES / "scenarios" / "hami-sharing"


def reports() -> list[NodeReport]:
    unfit = [NodeReport(name=f"node{i}", outcome="selector-mismatch") for i in (1, 2, 5, 6)]
    unfit += [NodeReport(name="node7", outcome="taint-untolerated"),
              NodeReport(name="node8", outcome="2/8 NumaNotFit, 6/8 CardInsufficientMemory"),
              NodeReport(name="node9", outcome="node unregistered")]
    fit = [NodeReport(name="node4", outcome="fit", score=0.65),
           NodeReport(name="node3", outcome="fit", score=0.98)]
    return [*unfit, *fit]


def test_summary_binpack_best_first() -> None:
    assert proposal_summary(reports()) == (
        "find fit node(node3), 7 nodes not fit, 2 nodes fit(node3:0.98,node4:0.65)")


def test_summary_spread_lowest_first() -> None:
    assert proposal_summary(reports(), "spread") == (
        "find fit node(node4), 7 nodes not fit, 2 nodes fit(node4:0.65,node3:0.98)")


def test_summary_unscored_fit_nodes_come_last_by_name() -> None:
    nodes = [NodeReport(name="b", outcome="fit"), NodeReport(name="a", outcome="fit"),
             NodeReport(name="c", outcome="fit", score=10.2432)]
    assert proposal_summary(nodes) == "find fit node(c), 0 nodes not fit, 3 nodes fit(c:10.24,a,b)"


def test_summary_nothing_fits() -> None:
    nodes = [n for n in reports() if n.outcome != "fit"]
    nodes += [NodeReport(name="node3", outcome="exhausted"),
              NodeReport(name="node4", outcome="exhausted")]
    assert proposal_summary(nodes) == "no available node, 9 nodes do not meet"


def test_info_lines_carry_pod_and_node() -> None:
    nodes = [NodeReport(name="n1", outcome="1/4 CardNotHealth, 3/4 CardTypeMismatch"),
             NodeReport(name="n3", outcome="fit", score=0.654),
             NodeReport(name="n4", outcome="fit")]
    assert log_lines("ml/train", nodes) == [
        (logging.INFO, 'NodeUnfitPod pod="ml/train" node="n1" '
                       'reason="1/4 CardNotHealth, 3/4 CardTypeMismatch"'),
        (logging.INFO, 'NodeFitPod pod="ml/train" node="n3" score="0.65"'),
        (logging.INFO, 'NodeFitPod pod="ml/train" node="n4"'),
    ]


def test_quotes_in_a_reason_are_escaped() -> None:
    nodes = [NodeReport(name="n1", outcome='volume "data" not bound')]
    assert log_lines("ml/train", nodes) == [
        (logging.INFO,
         'NodeUnfitPod pod="ml/train" node="n1" reason="volume \\"data\\" not bound"')]


def test_debug_lines_per_device_with_a_code() -> None:
    devices = [Device(uuid="GPU-0", index=0, type="T4", memory_used=12000, memory_total=16384,
                      cores_used=10, cores_total=100, code="CardInsufficientMemory"),
               Device(uuid="GPU-1", index=1, type="T4", memory_used=0, memory_total=16384,
                      cores_used=80, cores_total=100, code="CardInsufficientCore"),
               Device(uuid="GPU-2", index=2, type="T4", healthy=False, code="CardNotHealth"),
               Device(uuid="GPU-3", index=3, type="T4")]
    nodes = [NodeReport(name="n3", outcome="1/4 CardInsufficientCore, ...", devices=devices)]
    request = HamiRequest(count=1, mem=5000, mem_percentage=None, cores=30)
    lines = log_lines("ml/train", nodes, request)
    assert lines[1:] == [
        (logging.DEBUG, 'CardInsufficientMemory pod="ml/train" node="n3" device="GPU-0" '
                        "device index=0 device total memory=16384 device used memory=12000 "
                        "request memory=5000"),
        (logging.DEBUG, 'CardInsufficientCore pod="ml/train" node="n3" device="GPU-1" '
                        "device index=1 device total core=100 device used core=80 "
                        "request cores=30"),
        (logging.DEBUG, 'CardNotHealth pod="ml/train" node="n3" device="GPU-2" device index=2'),
    ]
    without_request = log_lines("ml/train", nodes)
    assert without_request[1][1].endswith("device used memory=12000")


def test_hami_sharing_needs_40g_log_lines() -> None:
    snapshot = Snapshot.from_dir(FIXTURE)
    the_pod = snapshot.pod("hami", "needs-40g")
    assert the_pod is not None
    request = hami_request(the_pod)
    assert request is not None
    nodes = []
    for node in snapshot.node_table:
        name = node.name
        fit = snapshot.rows.hami_fit(node, request)
        assert fit is not None
        nodes.append(NodeReport(name=name, outcome=fit.reason or "fit", devices=fit.devices))
    lines = log_lines("hami/needs-40g", nodes, request)
    assert lines[0] == (logging.INFO, 'NodeUnfitPod pod="hami/needs-40g" node="hami-a100-1" '
                        'reason="1/4 CardInsufficientCore, 1/4 CardNotHealth, '
                        '2/4 CardInsufficientMemory"')
    assert lines[1] == (logging.DEBUG, 'CardInsufficientMemory pod="hami/needs-40g" '
                        'node="hami-a100-1" device="GPU-4a42c684-78ae-f63f-edf3-363f7e95780a" '
                        "device index=0 device total memory=81920 device used memory=70000 "
                        "request memory=40000")
    assert sum(1 for level, _ in lines if level == logging.DEBUG) == 6
    assert proposal_summary(nodes) == "no available node, 2 nodes do not meet"


def test_backslashes_and_newlines_in_log_values_are_escaped() -> None:
    # one log line per record, whatever a pod or node name or a reason holds
    nodes = [NodeReport(name="n1", outcome='path C:\\data\nnext "line"'),
             NodeReport(name="n\\2", outcome="fit", score=1.0)]
    assert log_lines("ml/train\n", nodes) == [
        (logging.INFO, 'NodeUnfitPod pod="ml/train\\n" node="n1" '
                       'reason="path C:\\\\data\\nnext \\"line\\""'),
        (logging.INFO, 'NodeFitPod pod="ml/train\\n" node="n\\\\2" score="1.00"')]


def test_a_percentage_request_says_its_memory_on_each_card() -> None:
    devices = [Device(uuid="GPU-0", index=0, type="T4", memory_used=12000, memory_total=15360,
                      code="CardInsufficientMemory"),
               Device(uuid="GPU-1", index=1, type="A100", memory_used=70000, memory_total=81920,
                      code="CardInsufficientMemory")]
    nodes = [NodeReport(name="n3", outcome="2/2 CardInsufficientMemory", devices=devices)]
    request = HamiRequest(count=1, mem=None, mem_percentage=25, cores=0)
    assert [line for _, line in log_lines("ml/train", nodes, request)[1:]] == [
        'CardInsufficientMemory pod="ml/train" node="n3" device="GPU-0" device index=0 '
        "device total memory=15360 device used memory=12000 request memory=3840",
        'CardInsufficientMemory pod="ml/train" node="n3" device="GPU-1" device index=1 '
        "device total memory=81920 device used memory=70000 request memory=20480"]
