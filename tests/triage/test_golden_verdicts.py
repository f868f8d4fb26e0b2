"""Every answer gpuwhy gives on every recorded cluster, pinned byte for byte.

``tests/fixtures/golden-verdicts/<scenario>.json`` holds, for every ref of the scenario's
expected.json, the whole Verdict JSON and the terminal text, under the default settings and
under the spread policy; ``generated.json`` the same for 3 pending pods of each kind of a small
cluster from bench/generate.py (many nodes per answer: scores, summaries, device lists). They
were written by the code as it was before the funnel became one
pass over a node table, so any change of answer, wording, order or score shows here.

An intended change of answer: regenerate only the affected scenario with
``python -m tests.triage.test_golden_verdicts SCENARIO`` and say why in the commit.
"""

from __future__ import annotations

import json
import sys
import tempfile
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from bench.generate import generate, pending_refs
from bot.answer.render import render_text
from tests.paths import FIXTURES
from triage.classify import triage
from triage.config import TriageConfig
from triage.refs import parse_ref
from triage.slim import slim_outside
from triage.snapshot import Snapshot

GOLDEN = FIXTURES / "golden-verdicts"
SCENARIO_DIRS = {p.name: p for group in ("scenarios", "scenarios-extra")
                 for p in sorted((FIXTURES / group).iterdir()) if (p / "expected.json").exists()}
CONFIGS = {"default": TriageConfig(), "spread": TriageConfig(node_policy="spread")}
GENERATED = "generated"
GENERATED_SIZE = {"nodes": 40, "pods": 900, "seed": 9}


def answers(scenario: str) -> dict[str, Any]:
    if scenario == GENERATED:
        with tempfile.TemporaryDirectory() as directory:
            generate(directory, **GENERATED_SIZE)
            snapshot = Snapshot.from_dir(directory)
        refs = pending_refs()[:30]
    else:
        snapshot = Snapshot.from_dir(SCENARIO_DIRS[scenario])
        refs = json.loads((SCENARIO_DIRS[scenario] / "expected.json").read_text(encoding="utf-8"))
    result: dict[str, Any] = {}
    for ref in refs:
        for config_name, config in CONFIGS.items():
            verdict = triage(snapshot, parse_ref(ref), config)
            result[f"{ref} [{config_name}]"] = {"verdict": verdict.to_dict(),
                                                "text": render_text(verdict)}
    return result


def encode(value: Any) -> str:
    return json.dumps(value, indent=1, ensure_ascii=False) + "\n"


def _golden(scenario: str) -> dict[str, Any]:
    stored: dict[str, Any] = json.loads((GOLDEN / f"{scenario}.json").read_text(encoding="utf-8"))
    return stored


_ANSWERS: dict[str, dict[str, Any]] = {}


def _answers(scenario: str) -> dict[str, Any]:
    if scenario not in _ANSWERS:
        _ANSWERS[scenario] = answers(scenario)
    return _ANSWERS[scenario]


ALL = [*SCENARIO_DIRS, GENERATED]
CASES = [pytest.param(scenario, key, id=f"{scenario}:{key}")
         for scenario in ALL if (GOLDEN / f"{scenario}.json").exists()
         for key in _golden(scenario)]


def test_every_scenario_has_goldens_for_every_ref() -> None:
    assert sorted(p.stem for p in GOLDEN.glob("*.json")) == sorted(ALL)
    for scenario in ALL:
        assert list(_golden(scenario)) == list(_answers(scenario)), scenario


@pytest.mark.parametrize(("scenario", "key"), CASES)
def test_answer_is_unchanged(scenario: str, key: str) -> None:
    assert encode(_answers(scenario)[key]) == encode(_golden(scenario)[key])


@pytest.mark.parametrize("scenario", ALL)
def test_answers_are_unchanged_with_other_namespaces_read_slim(scenario: str) -> None:
    # what `gpuwhy triage NS/NAME --snapshot DIR` reads: pods outside NS slimmed as read
    golden = _golden(scenario)
    refs = sorted({key.rsplit(" [", 1)[0] for key in golden})
    with tempfile.TemporaryDirectory() as generated:
        if scenario == GENERATED:
            generate(generated, **GENERATED_SIZE)
        directory = Path(generated) if scenario == GENERATED else SCENARIO_DIRS[scenario]
        for namespace in sorted({parse_ref(ref).namespace for ref in refs}):
            snapshot = Snapshot.from_dir(directory, keep_pod=partial(slim_outside, namespace))
            for ref in refs:
                if parse_ref(ref).namespace == namespace:
                    verdict = triage(snapshot, parse_ref(ref)).to_dict()
                    assert encode(verdict) == encode(golden[f"{ref} [default]"]["verdict"]), ref


def test_golden_files_are_byte_identical() -> None:
    for scenario in ALL:
        stored = (GOLDEN / f"{scenario}.json").read_text(encoding="utf-8")
        assert encode(_answers(scenario)) == stored, scenario


if __name__ == "__main__":
    GOLDEN.mkdir(exist_ok=True)
    for name in sys.argv[1:] or ALL:
        (GOLDEN / f"{name}.json").write_text(encode(answers(name)), encoding="utf-8")
        print(f"wrote {GOLDEN / name}.json")
