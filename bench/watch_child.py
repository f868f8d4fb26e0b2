"""The watch cache side of ``python -m bench``, in its own process so its RSS is its own.

Run by bench/__main__.py: python -m bench.watch_child KUBECONFIG REF...
Prints a JSON line the moment the cache is ready (time to ready, CPU time until then, RSS),
then one more: RSS after the triages and API requests per triage of each ref from the cache.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def _best(action: Callable[[], object], runs: int = 3) -> float:
    timings = []
    for _ in range(runs):
        started = time.perf_counter()
        action()
        timings.append(time.perf_counter() - started)
    return min(timings)


def measure_views(source: Any) -> dict[str, Any]:
    """The App Home (its blocks checked as Slack checks a view), the capacity view and a
    `where` from the cache (best of 3 each), and
    their floor: the bare loop over the cached nodes (python -m bench's warm-triage floor:
    labels, taints, GPU capacity / allocatable, the node's summed GPU requests)."""
    from datetime import UTC, datetime

    from bench.__main__ import GPU, bare_loop
    from bot.config import BotConfig
    from bot.slack.listeners.home import build_home
    from bot.slack.listeners.state import BotState
    from tests.slackfake import MAX_VIEW_BLOCKS, block_kit_problems
    from triage.classify.capacity import capacity_view
    from triage.classify.where import WhereAsk, where
    from triage.config import DEFAULT_CONFIG

    nodes = source.cache.nodes.view()[0]
    _, requested, _ = source.cache.pods.by_node_view()
    used = {name: int(amounts.get(GPU, 0)) for name, amounts in requested.items()}

    def bare_pass() -> int:
        return bare_loop(nodes, used, [])

    state = BotState(config=BotConfig(database_url="sqlite://"), source=source)
    now = datetime.now(UTC)
    view = build_home(state, now)
    figures: dict[str, Any] = {
        "home_blocks": len(view["blocks"]),
        "home_problems": block_kit_problems(view["blocks"], MAX_VIEW_BLOCKS),
        "views_floor": _best(bare_pass),
        "home": _best(lambda: build_home(state, now)),
        "capacity": _best(lambda: capacity_view(source.cluster_snapshot(), DEFAULT_CONFIG)),
        "where": _best(lambda: where(source.cluster_snapshot(),
                                     WhereAsk(8, "nvidia.com/gpu"), DEFAULT_CONFIG)),
    }
    state.close()
    return figures


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
    views = measure_views(source)
    source.stop()

    print(json.dumps({"rss_after": rss_after, "requests": counts, **views}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
