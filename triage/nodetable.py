"""The node table of a Snapshot: one row per node, what the funnel's checks read off a node.

Built once per Snapshot (lazily) and kept with it, in the API server's order (by name), so
an answer never depends on the order the nodes were listed in.
"""

from __future__ import annotations

from dataclasses import dataclass

from triage.nodes import node_name
from triage.objects import K8sObject


@dataclass(frozen=True)
class NodeInfo:
    """One node as the funnel sees it; ``raw`` is the Node object itself."""

    name: str
    raw: K8sObject


def node_table(nodes: list[K8sObject]) -> tuple[NodeInfo, ...]:
    return tuple(NodeInfo(node_name(node), node) for node in sorted(nodes, key=node_name))
