"""The floor of a cold answer, as a process: import the kubernetes client, then send the
requests a gpuwhy run made, raw and in parallel, reading each answer without decoding it.

Run by bench/__main__.py: python -m bench.replay REQUESTS.json [--decode MODE]
REQUESTS.json: {"server": URL, "token": TOKEN, "paths": [path?query, ...]}. Continue tokens
recorded in the paths are replayed as they were sent (the test API server keeps no history
to expire them against), so every page goes out at once instead of one after another. Each
thread keeps one HTTP/1.1 connection open (http.client, what urllib is built on), as the
client's connection pool does.

With --decode, each body is also decoded in the thread that received it, so the floor holds
what any client must pay to read the answers, not only to fetch them:
- json: ``json.loads`` of every body;
- msgspec: ``msgspec.json.decode`` of every body, untyped;
- fields: pod list pages decoded into Structs of only what a per-node free-GPU answer reads
  of a pod (namespace, name, node, each container's and init container's requests, phase),
  the other bodies as msgspec does;
- gpuwhy: pod list pages decoded as a cold gpuwhy read decodes them
  (``triage.cluster.read.kept_pods``, one per thread as one per list), the other bodies as
  msgspec does.
Prints the bytes received and the list items decoded (0 undecoded).
"""

from __future__ import annotations

import http.client
import json
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

# gpuwhy's own parallelism: the node list beside the pods, eight node-pinned reads at a time
PARALLEL = 8
POD_LIST = "/api/v1/pods"
DECODE_MODES = ("json", "msgspec", "fields", "gpuwhy")

Decode = Callable[[str, bytes], int]  # (the request's path, its body) -> list items decoded


def _undecoded(path: str, body: bytes) -> int:
    return 0


def _items_of(document: object) -> int:
    items = document.get("items") if isinstance(document, dict) else None
    return len(items) if isinstance(items, list) else 0


def _json(path: str, body: bytes) -> int:
    return _items_of(json.loads(body))


def _msgspec() -> Decode:
    import msgspec.json

    untyped = msgspec.json.Decoder().decode
    return lambda path, body: _items_of(untyped(body))


def _is_pod_list(path: str) -> bool:
    return urlsplit(path).path == POD_LIST


def _fields() -> Decode:
    from bench.podfields import pod_page

    others = _msgspec()
    return lambda path, body: (len(pod_page(body).items or ()) if _is_pod_list(path)
                               else others(path, body))


def _gpuwhy() -> Decode:
    """gpuwhy's own decode of a pod list page (``kept_page`` of ``kept_pods``), a reader per
    thread: a cold read's list decodes its pages one after another with one."""
    from triage.cluster.read import kept_pods
    from triage.cluster.resources import PODS

    readers = threading.local()
    others = _msgspec()

    def decode(path: str, body: bytes) -> int:
        if not _is_pod_list(path):
            return others(path, body)
        keep = getattr(readers, "one", None)
        if keep is None:
            keep = readers.one = kept_pods()
        cut = keep.kept_page(PODS, body)
        if cut is None:  # a page gpuwhy would parse whole: parsed whole here too
            return others(path, body)
        return len(cut[1])

    return decode


def decoder(mode: str | None) -> Decode:
    if mode is None:
        return _undecoded
    # each mode imports its decoder only when asked: the undecoded floor loads nothing more
    return {"json": lambda: _json, "msgspec": _msgspec, "fields": _fields,
            "gpuwhy": _gpuwhy}[mode]()


def replay(plan: dict[str, Any], decode: Decode) -> tuple[int, int]:
    """(bytes received, list items decoded) of the plan's requests, PARALLEL at a time."""
    headers = {"Authorization": f"Bearer {plan['token']}", "Accept": "application/json"}
    server = urlsplit(plan["server"])
    connections = threading.local()

    def fetch(path: str) -> tuple[int, int]:
        connection = getattr(connections, "one", None)
        if connection is None:
            connection = connections.one = http.client.HTTPConnection(
                server.hostname or "127.0.0.1", server.port)
        connection.request("GET", path, headers=headers)
        body = connection.getresponse().read()
        return len(body), decode(path, body)

    with ThreadPoolExecutor(PARALLEL) as pool:
        answers = list(pool.map(fetch, plan["paths"]))
    return sum(size for size, _ in answers), sum(items for _, items in answers)


def main() -> int:
    # what any client of the official library loads before its first request
    import kubernetes.client
    import kubernetes.config  # noqa: F401

    # sys.argv read by hand: the undecoded floor imports nothing gpuwhy's run does not
    plan, *rest = sys.argv[1:]
    if rest and (len(rest) != 2 or rest[0] != "--decode" or rest[1] not in DECODE_MODES):
        print(f"usage: python -m bench.replay REQUESTS.json [--decode {'|'.join(DECODE_MODES)}]",
              file=sys.stderr)
        return 2
    received, items = replay(json.loads(Path(plan).read_text()),
                             decoder(rest[1] if rest else None))
    print(received, items)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
