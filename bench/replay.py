"""The floor of a cold answer, as a process: import the kubernetes client, then send the
requests a gpuwhy run made, raw and in parallel, reading each answer without decoding it.

Run by bench/__main__.py: python -m bench.replay REQUESTS.json
REQUESTS.json: {"server": URL, "token": TOKEN, "paths": [path?query, ...]}. Continue tokens
recorded in the paths are replayed as they were sent (the test API server keeps no history
to expire them against), so every page goes out at once instead of one after another.
"""

from __future__ import annotations

import json
import sys
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

# gpuwhy's own parallelism: the node list beside the pods, eight node-pinned reads at a time
PARALLEL = 8


def main() -> int:
    # what any client of the official library loads before its first request
    import kubernetes.client
    import kubernetes.config  # noqa: F401

    plan = json.loads(Path(sys.argv[1]).read_text())
    headers = {"Authorization": f"Bearer {plan['token']}", "Accept": "application/json"}

    def fetch(path: str) -> int:
        request = urllib.request.Request(plan["server"] + path, headers=headers)
        with urllib.request.urlopen(request) as response:
            return len(response.read())

    with ThreadPoolExecutor(PARALLEL) as pool:
        received = sum(pool.map(fetch, plan["paths"]))
    print(received)
    return 0


if __name__ == "__main__":
    sys.exit(main())
