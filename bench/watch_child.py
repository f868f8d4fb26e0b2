"""The watch cache side of ``python -m bench``, in its own process so its RSS is its own.

Run by bench/__main__.py: python -m bench.watch_child KUBECONFIG REF...
Prints one JSON line: time to ready, RSS when ready and after the triages, API requests per
triage of each ref from the cache, and a cold live triage against the requests of
``kubectl describe pod`` (GET the pod, list its events).
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
    from bot.sources import LiveSource, WatchSource
    from triage.classify import triage
    from triage.cluster import EVENTS, PODS, load_api_client
    from triage.cluster.reader import ClusterReader
    from triage.refs import parse_ref

    kubeconfig, *refs = sys.argv[1:]
    client = load_api_client(kubeconfig)
    source = WatchSource(api_client=client, timeout=120).start()
    started = time.perf_counter()
    if not source.wait_ready(1800):
        print("the cache never became ready", file=sys.stderr)
        return 2
    ready = time.perf_counter() - started
    rss_ready = rss_bytes()
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

    ref = parse_ref(refs[0])
    cold_reader = ClusterReader(client, 120)
    started = time.perf_counter()
    cold_reader.get(PODS, ref.namespace, ref.name)
    cold_reader.list_all(EVENTS, ref.namespace, field_selector=(
        f"involvedObject.name={ref.name},involvedObject.namespace={ref.namespace}"))
    describe = time.perf_counter() - started
    started = time.perf_counter()
    LiveSource(api_client=client, timeout=120).triage(ref)
    cold = time.perf_counter() - started
    print(json.dumps({"ready_seconds": ready, "rss_ready": rss_ready, "rss_after": rss_after,
                      "requests": counts, "describe_seconds": describe, "cold_seconds": cold}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
