"""The watch cache's model, apart from its I/O: the stores it keeps current per event (the
node table's rows, other objects, non-terminated pods with every node's summed requests) and
the IndexedSnapshot a triage reads from them. Pure: the reflectors in
``triage.cluster.watch`` feed it; nothing here reads the cluster."""

from triage.cache.dra import DraStores, DraView
from triage.cache.pods import PodStore, add_amounts
from triage.cache.snapshot import IndexedSnapshot
from triage.cache.stores import NodeStore, ObjectStore, without_managed_fields

__all__ = ["DraStores", "DraView", "IndexedSnapshot", "NodeStore", "ObjectStore", "PodStore",
           "add_amounts", "without_managed_fields"]
