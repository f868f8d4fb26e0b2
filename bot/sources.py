"""Where a triage reads the cluster from: a dump directory, the live API, or a watch cache."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from triage.classify import triage
from triage.config import DEFAULT_CONFIG, TriageConfig
from triage.refs import PodRef
from triage.snapshot import Snapshot
from triage.verdict import Verdict


class TriageSource(Protocol):
    cluster: str

    def triage(self, ref: PodRef) -> Verdict:
        """Answer for one ref; raise triage.errors.ClusterError when the cluster can't be read."""
        ...


class SnapshotSource:
    """A dump directory read once (``gpuwhy triage --snapshot``, ``gpuwhy serve --snapshot``)."""

    def __init__(self, directory: str | Path, config: TriageConfig = DEFAULT_CONFIG) -> None:
        self.snapshot = Snapshot.from_dir(directory)
        self.cluster = self.snapshot.cluster
        self.config = config

    def triage(self, ref: PodRef) -> Verdict:
        return triage(self.snapshot, ref, self.config)
