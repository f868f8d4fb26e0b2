"""The watch cache's pods: non-terminated pods indexed the way a triage asks for them, each
node's summed requests and holdings kept current per event, and the rows (and HAMi's per-node
usage) triages asked for."""

from __future__ import annotations

import bisect
import dataclasses
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from decimal import Decimal
from operator import itemgetter

from scoring.hami import Usage, device_usage
from scoring.identity import ByIdentity
from scoring.objects import K8sObject, is_terminated, object_key
from scoring.rows import PodRow
from triage.cache.listpages import Alike, SharedPods
from triage.pods import (
    REQUEST_FIELDS,
    Holdings,
    add_holding,
    extended_share,
    request_fields,
    sum_requests,
)
from triage.rows import hami_placed_on, pod_row
from triage.slim import slim_pod

Amounts = dict[str, Decimal]  # resource -> summed effective request
# HAMi's usage of a node (by card), for the node's pods as a triage's view has them
HamiUsageOn = Callable[[str, tuple[K8sObject, ...]], Mapping[str, Usage] | None]
# a pod's own fields, and its metadata's shared ones (the rest of its metadata is its own)
_OWN_FIELDS = frozenset({"metadata", "spec"})
_ALIKE_METADATA = frozenset({"labels", "ownerReferences", "annotations"})
_KEY = itemgetter(0)  # of a (key, pod) pair


class PodStore:
    """Non-terminated pods, indexed the way a triage asks for them, kept up to date per event.

    By node: immutable tuples in the API server's list order (namespace, name), plus each
    node's summed requests (a pod's share is added on ADDED and taken away on DELETED), so a
    triage takes a shallow copy of two node-keyed maps (O(nodes)) and never walks or copies
    the pods. By namespace: for the quota's holders, also in list order.

    Rows (``row_of``), as kube-scheduler's cache keeps its PodInfos: a pod's row is built
    the first time a triage asks for it and kept for every triage after, rebuilt when a
    MODIFIED event replaces the pod, dropped when it leaves. Only the pods a triage asked
    about have one (the few nodes an answer describes); the rest are counted in the per-node
    sums alone, as a row takes about 0.3 KB even with its requests shared by the pods of its
    kind (0.3 GB more for a million pods).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # a pod's summed requests are found again (``_share``) when it leaves: not kept
        self._pods: dict[tuple[str, str], K8sObject] = {}
        self._rows: dict[tuple[str, str], PodRow] = {}  # of the pods in _pods, as they are
        # by node: HAMi's device usage summed from its pods' rows, with the node's pods it
        # was summed over (a change on the node makes that tuple a new one)
        self._hami: dict[str, tuple[tuple[K8sObject, ...], Mapping[str, Usage]]] = {}
        self._row_requests: ByIdentity[Mapping[str, Decimal]] = ByIdentity()
        self._by_node: dict[str, tuple[K8sObject, ...]] = {}
        self._requested: dict[str, Amounts] = {}
        self._holdings: dict[str, Holdings] = {}  # by node: see Snapshot.holdings_on
        self._waiting: dict[tuple[str, str], K8sObject] = {}  # no node, or bound and Pending
        self._by_namespace: dict[str, dict[str, K8sObject]] = {}
        self._unordered: set[str] = set()  # namespaces that gained a pod since last sorted
        self._specs: Alike[K8sObject] = Alike()  # one spec of each kind, less its node
        self._alike: Alike[object] = Alike()  # the other values pods share
        self._shares: ByIdentity[Amounts] = ByIdentity()
        self._shares_by_json: Alike[Amounts] = Alike()
        # nodes holding alike share one sums mapping: the funnel judges them once (pipeline)
        self._sums: Alike[Amounts] = Alike()
        # what a list keeps of each pod as its page arrives (of a finished one: nothing)
        self.slim = SharedPods(self._kept, self._alike)

    def listing(self) -> PodListing:
        """Where a list puts its pods page by page (``list_into``), indexed as they come."""
        return PodListing(self._share)

    def replace(self, items: Iterable[K8sObject]) -> None:
        """A full list's pods, slim already (kept by ``slim`` as their pages came): a
        ``listing``'s, indexed already, or any others, indexed here; then each node's pods
        sorted and its sums made once per kind of pod on it, not per pod."""
        if isinstance(items, PodListing):
            listing = items
        else:
            listing = self.listing()
            listing.extend(items)
        by_node = {node: tuple(pod for _, pod in sorted(listed, key=_KEY))
                   for node, listed in listing.on_node.items()}
        requested: dict[str, Amounts] = {}
        holdings: dict[str, Holdings] = {}
        # nodes running as many pods of each kind have the same sums and holdings (a pool's
        # nodes: the same daemonsets, one workload pod): worked out once, shared (read only)
        alike: dict[tuple[object, ...], tuple[Amounts, Holdings]] = {}
        for node_name, kinds in listing.kinds_on.items():
            counts = tuple((kind, count) for kind, (_, (count,)) in kinds.items())
            known = alike.get(counts)
            if known is None:
                total, held = _summed(kinds)
                known = alike[counts] = self._sums(total), held
            requested[node_name] = known[0]
            if known[1]:
                holdings[node_name] = known[1]
        with self._lock:
            self._pods, self._by_node, self._requested = listing.pods, by_node, requested
            self._rows, self._hami = {}, {}  # a new list: new copies, rows built as asked for
            self._holdings, self._waiting = holdings, listing.waiting
            self._by_namespace = listing.by_namespace
            self._unordered = set(listing.by_namespace)

    def upsert(self, pod: K8sObject) -> None:
        key = object_key(pod)
        with self._lock:
            asked = self._discard(key)
            self._add(pod)
            # a pod triages asked about gets its new row now, off their path
            if asked and (kept := self._pods.get(key)) is not None:
                self._rows[key] = self._row(kept)

    def row_of(self, pod: K8sObject) -> PodRow | None:
        """The row of a pod the cache holds (this very copy: a triage's view is read while
        events come), built the first time a triage asks; None for any other copy (one the
        triage fetched, or one an event has replaced since the view was taken)."""
        key = object_key(pod)
        with self._lock:
            if self._pods.get(key) is not pod:
                return None
            return self._kept_row(pod)

    def _kept_row(self, pod: K8sObject) -> PodRow:
        """The row of a pod the cache holds now (under the lock), built if it has none."""
        key = object_key(pod)
        row = self._rows.get(key)
        if row is None:
            row = self._rows[key] = self._row(pod)
        return row

    def hami_usage_on(self, node_name: str, pods: tuple[K8sObject, ...]
                      ) -> Mapping[str, Usage] | None:
        """HAMi's usage on the node, summed from the rows of its HAMi pods the first time a
        triage asks after a change there, then kept (never changed: read it only); None when
        ``pods`` (the triage's view of the node) is not what the cache holds now."""
        with self._lock:
            if self._by_node.get(node_name, ()) is not pods:
                return None
            kept = self._hami.get(node_name)
            if kept is None or kept[0] is not pods:
                placed = [self._kept_row(pod) for pod in pods if hami_placed_on(pod, node_name)]
                kept = self._hami[node_name] = (pods, device_usage(node_name, placed))
            return kept[1]

    def _row(self, pod: K8sObject) -> PodRow:
        """The pod's row, its requests one mapping for the pods of its kind (half of what a
        row of its own takes): found as ``_share`` finds theirs, by the identities of the
        fields they are worked out from."""
        row = pod_row(pod)
        fields = request_fields(pod)
        known = self._row_requests.get(fields)
        if known is None:
            self._row_requests.put(fields, row.requests)
            return row
        return dataclasses.replace(row, requests=known)

    def _kept(self, pod: K8sObject) -> K8sObject:
        """The slim pod as kept. A workload's replicas and a daemonset's pods differ in little
        but their names and nodes: what they have alike (the spec less its node, labels,
        owners, annotations, status) is one object shared by all of them, read and never
        changed (a million pods of a few dozen kinds take about 1 KB each, not 3.4 KB)."""
        spec = pod.get("spec")
        if not isinstance(spec, dict):
            return pod
        alike = self._specs({field: value for field, value in spec.items() if field != "nodeName"})
        kept = {field: value if field in _OWN_FIELDS else self._alike(value)
                for field, value in pod.items()}
        kept["spec"] = {field: value if field == "nodeName" else alike[field]
                        for field, value in spec.items()}
        metadata = pod.get("metadata")
        if isinstance(metadata, dict):
            kept["metadata"] = {field: self._alike(value) if field in _ALIKE_METADATA else value
                                for field, value in metadata.items()}
        return kept

    def _share(self, pod: K8sObject) -> Amounts:
        """The pod's summed requests (never changed: node totals are new dicts), summed once
        per kind of spec: only the fields they are summed from decide them, not where it
        runs, so a workload's replicas share one answer. Found by those fields' identities
        (the pods of a kind share those objects: ``_kept``), held with the answer so an
        identity is never another object's (``ByIdentity``); else by their JSON."""
        fields = request_fields(pod)
        share = self._shares.get(fields)
        if share is None:
            share = sum_requests([{"spec": dict(zip(REQUEST_FIELDS, fields, strict=True))}])
            share = self._shares.put(fields, self._shares_by_json(share))
        return share

    def remove(self, pod: K8sObject) -> None:
        namespace, name = key = object_key(pod)
        with self._lock:
            self._discard(key)
            self._by_namespace.get(namespace, {}).pop(name, None)

    def _add(self, pod: K8sObject) -> None:
        namespace, name = key = object_key(pod)
        names = self._by_namespace.setdefault(namespace, {})
        if is_terminated(pod):  # it left the field selector: the server sends it as DELETED
            names.pop(name, None)
            return
        small = self._kept(slim_pod(pod))
        self._pods[key] = small
        if name not in names:
            self._unordered.add(namespace)
        names[name] = small  # a known name keeps its place
        node_name = small.get("spec", {}).get("nodeName")
        if _waiting(small, node_name):
            self._waiting[key] = small
        if node_name:
            on_node = self._by_node.get(node_name, ())
            at = bisect.bisect_left(on_node, key, key=object_key)
            self._by_node[node_name] = (*on_node[:at], small, *on_node[at:])
            self._hami.pop(node_name, None)
            share = self._share(small)
            self._requested[node_name] = self._sums(
                add_amounts(self._requested.get(node_name, {}), share, 1))
            if extended := extended_share(share):
                self._holdings[node_name] = add_holding(self._holdings.get(node_name, {}),
                                                        namespace, extended)

    def _discard(self, key: tuple[str, str]) -> bool:
        """Take the pod out of the node index, sums and rows (the namespace index keeps its
        slot); whether it had a row."""
        old = self._pods.pop(key, None)
        self._waiting.pop(key, None)
        asked = self._rows.pop(key, None) is not None
        if old is None:
            return asked
        node_name = old.get("spec", {}).get("nodeName")
        if not node_name:
            return asked
        rest = tuple(p for p in self._by_node.get(node_name, ()) if p is not old)
        self._hami.pop(node_name, None)
        if rest:
            share = self._share(old)
            self._by_node[node_name] = rest
            self._requested[node_name] = self._sums(
                add_amounts(self._requested[node_name], share, -1))
            if extended := extended_share(share):
                self._holdings[node_name] = add_holding(self._holdings.get(node_name, {}),
                                                        key[0], extended, -1)
        else:
            self._by_node.pop(node_name, None)
            self._requested.pop(node_name, None)
            self._holdings.pop(node_name, None)
        return asked

    def by_node_view(self) -> tuple[dict[str, tuple[K8sObject, ...]], dict[str, Amounts],
                                    dict[str, Holdings]]:
        with self._lock:
            return dict(self._by_node), dict(self._requested), dict(self._holdings)

    def waiting(self) -> list[K8sObject]:
        """The pods not running yet (no node, or bound and Pending), in list order."""
        with self._lock:
            return [self._waiting[key] for key in sorted(self._waiting)]

    def nodes_of(self, keys: Iterable[tuple[str, str]]) -> frozenset[str]:
        """The nodes the cached copies of these pods are bound to."""
        with self._lock:
            cached = [self._pods.get(key) for key in keys]
        return frozenset(node for pod in cached if pod is not None
                         if (node := pod.get("spec", {}).get("nodeName")))

    def in_namespace(self, namespace: str) -> list[K8sObject]:
        with self._lock:
            names = self._by_namespace.get(namespace, {})
            if namespace in self._unordered:
                names = self._by_namespace[namespace] = dict(sorted(names.items()))
                self._unordered.discard(namespace)
            return list(names.values())

    def all(self) -> list[K8sObject]:
        """Every cached pod: the slim copies themselves, to read and never change."""
        with self._lock:
            return list(self._pods.values())

    def __len__(self) -> int:
        return len(self._pods)


class PodListing:
    """A full list's pods indexed page by page as the reader decodes them (while the API
    server renders the next page), for ``PodStore.replace``: by key, by namespace, the waiting
    ones, and by node its pods in the order listed and its kinds of pod, (namespace, id of
    the summed requests ``share`` gives) -> (those requests, [how many])."""

    def __init__(self, share: Callable[[K8sObject], Amounts]) -> None:
        self._share = share
        self.pods: dict[tuple[str, str], K8sObject] = {}
        self.on_node: dict[str, list[tuple[tuple[str, str], K8sObject]]] = {}
        self.kinds_on: dict[str, dict[tuple[str, int], tuple[Amounts, list[int]]]] = {}
        self.waiting: dict[tuple[str, str], K8sObject] = {}
        self.by_namespace: dict[str, dict[str, K8sObject]] = {}

    def extend(self, items: Iterable[K8sObject], /) -> None:
        pods, on_node, kinds_on = self.pods, self.on_node, self.kinds_on
        waiting, by_namespace, share_of = self.waiting, self.by_namespace, self._share
        for pod in items:
            namespace, name = key = object_key(pod)
            names = by_namespace.get(namespace)
            if names is None:
                names = by_namespace[namespace] = {}
            if is_terminated(pod):
                names.pop(name, None)
                waiting.pop(key, None)
                continue
            pods[key] = names[name] = pod
            node_name = pod.get("spec", {}).get("nodeName")
            if _waiting(pod, node_name):
                waiting[key] = pod
            if node_name:
                listed = on_node.get(node_name)
                if listed is None:
                    listed, kinds = on_node[node_name], kinds_on[node_name] = [], {}
                else:
                    kinds = kinds_on[node_name]
                listed.append((key, pod))
                share = share_of(pod)
                kind = kinds.get((namespace, id(share)))
                if kind is None:
                    kind = kinds[namespace, id(share)] = (share, [0])
                kind[1][0] += 1

    def __iter__(self) -> Iterator[K8sObject]:
        """The pods listed, in list order."""
        return iter(self.pods.values())


def _summed(kinds: Mapping[tuple[str, int], tuple[Amounts, list[int]]],
            ) -> tuple[Amounts, dict[str, dict[str, tuple[int, int]]]]:
    """A node's summed requests and holdings (Snapshot.holdings_on) from its kinds of pod:
    (namespace, id of the share) -> (share, [how many]), in the order first seen, so each
    resource and namespace comes in the order a pod-by-pod sum meets it."""
    total: Amounts = {}
    holdings: dict[str, dict[str, tuple[int, int]]] = {}
    for (namespace, _), (share, (count,)) in kinds.items():
        for resource, amount in share.items():
            total[resource] = total.get(resource, Decimal(0)) + amount * count
        if extended := extended_share(share):
            entry = holdings.setdefault(namespace, {})
            for resource, whole in extended.items():
                held, pods = entry.get(resource, (0, 0))
                entry[resource] = (held + whole * count, pods + count)
    for resource in [r for r, amount in total.items() if not amount and r != "pods"]:
        del total[resource]
    return total, holdings


def _waiting(pod: K8sObject, node_name: object) -> bool:
    """Not running yet: no node (``node_name``, its spec's), or bound and Pending."""
    return not node_name or pod.get("status", {}).get("phase") == "Pending"


def add_amounts(total: Mapping[str, Decimal], share: Mapping[str, Decimal],
                 sign: int) -> Amounts:
    """A new per-node total (the old one may be in a triage's view: never mutate it)."""
    result = dict(total)
    for resource, amount in share.items():
        result[resource] = result.get(resource, Decimal(0)) + sign * amount
        if not result[resource] and resource != "pods":
            del result[resource]
    return result
