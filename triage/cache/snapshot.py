"""The Snapshot a triage from the watch cache reads: the stores' indexes, prebuilt."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from functools import cached_property, partial
from itertools import compress, repeat

from scoring.dra import DraRows, dra_rows
from scoring.hami import Usage
from scoring.nodetable import NodeColumns, NodeInfo, node_table
from scoring.objects import K8sObject, object_key
from scoring.rows import PodRow
from triage.cache.dra import DraView
from triage.cache.pods import Amounts, HamiUsageOn
from triage.pods import Holdings, merge_pods
from triage.rows import Rows
from triage.snapshot import Snapshot

# the sums of a node without pods: one mapping for them all (read, never changed), so the
# funnel judges them as one group
_NO_PODS: Amounts = {"pods": Decimal(0)}


@dataclass(frozen=True)
class IndexedSnapshot(Snapshot):
    """A Snapshot whose pod indexes come prebuilt from the watch cache.

    ``pods`` holds only what the ref resolved to, fetched fresh; ``pods_on``, ``requested_on``
    and ``pods_in`` answer from the cache's per-node lists and sums and the ref namespace's
    pods, with the base class's meaning and a cold read's order: ``pods_on`` is every pod
    bound to the node (a fresh copy replaces the cached one, wherever that was; a fetched pod
    the cache lacks joins, finished or not), ``requested_on`` sums its non-terminated pods.
    On the few nodes a fetched pod touches (``fetched_nodes``: where it is bound, where the
    cache still has it) both are worked out from the merged list; everywhere else the cache's
    own sums are the answer.
    """

    node_rows: tuple[NodeInfo, ...] = ()  # the cache's node table, kept current per event
    node_rows_by_name: dict[str, NodeInfo] = field(default_factory=dict)  # and by name
    node_rows_columns: NodeColumns | None = None  # and as columns
    pods_by_node: Mapping[str, tuple[K8sObject, ...]] = field(default_factory=dict)
    requested_by_node: Mapping[str, Amounts] = field(default_factory=dict)
    holdings_by_node: Mapping[str, Holdings] = field(default_factory=dict)
    namespace_pods: tuple[K8sObject, ...] = ()
    cached_nodes_of_fetched: frozenset[str] = frozenset()
    # the cache's row of a pod it holds (PodStore.row_of), None for a copy fetched fresh
    cached_rows: Callable[[K8sObject], PodRow | None] | None = None
    kept_dra: DraView | None = None  # the cache's DRA rows, of the objects in ``dra``
    # the cache's HAMi usage of a node, of the node's pods as in ``pods_by_node``
    # (PodStore.hami_usage_on), None when the cache holds others now
    cached_hami_usage: HamiUsageOn | None = None

    @cached_property
    def dra_rows(self) -> DraRows:
        kept = self.kept_dra
        if kept is None:
            return super().dra_rows
        if kept.objects is self.dra:
            return kept.rows
        # DRA objects added to the cache's (``where``'s claim template): rows for those alone
        return dra_rows(self.dra, kept.row_of)

    @cached_property
    def rows(self) -> Rows:
        # the HAMi hook reads this Snapshot through a weak proxy, as the Rows do: a method
        # bound to it would make the Snapshot and its Rows a cycle
        return Rows(self, self.cached_rows,
                    partial(IndexedSnapshot._cached_hami_usage, weakref.proxy(self)))

    def _cached_hami_usage(self, node_name: str) -> Mapping[str, Usage] | None:
        if self.cached_hami_usage is None or node_name in self.fetched_nodes:
            return None
        return self.cached_hami_usage(node_name, self.pods_by_node.get(node_name, ()))

    @cached_property
    def node_table(self) -> tuple[NodeInfo, ...]:
        return self.node_rows if self.node_rows or not self.nodes else node_table(self.nodes)

    @cached_property
    def node_columns(self) -> NodeColumns:
        columns = self.node_rows_columns  # the cache's, of node_rows: only with them
        if columns is not None and len(columns.names) == len(self.node_table):
            return columns
        return super().node_columns

    @cached_property
    def _node_infos_by_name(self) -> dict[str, NodeInfo]:
        return self.node_rows_by_name or super()._node_infos_by_name

    @cached_property
    def fetched_nodes(self) -> frozenset[str]:
        bound = {name for pod in self.pods if (name := pod.get("spec", {}).get("nodeName"))}
        return self.cached_nodes_of_fetched | bound

    def pods_on(self, node_name: str) -> list[K8sObject]:
        cached = self.pods_by_node.get(node_name, ())
        if node_name not in self.fetched_nodes:
            return list(cached)
        # the cached pods, with the fetched copies in their place; by namespace and name, as
        # the base class orders them
        fresh = self._pods_by_key
        return sorted([*(p for p in cached if object_key(p) not in fresh),
                       *super().pods_on(node_name)], key=object_key)

    def requested_on(self, node_name: str) -> dict[str, Decimal]:
        if node_name in self.fetched_nodes:
            return super().requested_on(node_name)
        return self.requested_by_node.get(node_name) or _NO_PODS

    def requested_of(self, node_names: Iterable[str]) -> list[Mapping[str, Decimal]]:
        """``requested_on`` of each node, in order: the cache's sums but on the fetched nodes
        (the funnel asks it of 100,000 nodes: no method call per node)."""
        names = list(node_names)
        sums: list[Mapping[str, Decimal]] = list(map(self.requested_by_node.get, names,
                                                     repeat(_NO_PODS)))
        fetched = self.fetched_nodes
        if fetched:  # a few nodes: where the pods the triage fetched itself are bound
            for position in compress(range(len(names)), map(fetched.__contains__, names)):
                sums[position] = self.requested_on(names[position])
        return sums

    def holdings_on(self, node_name: str) -> Holdings:
        if node_name in self.fetched_nodes:
            return super().holdings_on(node_name)
        return self.holdings_by_node.get(node_name, {})

    def pods_in(self, namespace: str) -> list[K8sObject]:
        cached = [p for p in self.namespace_pods if object_key(p)[0] == namespace]
        return merge_pods(cached, super().pods_in(namespace))
