"""What a person types to name a pod or workload: "ns/pod", "ns pod", "-n ns pod", "pod/x -n ns"."""

from __future__ import annotations

import re
from dataclasses import dataclass

# RFC 1123 label (namespace) and subdomain (object name), as the API server validates them.
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_KIND_PREFIXES = ("pod/", "pods/", "po/", "job/", "jobs/", "deployment/", "deploy/",
                  "deployments/", "statefulset/", "sts/", "statefulsets/", "replicaset/",
                  "rs/", "replicasets/", "daemonset/", "ds/", "daemonsets/")
MAX_INPUT = 300
_LINE_BREAK = re.compile(r"[\r\n\v\f\u2028\u2029]")

USAGE = ("usage: /gpuwhy NAMESPACE/POD  "
         "(also: NAMESPACE POD, -n NAMESPACE POD, pod/POD -n NAMESPACE)")


class RefError(ValueError):
    """Input that names no pod; the message is safe to show to the user."""


@dataclass(frozen=True)
class PodRef:
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


def parse_ref(text: str) -> PodRef:
    if len(text) > MAX_INPUT:
        raise RefError(f"that is {len(text)} characters; a pod reference is shorter. {USAGE}")
    if _LINE_BREAK.search(text.strip()):
        # A pasted block (kubectl output, several refs) names no single pod.
        raise RefError(USAGE)
    words = text.split()
    namespace, rest = _take_namespace_flag(words)
    if namespace is None and len(rest) == 1 and "/" in rest[0]:
        # Without -n, "a/b" is namespace/name even when "a" reads like a kind (ns "ds").
        namespace, _, name = rest[0].partition("/")
        if "/" in name:
            raise RefError(f"`{_clip(rest[0])}` has more than one `/`. {USAGE}")
        rest = [name]
    elif namespace is None and len(rest) == 2 and "/" not in rest[0]:
        namespace, rest = rest[0], rest[1:]
    if namespace is None or len(rest) != 1:
        raise RefError(USAGE)
    name = _strip_kind(rest[0])
    if not _LABEL.match(namespace) or len(namespace) > 63:
        raise RefError(f"`{_clip(namespace)}` is not a valid namespace name. {USAGE}")
    if not _SUBDOMAIN.match(name) or len(name) > 253:
        raise RefError(f"`{_clip(name)}` is not a valid pod or workload name. {USAGE}")
    return PodRef(namespace, name)


def _take_namespace_flag(words: list[str]) -> tuple[str | None, list[str]]:
    rest: list[str] = []
    namespace: str | None = None
    position = 0
    while position < len(words):
        word = words[position]
        if word in ("-n", "--namespace") and position + 1 < len(words):
            if namespace is not None:
                raise RefError(USAGE)
            namespace = words[position + 1]
            position += 2
            continue
        if word.startswith("--namespace=") or (word.startswith("-n") and len(word) > 2):
            if namespace is not None:
                raise RefError(USAGE)
            namespace = word.split("=", 1)[1] if "=" in word else word[2:]
        else:
            rest.append(word)
        position += 1
    return namespace, rest


def _strip_kind(word: str) -> str:
    lowered = word.lower()
    for prefix in _KIND_PREFIXES:
        if lowered.startswith(prefix):
            return word[len(prefix):]
    return word


def _clip(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[:limit] + "…"
