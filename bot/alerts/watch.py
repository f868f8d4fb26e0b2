"""The stuck-pod watch in `gpuwhy serve`: every ``check_every`` it looks at the pods the watch
cache already holds (no request), triages each stuck workload (the per-ref reads a /gpuwhy
answer costs) when it is new, has new pods, or was last triaged ``recheck_every`` ago, and
hands the answers to the poster."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from bot.alerts.poster import AlertPoster
from bot.alerts.stuck import StuckGroup, stuck_groups
from bot.config import BotConfig
from bot.store import StoreError
from scoring.objects import K8sObject
from scoring.verdict import Verdict
from triage.config import TriageConfig
from triage.errors import ClusterError
from triage.refs import PodRef

log = logging.getLogger(__name__)

# Claims of pods long gone, and closed threads, are forgotten after this long.
RETENTION = timedelta(days=30)
PRUNE_INTERVAL = timedelta(hours=1)


def utc_now() -> datetime:
    return datetime.now(UTC)


class StuckPodWatch:
    def __init__(self, config: BotConfig, poster: AlertPoster,
                 pods: Callable[[], list[K8sObject]], ready: Callable[[], bool],
                 triage: Callable[[PodRef], Verdict],
                 clock: Callable[[], datetime] = utc_now) -> None:
        self.alerts = config.alerts
        self.gpus: TriageConfig = config.triage
        self.poster = poster
        self.pods = pods
        self.ready = ready
        self.triage = triage
        self.clock = clock
        # workload key -> (pods last triaged, when): what makes a group due again
        self._triaged: dict[str, tuple[frozenset[str], datetime]] = {}
        self._next_prune: datetime | None = None

    def _due(self, group: StuckGroup, now: datetime) -> bool:
        uids = frozenset(pod.uid for pod in group.pods)
        last = self._triaged.get(group.workload.key)
        if last is not None and last[0] >= uids \
                and now - last[1] < self.alerts.recheck_every:
            return False
        self._triaged[group.workload.key] = (uids, now)
        return True

    def run_once(self) -> int:
        """One look at the cache; returns how many workloads were triaged."""
        if not self.ready():
            return 0
        now = self.clock()
        pods = self.pods()
        groups = stuck_groups(pods, now, self.alerts.pending_after, self.gpus)
        keys = {group.workload.key for group in groups}
        self._triaged = {k: v for k, v in self._triaged.items() if k in keys}
        triaged = 0
        for group in groups:
            if not self._due(group, now):
                continue
            triaged += 1
            try:
                verdict = self.triage(group.workload.ref)
            except ClusterError as exc:
                log.warning("stuck %s: cannot triage it: %s", group.workload, exc)
                del self._triaged[group.workload.key]  # try again next round
                continue
            self.poster.report_stuck(group, verdict, now)
        self.poster.follow_threads(pods, now)
        self.poster.flush_held(now)
        self._prune(now)
        return triaged

    def _prune(self, now: datetime) -> None:
        if self._next_prune is not None and now < self._next_prune:
            return
        self._next_prune = now + PRUNE_INTERVAL
        try:
            self.poster.store.prune(now - RETENTION)
        except StoreError as exc:  # housekeeping: the next hour tries again
            log.warning("alert claims: pruning failed: %s", exc)

    def run_forever(self, stop: threading.Event) -> None:
        interval = self.alerts.check_every.total_seconds()
        while not stop.is_set():
            try:
                self.run_once()
            except Exception:  # a dead thread would stop every alert for good
                log.exception("stuck-pod watch: a round failed")
            stop.wait(interval)
