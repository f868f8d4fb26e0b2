"""One dump file (a ``kubectl get -o json`` List), parsed one item at a time.

A 1.2 GB pods.json is never held as text and as objects at once: the file is read in
chunks and each item is decoded by the json module's own C scanner as soon as it is whole,
then handed to ``keep`` (which may slim it) before the next is read. The garbage collector is
held off meanwhile: a bulk parse makes only new objects that live on, and every collection
on the way would walk them all again.
"""

from __future__ import annotations

import gc
import json
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any, TextIO

from scoring.objects import K8sObject

CHUNK = 1 << 22  # characters read at a time
MAX_VALUE = 1 << 26  # a single value longer than this is not waited for: the file is broken
# An item is decoded only with at least this much text ahead of it (or the end of the file):
# a decode that runs off the end of the buffer is thrown away, and its error counts the
# buffer's lines.
AHEAD = 1 << 16
_SPACE = re.compile(r"[ \t\n\r]*")


class DumpFileError(ValueError):
    """The file is not a Kubernetes List; the message says why (no file name)."""


class _Collector:
    """The garbage collector held off while any bulk parse runs (the watch cache lists several
    resources at once, each from its own thread): the first to start disables it, the last to
    end enables it again if it was on, and freezes what they made if one of them asked to."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._parses = 0
        self._was_enabled = False
        self._freeze = False

    @contextmanager
    def held(self, freeze: bool) -> Iterator[None]:
        with self._lock:
            if not self._parses:
                self._was_enabled, self._freeze = gc.isenabled(), False
                gc.disable()
            self._parses += 1
            self._freeze = self._freeze or freeze
        try:
            yield
        finally:
            with self._lock:
                self._parses -= 1
                if not self._parses:
                    if self._was_enabled:
                        gc.enable()
                    if self._freeze:
                        gc.freeze()
                        _young_threshold_for_answers()


# An answer's Verdict holds a report per node (5,000 and more) while it is rendered; young
# collections at the default 700 objects would move each answer's reports into the oldest
# generation and so bring on a full collection every hundred answers or so.
ANSWER_OBJECTS = 50_000


def _young_threshold_for_answers() -> None:
    """Once the long-lived objects are frozen, only young ones are left to collect: let an
    answer's objects die by reference counting before a collection walks them."""
    young, middle, old = gc.get_threshold()
    if young and young < ANSWER_OBJECTS:
        gc.set_threshold(ANSWER_OBJECTS, middle, old)


_COLLECTOR = _Collector()  # one per process, as the garbage collector is


def bulk_parse(freeze: bool = True) -> AbstractContextManager[None]:
    """No garbage collection during a bulk parse; with ``freeze``, what it made is frozen
    afterwards, so later collections do not walk the snapshot's objects again (for a snapshot
    kept for good: frozen objects are never collected)."""
    return _COLLECTOR.held(freeze)


def one_answer() -> AbstractContextManager[None]:
    """No garbage collection while one triage runs. A triage holds a report per node (5,000
    of them) until its Verdict is out, then frees them all by reference counting; collections
    on the way would only walk them, move them to the oldest generation and so bring on a
    full collection every few triages. A triage leaves no cycles (tests/triage/cluster/
    test_freed.py), so its Snapshot, rows and reports go when their last reference does."""
    return _COLLECTOR.held(False)


class _Reader:
    def __init__(self, file: TextIO) -> None:
        self.file = file
        self.text = ""
        self.pos = 0
        self.eof = False
        self.dropped = 0  # characters of the file already dropped from the buffer
        self.decoder = json.JSONDecoder()

    def fill(self) -> bool:
        """Read more; False at the end of the file."""
        if self.eof:
            return False
        chunk = self.file.read(CHUNK)
        if not chunk:
            self.eof = True
            return False
        self.dropped += self.pos
        self.text = self.text[self.pos:] + chunk
        self.pos = 0
        return True

    def line(self, pos: int) -> int:
        """The line of ``pos`` in the buffer, counted from the file's start (only for an error
        message: the newlines of what was read are not counted on the way)."""
        if not self.dropped:
            return self.text.count("\n", 0, pos) + 1
        self.file.seek(0)
        return self.file.read(self.dropped).count("\n") + self.text.count("\n", 0, pos) + 1

    def skip_space(self) -> str:
        """The next character after white space ("" at the end of the file)."""
        while True:
            self.pos = _SPACE.match(self.text, self.pos).end()  # type: ignore[union-attr]
            if self.pos < len(self.text):
                return self.text[self.pos]
            if not self.fill():
                return ""

    def expect(self, characters: str) -> str:
        found = self.skip_space()
        if not found or found not in characters:
            wanted = " or ".join(repr(c) for c in characters)
            raise DumpFileError(f"not valid JSON (line {self.line(self.pos)}: "
                                f"Expecting {wanted})")
        self.pos += 1
        return found

    def value(self) -> Any:
        self.skip_space()
        if len(self.text) - self.pos < AHEAD:
            self.fill()
        while True:
            try:
                value, end = self.decoder.raw_decode(self.text, self.pos)
            except json.JSONDecodeError as exc:
                if len(self.text) - self.pos < MAX_VALUE and self.fill():
                    continue
                raise DumpFileError(f"not valid JSON (line {self.line(exc.pos)}: "
                                    f"{exc.msg})") from exc
            # a number may go on in the next chunk
            if end == len(self.text) and not self.eof and self.fill():
                continue
            self.pos = end
            return value


def read_items(file: TextIO, keep: Callable[[K8sObject], K8sObject] | None = None,
               ) -> list[K8sObject]:
    """The ``items`` of a List document, each passed through ``keep`` as it is decoded."""
    reader = _Reader(file)
    if reader.skip_space() != "{":
        if reader.skip_space() == "":
            raise DumpFileError("not valid JSON (line 1: Expecting value)")
        reader.value()  # valid JSON that is not an object, or the JSON error
        raise DumpFileError("not a Kubernetes List (expected kind: List with items)")
    reader.pos += 1
    items: list[K8sObject] | None = None
    if reader.skip_space() == "}":
        reader.pos += 1
    else:
        while True:
            key = reader.value()
            reader.expect(":")
            if key == "items" and reader.skip_space() == "[":
                items = _array(reader, keep)
            else:
                reader.value()
            if reader.expect(",}") == "}":
                break
    if reader.skip_space():
        raise DumpFileError(f"not valid JSON (line {reader.line(reader.pos)}: Extra data)")
    if items is None:
        raise DumpFileError("not a Kubernetes List (expected kind: List with items)")
    return items


def _array(reader: _Reader, keep: Callable[[K8sObject], K8sObject] | None) -> list[K8sObject]:
    reader.pos += 1  # the "["
    items: list[K8sObject] = []
    if reader.skip_space() == "]":
        reader.pos += 1
        return items
    while True:
        item = reader.value()
        if not isinstance(item, dict) or not isinstance(item.get("metadata"), dict):
            raise DumpFileError(f"item {len(items)} is not a Kubernetes object")
        items.append(keep(item) if keep is not None else item)
        if reader.expect(",]") == "]":
            return items


def read_list(path: Path, keep: Callable[[K8sObject], K8sObject] | None = None,
              ) -> list[K8sObject]:
    """A dump file's items; [] when the file does not exist. DumpFileError, OSError and
    UnicodeDecodeError when it cannot be used."""
    if not path.exists():
        return []
    with path.open(encoding="utf-8") as file:
        return read_items(file, keep)
