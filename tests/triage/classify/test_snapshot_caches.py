"""A Snapshot keeps what triages work out (node usage, HAMi fits) for the triages after them;
no answer may depend on which answers came before it on the same Snapshot."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.generate import generate, pending_refs
from tests.triage.test_golden_verdicts import CONFIGS, GENERATED_SIZE, SCENARIO_DIRS
from triage.classify import triage
from triage.refs import parse_ref
from triage.snapshot import Snapshot


def _refs(directory: Path) -> list[str]:
    expected = directory / "expected.json"
    if expected.exists():
        return list(json.loads(expected.read_text(encoding="utf-8")))
    return pending_refs()[:30]


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # the goldens' generated cluster: a HAMi pool, pending pods of each kind asking alike
    directory = tmp_path_factory.mktemp("generated")
    generate(directory, **GENERATED_SIZE)
    return directory


@pytest.mark.parametrize("scenario", [*SCENARIO_DIRS, "generated"])
@pytest.mark.parametrize("config", list(CONFIGS))
def test_an_answer_is_the_same_on_a_fresh_snapshot_and_after_every_other(
        scenario: str, config: str, generated: Path) -> None:
    directory = generated if scenario == "generated" else SCENARIO_DIRS[scenario]
    refs = _refs(directory)
    shared = Snapshot.from_dir(directory)
    for ref in refs:
        triage(shared, parse_ref(ref), CONFIGS[config])
    for ref in reversed(refs):
        after_others = triage(shared, parse_ref(ref), CONFIGS[config]).to_dict()
        fresh = triage(Snapshot.from_dir(directory), parse_ref(ref), CONFIGS[config]).to_dict()
        assert after_others == fresh, ref


def test_pods_asking_alike_share_one_hami_fit_per_node(generated: Path) -> None:
    snapshot = Snapshot.from_dir(generated)
    first, second = [parse_ref(r) for r in pending_refs() if "/hami-40g-" in r][:2]
    triage(snapshot, first)
    fits = dict(snapshot.rows._hami_fits)
    assert fits, "the HAMi pod's triage judged no HAMi node"
    triage(snapshot, second)
    assert snapshot.rows._hami_fits == fits  # the second pod asked alike: nothing new worked out
    fit = next(iter(fits.values()))
    # each read gives new rows: an answer marking its node's outcome on them marks only its own
    assert fit.devices == fit.devices and fit.devices[0] is not fit.devices[0]
