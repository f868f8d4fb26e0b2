from __future__ import annotations

import pytest

from triage.refs import USAGE, PodRef, RefError, parse_ref


@pytest.mark.parametrize(("text", "ref"), [
    ("research/full", PodRef("research", "full")),
    ("research full", PodRef("research", "full")),
    ("-n research full", PodRef("research", "full")),
    ("pod/full -n research", PodRef("research", "full")),
    ("  research/full  ", PodRef("research", "full")),
    ("--namespace=ml job/finetune", PodRef("ml", "finetune")),
    ("db db-0", PodRef("db", "db-0")),
])
def test_accepted_forms(text: str, ref: PodRef) -> None:
    assert parse_ref(text) == ref


@pytest.mark.parametrize(("text", "says"), [
    ("", "usage"),
    ("research", "usage"),
    ("research full extra", "usage"),
    ("Research/full", "not a valid namespace"),
    ("research/Full_1", "not a valid pod"),
    ("a" * 400, "characters"),
    ("-n a -n b pod", "usage"),
])
def test_rejected_with_a_clear_message(text: str, says: str) -> None:
    with pytest.raises(RefError) as error:
        parse_ref(text)
    assert says in str(error.value)


@pytest.mark.parametrize("text", [
    "research/full extra",
    "research/full\nextra",
    "research/\nfull",
    "research\nfull",
    "research/full\r\nml/finetune",
    "-n research\nfull",
])
def test_extra_words_and_line_breaks_get_the_usage_line(text: str) -> None:
    """Not "`research/full` is not a valid namespace name": the ref itself is fine."""
    with pytest.raises(RefError) as error:
        parse_ref(text)
    assert str(error.value) == USAGE


def test_surrounding_line_breaks_are_ignored() -> None:
    assert parse_ref("\nresearch/full\n") == PodRef("research", "full")
