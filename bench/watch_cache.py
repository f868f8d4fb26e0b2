"""Triage wall time from the watch cache of `gpuwhy serve` on a large generated cluster.

Run: PYTHONPATH=. python3 bench/watch_cache.py [--nodes 5000] [--pods-per-node 30] [--repeat 5]

Serves the seven-states objects plus generated GPU nodes and Running pods (8 of each node's
pods hold one GPU, so every generated node is full) from tests/kubeapi.py on 127.0.0.1; the
real kubernetes client lists them (pages of 500) and keeps watching. Then times triages of
recorded refs as WatchSource.triage does (the cache's snapshot_for, then classify), median and
max of --repeat runs each, split into read and classify time, and counts the API requests.
Prints the figures; asserts nothing. The server runs in the same process and competes for the
CPU, so the list time is pessimistic.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bot.sources import WatchSource
from tests.kubeapi import FakeKubeAPI, generated_cluster
from triage.classify import triage
from triage.cluster import load_api_client
from triage.refs import PodRef

SCENARIO = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "scenarios" / "seven-states"
REFS = ("research/full", "research/wrong-pool", "research/big", "ml/finetune", "infer/vllm",
        "research/ok")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods-per-node", type=int, default=30)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    started = time.perf_counter()
    with FakeKubeAPI(SCENARIO) as server:
        server.add_many(generated_cluster(args.nodes, args.pods_per_node))
        generated = time.perf_counter() - started
        with tempfile.TemporaryDirectory() as directory:
            client = load_api_client(str(server.kubeconfig(Path(directory) / "kubeconfig")))
        source = WatchSource(api_client=client, timeout=60).start()
        list_started = time.perf_counter()
        if not source.wait_ready(1800):
            print("the cache never became ready", file=sys.stderr)
            return 1
        listed = time.perf_counter() - list_started
        nodes, pods = len(source.cache.nodes), len(source.cache.pods)
        print(f"cluster: {nodes:,} nodes, {pods:,} non-terminated pods "
              f"(generated in {generated:.1f} s)")
        print(f"first full list (nodes + pods, pages of 500) until ready: {listed:.1f} s")
        print(f"peak RSS of the process (server + cache): "
              f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MiB")
        print("triage = read (API requests + cache view) + classify; medians in ms")
        print(f"{'ref':<22} {'cause':<20} {'triage':>7} {'max':>7} {'read':>6} {'classify':>9} "
              f"{'requests':>9}")
        for text in REFS:
            ref = PodRef(*text.split("/"))
            totals, reads, requests, cause = [], [], 0, ""
            for _ in range(args.repeat):
                before = server.mark()
                begin = time.perf_counter()
                snapshot = source.cache.snapshot_for(ref)
                read = time.perf_counter()
                cause = triage(snapshot, ref).cause
                totals.append((time.perf_counter() - begin) * 1000)
                reads.append((read - begin) * 1000)
                requests = server.count(before)
            total, read_ms = statistics.median(totals), statistics.median(reads)
            print(f"{text:<22} {cause:<20} {total:>7.1f} {max(totals):>7.1f} {read_ms:>6.1f} "
                  f"{total - read_ms:>9.1f} {requests:>9}")
        source.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
