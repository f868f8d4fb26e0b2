""""Did you mean …?": the names in a namespace closest to one that names nothing (pure)."""

from __future__ import annotations

from rapidfuzz.distance import Levenshtein

from triage.refs import PodRef
from triage.rows import Rows

MAX_SUGGESTIONS = 3


def _limit(name: str) -> int:
    """Edits a typo may have: about one in three characters, at least one."""
    return max(1, (len(name) + 1) // 3)


def closest_names(rows: Rows, ref: PodRef, limit: int = MAX_SUGGESTIONS) -> list[str]:
    """Pods and workloads of the ref's namespace whose names are a few edits from the ref's
    name, nearest first (ties by name), as "ns/name".

    A name the ref starts ("train" for "train-a-7x2kq") counts as one edit: people type the
    front of a generated name.
    """
    namespace, typed = ref.namespace, ref.name
    names = set(rows.names_in(namespace))
    names.discard(typed)
    cutoff = _limit(typed)
    ranked = []
    for name in names:
        if name.startswith(typed + "-"):
            distance = 1
        else:
            distance = Levenshtein.distance(typed, name, score_cutoff=cutoff)
            if distance > cutoff:
                continue
        ranked.append((distance, name))
    return [f"{namespace}/{name}" for _, name in sorted(ranked)[:limit]]
