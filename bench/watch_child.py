"""The watch cache side of ``python -m bench``, in its own process so its RSS is its own.

Run by bench/__main__.py:
python -m bench.watch_child [--answers [--profile-answers] | --profile] KUBECONFIG REF...
Prints a JSON line the moment the cache is ready (time to ready, CPU time until then, RSS),
then one more: RSS after the triages and API requests per triage of each ref from the cache,
and either the views from the cache or, with ``--answers``, each slash command's answer time
(see ``answer``; wall and this thread's CPU time) and the full collections during them,
against the bare loop over the cached nodes (both times too). ``--profile``: the ready path's
lists instead (nodes, then pods, each listed and stored in this thread under cProfile), its
top entries printed. ``--profile-answers``: after the timed answers, the same answers once
more under cProfile, its top entries printed (on stderr, so the JSON lines stay the last of
stdout).
"""

from __future__ import annotations

import cProfile
import io
import json
import pstats
import sys
import threading
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

    def capacity() -> object:
        snapshot = source.cluster_snapshot()  # kept while its rows are read
        return capacity_view(snapshot.rows, DEFAULT_CONFIG)

    def where_8() -> object:
        snapshot = source.cluster_snapshot()
        return where(snapshot.rows, WhereAsk(8, "nvidia.com/gpu"), DEFAULT_CONFIG)

    state = BotState(config=BotConfig(database_url="sqlite://"), source=source)
    now = datetime.now(UTC)
    view = build_home(state, now)
    figures: dict[str, Any] = {
        "home_blocks": len(view["blocks"]),
        "home_problems": block_kit_problems(view["blocks"], MAX_VIEW_BLOCKS),
        "views_floor": _best(bare_pass),
        "home": _best(lambda: build_home(state, now)),
        "capacity": _best(capacity),
        "where": _best(where_8),
    }
    state.close()
    return figures


def bare_loop_floors(source: Any) -> dict[str, float]:
    """python -m bench's warm-triage floor over the cached nodes, in wall and thread CPU time."""
    from bench.__main__ import GPU, loop_floor

    _, requested, _ = source.cache.pods.by_node_view()
    nodes = source.cache.nodes.view()[0]
    used = {name: int(amounts.get(GPU, 0)) for name, amounts in requested.items()}
    return {"loop_floor": loop_floor(nodes, used),
            "loop_floor_cpu": loop_floor(nodes, used, time.thread_time)}


def answer(source: Any, ref: Any) -> int:
    """A slash command's answer as ``post_answer`` (bot/slack/listeners/commands.py) makes it:
    the source's triage (timed per reader, the collector held off), the answer as the channel
    may see it (every namespace, here) and its Block Kit blocks and fallback text; Slack's
    HTTP and the incident store are left out."""
    from datetime import UTC, datetime

    from bot.answer.blocks import verdict_blocks, verdict_text
    from bot.answer.byline import byline
    from bot.answer.visibility import visible_answer

    verdict = visible_answer(source.triage(ref), lambda namespace: True)
    line = byline("U0BENCH", cluster=None, as_of=source.as_of(), now=datetime.now(UTC))
    return len(verdict_blocks(verdict, line)) + len(verdict_text(verdict, line))


def profile_ready(kubeconfig: str) -> int:
    """The lists of the ready path in this thread, under cProfile: the cache's nodes, then
    its pods, each listed and stored as its reflector does."""
    from triage.cache import NodeStore, PodStore
    from triage.cluster import load_api_client
    from triage.cluster.limits import DEFAULT_PAGE_SIZE
    from triage.cluster.reader import ClusterReader
    from triage.cluster.resources import NODES, NON_TERMINATED, PODS
    from triage.dumpfile import bulk_parse

    reader = ClusterReader(load_api_client(kubeconfig), 120)
    nodes, pods = NodeStore(), PodStore()
    profile = cProfile.Profile()
    started = time.perf_counter()
    profile.enable()
    for resource, selector, store in ((NODES, "", nodes), (PODS, NON_TERMINATED, pods)):
        with bulk_parse():
            items, _ = reader.list_all(resource, field_selector=selector,
                                       page_size=DEFAULT_PAGE_SIZE, keep=store.slim, ahead=True)
            store.replace(items)
            del items
    profile.disable()
    elapsed = time.perf_counter() - started
    print(json.dumps({"profiled_seconds": elapsed, "nodes": len(nodes), "pods": len(pods),
                      "rss": rss_bytes()}))
    print(top_entries(profile))
    return 0


def top_entries(profile: cProfile.Profile, count: int = 18) -> str:
    """The profile's top entries by own time, then by cumulative time."""
    out = io.StringIO()
    stats = pstats.Stats(profile, stream=out)
    stats.sort_stats("tottime").print_stats(count)
    stats.sort_stats("cumulative").print_stats(count)
    return out.getvalue()


def profile_answers(source: Any, refs: list[Any]) -> None:
    """The answers once more, under cProfile; the top entries on stderr."""
    profile = cProfile.Profile()
    started = time.perf_counter()
    profile.enable()
    for ref in refs:
        answer(source, ref)
    profile.disable()
    print(f"profile of {len(refs)} answers ({time.perf_counter() - started:.2f} s profiled):\n"
          + top_entries(profile), file=sys.stderr)


def main() -> int:
    from bench.__main__ import FullCollections
    from bot.clusters.sources import WatchSource
    from triage.classify import triage
    from triage.cluster import load_api_client
    from triage.refs import parse_ref

    arguments = sys.argv[1:]
    if arguments[0] == "--profile":
        return profile_ready(arguments[1])
    answers = arguments[0] == "--answers"
    profiled = answers and arguments[1] == "--profile-answers"
    kubeconfig, *refs = arguments[answers + profiled:]
    client = load_api_client(kubeconfig)
    cpu_started, started = time.process_time(), time.perf_counter()
    source = WatchSource(api_client=client, timeout=120).start()
    if not source.wait_ready(1800):
        print("the cache never became ready", file=sys.stderr)
        return 2
    ready = time.perf_counter() - started
    print(json.dumps({"ready_seconds": ready, "cpu_seconds": time.process_time() - cpu_started,
                      "rss_ready": rss_bytes()}), flush=True)
    if answers:
        # what `gpuwhy serve` has done before its first slash command: its Slack app's modules
        # loaded and the answer templates compiled (bot.slack.app.bolt_app)
        import bot.slack.app  # noqa: F401
        from bot.answer.blocks import compile_answer_templates

        compile_answer_templates()
    reader = source.cache.reader
    sent = 0
    request = reader._request

    def counted(*args: Any, **kwargs: Any) -> Any:
        nonlocal sent
        # the answers' own: the reflectors share the reader (and ask again, after
        # watch_seconds, for the resources the cluster does not serve)
        sent += threading.current_thread() is threading.main_thread()
        return request(*args, **kwargs)

    reader._request = counted  # type: ignore[method-assign]
    counts, timings, cpu = [], [], []
    with FullCollections() as full:
        for text in refs:
            ref = parse_ref(text)
            # thread CPU: the reflectors' threads share the process
            before, started, cpu_started = sent, time.perf_counter(), time.thread_time()
            if answers:
                answer(source, ref)
            else:
                triage(source.cache.snapshot_for(ref), ref)
            timings.append(time.perf_counter() - started)
            cpu.append(time.thread_time() - cpu_started)
            counts.append(sent - before)
    rss_after = rss_bytes()
    if profiled:
        profile_answers(source, [parse_ref(text) for text in refs])
    figures = {"answers": timings, "answers_cpu": cpu, "full_collections": full.count,
               "full_collection_seconds": full.seconds,
               **(bare_loop_floors(source) if answers else measure_views(source))}
    source.stop()

    print(json.dumps({"rss_after": rss_after, "requests": counts, **figures}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
