"""The error of a CEL device selector, in a module of its own: code that only handles it (the
DRA stage of a pod asking for no DRA device) does not load the CEL interpreter."""

from __future__ import annotations


class SelectorError(Exception):
    """A selector that cannot be compiled or evaluated on a device; the message says why."""
