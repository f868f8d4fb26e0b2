"""The keys of a config file: a YAML mapping that names a key twice is an error (YAML would keep
the last one silently), and an unknown key gets the known key it most likely means.

The known keys are the fields of the schema's dataclasses, found by following the path of the
unknown key through the type hints (sections, lists of sections, mappings of sections).
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Mapping
from typing import Annotated, Any, Union, get_args, get_origin, get_type_hints

import yaml

SIMILAR = 85  # rapidfuzz WRatio: "clusterr" → cluster, "stale_after" → stale_after_seconds


class DuplicateKeyError(ValueError):
    """A mapping of the file names one key twice."""


class UniqueKeyLoader(yaml.SafeLoader):
    """yaml.safe_load, except that a key written twice in one mapping is an error."""

    def construct_mapping(self, node: yaml.MappingNode,
                          deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            if key in seen:
                raise DuplicateKeyError(f"line {line}: key {key!r} is given twice (first on "
                                        f"line {seen[key]}); give it once")
            seen[key] = line
        return super().construct_mapping(node, deep=deep)


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """json.loads' object_pairs_hook: each key at most once (json keeps the last silently)."""
    data: dict[str, Any] = {}
    for key, value in pairs:
        if key in data:
            raise DuplicateKeyError(f"key {key!r} is given twice; give it once")
        data[key] = value
    return data


def did_you_mean(root: type, path: list[str]) -> str:
    """`` (did you mean X?)`` for the unknown key at the end of ``path``, else ""."""
    section = root
    for part in path[:-1]:
        found = _inside(section, part)
        if found is None:
            return ""
        section = found
    section = _section(section)
    if not dataclasses.is_dataclass(section):
        return ""
    from rapidfuzz import fuzz, process  # loaded only for a config with a mistake

    known = [field.name for field in dataclasses.fields(section)]
    match = process.extractOne(path[-1], known, scorer=fuzz.WRatio, score_cutoff=SIMILAR)
    return "" if match is None else f" (did you mean {match[0]}?)"


def _inside(hint: Any, part: str) -> Any:
    """The type of ``part`` (a field, a list index, a mapping key) within ``hint``."""
    if get_origin(hint) is Annotated:
        return _inside(get_args(hint)[0], part)
    if get_origin(hint) in (Union, types.UnionType):
        for member in get_args(hint):
            if (found := _inside(member, part)) is not None:
                return found
        return None
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return get_type_hints(hint, include_extras=True).get(part)
    origin, args = get_origin(hint), get_args(hint)
    if origin is tuple and args and part.isdigit():
        return _section(args[0])
    if origin in (dict, Mapping) and len(args) == 2:
        return _section(args[1])
    return None


def _section(hint: Any) -> Any:
    """A list's or mapping's item type, with the union of shapes it may take reduced to the
    section (dataclass) among them, if any."""
    if get_origin(hint) is Annotated:
        return _section(get_args(hint)[0])
    if get_origin(hint) in (Union, types.UnionType):
        sections = [_section(member) for member in get_args(hint)]
        return next((s for s in sections if dataclasses.is_dataclass(s)), hint)
    return hint
