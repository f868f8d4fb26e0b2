"""Only the DRA row builder reads the API objects' shapes: the fit, capacity, binding, CEL
and the DRA checks read rows. A read is a ``.get("<field>")`` or ``["<field>"]`` with a
field name the builder itself reads off the objects, or a node's ``.raw``."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.paths import REPO as ROOT

# The row-building step: these read ResourceSlices, claims, classes, rules and a pod's claims.
BUILDERS = ("scoring/dra/build.py", "scoring/dra/build_devices.py", "scoring/dra/taint_rules.py")
# Read off the rows too, under the same names: a capacity's name, not an object's field.
ROW_KEYS = {"memory"}
READERS = sorted({*(ROOT / "scoring" / "dra").glob("*.py"),
                  *(ROOT / "scoring" / "cel").glob("*.py"),
                  *(ROOT / "triage" / "classify" / "checks").glob("dra*.py")}
                 - {ROOT / path for path in BUILDERS})


def _reads(source: str) -> list[tuple[int, str]]:
    """(line, key) of every constant-key ``.get`` and subscript, and every ``.raw``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "get" and node.args
                and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            found.append((node.lineno, node.args[0].value))
        elif (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant)
              and isinstance(node.slice.value, str)):
            found.append((node.lineno, node.slice.value))
        elif isinstance(node, ast.Attribute) and node.attr == "raw":
            found.append((node.lineno, ".raw"))
    return found


def _fields() -> set[str]:
    return {key for path in BUILDERS for _, key in _reads((ROOT / path).read_text())} - ROW_KEYS


def _raw_reads(source: str, fields: set[str]) -> list[str]:
    return [f"line {line}: {key}" for line, key in _reads(source)
            if key in fields or key == ".raw"]


def test_the_builder_is_where_the_object_fields_are_read() -> None:
    fields = _fields()
    assert {"spec", "status", "devices", "attributes", "allocation", "reservedFor",
            "resourceClaims", "extendedResourceName"} <= fields


@pytest.mark.parametrize("path", READERS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_other_dra_module_reads_an_object_shape(path: Path) -> None:
    assert _raw_reads(path.read_text(), _fields()) == []


@pytest.mark.parametrize("read", ['claim.get("status") or {}', 'device["attributes"]',
                                  "node.raw", "(spec.get('devices') or {})"])
def test_a_raw_read_is_caught(read: str) -> None:
    assert _raw_reads(f"def f(claim, device, node, spec):\n    return {read}\n",
                      _fields()) != []


def test_a_row_read_is_not() -> None:
    source = "def f(claim, shares):\n    return claim.results, shares.consumed.get('memory')\n"
    assert _raw_reads(source, _fields()) == []
