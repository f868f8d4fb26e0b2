"""The floor of a cold answer, as a process: import the kubernetes client, then send the
requests a gpuwhy run made, raw and in parallel, reading each answer without decoding it.

Run by bench/__main__.py: python -m bench.replay REQUESTS.json
REQUESTS.json: {"server": URL, "token": TOKEN, "paths": [path?query, ...]}. Continue tokens
recorded in the paths are replayed as they were sent (the test API server keeps no history
to expire them against), so every page goes out at once instead of one after another. Each
thread keeps one HTTP/1.1 connection open (http.client, what urllib is built on), as the
client's connection pool does.
"""

from __future__ import annotations

import http.client
import json
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

# gpuwhy's own parallelism: the node list beside the pods, eight node-pinned reads at a time
PARALLEL = 8


def main() -> int:
    # what any client of the official library loads before its first request
    import kubernetes.client
    import kubernetes.config  # noqa: F401

    plan = json.loads(Path(sys.argv[1]).read_text())
    headers = {"Authorization": f"Bearer {plan['token']}", "Accept": "application/json"}

    server = urlsplit(plan["server"])
    connections = threading.local()

    def fetch(path: str) -> int:
        connection = getattr(connections, "one", None)
        if connection is None:
            connection = connections.one = http.client.HTTPConnection(
                server.hostname or "127.0.0.1", server.port)
        connection.request("GET", path, headers=headers)
        return len(connection.getresponse().read())

    with ThreadPoolExecutor(PARALLEL) as pool:
        received = sum(pool.map(fetch, plan["paths"]))
    print(received)
    return 0


if __name__ == "__main__":
    sys.exit(main())
