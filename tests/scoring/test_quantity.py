"""Kubernetes quantities: every suffix, the exponent form, and what is not a quantity."""

from __future__ import annotations

from decimal import Decimal

import pytest

from scoring.quantity import QuantityError, parse_quantity, quantity_int


# Expected values written out, not computed from the suffix table under test.
@pytest.mark.parametrize(("text", "value"), [
    ("4", 4), ("1k", 1_000), ("1M", 1_000_000), ("1G", 1_000_000_000),
    ("1T", 1_000_000_000_000), ("1P", 1_000_000_000_000_000),
    ("1E", 1_000_000_000_000_000_000),
    ("1Ki", 1_024), ("1Mi", 1_048_576), ("1Gi", 1_073_741_824), ("1Ti", 1_099_511_627_776),
    ("1Pi", 1_125_899_906_842_624), ("1Ei", 1_152_921_504_606_846_976),
    ("1500n", Decimal("0.0000015")), ("2500u", Decimal("0.0025")), ("500m", Decimal("0.5")),
    ("1.5Gi", 1_610_612_736), (".5k", 500), ("3.", 3), ("+2", 2), ("-2Mi", -2_097_152),
    ("12e6", 12_000_000), ("1E3", 1_000), ("5e-3", Decimal("0.005")), ("2e+2", 200),
    (" 8 ", 8),
])
def test_every_suffix_and_form_parses_to_its_value(text: str, value: int | Decimal) -> None:
    assert parse_quantity(text) == value


@pytest.mark.parametrize("text", ["4x", "4Gix", "1e3k", "Gi", "", "1 Gi", "1.2.3", "1e", "0x10",
                                  "1KI", "1mi"])
def test_text_that_is_no_quantity_is_refused_by_name(text: str) -> None:
    with pytest.raises(QuantityError) as refused:
        parse_quantity(text)
    assert str(refused.value) == f"not a quantity: {text.strip()!r}"


@pytest.mark.parametrize(("value", "parsed"), [(4, 4), (0, 0), (2.5, Decimal("2.5"))])
def test_numbers_from_yaml_are_quantities(value: int | float, parsed: Decimal) -> None:
    assert parse_quantity(value) == parsed


@pytest.mark.parametrize("value", [True, None, ["1"], {"1": 1}])
def test_other_json_values_are_refused(value: object) -> None:
    with pytest.raises(QuantityError) as refused:
        parse_quantity(value)
    assert str(refused.value) == f"not a quantity: {value!r}"


def test_quantity_int_truncates_and_an_unparsable_value_counts_as_none() -> None:
    assert quantity_int("8") == 8
    assert quantity_int("1500m") == 1
    assert quantity_int("four") == 0  # an unreadable allocatable is no GPU, never one
    assert quantity_int(None) == 0
    assert quantity_int("four", default=7) == 7
