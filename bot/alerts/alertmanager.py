"""Alertmanager's webhook payload (version 4), read into the alerts gpuwhy can answer for.

The format is Alertmanager's documented webhook_config body: ``{"version": "4", "groupKey",
"truncatedAlerts", "status", "receiver", "groupLabels", "commonLabels", "commonAnnotations",
"externalURL", "alerts": [{"status", "labels", "annotations", "startsAt", "endsAt",
"generatorURL", "fingerprint"}]}``. An alert names a pod by the labels kube-state-metrics
gives it: ``namespace`` with ``pod``, ``job_name``, ``deployment`` or ``statefulset``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from triage.refs import PodRef, RefError, parse_ref

VERSION = "4"
FIRING, RESOLVED = "firing", "resolved"
# The label naming the object, in the order they are tried, with what it names.
NAME_LABELS = (("pod", "Pod"), ("job_name", "Job"), ("deployment", "Deployment"),
               ("statefulset", "StatefulSet"))
MAX_SUMMARY = 300


class PayloadError(ValueError):
    """Not an Alertmanager webhook body; the message is one line for the HTTP answer."""


@dataclass(frozen=True)
class Alert:
    status: str  # firing | resolved
    name: str  # alertname
    summary: str  # annotations.summary, else description, else the alert name
    fingerprint: str
    starts_at: str
    ref: PodRef | None  # None: no pod or workload gpuwhy can answer for
    kind: str | None  # what the label named: Pod, Job, Deployment, StatefulSet
    cluster: str | None = None  # the `cluster` label: which configured cluster it is about

    @property
    def key(self) -> str:
        """One firing of one alert (Alertmanager repeats it, each with the same start)."""
        return f"{self.fingerprint}/{self.starts_at}"


def _strings(value: object, where: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise PayloadError(f"{where} must be an object of strings")
    return {str(k): str(v) for k, v in value.items()}


def _fingerprint(labels: Mapping[str, str]) -> str:
    """Alertmanager sends one; older senders may not: a stable hash of the labels then."""
    text = json.dumps(sorted(labels.items()), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _ref(labels: Mapping[str, str]) -> tuple[PodRef | None, str | None]:
    namespace = labels.get("namespace")
    if not namespace:
        return None, None
    for label, kind in NAME_LABELS:
        if name := labels.get(label):
            try:
                return parse_ref(f"{namespace}/{name}"), kind
            except RefError:
                return None, None
    return None, None


def parse_alert(item: object) -> Alert:
    if not isinstance(item, Mapping):
        raise PayloadError("each entry of alerts must be an object")
    status = item.get("status")
    if status not in (FIRING, RESOLVED):
        raise PayloadError(f"alert status must be {FIRING!r} or {RESOLVED!r}, not {status!r}")
    labels = _strings(item.get("labels"), "labels")
    annotations = _strings(item.get("annotations"), "annotations")
    name = labels.get("alertname", "alert")
    summary = annotations.get("summary") or annotations.get("description") or name
    ref, kind = _ref(labels)
    return Alert(
        status=status, name=name, summary=" ".join(summary.split())[:MAX_SUMMARY],
        fingerprint=str(item.get("fingerprint") or _fingerprint(labels)),
        starts_at=str(item.get("startsAt") or ""), ref=ref, kind=kind,
        cluster=labels.get("cluster") or None)


def parse_payload(body: bytes) -> list[Alert]:
    """The alerts of one notification; PayloadError when the body is not version 4's shape."""
    try:
        data: Any = json.loads(body)
    except (UnicodeDecodeError, ValueError):
        raise PayloadError("the body is not JSON") from None
    if not isinstance(data, Mapping):
        raise PayloadError("the body must be a JSON object")
    if str(data.get("version")) != VERSION:
        raise PayloadError(f"payload version {data.get('version')!r}; gpuwhy reads "
                           f"version {VERSION}")
    alerts = data.get("alerts")
    if not isinstance(alerts, list):
        raise PayloadError("alerts must be a list")
    return [parse_alert(item) for item in alerts]
