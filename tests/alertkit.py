"""A recorded cluster with stuck GPU pods, and the pieces of the alerts wired to a local Slack
Web API and a real incident store, for the alerts tests."""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from slack_sdk import WebClient

from bot.alerts.poster import AlertPoster
from bot.alerts.store import AlertStore
from bot.alerts.watch import StuckPodWatch
from bot.alerts.webhook import WebhookSender
from bot.config import BotConfig
from bot.config.load import config_schema
from bot.slack.listeners.state import BotState
from bot.store import Store
from bot.web.metrics import REGISTRY
from scoring.objects import K8sObject
from scoring.verdict import Verdict
from tests.conftest import find, load_lists
from tests.slackfake import FakeSlack
from triage.classify import triage
from triage.config import DEFAULT_CONFIG
from triage.refs import PodRef
from triage.snapshot import Snapshot

# research/broken-node and every other stuck pod of seven-states were created then.
CREATED = datetime(2026, 11, 30, 12, 50, 45, tzinfo=UTC)
TRAINER_HASH = "6f9d8c7b5"
TRAINER_PODS = ("trainer-6f9d8c7b5-4xk2p", "trainer-6f9d8c7b5-9zq7w", "trainer-6f9d8c7b5-tb8mv")


def settings(data: dict[str, Any]) -> BotConfig:
    """A configuration checked by the schema, as `gpuwhy serve` loads it."""
    return config_schema().validate_python(data)


class Counted:
    """Counter values from the metrics registry, as changes since this object was made."""

    def __init__(self) -> None:
        self._start = self._samples()

    @staticmethod
    def _samples() -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
        return {(sample.name, frozenset(sample.labels.items())): sample.value
                for family in REGISTRY.collect() for sample in family.samples
                if sample.name.endswith("_total")}

    def __call__(self, name: str, **labels: str) -> float:
        key = (f"{name}_total", frozenset(labels.items()))
        return self._samples().get(key, 0.0) - self._start.get(key, 0.0)


def with_trainer(lists: dict[str, list[K8sObject]]) -> dict[str, list[K8sObject]]:
    """seven-states plus Deployment research/trainer: 3 replicas of the broken-node pod (pool
    v100-broken, allocatable 0), its ReplicaSet and pods built from the recorded objects."""
    lists = copy.deepcopy(lists)
    deployment = copy.deepcopy(find(lists["workloads"], "vllm", "infer"))
    replicaset = copy.deepcopy(find(lists["workloads"], "vllm-79f7bb9f55", "infer"))
    template_pod = find(lists["pods"], "broken-node", "research")
    for obj, name in ((deployment, "trainer"), (replicaset, f"trainer-{TRAINER_HASH}")):
        obj["metadata"].update(name=name, namespace="research", uid=f"uid-{name}")
        obj["metadata"]["labels"] = {"app": "trainer"}
        obj["spec"]["replicas"] = 3
        obj["spec"]["selector"] = {"matchLabels": {"app": "trainer"}}
        obj["spec"]["template"]["metadata"]["labels"] = {"app": "trainer"}
        obj["spec"]["template"]["spec"] = copy.deepcopy(template_pod["spec"])
        obj["status"] = {"replicas": 3, "observedGeneration": 1}
    replicaset["metadata"]["labels"]["pod-template-hash"] = TRAINER_HASH
    replicaset["metadata"]["ownerReferences"][0].update(name="trainer", uid="uid-trainer")
    for name in TRAINER_PODS:
        pod = copy.deepcopy(template_pod)
        pod["metadata"].update(
            name=name, uid=f"uid-{name}",
            labels={"app": "trainer", "pod-template-hash": TRAINER_HASH},
            ownerReferences=[{"apiVersion": "apps/v1", "blockOwnerDeletion": True,
                              "controller": True, "kind": "ReplicaSet",
                              "name": f"trainer-{TRAINER_HASH}",
                              "uid": f"uid-trainer-{TRAINER_HASH}"}])
        lists["pods"].append(pod)
    lists["workloads"] += [deployment, replicaset]
    return lists


def seven_states_with_trainer() -> dict[str, list[K8sObject]]:
    return with_trainer(load_lists("seven-states"))


def only_pods(lists: dict[str, list[K8sObject]], keep: set[str]) -> dict[str, list[K8sObject]]:
    """The cluster with only the named pods (and every pod that holds GPUs, bound ones)."""
    lists = copy.deepcopy(lists)
    lists["pods"] = [p for p in lists["pods"]
                     if p["metadata"]["name"] in keep or p["spec"].get("nodeName")]
    return lists


@dataclass
class Cluster:
    """What the watch reads (a triage source too): recorded objects a test may change
    between rounds."""

    lists: dict[str, list[K8sObject]]
    cluster: str = "test-cluster"

    @property
    def snapshot(self) -> Snapshot:
        return Snapshot(**copy.deepcopy(self.lists))

    def pods(self) -> list[K8sObject]:
        return copy.deepcopy(self.lists["pods"])

    def triage(self, ref: PodRef) -> Verdict:
        return triage(self.snapshot, ref, DEFAULT_CONFIG)


@dataclass
class Replica:
    """One gpuwhy process: its own poster, watch and BotState over the shared store file."""

    poster: AlertPoster
    watch: StuckPodWatch
    state: BotState
    store: Store

    def close(self) -> None:
        self.poster.close()
        self.state.close()
        self.store.close()


@dataclass
class Clock:
    now: datetime = CREATED + timedelta(minutes=11)

    def __call__(self) -> datetime:
        return self.now


@dataclass
class Harness:
    slack: FakeSlack
    db_url: str
    cluster: Cluster
    clock: Clock = field(default_factory=Clock)
    replicas: list[Replica] = field(default_factory=list)

    def replica(self, config: BotConfig, environ: dict[str, str] | None = None) -> Replica:
        store = Store(self.db_url)
        store.upgrade()
        client = WebClient(token="xoxb-test", base_url=self.slack.api_url)
        state = BotState(config=config, source=self.cluster, store=store, clock=self.clock)
        webhooks = WebhookSender(config.alerts, environ or {})
        poster = AlertPoster(config, AlertStore(store, "test-cluster"), client,
                             state.remember, webhooks)
        watch = StuckPodWatch(config, poster, self.cluster.pods, lambda: True,
                              self.cluster.triage, self.clock)
        replica = Replica(poster, watch, state, store)
        self.replicas.append(replica)
        return replica

    def posts(self, channel: str | None = None, *, root: bool | None = None) -> list[Any]:
        calls = self.slack.calls_to("chat.postMessage")
        return [c.params for c in calls
                if (channel is None or c.params.get("channel") == channel)
                and (root is None or root == (not c.params.get("thread_ts")))]

    def close(self) -> None:
        for replica in self.replicas:
            replica.close()


class WebhookReceiver:
    """A local HTTP receiver: records each POST; answers the statuses queued, then 200."""

    def __init__(self) -> None:
        self.received: list[tuple[dict[str, str], Any]] = []
        self.statuses: list[int] = []
        self._lock = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with receiver._lock:
                    receiver.received.append((dict(self.headers.items()), json.loads(body)))
                    status = receiver.statuses.pop(0) if receiver.statuses else 200
                    receiver._lock.notify_all()
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/hook"
        threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True).start()

    def wait_for(self, count: int, timeout: float = 10) -> list[tuple[dict[str, str], Any]]:
        with self._lock:
            if not self._lock.wait_for(lambda: len(self.received) >= count, timeout):
                raise AssertionError(f"{count} webhook calls expected, got {len(self.received)}")
            return list(self.received)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def harness(db: Path | str, lists: dict[str, list[K8sObject]]) -> Iterator[Harness]:
    """With a database URL, or a directory for a SQLite file."""
    slack = FakeSlack()
    url = db if isinstance(db, str) else f"sqlite:///{db / 'alerts.db'}"
    made = Harness(slack, url, Cluster(lists))
    try:
        yield made
    finally:
        made.close()
        slack.close()

