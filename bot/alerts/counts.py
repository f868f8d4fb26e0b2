"""What the alerts did, counted: posts, suppressed repeats, rate-limited posts, webhook results,
Alertmanager alerts. Thread-safe; exported as metrics."""

from __future__ import annotations

import threading
from collections import Counter


class AlertCounts:
    POSTED = "posted"  # label: root | reply | line | summary
    SUPPRESSED = "suppressed"  # a repeat of a pod + cause already posted
    RATE_LIMITED = "rate_limited"  # label: channel
    WEBHOOK = "webhook"  # label: delivered | failed
    ALERTMANAGER = "alertmanager"  # label: firing | resolved | unmapped | repeated

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[tuple[str, str]] = Counter()

    def add(self, what: str, label: str = "", amount: int = 1) -> None:
        with self._lock:
            self._counts[(what, label)] += amount

    def get(self, what: str, label: str = "") -> int:
        with self._lock:
            return self._counts[(what, label)]
