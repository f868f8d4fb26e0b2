"""A dump file read one item at a time gives exactly what json.load gives, at any chunk size."""

from __future__ import annotations

import gc
import io
import json
import threading
from typing import Any

import pytest

from tests.conftest import SCENARIOS
from triage import dumpfile
from triage.dumpfile import DumpFileError, bulk_parse, read_items


@pytest.mark.parametrize("chunk", [7, 300, 1 << 22])
@pytest.mark.parametrize("name", ["pods", "nodes", "events"])
def test_items_equal_a_whole_parse_at_every_chunk_size(
        chunk: int, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    text = (SCENARIOS / "hami-sharing" / f"{name}.json").read_text(encoding="utf-8")
    monkeypatch.setattr(dumpfile, "CHUNK", chunk)
    assert read_items(io.StringIO(text)) == json.loads(text)["items"]


@pytest.mark.parametrize("chunk", [1, 3, 1 << 22])
def test_compact_json_with_items_last_and_numbers_across_chunks(
        chunk: int, monkeypatch: pytest.MonkeyPatch) -> None:
    document = {"kind": "List", "metadata": {"resourceVersion": "12345678"},
                "items": [{"metadata": {"name": "a"}, "n": 1234567890, "f": 1.5e10},
                          {"metadata": {"name": "b"}, "u": "ünïcode ✓", "z": None}],
                "trailer": [1, 2, 3]}
    text = json.dumps(document, separators=(",", ":"), ensure_ascii=False)
    monkeypatch.setattr(dumpfile, "CHUNK", chunk)
    assert read_items(io.StringIO(text)) == document["items"]


def test_each_item_goes_through_keep_as_it_is_read() -> None:
    text = json.dumps({"items": [{"metadata": {"name": n}, "big": "x" * 100} for n in "abc"]})
    kept = read_items(io.StringIO(text), lambda item: {"metadata": item["metadata"]})
    assert kept == [{"metadata": {"name": n}} for n in "abc"]


@pytest.mark.parametrize(("text", "message"), [
    ("", "not valid JSON (line 1"),
    ("{not json", "not valid JSON (line 1"),
    ('{\n"items": [\n{"metadata": {}},\n{"metadata": {]\n]}', "not valid JSON (line 4"),
    ('{"items": [{"metadata": {}}] } extra', "not valid JSON (line 1: Extra data)"),
    ('{"items": [{"metadata": {}}', "not valid JSON"),
    ("[]", "not a Kubernetes List"),
    ('"a string"', "not a Kubernetes List"),
    ('{"kind": "Pod", "metadata": {"name": "x"}}', "not a Kubernetes List"),
    ('{"kind": "List", "items": {"a": 1}}', "not a Kubernetes List"),
    ('{"kind": "List", "items": [{"metadata": {}}, 1]}', "item 1 is not a Kubernetes object"),
    ('{"kind": "List", "items": [{"metadata": "x"}]}', "item 0 is not a Kubernetes object"),
])
def test_what_is_not_a_list_is_said_in_one_line(text: str, message: str,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dumpfile, "CHUNK", 5)
    with pytest.raises(DumpFileError) as error:
        read_items(io.StringIO(text))
    assert str(error.value).startswith(message) and "\n" not in str(error.value)


def test_no_collection_during_a_bulk_parse_and_its_objects_frozen() -> None:
    made: list[Any] = []
    before = gc.get_freeze_count()
    with bulk_parse():
        assert not gc.isenabled()
        made.extend({"n": i} for i in range(1000))
    assert gc.isenabled()
    assert gc.get_freeze_count() >= before + 1000


def test_a_bulk_parse_without_freeze_leaves_its_objects_collectable() -> None:
    with bulk_parse(freeze=False):
        assert not gc.isenabled()
        made = [{"n": i} for i in range(1000)]
    assert gc.isenabled() and made
    # A frozen object is in no generation the collector walks; the freeze count alone would
    # also move when another thread's frozen objects are freed meanwhile.
    assert any(tracked is made for tracked in gc.get_objects())


class Parsed:
    """An object a bulk parse made, to find after the parse: frozen or not."""


def test_overlapping_bulk_parses_hold_the_collector_until_the_last_ends() -> None:
    second_in, first_out = threading.Event(), threading.Event()
    seen: list[bool] = []
    made: list[Parsed] = []

    def second() -> None:
        with bulk_parse():
            made.append(Parsed())
            second_in.set()
            first_out.wait(5)
            seen.append(gc.isenabled())  # the first one ended: still held for this one

    with bulk_parse(freeze=False):
        worker = threading.Thread(target=second)
        worker.start()
        assert second_in.wait(5)
    first_out.set()
    worker.join(5)
    assert seen == [False]
    assert gc.isenabled()
    # The second one asked to freeze: what it made sits in no generation a collection walks
    # (the freeze count alone would not say so: frozen objects of earlier tests die meanwhile).
    assert not any(obj is made[0] for obj in gc.get_objects())
