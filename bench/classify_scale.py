"""How long one triage takes on a cluster at Kubernetes' limits (5,000 nodes, 150,000 pods).

Run: python3 bench/classify_scale.py [--nodes 5000] [--pods 150000] [--repeat 20]

Builds the cluster in memory from the recorded seven-states objects (node and pod JSON with
new names), then times: building the Snapshot's indexes (once), the first triage, and the
median of repeated triages of different pending pods. Prints the figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import time
from pathlib import Path

from triage.classify import triage
from triage.refs import PodRef
from triage.snapshot import Snapshot

SCENARIO = Path(__file__).resolve().parents[1] / "examples" / "seven-states"


def build(nodes: int, pods: int) -> tuple[Snapshot, list[PodRef]]:
    node_items = json.loads((SCENARIO / "nodes.json").read_text())["items"]
    pod_items = json.loads((SCENARIO / "pods.json").read_text())["items"]
    gpu_node = next(n for n in node_items if n["metadata"]["name"] == "gpu-a100-1")
    running = next(p for p in pod_items if p["metadata"]["name"] == "ok")
    pending = next(p for p in pod_items if p["metadata"]["name"] == "full")
    all_nodes = []
    for i in range(nodes):
        node = copy.deepcopy(gpu_node)
        node["metadata"]["name"] = f"gpu-{i:05d}"
        node["metadata"]["labels"]["pool"] = f"pool-{i % 50}"
        node["metadata"]["labels"]["kubernetes.io/hostname"] = f"gpu-{i:05d}"
        all_nodes.append(node)
    all_pods = []
    pending_refs = []
    for i in range(pods):
        if i % 1000 == 0:
            pod = copy.deepcopy(pending)
            # Half select one pool (100 nodes); half may go anywhere (every node a candidate).
            pod["spec"]["nodeSelector"] = {"pool": f"pool-{i % 50}"} if i % 2000 else {}
            pending_refs.append(PodRef("research", f"pending-{i}"))
            pod["metadata"].update(name=f"pending-{i}", uid=f"uid-{i}")
        else:
            pod = copy.deepcopy(running)
            pod["metadata"].update(name=f"job-{i}", uid=f"uid-{i}")
            pod["spec"]["nodeName"] = f"gpu-{i % nodes:05d}"
        all_pods.append(pod)
    return Snapshot(nodes=all_nodes, pods=all_pods), pending_refs


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=150_000)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    started = time.perf_counter()
    snapshot, refs = build(args.nodes, args.pods)
    print(f"built {args.nodes} nodes / {args.pods} pods in {time.perf_counter() - started:.1f} s")
    started = time.perf_counter()
    snapshot.pod("research", "x")
    snapshot.pods_on("gpu-00000")
    print(f"indexes (once per snapshot): {1000 * (time.perf_counter() - started):.0f} ms")
    started = time.perf_counter()
    first = triage(snapshot, refs[0])
    print(f"first triage: {1000 * (time.perf_counter() - started):.1f} ms ({first.cause}, "
          f"{first.node_summary[:60]}...)")
    timings: dict[bool, list[float]] = {True: [], False: []}
    for ref in refs[1:args.repeat + 1]:
        started = time.perf_counter()
        verdict = triage(snapshot, ref)
        timings["selector-mismatch" in verdict.node_summary].append(
            1000 * (time.perf_counter() - started))
    for selected, label in ((True, "with a nodeSelector"), (False, "any node a candidate")):
        if timings[selected]:
            print(f"triage, {label}: median {statistics.median(timings[selected]):.1f} ms, "
                  f"max {max(timings[selected]):.1f} ms over {len(timings[selected])} pods")


if __name__ == "__main__":
    main()
