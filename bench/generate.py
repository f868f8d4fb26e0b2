"""A generated cluster at a given size, built from the recorded object shapes, as a dump dir.

Run: python -m bench.generate DIR [--nodes 5000] [--pods 150000] [--seed 9]

Deterministic for a seed. The mix: 8-GPU A100 pools of ~40 nodes (half of them full), a
tainted H100 pool, a cordoned pool, nodes whose GPUs are broken (allocatable 0) or whose
device plugin is gone, CPU nodes, a HAMi pool (registered A100s with shared pods on them),
Running pods (GPU holders first, then CPU-only pods) up to the pod count with a few finished
ones, and 300 pending pods in namespace ``bench`` of 10 kinds, each with its FailedScheduling
event where the scheduler would have spoken. Files are written item by item, indented as
``kubectl get -o json`` does.
"""

from __future__ import annotations

import argparse
import copy
import json
import random
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

Obj = dict[str, Any]
RECORDED = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "scenarios"
PENDING_NAMESPACE = "bench"
PENDING_PODS = 300
# A100 pools of about this many nodes, at least 10: the first half full, the rest with room
# (a pod pinned to a pool reads that pool's pods only, a few per cent of a large cluster's)
A100_POOL_NODES = 40
MIN_A100_POOLS = 10
# Part of the dump directory's name: dumps of an older generator are not reused.
GENERATOR_VERSION = 2
# (kind, share of the nodes); the rest are A100 nodes
NODE_MIX = (("h100-tainted", 0.05), ("maint-cordoned", 0.03), ("v100-broken", 0.02),
            ("t4-noplugin", 0.02), ("cpu", 0.13), ("hami", 0.05))
# The kinds of pending pod (name prefixes): the 9, with the cordoned pool apart
PENDING_KINDS = ("wrong-pool", "tainted", "cordoned", "no-plugin", "broken", "too-large",
                 "exhausted", "any-node", "hami-40g", "hami-small")


def _load(scenario: str, name: str) -> list[Obj]:
    items: list[Obj] = json.loads((RECORDED / scenario / f"{name}.json").read_text())["items"]
    return items


def _by_name(items: list[Obj], name: str) -> Obj:
    return next(i for i in items if i["metadata"]["name"] == name)


class Templates:
    def __init__(self) -> None:
        nodes = _load("seven-states", "nodes")
        pods = _load("seven-states", "pods")
        hami_nodes = _load("hami-sharing", "nodes")
        hami_pods = _load("hami-sharing", "pods")
        events = _load("seven-states", "events") + _load("hami-sharing", "events")
        self.a100 = _by_name(nodes, "gpu-a100-1")
        self.h100 = _by_name(nodes, "gpu-h100-reserved")
        self.broken = _by_name(nodes, "gpu-v100-broken")
        self.noplugin = _by_name(nodes, "gpu-t4-noplugin")
        self.cpu = _by_name(nodes, "cpu-1")
        self.hami = _by_name(hami_nodes, "hami-a100-1")
        self.holder = _by_name(pods, "train-a")
        self.cpu_pod = _by_name(pods, "no-request")
        self.done = _by_name(pods, "done")
        self.hami_holders = [_by_name(hami_pods, name)
                             for name in ("llm-chat-0", "llm-chat-1", "trainer-lora")]
        self.pending = {name: _by_name(pods, name) for name in
                        ("wrong-pool", "tainted", "no-plugin", "broken-node", "big", "full")}
        self.hami_pending = {name: _by_name(hami_pods, name) for name in
                             ("needs-40g", "fits-small")}
        self.event = next(e for e in events if e["involvedObject"]["name"] == "full"
                          and e["reason"] == "FailedScheduling")
        self.seven = {name: _load("seven-states", name)
                      for name in ("resourcequotas", "runtimeclasses", "workloads")}


def _set_gpus(node: Obj, count: int, allocatable: int | None = None) -> None:
    node["status"]["capacity"]["nvidia.com/gpu"] = str(count)
    node["status"]["allocatable"]["nvidia.com/gpu"] = str(count if allocatable is None
                                                          else allocatable)


def _node(template: Obj, name: str, pool: str, index: int) -> Obj:
    node = copy.deepcopy(template)
    meta = node["metadata"]
    meta.update(name=name, uid=f"node-{index:05d}", resourceVersion=str(1000 + index))
    meta["labels"].update({"kubernetes.io/hostname": name, "pool": pool})
    return node


def node_roles(count: int, rng: random.Random) -> list[tuple[str, str]]:
    """(role, pool) of each node, in name order; roles: a100-full, a100-room, h100, maint,
    broken, noplugin, cpu, hami."""
    plan: list[str] = []
    for role, share in NODE_MIX:
        plan += [role] * max(1, round(count * share))
    plan += ["a100"] * (count - len(plan))
    pools = max(MIN_A100_POOLS, round(plan.count("a100") / A100_POOL_NODES))
    rng.shuffle(plan)
    roles = []
    a100_seen = 0
    for role in plan:
        if role == "a100":
            pool = a100_seen % pools
            a100_seen += 1
            roles.append(("a100-full" if pool < pools // 2 else "a100-room", f"a100-{pool}"))
        else:
            roles.append(_OTHER_ROLES[role])
    return roles


# the (role, pool) of each NODE_MIX kind other than the A100 pools
_OTHER_ROLES = {"h100-tainted": ("h100", "h100"), "maint-cordoned": ("maint", "maint"),
                "v100-broken": ("broken", "v100-broken"),
                "t4-noplugin": ("noplugin", "t4-noplugin"),
                "cpu": ("cpu", "cpu"), "hami": ("hami", "hami-a100")}


def make_node(templates: Templates, role: str, name: str, pool: str, index: int) -> Obj:
    """A node of a role (node_roles) from its recorded template."""
    template = {"h100": templates.h100, "broken": templates.broken,
                "noplugin": templates.noplugin, "cpu": templates.cpu,
                "hami": templates.hami}.get(role, templates.a100)
    node = _node(template, name, pool, index)
    if role in ("a100-full", "a100-room", "maint"):
        _set_gpus(node, 8)
    if role == "maint":
        node["spec"]["unschedulable"] = True
    return node


def build_nodes(templates: Templates, count: int, rng: random.Random) -> list[tuple[Obj, str]]:
    """(node, role) pairs (roles: node_roles)."""
    return [(make_node(templates, role, f"node-{index:05d}", pool, index), role)
            for index, (role, pool) in enumerate(node_roles(count, rng))]


def _pod(template: Obj, namespace: str, name: str, uid: str, node: str | None) -> Obj:
    pod = copy.deepcopy(template)
    meta = pod["metadata"]
    meta.update(name=name, namespace=namespace, uid=uid)
    if node is None:
        pod["spec"].pop("nodeName", None)
    else:
        pod["spec"]["nodeName"] = node
        annotations = meta.get("annotations") or {}
        if "hami.io/vgpu-node" in annotations:
            annotations["hami.io/vgpu-node"] = node
    return pod


def running_pods(templates: Templates, nodes: list[tuple[Obj, str]], total: int,
                 rng: random.Random) -> Iterator[Obj]:
    """GPU holders first (full pools full, others partly), then CPU pods round-robin."""
    made = 0
    for node, role in nodes:
        name = node["metadata"]["name"]
        held = {"a100-full": 8, "a100-room": rng.randint(0, 6), "h100": rng.randint(0, 8),
                "maint": rng.randint(0, 8), "hami": len(templates.hami_holders)}.get(role, 0)
        for slot in range(held):
            if made >= total:
                return
            template = templates.hami_holders[slot] if role == "hami" else templates.holder
            yield _pod(template, f"team-{made % 17}", f"gpu-{name}-{slot}", f"pod-{made}", name)
            made += 1
    schedulable = [n["metadata"]["name"] for n, role in nodes
                   if role not in ("maint", "h100")]
    index = 0
    while made < total:
        node = schedulable[index % len(schedulable)]
        template = templates.done if made % 20 == 0 else templates.cpu_pod
        yield _pod(template, f"team-{made % 17}", f"cpu-{node}-{index // len(schedulable)}",
                   f"pod-{made}", node)
        made += 1
        index += 1


def _pending_pod(templates: Templates, kind: str, number: int) -> Obj:
    name = f"{kind}-{number:03d}"
    uid = f"pending-{kind}-{number}"
    if kind in ("hami-40g", "hami-small"):
        template = templates.hami_pending["needs-40g" if kind == "hami-40g" else "fits-small"]
        return _pod(template, PENDING_NAMESPACE, name, uid, None)
    source = {"wrong-pool": "wrong-pool", "tainted": "tainted", "cordoned": "tainted",
              "no-plugin": "no-plugin", "broken": "broken-node", "too-large": "big",
              "exhausted": "full", "any-node": "full"}[kind]
    pod = _pod(templates.pending[source], PENDING_NAMESPACE, name, uid, None)
    spec = pod["spec"]
    selector = {"cordoned": {"pool": "maint"}, "exhausted": {"pool": f"a100-{number % 5}"},
                "no-plugin": {"pool": "t4-noplugin"}, "broken": {"pool": "v100-broken"},
                }.get(kind)
    if selector is not None:
        spec["nodeSelector"] = selector
    if kind in ("too-large", "any-node"):
        spec.pop("nodeSelector", None)
    if kind == "too-large":
        for container in spec["containers"]:
            for section in ("limits", "requests"):
                container["resources"][section]["nvidia.com/gpu"] = "64"  # HAMi nodes count 40
    return pod


def pending_pods(templates: Templates) -> list[Obj]:
    return [_pending_pod(templates, PENDING_KINDS[i % len(PENDING_KINDS)],
                         i // len(PENDING_KINDS)) for i in range(PENDING_PODS)]


def _event(templates: Templates, pod: Obj, nodes: int, index: int) -> Obj:
    event = copy.deepcopy(templates.event)
    meta = pod["metadata"]
    event["metadata"].update(name=f"{meta['name']}.{index:016x}", namespace=meta["namespace"],
                             uid=f"event-{index}")
    event["involvedObject"].update(name=meta["name"], namespace=meta["namespace"],
                                   uid=meta["uid"])
    event["message"] = (f"0/{nodes} nodes are available: {nodes} node(s) didn't match Pod's "
                        "node affinity/selector. no new claims to deallocate, preemption: "
                        f"0/{nodes} nodes are available: {nodes} Preemption is not helpful for "
                        "scheduling.")
    return event


def write_list(path: Path, items: Iterable[Obj]) -> int:
    """Write a List as ``kubectl get -o json`` does, one item at a time; the item count."""
    count = 0
    with path.open("w", encoding="utf-8") as out:
        out.write('{\n    "apiVersion": "v1",\n    "items": [')
        for item in items:
            text = json.dumps(item, indent=4).replace("\n", "\n        ")
            out.write(("," if count else "") + "\n        " + text)
            count += 1
        out.write('\n    ],\n    "kind": "List",\n    "metadata": {\n'
                  '        "resourceVersion": ""\n    }\n}\n')
    return count


def generate(directory: str | Path, nodes: int, pods: int, seed: int = 9) -> dict[str, int]:
    """Write the dump; the object count per file."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    templates = Templates()
    node_list = build_nodes(templates, nodes, rng)
    pending = pending_pods(templates)
    # the scheduler has not spoken about the pods that fit (scheduler-unavailable)
    spoken = [p for p in pending if not p["metadata"]["name"].startswith(("any-node",
                                                                          "hami-small"))]
    counts = {"nodes.json": write_list(out / "nodes.json", (n for n, _ in node_list))}

    def all_pods() -> Iterator[Obj]:
        yield from pending
        yield from running_pods(templates, node_list, pods - len(pending), rng)

    counts["pods.json"] = write_list(out / "pods.json", all_pods())
    counts["events.json"] = write_list(out / "events.json",
                                       (_event(templates, p, nodes, i)
                                        for i, p in enumerate(spoken)))
    for name, items in templates.seven.items():
        counts[f"{name}.json"] = write_list(out / f"{name}.json", items)
    return counts


def pending_refs() -> list[str]:
    """The pending pods' refs of every generated dump, in generation order."""
    return [f"{PENDING_NAMESPACE}/{PENDING_KINDS[i % len(PENDING_KINDS)]}-"
            f"{i // len(PENDING_KINDS):03d}" for i in range(PENDING_PODS)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory")
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=150_000)
    parser.add_argument("--seed", type=int, default=9)
    args = parser.parse_args()
    for name, count in generate(args.directory, args.nodes, args.pods, args.seed).items():
        print(f"{name}: {count:,} objects")


if __name__ == "__main__":
    main()
