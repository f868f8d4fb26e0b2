"""Every triage source logs the per-node facts with pod and node, whoever asked."""

from __future__ import annotations

import logging

import pytest

from bot.clusters.sources import SnapshotSource
from tests.conftest import SCENARIOS
from triage.refs import parse_ref


def test_snapshot_source_logs_node_lines(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="gpuwhy.triage")
    SnapshotSource(SCENARIOS / "seven-states").triage(parse_ref("research/big"))
    info = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert 'NodeUnfitPod pod="research/big" node="gpu-a100-1" reason="too-large"' in info
    assert len(info) == 6  # one line per node


def test_fit_nodes_log_their_score(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="gpuwhy.triage")
    SnapshotSource(SCENARIOS / "hami-sharing").triage(parse_ref("hami/fits-small"))
    assert 'NodeFitPod pod="hami/fits-small" node="hami-t4-1" score="2.80"' in caplog.text
