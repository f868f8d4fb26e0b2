"""A triage reads the pods it needs through indexes built once, never all pods again."""

from __future__ import annotations

from typing import Any

from tests.conftest import load_lists
from triage.classify import triage
from triage.refs import parse_ref
from triage.snapshot import Snapshot


class CountingList(list[dict[str, Any]]):
    """A pod list that counts full passes over it."""

    passes = 0

    def __iter__(self) -> Any:
        CountingList.passes += 1
        return super().__iter__()


def test_triage_does_not_rescan_all_pods() -> None:
    lists = load_lists("seven-states")
    lists["pods"] = CountingList(lists["pods"])
    snapshot = Snapshot(**lists)
    refs = ("research/full", "research/big", "research/ok", "ml/finetune", "research/typo")
    for ref in refs:  # the first round builds the indexes it needs, once each
        triage(snapshot, parse_ref(ref))
    after_first_round = CountingList.passes
    assert after_first_round <= 4  # one pass per index (by key, node, namespace, owner)
    for ref in refs:
        triage(snapshot, parse_ref(ref))
    assert CountingList.passes == after_first_round
