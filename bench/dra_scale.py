"""How long a DRA triage takes on a large DRA cluster, and what CEL costs.

Run: PYTHONPATH=. python3 bench/dra_scale.py [--nodes 5000] [--devices 8] [--repeat 5]

Builds the cluster in memory from the recorded dra-basics objects: every node a copy of
dra-a100-2 with one ResourceSlice of ``--devices`` A100s (own uuid, index, PCI address), half
of each node's devices allocated to claims of running pods. Times, on the same Snapshot:
- the first triage of a DRA pod whose request selects memory >= 80Gi on every node (compiles
  the selectors, evaluates them on every device), then the median of repeated ones, and of
  ones on a new Snapshot of the same cluster (what the watch cache does per triage);
- the floor: the median triage of the device-plugin pod (serving/legacy-gpu) on that cluster;
- cel-python alone: compiling one selector, and one evaluation without the shared results.
Prints the figures and the ratios to the floor; asserts nothing.
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import time
from pathlib import Path
from typing import Any

from scoring.cel.selector import compile_selector, device_variable
from triage.classify import triage
from triage.refs import PodRef
from triage.snapshot import Snapshot

SCENARIO = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "scenarios" / "dra-basics"
SELECTOR = 'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("80Gi")) >= 0'


def _items(name: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = json.loads((SCENARIO / name).read_text())["items"]
    return items


def build(nodes: int, devices: int) -> Snapshot:
    node_items, pod_items, dra = _items("nodes.json"), _items("pods.json"), _items("dra.json")
    node0 = next(n for n in node_items if n["metadata"]["name"] == "dra-a100-2")
    slice0 = next(o for o in dra if o["kind"] == "ResourceSlice"
                  and o["spec"]["nodeName"] == "dra-a100-2")
    claim0 = next(o for o in dra if o["metadata"]["name"].startswith("finetune-1g-gpu-"))
    holder0 = next(p for p in pod_items if p["metadata"]["name"] == "finetune-1g")
    all_nodes, all_pods, objects = [], [], [o for o in dra if o["kind"] != "ResourceSlice"]
    for i in range(nodes):
        name = f"dra-{i:05d}"
        node = copy.deepcopy(node0)
        node["metadata"]["name"] = name
        all_nodes.append(node)
        resource_slice = copy.deepcopy(slice0)
        resource_slice["metadata"]["name"] = f"{name}-gpu.nvidia.com"
        resource_slice["spec"]["nodeName"] = resource_slice["spec"]["pool"]["name"] = name
        template = slice0["spec"]["devices"][0]
        resource_slice["spec"]["devices"] = []
        for d in range(devices):
            device = copy.deepcopy(template)
            device["name"] = f"gpu-{d}"
            device["attributes"]["index"] = {"int": d}
            device["attributes"]["uuid"] = {"string": f"GPU-{i:05d}-{d:02d}"}
            device["attributes"]["pcieBusID"] = {"string": f"0000:{d:02x}:00.0"}
            resource_slice["spec"]["devices"].append(device)
        objects.append(resource_slice)
        holder = copy.deepcopy(holder0)
        holder["metadata"]["name"] = f"holder-{i:05d}"
        holder["spec"]["nodeName"] = name
        all_pods.append(holder)
        claim = copy.deepcopy(claim0)
        claim["metadata"]["name"] = f"holder-{i:05d}-gpu"
        claim["status"]["allocation"]["devices"]["results"] = [
            {"request": "gpu", "driver": "gpu.nvidia.com", "pool": name, "device": f"gpu-{d}"}
            for d in range(devices // 2)]
        claim["status"]["reservedFor"] = [{"resource": "pods", "name": f"holder-{i:05d}"}]
        objects.append(claim)
    for ref in ("llm-80g", "legacy-gpu"):
        pod = copy.deepcopy(next(p for p in pod_items if p["metadata"]["name"] == ref))
        pod["spec"].pop("nodeSelector", None)
        all_pods.append(pod)
    return Snapshot(nodes=all_nodes, pods=all_pods, dra=objects)


def _timed(snapshot: Snapshot, ref: PodRef) -> float:
    started = time.perf_counter()
    triage(snapshot, ref)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--devices", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    snapshot = build(args.nodes, args.devices)
    dra_pod, plain_pod = PodRef("serving", "llm-80g"), PodRef("serving", "legacy-gpu")
    floor = statistics.median(_timed(snapshot, plain_pod) for _ in range(args.repeat))
    first = _timed(snapshot, dra_pod)
    again = statistics.median(_timed(snapshot, dra_pod) for _ in range(args.repeat))
    # The watch cache builds a new Snapshot per triage: selector results carry over.
    fresh = statistics.median(_timed(build(args.nodes, args.devices), dra_pod)
                              for _ in range(args.repeat))

    started = time.perf_counter()
    selector = compile_selector(SELECTOR)
    compile_ms = (time.perf_counter() - started) * 1000
    device = device_variable(snapshot.dra_inventory(("gpu.nvidia.com",)).slices[0].devices[0])
    started = time.perf_counter()
    for _ in range(200):
        selector._evaluate(device.cel)
    evaluation_ms = (time.perf_counter() - started) * 1000 / 200

    total = args.nodes * args.devices
    print(f"{args.nodes} nodes, {total} DRA devices, {total // 2} allocated")
    print(f"floor: device-plugin triage, median of {args.repeat}: {floor * 1000:.0f} ms")
    print(f"DRA triage, first (compile + evaluate every device): {first * 1000:.0f} ms "
          f"({first / floor:.1f}x the floor)")
    print(f"DRA triage, again on the same Snapshot, median: {again * 1000:.0f} ms "
          f"({again / floor:.1f}x the floor)")
    print(f"DRA triage on a new Snapshot of the same cluster, median: {fresh * 1000:.0f} ms "
          f"({fresh / floor:.1f}x the floor)")
    print(f"cel-python: compile {compile_ms:.1f} ms, one evaluation {evaluation_ms:.3f} ms "
          f"(unshared: {total * 2} evaluations would take {total * 2 * evaluation_ms / 1000:.1f}"
          " s for the class and request selectors)")


if __name__ == "__main__":
    main()
