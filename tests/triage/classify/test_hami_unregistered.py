"""device-unfit when the one node a HAMi pod may use is not registered with HAMi (the
hami-unregistered recording), read as a whole sentence."""

from __future__ import annotations

from tests.paths import FIXTURES
from triage.classify import triage
from triage.refs import parse_ref
from triage.snapshot import Snapshot

SCENARIO = FIXTURES / "scenarios-extra" / "hami-unregistered"


def test_one_unregistered_node_is_named_alone() -> None:
    verdict = triage(Snapshot.from_dir(SCENARIO), parse_ref("share/plain-only"))
    assert (verdict.cause, verdict.action) == (
        "device-unfit",
        "whole-GPU slots exist, but no device fits 1 card(s) × 8000 MiB / 100 cores: hami-plain:"
        " node unregistered. hami-plain is not registered with HAMi (check hami-device-plugin"
        " there).")
    assert [(e.object, e.field, e.value) for e in verdict.evidence] == [
        ("Node/hami-plain", "hami.io/node-nvidia-register", "node unregistered")]
