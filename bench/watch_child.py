"""The watch cache side of ``python -m bench``, in its own process so its RSS is its own.

Run by bench/__main__.py: python -m bench.watch_child KUBECONFIG REF...
Prints a JSON line the moment the cache is ready (time to ready, CPU time until then, RSS),
then one more: RSS after the triages and API requests per triage of each ref from the cache.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any


def rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def main() -> int:
    from bot.clusters.sources import WatchSource
    from triage.classify import triage
    from triage.cluster import load_api_client
    from triage.refs import parse_ref

    kubeconfig, *refs = sys.argv[1:]
    client = load_api_client(kubeconfig)
    cpu_started, started = time.process_time(), time.perf_counter()
    source = WatchSource(api_client=client, timeout=120).start()
    if not source.wait_ready(1800):
        print("the cache never became ready", file=sys.stderr)
        return 2
    ready = time.perf_counter() - started
    print(json.dumps({"ready_seconds": ready, "cpu_seconds": time.process_time() - cpu_started,
                      "rss_ready": rss_bytes()}), flush=True)
    reader = source.cache.reader
    sent = 0
    request = reader._request

    def counted(*args: Any, **kwargs: Any) -> Any:
        nonlocal sent
        sent += 1
        return request(*args, **kwargs)

    reader._request = counted  # type: ignore[method-assign]
    counts = []
    for text in refs:
        ref = parse_ref(text)
        before = sent
        triage(source.cache.snapshot_for(ref), ref)
        counts.append(sent - before)
    rss_after = rss_bytes()
    source.stop()

    print(json.dumps({"rss_after": rss_after, "requests": counts}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
